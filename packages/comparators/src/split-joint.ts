import { CentralizedParseError, type CentralizedAdapter, type TaskItem } from "@pbrl/preference-data";

export interface SplitJoint {
  /** texts[agent][candidate]; an invalid candidate has "" for every role. */
  texts: string[][];
  /** Per candidate: false when its joint completion could not be parsed. */
  valid: boolean[];
}

/**
 * Splits joint completions into role responses. A completion the adapter cannot parse becomes an
 * invalid candidate, which the caller counts and keeps out of pairs (CoMLRL aborts the whole
 * collection here). A result that breaks the adapter contract is a bug in the adapter and throws.
 */
export function splitJointCompletions(adapter: CentralizedAdapter, completions: readonly string[], item: TaskItem, numAgents: number): SplitJoint {
  const texts: string[][] = Array.from({ length: numAgents }, () => []);
  const valid: boolean[] = [];
  completions.forEach((completion, j) => {
    let roles: unknown;
    try {
      roles = adapter.parseCompletion(completion, item, numAgents);
    } catch (err) {
      if (!(err instanceof CentralizedParseError)) throw err;
      texts.forEach((t) => t.push(""));
      valid.push(false);
      return;
    }
    checkContract(roles, numAgents, j);
    roles.forEach((text, a) => texts[a]!.push(text));
    valid.push(true);
  });
  return { texts, valid };
}

function checkContract(roles: unknown, numAgents: number, candidate: number): asserts roles is string[] {
  const where = `CentralizedAdapter.parseCompletion contract broken for candidate ${candidate}`;
  if (!Array.isArray(roles))
    throw new TypeError(
      `${where}: it must return an array of ${numAgents} strings (one per agent), got ${typeof roles === "string" ? "a single string" : typeof roles}`,
    );
  if (roles.length !== numAgents) throw new RangeError(`${where}: it must return exactly ${numAgents} strings (one per agent), got ${roles.length}`);
  const bad = roles.findIndex((r) => typeof r !== "string");
  if (bad >= 0) throw new TypeError(`${where}: entry ${bad} is ${typeof roles[bad]}, not a string`);
}
