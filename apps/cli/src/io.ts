/** Where a command writes: injectable so tests can capture output in-process. */
export interface CliIO {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Whether stderr is an interactive terminal (progress bars draw only then). */
  isTTY: boolean;
}

export const processIO: CliIO = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
  isTTY: process.stderr.isTTY === true,
};

/** A user mistake on the command line: printed without a stack trace, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}
