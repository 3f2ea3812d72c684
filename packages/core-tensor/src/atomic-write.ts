import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import * as path from "node:path";

function tempSibling(target: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
}

async function fsyncDir(dir: string): Promise<void> {
  try {
    const handle = await fs.open(dir, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some filesystems refuse fsync on directories; the rename itself is still atomic.
  }
}

/**
 * Writes a file so that readers see either the old content or the new, never a partial file:
 * the bytes go to a temporary sibling, are flushed, and the sibling is renamed over the target.
 */
export async function writeFileAtomic(target: string, data: string | Uint8Array): Promise<void> {
  await fs.mkdir(path.dirname(target), { recursive: true });
  const tmp = tempSibling(target);
  const handle = await fs.open(tmp, "w");
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  try {
    await fs.rename(tmp, target);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await fsyncDir(path.dirname(target));
}

/**
 * Builds a whole directory and swaps it into place: `fill` writes into a fresh temporary
 * directory, which then replaces `target`. If `fill` throws, `target` is left untouched; a crash
 * between the two renames leaves the previous version beside it as `<target>.old-*`.
 */
export async function replaceDirAtomic(target: string, fill: (tmpDir: string) => Promise<void>): Promise<void> {
  const parent = path.dirname(path.resolve(target));
  await fs.mkdir(parent, { recursive: true });
  const tmp = tempSibling(target);
  await fs.mkdir(tmp);
  try {
    await fill(tmp);
  } catch (err) {
    await fs.rm(tmp, { recursive: true, force: true });
    throw err;
  }
  let old: string | undefined;
  try {
    await fs.rename(tmp, target);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOTEMPTY" && code !== "EEXIST" && code !== "EISDIR" && code !== "ENOTDIR") throw err;
    old = path.join(parent, `.${path.basename(target)}.old-${process.pid}-${randomBytes(4).toString("hex")}`);
    await fs.rename(target, old);
    await fs.rename(tmp, target);
  }
  await fsyncDir(parent);
  if (old !== undefined) await fs.rm(old, { recursive: true, force: true });
}
