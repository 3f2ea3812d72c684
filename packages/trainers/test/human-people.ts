// People for the human-labelling tests: clients of the labelling page's HTTP API, picking as the
// page's keys would (left, right, tie, both bad), so the tests run the real server and files.
import { TOKEN_HEADER } from "@pbrl/human-labels";

export interface ShownComparison {
  leaseId: string;
  comparisonId: string;
  round: number;
  left: string[];
  right: string[];
}

export type Pick = "left" | "right" | "tie" | "both_bad";

/** The link a run printed (`pbrl: label at …`), from its log so far. */
export function labelUrl(log: string): URL | undefined {
  const m = /label at (http:\/\/\S+)/.exec(log);
  return m === null ? undefined : new URL(m[1]!);
}

export class Person {
  readonly picks: { comparisonId: string; pick: Pick; shown: ShownComparison }[] = [];
  /** How many picks this person had made when the server first said the run's labelling is over. */
  picksWhenFinished: number | undefined;
  constructor(
    readonly name: string,
    private readonly url: URL,
  ) {}

  private headers(): Record<string, string> {
    return { [TOKEN_HEADER]: this.url.searchParams.get("token")!, "content-type": "application/json" };
  }

  /** The next comparison for this person, or null when none is open now. */
  async next(): Promise<ShownComparison | null> {
    const r = await fetch(new URL(`/api/next?annotator=${encodeURIComponent(this.name)}`, this.url), { headers: this.headers() });
    if (r.status !== 200) throw new Error(`GET /api/next: ${r.status} ${await r.text()}`);
    const body = (await r.json()) as { done: boolean; finished?: boolean } & ShownComparison;
    if (body.finished === true) this.picksWhenFinished ??= this.picks.length;
    return body.done ? null : body;
  }

  async label(shown: ShownComparison, pick: Pick, rationale?: string): Promise<void> {
    const r = await fetch(new URL("/api/label", this.url), {
      method: "POST",
      headers: this.headers(),
      body: JSON.stringify({ leaseId: shown.leaseId, annotator: this.name, verdict: pick, ...(rationale !== undefined && { rationale }) }),
    });
    if (r.status !== 200) throw new Error(`POST /api/label: ${r.status} ${await r.text()}`);
    this.picks.push({ comparisonId: shown.comparisonId, pick, shown });
  }

  /** Labels until `stop()` says so (polling while no round is open); at most `max` picks. */
  async labelUntil(choose: (shown: ShownComparison) => Pick, stop: () => boolean, max = Number.POSITIVE_INFINITY): Promise<void> {
    while (!stop() && this.picks.length < max) {
      const shown = await this.next().catch(() => null);
      if (shown === null) {
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      await this.label(shown, choose(shown));
    }
  }
}

/** Picks the side whose joint answer holds more letter e's; a tie when equal. */
export function moreEs(shown: ShownComparison): Pick {
  const es = (texts: string[]) => texts.join("").split("e").length - 1;
  const l = es(shown.left);
  const r = es(shown.right);
  return l === r ? "tie" : l > r ? "left" : "right";
}
