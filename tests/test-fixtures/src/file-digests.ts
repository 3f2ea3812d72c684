/**
 * What a folder holds, to prove that a command changed nothing it should not: every entry by its
 * path, a file by its sha256, a symbolic link by its target (never followed), so a file replaced
 * by a link, a new file, a removed one and changed bytes all show as a difference.
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import * as path from "node:path";

/** Path (relative to `root`) -> "file <sha256>", "link -> <target>" or "dir", leaving out the folders in `skip` (absolute paths). */
export function fileDigests(root: string, skip: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = path.join(dir, name);
      if (skip.includes(p)) continue;
      const st = lstatSync(p);
      const rel = path.relative(root, p);
      if (st.isSymbolicLink()) out[rel] = `link -> ${readlinkSync(p)}`;
      else if (st.isDirectory()) {
        out[rel] = "dir";
        walk(p);
      } else out[rel] = `file ${createHash("sha256").update(readFileSync(p)).digest("hex")}`;
    }
  };
  walk(root);
  return out;
}

/** The symbolic links under `root` that lead out of it (or lead nowhere), each as "link -> where it leads". */
export function linksLeaving(root: string): string[] {
  const realRoot = realpathSync(root);
  const out: string[] = [];
  for (const [rel, what] of Object.entries(fileDigests(root))) {
    if (!what.startsWith("link")) continue;
    const link = path.join(root, rel);
    let dest: string;
    try {
      dest = realpathSync(link);
    } catch {
      out.push(`${link} -> (nothing: ${readlinkSync(link)})`);
      continue;
    }
    const inside = path.relative(realRoot, dest);
    if (inside === ".." || inside.startsWith(`..${path.sep}`) || path.isAbsolute(inside)) out.push(`${link} -> ${dest}`);
  }
  return out;
}
