/**
 * The shapes shared by the queue, the label files and the server. A comparison is one item of a
 * round seen twice — the team's joint answer (target) and the comparator's — and a person says
 * which is better without being told which is which.
 */

/** One item of a round to be judged: the target's and the comparator's joint answers. */
export interface Comparison {
  /** Unique within the round; the label files refer to it. */
  id: string;
  round: number;
  itemIndex: number;
  itemId?: string;
  /** One prompt per agent, or a single prompt all agents shared. */
  prompts: string[];
  /** The agents' role names, one per agent, in the order of `target` and `comparator`. */
  roles: string[];
  /** Each agent's part of the target joint answer. */
  target: string[];
  /** Each agent's part of the comparator joint answer. */
  comparator: string[];
}

/** A pick as the page sends it: in terms of what was shown on screen. */
export type Verdict = "left" | "right" | "tie" | "both_bad";

/** Which of the two joint answers a side of the page showed. */
export type Side = "target" | "comparator";

/** A pick as stored: translated through the shown order, so files never mention screen sides. */
export type RecordedVerdict = Side | "tie" | "both_bad";

/** One line of a round's label file. Snake case, like the other files users read (CoMLRL's). */
export interface LabelRecord {
  comparison_id: string;
  round: number;
  item_index: number;
  item_id?: string;
  /** The better joint answer, or null for a tie or both bad. */
  winner: Side | null;
  verdict: RecordedVerdict;
  /** Which joint answer was on the left, so a pick can be mapped back to the screen. */
  shown_left: Side;
  annotator: string;
  rationale: string | null;
  /** ISO 8601 time the pick was saved. */
  labelled_at: string;
  scorer: "human";
}

export const VERDICTS: readonly Verdict[] = ["left", "right", "tie", "both_bad"];
export const RECORDED_VERDICTS: readonly RecordedVerdict[] = ["target", "comparator", "tie", "both_bad"];
