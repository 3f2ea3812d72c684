/**
 * Worker thread entry: loads the run file's reward and formatters modules and answers calls
 * (protocol.ts). A reward or formatter that loops or computes for minutes (or a module whose
 * top-level code does) blocks only this thread; the CLI's thread keeps handling signals and
 * timeouts, and can terminate this one.
 */
import { pathToFileURL } from "node:url";
import { parentPort, workerData } from "node:worker_threads";
import { userFrame } from "./frames.js";
import type { CallReply, CallRequest, FormattersShape, ProcessOutcome, ReadyMessage, RewardWorkerData } from "./protocol.js";

type Fn = (...args: unknown[]) => unknown;

const port = parentPort!;
const data = workerData as RewardWorkerData;
const send = (m: ReadyMessage | CallReply) => port.postMessage(m);
const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * What user code threw, as it can cross to the CLI's thread: the value itself when structured
 * clone takes it (Errors, plain objects, cycles), else its text; the CLI words it (errorText), so a
 * thrown `{code: 1}` reads as JSON there, not "[object Object]".
 */
function crossing(e: unknown): unknown {
  try {
    structuredClone(e);
    return e;
  } catch {
    return String(e);
  }
}

const isFunction = (f: unknown): f is Fn => typeof f === "function";
/** formatters: one function for every agent, or a list of them. */
const isFormatters = (f: unknown): f is Fn | Fn[] => isFunction(f) || (Array.isArray(f) && f.length > 0 && f.every(isFunction));

/** `key` exported by `file` (or its default export), and the module; undefined after a load error, reported. */
async function load<F>(
  file: string,
  key: "reward_func" | "reward_processor" | "formatters",
  accepts: (f: unknown) => f is F,
): Promise<{ f: F; mod: Record<string, unknown> } | undefined> {
  try {
    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    const f = mod[key] ?? mod["default"];
    if (accepts(f)) return { f, mod };
    send({ type: "load-error", key, file, name: "TypeError", message: "", missing: true });
  } catch (e) {
    const frame = e instanceof Error ? userFrame(e.stack) : undefined;
    send({
      type: "load-error",
      key,
      file,
      name: e instanceof Error ? e.name : "Error",
      message: messageOf(e),
      missing: false,
      ...(frame !== undefined ? { frame } : {}),
    });
  }
  return undefined;
}

/** A primitive crosses as it is (the trainer reports a non-number); anything else as its text. */
const cloneable = (v: unknown) => (v === null || ["number", "string", "boolean", "undefined", "bigint"].includes(typeof v) ? v : String(v));

function processAll(processor: Fn, values: ArrayLike<unknown>): (ProcessOutcome | null)[] {
  return Array.from(values, (v) => {
    // The trainer calls reward_processor only on finite numbers (it stops on anything else first).
    if (typeof v !== "number" || !Number.isFinite(v)) return null;
    try {
      return { value: cloneable(processor(v)) };
    } catch (e) {
      return { threw: crossing(e) };
    }
  });
}

async function answer(req: CallRequest, reward: Fn | undefined, processor: Fn | undefined, formatters: Fn | Fn[] | undefined): Promise<void> {
  try {
    if (req.kind === "process") {
      send({ type: "result", id: req.id, returned: null, processed: processAll(processor!, req.values) });
      return;
    }
    if (req.kind === "format") {
      const formatter = Array.isArray(formatters) ? formatters[req.index]! : formatters!;
      const prompt = await formatter(req.item);
      try {
        send({ type: "result", id: req.id, returned: prompt });
      } catch (e) {
        send({
          type: "error",
          id: req.id,
          thrown: `it returned a value that cannot be sent back from the worker thread (${messageOf(e)}); return the prompt as a string, or a list of {role, content} messages`,
        });
      }
      return;
    }
    const returned = await reward!(req.completions, req.context);
    const list = Array.isArray(returned) || ArrayBuffer.isView(returned) ? (returned as unknown as ArrayLike<unknown>) : undefined;
    const processed = processor !== undefined && list !== undefined ? processAll(processor, list) : undefined;
    try {
      send({ type: "result", id: req.id, returned, ...(processed !== undefined ? { processed } : {}) });
    } catch (e) {
      send({
        type: "error",
        id: req.id,
        thrown: `it returned a value that cannot be sent back from the reward worker thread (${messageOf(e)}); return an array of numbers`,
      });
    }
  } catch (e) {
    send({ type: "error", id: req.id, thrown: crossing(e) });
  }
}

const loaded = data.rewardModule !== undefined ? await load(data.rewardModule, "reward_func", isFunction) : undefined;
const reward = loaded?.f;
// A reward module may export its reward_processor beside reward_func; a processor module wins.
const own = loaded?.mod["reward_processor"];
const processor =
  data.processorModule !== undefined
    ? (await load(data.processorModule, "reward_processor", isFunction))?.f
    : typeof own === "function"
      ? (own as Fn)
      : undefined;
const formatters = data.formattersModule !== undefined ? (await load(data.formattersModule, "formatters", isFormatters))?.f : undefined;
const failed =
  (data.rewardModule !== undefined && reward === undefined) ||
  (data.processorModule !== undefined && processor === undefined) ||
  (data.formattersModule !== undefined && formatters === undefined);
if (!failed) {
  const range = (reward as { reward_range?: unknown } | undefined)?.reward_range;
  const rewardRange = Array.isArray(range) && range.length === 2 && range.every((x) => typeof x === "number") ? (range as [number, number]) : undefined;
  const shape: FormattersShape | undefined =
    formatters === undefined ? undefined : Array.isArray(formatters) ? { shared: false, count: formatters.length } : { shared: true, count: 1 };
  port.on("message", (req: CallRequest) => void answer(req, reward, processor, formatters));
  send({
    type: "ready",
    hasReward: reward !== undefined,
    hasProcessor: processor !== undefined,
    ...(rewardRange !== undefined ? { rewardRange } : {}),
    ...(shape !== undefined ? { formatters: shape } : {}),
  });
}
