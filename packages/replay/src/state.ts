import { roundFileName, type ReplayIndexEntry } from "@pbrl/preference-data";
import { ReplayError } from "./errors.js";

// Stryker disable next-line ConditionalExpression: Number.isSafeInteger is false for a non-number anyway
const isPositiveInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 1;

/**
 * Checks the shape of a saved replay index (it comes from a checkpoint file, so from outside the
 * type system) and returns copies of its entries.
 */
export function parseReplayState(state: unknown): ReplayIndexEntry[] {
  const entries = (state as { entries?: unknown } | null | undefined)?.entries;
  if (!Array.isArray(entries)) throw new ReplayError("replay state must be an object with an entries array");
  let previous = 0;
  return entries.map((raw: unknown, i) => {
    const e = raw as Partial<ReplayIndexEntry> | null;
    const where = `replay state entry ${i}`;
    if (e === null || typeof e !== "object") throw new ReplayError(`${where} is not an object`);
    if (!isPositiveInt(e.iteration)) throw new ReplayError(`${where}: iteration must be an integer ≥ 1, got ${JSON.stringify(e.iteration)}`);
    if (typeof e.file !== "string" || e.file.length === 0) throw new ReplayError(`${where}: file must be a non-empty path, got ${JSON.stringify(e.file)}`);
    // The index holds non-empty rounds only.
    if (!isPositiveInt(e.num_pairs)) throw new ReplayError(`${where} (${e.file}): num_pairs must be an integer ≥ 1, got ${JSON.stringify(e.num_pairs)}`);
    if (e.iteration <= previous) throw new ReplayError(`${where} (${e.file}): iterations must increase, got ${e.iteration} after ${previous}`);
    // The buffer only ever indexes its own round files, so anything else ("../x", an absolute
    // path, another round's file) is an edited or foreign state that would read outside the replay directory.
    const expected = roundFileName(e.iteration);
    if (e.file !== expected) {
      throw new ReplayError(
        `${where}: file must be ${expected}, the round file inside the replay directory, got ${JSON.stringify(e.file)}; the checkpoint's replay state was edited or comes from elsewhere, resume from an intact checkpoint`,
      );
    }
    if (e.sha256 !== undefined && !(typeof e.sha256 === "string" && /^[0-9a-f]{64}$/.test(e.sha256)))
      throw new ReplayError(`${where} (${e.file}): sha256 must be 64 hex digits, got ${JSON.stringify(e.sha256)}`);
    previous = e.iteration;
    return { iteration: e.iteration, file: e.file, num_pairs: e.num_pairs, ...(e.sha256 !== undefined ? { sha256: e.sha256 } : {}) };
  });
}
