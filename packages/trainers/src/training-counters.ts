/** Counters that run across epochs (and rounds): what the logs and the eval schedule count. */
export interface TrainingCounters {
  updates: number;
  envStep: number;
  /** Step of the last train metrics line, for the logging_steps gate. */
  lastLogged: number | undefined;
}

export const freshCounters = (): TrainingCounters => ({ updates: 0, envStep: 0, lastLogged: undefined });

/**
 * CoMLRL's train-logging gate (`_should_log_train`): always with logging_steps ≤ 1; otherwise the
 * first line, then whenever `step` has advanced logging_steps past the last logged one. Records
 * the step when it lets a line through.
 */
export function passesLoggingGate(counters: TrainingCounters, step: number, loggingSteps: number): boolean {
  // Stryker disable next-line ConditionalExpression: with nothing logged yet, step - undefined is NaN and NaN < loggingSteps is false, so the first line passes either way
  if (loggingSteps > 1 && counters.lastLogged !== undefined && step - counters.lastLogged < loggingSteps) return false;
  counters.lastLogged = step;
  return true;
}
