/**
 * Paths compared as the filesystem sees them, for the rules that keep pbrl's writes away from what
 * it did not make (run folders, convert outputs, their inputs).
 */
import { existsSync, realpathSync } from "node:fs";
import * as path from "node:path";

/** The absolute path with symlinks resolved as far as it exists (the rest appended as written). */
export function resolvedPath(p: string): string {
  const abs = path.resolve(p);
  if (existsSync(abs)) return realpathSync(abs);
  const parent = path.dirname(abs);
  return parent === abs ? abs : path.join(resolvedPath(parent), path.basename(abs));
}

/** Whether `inner` is `outer` or lies below it (both absolute, compared as written). */
export const isWithin = (inner: string, outer: string): boolean => inner === outer || inner.startsWith(outer.endsWith(path.sep) ? outer : outer + path.sep);
