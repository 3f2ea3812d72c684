/**
 * pbrl's exit codes (docs/errors.md): scripts and schedulers tell a finished run from a run to
 * fix and re-launch, from one to resume, from a failure to report.
 */
export const EXIT = {
  /** The command did what it was asked. */
  ok: 0,
  /** Anything else: a bug, a crash, a diverged run (non-finite loss), a failing remote API. */
  failed: 1,
  /** Bad configuration or input: the message says what to change; nothing was lost. */
  badInput: 2,
  /** Stopped by SIGINT/SIGTERM (after the round in progress, with a checkpoint to resume from; or while the run started, before it wrote anything). */
  stopped: 130,
} as const;

/**
 * Errors the packages throw for input the user can fix, by class name. Matched by name, not by
 * `instanceof`, so the CLI needs no import of every package's classes, and errors that other
 * packages add (PromptTooLongError, RunDirError, RunLockError) are mapped before they exist.
 * Subclasses count: a RewardTimeoutError extending RewardError is bad input too.
 */
export const BAD_INPUT_ERRORS: ReadonlySet<string> = new Set([
  // the command line and configs
  "UsageError",
  "ConfigError",
  "RlAlgorithmError",
  // files: datasets, run files, round files, replay
  "PairFileError",
  "EmptyDatasetError",
  "ReplayError",
  "RetokenizeError",
  // checkpoints, resume and output folders
  "CheckpointError",
  "RunDirError",
  "RunLockError",
  // models, tokenizers, agents
  "AgentSourceError",
  "CriticSourceError",
  "SafetensorsError",
  "WeightLoadError",
  "ModelSourceError",
  "TokenizerLoadError",
  "ModelConfigError",
  "VocabularyMismatchError",
  "ContextLengthError",
  // API comparator settings and the key variable they name
  "ApiSettingsError",
  // pbrl report: a folder that holds no run, or an --out it will not overwrite
  "ReportError",
  "PromptTooLongError",
  // user code: formatters and rewards
  "FormatterError",
  "RewardError",
  // the machine: backend, devices, precision, memory, and a disk that refuses a write (full, quota, read-only)
  "DeviceUnavailableError",
  "BackendUnavailableError",
  "PrecisionUnavailableError",
  "MemoryBudgetError",
  "FileWriteError",
]);

/** Whether `err` (or a class it inherits from) is one of {@link BAD_INPUT_ERRORS}. */
export function isBadInput(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (BAD_INPUT_ERRORS.has(err.name)) return true;
  for (
    let proto: object | null = Object.getPrototypeOf(err) as object | null;
    proto !== null && proto !== Error.prototype;
    proto = Object.getPrototypeOf(proto) as object | null
  ) {
    const ctor = (proto as { constructor?: { name?: unknown } }).constructor;
    if (typeof ctor?.name === "string" && BAD_INPUT_ERRORS.has(ctor.name)) return true;
  }
  return false;
}

/** The exit code for an error that ended a command; a signal that stopped a run while it started (RunStoppedError) is 130. */
export function exitCodeFor(err: unknown): number {
  if (err instanceof Error && err.name === "RunStoppedError") return EXIT.stopped;
  return isBadInput(err) ? EXIT.badInput : EXIT.failed;
}
