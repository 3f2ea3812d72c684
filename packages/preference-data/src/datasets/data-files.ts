/**
 * Which files of a dataset repository (or local dataset folder) hold a given subset ("config")
 * and split, by the rules of the Python `datasets` library (data_files.py), so `org/name` with
 * split "test" gives the files load_dataset("org/name", split="test") reads:
 *  1. the `configs:` list in the YAML header of README.md, when there is one;
 *  2. else file names: data/{split}-00000-of-00001*.* shards, then directories named after a
 *     split, then file names containing one, else every data file is "train".
 * Also the layout of the Hub's Parquet conversion (the refs/convert/parquet branch). Pure
 * functions over repository-relative POSIX paths.
 */
import YAML from "yaml";
import { DATA_EXTENSIONS, type DataFormat } from "./formats.js";
import { DatasetError } from "./errors.js";

/** One subset of a dataset: its splits, each with its data files in reading order. */
export interface ConfigSplits {
  config: string;
  /** Every subset the dataset has (for messages). */
  configs: string[];
  splits: Map<string, string[]>;
  /** Data files pbrl cannot read that `datasets` would (e.g. ".txt", ".jsonl.gz"), when these are what the subset holds. */
  unsupported: string[];
}

// Files `datasets` never treats as data (FILES_TO_IGNORE), and formats it reads that pbrl does not:
// counted when inferring a subset's format, so a .txt dataset is reported as such, not as empty.
const IGNORED = new Set(["README.md", "config.json", "dataset_info.json", "dataset_infos.json", "dummy_data.zip", "dataset_dict.json"]);
const COMPRESSION = new Set([".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip", ".tar", ".tgz", ".7z"]);
const OTHER_DATA = new Set([
  ".txt",
  ".tsv",
  ".arrow",
  ".xml",
  ".sql",
  ".h5",
  ".hdf5",
  ".lance",
  ".avro",
  ".orc",
  ".feather",
  ".npy",
  ".npz",
  ".tfrecord",
  ".pdf",
  ".png",
  ".jpg",
  ".jpeg",
  ".gif",
  ".webp",
  ".tif",
  ".tiff",
  ".bmp",
  ".wav",
  ".mp3",
  ".flac",
  ".ogg",
  ".m4a",
  ".mp4",
  ".webm",
  ".avi",
  ".mov",
]);

const SPLIT_KEYWORDS: ReadonlyArray<[string, readonly string[]]> = [
  ["train", ["train", "training"]],
  ["validation", ["validation", "valid", "dev", "val"]],
  ["test", ["test", "testing", "eval", "evaluation"]],
];
const SEP = "[-._ 0-9]";

/** ".csv", ".jsonl.gz", …: the format-bearing extension, with a compression suffix kept. */
export function dataExtension(file: string): string {
  const base = file.slice(file.lastIndexOf("/") + 1).toLowerCase();
  const parts = base.split(".");
  if (parts.length < 2) return "";
  const last = `.${parts[parts.length - 1]}`;
  return COMPRESSION.has(last) && parts.length >= 3 ? `.${parts[parts.length - 2]}${last}` : last;
}

const hidden = (file: string) => file.split("/").some((p) => p.startsWith(".") || p.startsWith("__"));
// Scripts (.py) need no rule of their own: no data rule takes them (isDataLike).
const isCandidate = (file: string) => !hidden(file) && !IGNORED.has(file.slice(file.lastIndexOf("/") + 1));
const isDataLike = (file: string) => {
  const ext = dataExtension(file);
  return ext in DATA_EXTENSIONS || OTHER_DATA.has(ext) || COMPRESSION.has(ext.slice(ext.lastIndexOf(".")));
};

