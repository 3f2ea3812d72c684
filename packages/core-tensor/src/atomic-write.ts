import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import * as path from "node:path";

/**
 * What each way the machine refuses a write means, and what to do. Node's own messages name no
 * file for a failed write ("ENOSPC: no space left on device, write") or name the temporary file.
 */
const REFUSED_WRITES: Readonly<Record<string, string>> = {
  ENOSPC: "no space left on the device (ENOSPC); free space on that disk, or choose an output folder on another disk (output_dir, --out)",
  EDQUOT: "your disk quota is used up (EDQUOT); free space within your quota, or choose an output folder on another disk (output_dir, --out)",
  EFBIG:
    "the file would be larger than this process may write (EFBIG: the shell's file-size limit, ulimit -f, or the filesystem's largest file); raise the limit, or choose an output folder on another filesystem (output_dir, --out)",
  EROFS: "the filesystem is read-only (EROFS); choose an output folder on a writable disk (output_dir, --out)",
  EACCES: "permission denied (EACCES); choose an output folder you may write to (output_dir, --out), or change its permissions",
  EPERM: "operation not permitted (EPERM); choose an output folder you may write to (output_dir, --out), or change its permissions",
};

/** A write the machine refused (full disk, quota, file-size limit, read-only or forbidden folder), naming the file. */
export class FileWriteError extends Error {
  override name = "FileWriteError";
  constructor(
    /** The file being written (the target, never a temporary sibling). */
    readonly path: string,
    /** The errno code: ENOSPC, EDQUOT, EFBIG, EROFS, EACCES or EPERM. */
    readonly code: string,
    options?: ErrorOptions,
  ) {
    super(`cannot write ${path}: ${REFUSED_WRITES[code] ?? code}`, options);
  }
}

/**
 * The error to throw for `err`, met while writing `file`: a {@link FileWriteError} naming `file`
 * when the machine refused the write, `err` itself otherwise (and a FileWriteError as it is).
 */
export function fileWriteError(err: unknown, file: string): unknown {
  if (err instanceof FileWriteError) return err;
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === "string" && Object.hasOwn(REFUSED_WRITES, code) ? new FileWriteError(file, code, { cause: err }) : err;
}

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
  await writeFileAtomicStream(target, (write) => write(data));
}

/**
 * {@link writeFileAtomic} for content made piece by piece: `fill` calls `write` with each piece in
 * order, so a file larger than memory can hold twice (a model's weights) is never assembled whole.
 */
export async function writeFileAtomicStream(target: string, fill: (write: (piece: string | Uint8Array) => Promise<void>) => Promise<void>): Promise<void> {
  try {
    await writeThenRename(target, fill);
  } catch (err) {
    throw fileWriteError(err, target);
  }
}

async function writeThenRename(target: string, fill: (write: (piece: string | Uint8Array) => Promise<void>) => Promise<void>): Promise<void> {
  await fs.mkdir(path.dirname(target), { recursive: true });
  const tmp = tempSibling(target);
  const handle = await fs.open(tmp, "w");
  try {
    await fill(async (piece) => {
      await handle.writeFile(piece);
    });
    await handle.sync();
  } catch (err) {
    // A full disk may refuse the close's flush too; the write's error is the one to report.
    await handle.close().catch(() => undefined);
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
  const tmp = tempSibling(target);
  try {
    await fs.mkdir(parent, { recursive: true });
    await fs.mkdir(tmp);
  } catch (err) {
    throw fileWriteError(err, target);
  }
  try {
    await fill(tmp);
  } catch (err) {
    await fs.rm(tmp, { recursive: true, force: true });
    throw namedInTarget(err, tmp, target);
  }
  let old: string | undefined;
  try {
    try {
      await fs.rename(tmp, target);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOTEMPTY" && code !== "EEXIST" && code !== "EISDIR" && code !== "ENOTDIR") throw err;
      old = path.join(parent, `.${path.basename(target)}.old-${process.pid}-${randomBytes(4).toString("hex")}`);
      await fs.rename(target, old);
      await fs.rename(tmp, target);
    }
  } catch (err) {
    throw fileWriteError(err, target);
  }
  await fsyncDir(parent);
  if (old !== undefined) await fs.rm(old, { recursive: true, force: true });
}

/** A refused write of a file in the temporary folder, named as the file will be in `target`. */
function namedInTarget(err: unknown, tmp: string, target: string): unknown {
  if (!(err instanceof FileWriteError)) return err;
  const rel = path.relative(tmp, err.path);
  return rel.startsWith("..") || path.isAbsolute(rel) ? err : new FileWriteError(path.join(target, rel), err.code, { cause: err.cause });
}
