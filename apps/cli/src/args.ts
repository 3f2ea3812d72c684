import { parseArgs, type ParseArgsConfig } from "node:util";
import { closestName as closest } from "@pbrl/trainers";
import { UsageError } from "./io.js";

export { closest };

type Options = NonNullable<ParseArgsConfig["options"]>;
type Parsed<O extends Options> = ReturnType<typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: false }>>;

/** Parses `--flag value` options strictly; unknown flags name the closest known one. */
export function parseFlags<O extends Options>(argv: string[], options: O, command: string): Parsed<O> {
  return withFlagErrors(command, options, () => parseArgs({ args: argv, options, strict: true, allowPositionals: false }));
}

/** parseFlags for commands that also take positional arguments, before or after the flags. */
export function parseFlagsAndArgs<O extends Options>(argv: string[], options: O, command: string): { values: Parsed<O>["values"]; positionals: string[] } {
  return withFlagErrors(command, options, () => parseArgs({ args: argv, options, strict: true, allowPositionals: true }));
}

function withFlagErrors<T>(command: string, options: Options, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    const msg = (err as Error).message;
    const unknown = /Unknown option '--?([^']+)'/.exec(msg)?.[1];
    if (unknown !== undefined) {
      const near = closest(unknown, Object.keys(options));
      throw new UsageError(`pbrl ${command}: unknown option --${unknown}${near ? ` (did you mean --${near}?)` : ""}`);
    }
    throw new UsageError(`pbrl ${command}: ${msg}`);
  }
}

export function requireString(v: string | boolean | (string | boolean)[] | undefined, flag: string, command: string): string {
  if (typeof v !== "string" || v === "") throw new UsageError(`pbrl ${command}: --${flag} is required`);
  return v;
}

export function optNumber(v: unknown, flag: string, command: string, check: (n: number) => boolean = Number.isFinite, what = "a number"): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== "string" || v.trim() === "" || !check(n)) throw new UsageError(`pbrl ${command}: --${flag} must be ${what}, got ${JSON.stringify(v)}`);
  return n;
}

export const isNonNegInt = (n: number) => Number.isInteger(n) && n >= 0;
export const isPosInt = (n: number) => Number.isInteger(n) && n > 0;