/** A glob as `datasets`/fsspec reads it: `*` and `?` within a path part, `**` across parts, `[…]` classes. */
export function globToRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*" && glob[i + 1] === "*") {
      const slash = glob[i + 2] === "/";
      re += slash ? "(?:.*/)?" : ".*";
      i += slash ? 2 : 1;
    } else if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "[") {
      const end = glob.indexOf("]", i + 2);
      if (end === -1) re += "\\[";
      else {
        const body = glob.slice(i + 1, end);
        re += `[${body.startsWith("!") ? "^" + body.slice(1) : body}]`.replace(/\\/g, "\\\\");
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

/** Files matching the patterns, in pattern order, each pattern's matches sorted, no repeats. */
function resolvePatterns(files: readonly string[], patterns: readonly string[], base: string): string[] {
  // Stryker disable next-line ArrayDeclaration: a name without an extension put first is no data file, so keepInferredFormat, the only reader of the result, drops it
  const out: string[] = [];
  for (const p of patterns) {
    const re = globToRegExp(base + p.replace(/^\.?\//, ""));
    // A ".." part need not be excluded: it can match only a path with a ".." part, which no listing or folder walk gives.
    const explicitHidden = p.split("/").some((part) => part.startsWith(".") && part !== ".");
    for (const f of files.filter((f) => re.test(f) && (explicitHidden || !hidden(f))).sort()) if (!out.includes(f)) out.push(f);
  }
  return out;
}

/** `datasets`' default split detection over candidate data files (paths relative to the folder). */
function defaultSplits(files: readonly string[]): Map<string, string[]> {
  // Made here, not at module level, so Stryker knows which tests cover its mutants (its incremental mode did not rerun a module-level one for new tests).
  const SHARDED = /^data\/(\w+(?:\.\w+)*)-[0-9]{5}-of-[0-9]{5}[^/]*\.[^/]*$/;
  const sharded = new Map<string, string[]>();
  for (const f of [...files].sort()) {
    const m = SHARDED.exec(f);
    // Stryker disable next-line ArrayDeclaration: a name without an extension put first is no data file, so keepInferredFormat drops it from every split
    if (m) sharded.set(m[1]!, [...(sharded.get(m[1]!) ?? []), f]);
  }
  if (sharded.size > 0) return orderSplits(sharded);
  const dirRe = (kw: string) => new RegExp(`^(?:[^/]*${SEP})?${kw}(?:${SEP}[^/]*)?$`);
  const nameRe = (kw: string) => new RegExp(`^(?:[^/]*${SEP})?${kw}${SEP}[^/]*$`);
  const byDir = (f: string, kw: string) =>
    f
      .split("/")
      .slice(0, -1)
      .some((d) => dirRe(kw).test(d));
  const byName = (f: string, kw: string) => nameRe(kw).test(f.slice(f.lastIndexOf("/") + 1));
  for (const match of [byDir, byName]) {
    const found = new Map<string, string[]>();
    for (const [split, keywords] of SPLIT_KEYWORDS) {
      const got = [...files].sort().filter((f) => keywords.some((kw) => match(f, kw)));
      if (got.length > 0) found.set(split, got);
    }
    if (found.size > 0) return found;
  }
  // No files: a train split with none, which keepInferredFormat drops.
  return new Map([["train", [...files].sort()]]);
}

/** train, validation, test first, then other split names alphabetically (as `datasets` lists them). */
function orderSplits(splits: Map<string, string[]>): Map<string, string[]> {
  const std = SPLIT_KEYWORDS.map(([s]) => s);
  // Stryker disable next-line MethodExpression: without the filter the standard names come again after the others, and a Map keeps each key where it was first set
  const names = [...std.filter((s) => splits.has(s)), ...[...splits.keys()].filter((s) => !std.includes(s)).sort()];
  return new Map(names.map((s) => [s, splits.get(s)!]));
}

/**
 * The format `datasets` would infer (the most common data extension among the files; ties go to
 * the first seen) and the files of that format; `unsupported` when that format is not one pbrl reads.
 */
function keepInferredFormat(splits: Map<string, string[]>): { splits: Map<string, string[]>; unsupported: string[] } {
  const counts = new Map<string, number>();
  for (const files of splits.values()) for (const f of files) if (isDataLike(f)) counts.set(dataExtension(f), (counts.get(dataExtension(f)) ?? 0) + 1);
  let best: string | undefined;
  for (const [ext, n] of counts) if (best === undefined || n > counts.get(best)!) best = ext;
  // Stryker disable next-line ConditionalExpression: without it an undefined best finds no format below and reports the same empty unsupported list (counts is empty)
  if (best === undefined) return { splits: new Map(), unsupported: [] };
  const format: DataFormat | undefined = DATA_EXTENSIONS[best];
  if (format === undefined) return { splits: new Map(), unsupported: [...counts.keys()].filter((e) => DATA_EXTENSIONS[e] === undefined) };
  const kept = new Map<string, string[]>();
  for (const [split, files] of splits) {
    const same = files.filter((f) => DATA_EXTENSIONS[dataExtension(f)] === format);
    if (same.length > 0) kept.set(split, same);
  }
  return { splits: kept, unsupported: [] };
}

interface YamlConfig {
  config_name?: unknown;
  data_files?: unknown;
  data_dir?: unknown;
  default?: unknown;
}

/** The `configs:` list of a dataset card's YAML header, or undefined when it has none. */
export function cardConfigs(readme: string | undefined, where: string): YamlConfig[] | undefined {
  // Stryker disable next-line ConditionalExpression: exec(undefined) tests the text "undefined", which has no YAML header either
  const m = readme === undefined ? null : /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---\s*(?:\r?\n|$)/.exec(readme);
  if (m === null) return undefined;
  let meta: unknown;
  try {
    meta = YAML.parse(m[1]!);
  } catch (err) {
    throw new DatasetError("layout", `${where}: the YAML header of README.md is not valid YAML (${(err as Error).message}); fix the dataset card`);
  }
  // A scalar header (a string, number or boolean) has no "configs" property either.
  const configs = (meta as Record<string, unknown> | null)?.["configs"];
  if (configs === undefined || configs === null) return undefined;
  if (!Array.isArray(configs) || !configs.every((c) => c !== null && typeof c === "object")) {
    throw new DatasetError("layout", `${where}: README.md's configs must be a list of {config_name, data_files}`);
  }
  return configs as YamlConfig[];
}

const strings = (v: unknown): string[] | undefined =>
  typeof v === "string" ? [v] : Array.isArray(v) && v.every((x) => typeof x === "string") ? (v as string[]) : undefined;

/** A config's data_files as split -> patterns: a pattern or list (all "train"), a list of {split, path}, or a mapping. */
function dataFilesPatterns(dataFiles: unknown, where: string): Map<string, string[]> {
  const plain = strings(dataFiles);
  if (plain !== undefined) return new Map([["train", plain]]);
  const out = new Map<string, string[]>();
  const add = (split: unknown, p: unknown) => {
    const ps = strings(p);
    if (typeof split !== "string" || ps === undefined)
      throw new DatasetError(
        "layout",
        `${where}: README.md's data_files entries need a split name and a path or list of paths; got ${JSON.stringify({ split, path: p })}`,
      );
    // Stryker disable next-line ArrayDeclaration: a pattern put first without glob characters or an extension matches no data file, so keepInferredFormat drops what it finds
    out.set(split, [...(out.get(split) ?? []), ...ps]);
  };
  if (Array.isArray(dataFiles))
    for (const e of dataFiles) add((e as Record<string, unknown> | null)?.["split"], (e as Record<string, unknown> | null)?.["path"]);
  // data_files null never gets here (datasetSplits takes it as absent); arrays are handled above.
  else if (dataFiles instanceof Object) for (const [split, p] of Object.entries(dataFiles)) add(split, p);
  else throw new DatasetError("layout", `${where}: README.md's data_files must be a path, a list, or a list of {split, path}`);
  return out;
}

/** Picks a subset by name, else the one marked default, else "default", else the only one. */
function pickConfig(names: readonly string[], isDefault: (name: string) => boolean, wanted: string | undefined, where: string, configKey: string): string {
  if (wanted !== undefined) {
    if (names.includes(wanted)) return wanted;
    throw new DatasetError(
      "layout",
      `${where} has no subset (config) named ${JSON.stringify(wanted)}; it has ${names.map((n) => JSON.stringify(n)).join(", ")}: set ${configKey} to one of them`,
    );
  }
  const chosen = names.find(isDefault) ?? (names.includes("default") ? "default" : names.length === 1 ? names[0] : undefined);
  if (chosen === undefined)
    throw new DatasetError(
      "layout",
      `${where} has ${names.length} subsets (configs) and none is the default: set ${configKey} to one of ${names.map((n) => JSON.stringify(n)).join(", ")}`,
    );
  return chosen;
}

/**
 * The splits of one subset of a dataset folder or repository. `files` are all its files
 * (relative POSIX paths), `readme` the text of its README.md if any, `config` the subset asked
 * for; `where` and `configKey` name the dataset and the run key in messages.
 */
export function datasetSplits(
  files: readonly string[],
  readme: string | undefined,
  config: string | undefined,
  where: string,
  configKey: string,
): ConfigSplits {
  const candidates = files.filter(isCandidate);
  const configs = cardConfigs(readme, where);
  if (configs === undefined) {
    // Stryker disable next-line ArrowFunction,BooleanLiteral: the only name is "default", which pickConfig takes as well when none is marked default
    const chosen = pickConfig(["default"], () => true, config, where, configKey);
    const { splits, unsupported } = keepInferredFormat(defaultSplits(candidates.filter(isDataLike)));
    return { config: chosen, configs: ["default"], splits, unsupported };
  }
  const names = configs.map((c) => (typeof c.config_name === "string" ? c.config_name : "default"));
  const chosen = pickConfig(names, (n) => configs[names.indexOf(n)]!.default === true, config, where, configKey);
  const spec = configs[names.indexOf(chosen)]!;
  const dir = typeof spec.data_dir === "string" ? spec.data_dir.replace(/^\.?\/+|\/+$/g, "") : "";
  const base = dir === "" ? "" : `${dir}/`;
  let splits: Map<string, string[]>;
  if (spec.data_files === undefined || spec.data_files === null) {
    // Only a data_dir: the default rules, inside that folder.
    const inside = candidates.filter((f) => f.startsWith(base) && isDataLike(f)).map((f) => f.slice(base.length));
    splits = new Map([...defaultSplits(inside)].map(([s, fs]) => [s, fs.map((f) => base + f)]));
  } else {
    splits = new Map([...dataFilesPatterns(spec.data_files, where)].map(([s, ps]) => [s, resolvePatterns(files, ps, base)]));
  }
  const kept = keepInferredFormat(splits);
  return { config: chosen, configs: names, ...kept };
}

/**
 * The splits of one subset in the Hub's Parquet conversion (branch refs/convert/parquet):
 * {config}/{split}/NNNN.parquet, {config}/partial-{split}/NNNN.parquet (a conversion of the first
 * rows of a large split), or the older {config}/{name}-{split}[-NNNNN-of-NNNNN].parquet.
 */
export function convertedSplits(files: readonly string[], config: string | undefined, where: string, configKey: string): ConfigSplits {
  const parquet = files.filter((f) => f.endsWith(".parquet") && !hidden(f)).sort();
  // Subsets are the top-level folders (a Parquet file at the top belongs to none).
  const names = [...new Set(parquet.filter((f) => f.includes("/")).map((f) => f.split("/")[0]!))];
  if (names.length === 0) return { config: config ?? "default", configs: [], splits: new Map(), unsupported: [] };
  // Stryker disable next-line ArrowFunction: a find callback returning undefined finds nothing, as one returning false does
  const chosen = pickConfig(names, () => false, config, `${where} (its Parquet conversion)`, configKey);
  const splits = new Map<string, string[]>();
  for (const f of parquet.filter((f) => f.startsWith(`${chosen}/`))) {
    const parts = f.split("/");
    const split =
      parts.length === 3 ? parts[1]!.replace(/^partial-/, "") : /-(\w+(?:\.\w+)*?)(?:-[0-9]{5}-of-[0-9]{5})?\.parquet$/.exec(parts[parts.length - 1]!)?.[1];
    if (split !== undefined) splits.set(split, [...(splits.get(split) ?? []), f]);
  }
  return { config: chosen, configs: names, splits: orderSplits(splits), unsupported: [] };
}
