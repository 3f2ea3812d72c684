/**
 * How a `key=value` argument's value is read. YAML alone would turn `formatters=Text: {txt}` into
 * a mapping and `output_dir=1e3` into a number; so the key's own schema decides: a value the key
 * accepts as YAML (a number, true/false, null, a [flow, list], a {flow: mapping}) is read as YAML,
 * else a string the key accepts is kept exactly as written (a value in YAML quotes loses them),
 * else the YAML reading goes on to validation, whose error then shows it.
 */
import { TRAINER_CONFIGS } from "@pbrl/trainers";
import YAML from "yaml";
import { RUN_KEY_DOCS } from "./run-keys.js";

type Accepts = (value: unknown) => boolean;

/** Every trainer's fields; a field takes the same kinds of value (string, number, …) in all. */
const FIELDS = Object.assign({}, ...Object.values(TRAINER_CONFIGS).map((c) => c.fields)) as Record<string, { safeParse: (v: unknown) => { success: boolean } }>;

function acceptsOf(key: string): Accepts | undefined {
  if (Object.hasOwn(RUN_KEY_DOCS, key)) return RUN_KEY_DOCS[key]!.accepts;
  const schema = Object.hasOwn(FIELDS, key) ? FIELDS[key] : undefined;
  return schema === undefined ? undefined : (v) => schema.safeParse(v).success;
}

/** The YAML reading: "" and None (Python's spelling, as in the seed's key=value examples) are null. */
function yamlValue(raw: string): unknown {
  if (raw === "" || raw === "None") return null;
  try {
    return YAML.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

/** The value of `key=raw` (an unknown key is read as YAML; validation names it). */
export function overrideValue(key: string, raw: string): unknown {
  const parsed = yamlValue(raw);
  const accepts = acceptsOf(key);
  if (accepts === undefined) return parsed;
  if (typeof parsed !== "string" && accepts(parsed)) return parsed;
  // A value in YAML quotes ("…" or '…') is a YAML string: the quotes go, as in the file.
  if (typeof parsed === "string" && /^\s*(["']).*\1\s*$/s.test(raw)) return parsed;
  return accepts(raw) ? raw : parsed;
}

/** Splits `key=value` (the key trimmed, the value exactly as given); undefined when there is no key. */
export function splitOverride(arg: string): { key: string; raw: string } | undefined {
  const eq = arg.indexOf("=");
  if (eq <= 0) return undefined;
  const key = arg.slice(0, eq).trim();
  return key === "" ? undefined : { key, raw: arg.slice(eq + 1) };
}
