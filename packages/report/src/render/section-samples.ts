/** A few joint completions per round (or from preference_pairs.json): prompts, winner and loser per agent, rewards. All text escaped. */
import { formatNumber } from "../format-number.js";
import type { PairSample, PairSet, RunData } from "../run-data.js";
import { el, note, section, type Content, type Html } from "./html.js";

/** Cuts text past `max` characters, saying how much was cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

function sampleView(s: PairSample, max: number): Html {
  const side = s.winnerSide === null ? "" : ` (${s.winnerSide} won)`;
  const raw = s.targetRawReward === null ? "" : `; raw: target ${formatNumber(s.targetRawReward)}, comparator ${formatNumber(s.comparatorRawReward)}`;
  const agents = Math.max(s.prompts.length, s.winnerCompletions.length);
  const rows: Content[] = [];
  for (let i = 0; i < agents; i++) {
    rows.push(
      el(
        "tr",
        {},
        el("th", {}, agents === 1 ? "joint" : `agent ${i}`),
        el("td", {}, el("pre", {}, clip(s.prompts[i] ?? "", max))),
        el("td", { class: "winner" }, el("pre", {}, clip(s.winnerCompletions[i] ?? "", max))),
        el("td", { class: "loser" }, el("pre", {}, clip(s.loserCompletions[i] ?? "", max))),
      ),
    );
  }
  return el(
    "div",
    { class: "pair" },
    el(
      "p",
      { class: "pair-head" },
      `pair ${s.index + 1}: winner reward ${formatNumber(s.winnerReward)}, loser reward ${formatNumber(s.loserReward)}${side}${raw}`,
    ),
    el(
      "table",
      { class: "completions" },
      el("thead", {}, el("tr", {}, el("th", {}, ""), el("th", {}, "prompt"), el("th", {}, "winner"), el("th", {}, "loser"))),
      el("tbody", {}, rows),
    ),
  );
}

const SCORER_TEXT: Record<string, string> = { task: "the task reward", reward_model: "the reward model", human: "people (see Human labels)" };

function setView(set: PairSet, open: boolean, max: number): Html {
  const name = set.iteration === null ? "preference_pairs.json" : `Round ${set.iteration}`;
  const scorer = set.scorer === null ? "" : `, labelled by ${SCORER_TEXT[set.scorer] ?? set.scorer}`;
  const shown = set.samples.length < set.numPairs ? `, ${set.samples.length} shown` : "";
  return el(
    "details",
    { class: "pair-set", "data-round": set.iteration === null ? undefined : String(set.iteration), open: open ? "" : undefined },
    el("summary", {}, `${name}: ${set.numPairs} pairs${shown}${scorer}`),
    set.samples.length === 0 ? note("No pairs.") : set.samples.map((s) => sampleView(s, max)),
  );
}

export function samplesSection(run: RunData, maxTextLength: number): Html {
  const title = "Sample pairs";
  const sets = run.rounds.length > 0 ? run.rounds : run.pairs === null ? [] : [run.pairs];
  if (sets.length === 0) return section("samples", title, note("No round files and no preference_pairs.json: no pairs to show yet."));
  return section(
    "samples",
    title,
    note("Evenly spaced pairs from each file: every agent's prompt with the winning and losing joint response. The latest round is open."),
    sets.map((s, i) => setView(s, i === sets.length - 1, maxTextLength)),
  );
}
