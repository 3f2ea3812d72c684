// StopSignals: which handlers stay installed after a run, so that a second signal always exits with
// 130/143 (apps/cli/test/user-code-signals.test.ts sends real signals to a real run).
import { expect, it } from "vitest";
import { StopSignals } from "../src/stop-signals.js";

const handlers = () => [process.listenerCount("SIGINT"), process.listenerCount("SIGTERM")];

it("a run's handlers go when it ends, unless a signal stopped it: those stay for a late second signal until the next run", () => {
  const before = handlers();
  const quiet = new StopSignals(() => {});
  expect(handlers()).toEqual(before.map((n) => n + 1));
  quiet.dispose();
  expect(handlers()).toEqual(before);

  const seen: string[] = [];
  const stopped = new StopSignals((s) => seen.push(s));
  process.emit("SIGTERM", "SIGTERM");
  expect(seen).toEqual(["SIGTERM"]);
  expect(stopped.requested).toBe(true);
  stopped.dispose();
  expect(handlers()).toEqual(before.map((n) => n + 1));

  // The next run takes over: the stopped run's handler is released, not stacked.
  const next = new StopSignals(() => {});
  expect(handlers()).toEqual(before.map((n) => n + 1));
  next.dispose();
  expect(handlers()).toEqual(before);
});
