/**
 * Worker thread entry: loads the run file's reward modules and answers calls (protocol.ts). A
 * reward that loops or computes for minutes blocks only this thread; the CLI's thread keeps
 * handling signals and timeouts, and can terminate this one.
 */
import { pathToFileURL } from "node:url";
import { parentPort, workerData } from "node:worker_threads";
import { userFrame } from "./frames.js";
import type { CallReply, CallRequest, ProcessOutcome, ReadyMessage, RewardWorkerData } from "./protocol.js";

type Fn = (...args: unknown[]) => unknown;

const port = parentPort!;
const data = workerData as RewardWorkerData;
const send = (m: ReadyMessage | CallReply) => port.postMessage(m);
const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** `key` exported by `file` (or its default export), and the module; undefined after a load error, reported. */
async function load(file: string, key: "reward_func" | "reward_processor"): Promise<{ f: Fn; mod: Record<string, unknown> } | undefined> {
  try {
    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    const f = mod[key] ?? mod["default"];
    if (typeof f === "function") return { f: f as Fn, mod };
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
      return { threw: messageOf(e) };
    }
  });
}

async function answer(req: CallRequest, reward: Fn | undefined, processor: Fn | undefined): Promise<void> {
  try {
    if (req.kind === "process") {
      send({ type: "result", id: req.id, returned: null, processed: processAll(processor!, req.values) });
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
        message: `it returned a value that cannot be sent back from the reward worker thread (${messageOf(e)}); return an array of numbers`,
      });
    }
  } catch (e) {
    send({ type: "error", id: req.id, message: messageOf(e) });
  }
}

const loaded = data.rewardModule !== undefined ? await load(data.rewardModule, "reward_func") : undefined;
const reward = loaded?.f;
// A reward module may export its reward_processor beside reward_func; a processor module wins.
const own = loaded?.mod["reward_processor"];
const processor =
  data.processorModule !== undefined ? (await load(data.processorModule, "reward_processor"))?.f : typeof own === "function" ? (own as Fn) : undefined;
const failed = (data.rewardModule !== undefined && reward === undefined) || (data.processorModule !== undefined && processor === undefined);
if (!failed) {
  const range = (reward as { reward_range?: unknown } | undefined)?.reward_range;
  const rewardRange = Array.isArray(range) && range.length === 2 && range.every((x) => typeof x === "number") ? (range as [number, number]) : undefined;
  port.on("message", (req: CallRequest) => void answer(req, reward, processor));
  send({ type: "ready", hasReward: reward !== undefined, hasProcessor: processor !== undefined, ...(rewardRange !== undefined ? { rewardRange } : {}) });
}
