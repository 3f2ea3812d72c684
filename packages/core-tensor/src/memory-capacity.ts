/**
 * How much tensor memory the active backend can hold, and the typed error pbrl raises when a
 * workload would not fit (or, as a second line of defence, when a kernel ran out of heap anyway).
 *
 * `wasm` keeps every tensor in one WebAssembly heap, and `native` is a second wasm-backend
 * instance with a heap of its own: a 32-bit heap, so at most 4 GiB − 64 KiB each, whatever the
 * machine has. When it is full, tfjs-backend-wasm 4.22 does not throw a JavaScript error: its
 * malloc fails inside a kernel, which aborts the module (`RuntimeError: Aborted()`, after which
 * every later call on that backend aborts too) or writes past the heap (`memory access out of
 * bounds`; on native the addon's own bounds check, "… outside the heap of N bytes"). Hence the
 * estimate before the work (see @pbrl/models' memory-estimate.ts) and the translation here.
 *
 * Backends without such a limit (`cpu`, `tensorflow`, and by default any backend nobody
 * registered an answer for, e.g. `libtorch`) report no limit.
 */
import { tf } from "./tf.js";

/** The largest wasm heap: 65535 pages of 64 KiB (emscripten's getHeapMax() in tfjs-backend-wasm 4.22). */
export const WASM_HEAP_MAX_BYTES = 4294901760;

/** What a backend answers about its tensor memory: a byte limit, or undefined for none pbrl knows of. */
export interface BackendMemoryLimit {
  limitBytes: number | undefined;
  /** Why, for messages: "its WebAssembly heap holds at most 4.00 GB, whatever the machine has". */
  why: string;
}

/** The active backend's tensor memory, now. */
export interface MemoryCapacity {
  backend: string;
  /** Bytes the backend's tensor memory can hold in all; undefined: no limit (host memory). */
  limitBytes: number | undefined;
  /** Bytes of live tensors (tf.memory().numBytes: every backend's, so an upper bound for this one). */
  usedBytes: number;
  /** limitBytes − usedBytes, or Infinity without a limit. */
  availableBytes: number;
  why: string;
}

const providers = new Map<string, () => BackendMemoryLimit>();

const wasmHeap = (): BackendMemoryLimit => ({
  limitBytes: WASM_HEAP_MAX_BYTES,
  why: `its WebAssembly heap holds at most ${formatBytes(WASM_HEAP_MAX_BYTES)}, whatever the machine has`,
});
providers.set("wasm", wasmHeap);
providers.set("native", wasmHeap);

/**
 * Lets a backend say how much tensor memory it can hold (a backend without an answer has no
 * limit). Registering again replaces the earlier answer.
 */
export function registerMemoryLimit(backend: string, provider: () => BackendMemoryLimit): void {
  providers.set(backend, provider);
}

/** The tensor memory `backend` (default: the active one) can hold, minus what live tensors hold. */
export function memoryCapacity(backend: string = tf.getBackend()): MemoryCapacity {
  const answer = providers.get(backend)?.() ?? { limitBytes: undefined, why: "it keeps tensors in host memory, with no limit of its own" };
  const usedBytes = tf.memory().numBytes;
  const limit = answer.limitBytes;
  return {
    backend,
    limitBytes: limit,
    usedBytes,
    availableBytes: limit === undefined ? Number.POSITIVE_INFINITY : Math.max(0, limit - usedBytes),
    why: answer.why,
  };
}

/** "3.42 GB", "512.0 MB", "12 KB": binary units (1 GB = 2³⁰ bytes), the way the heap limit is usually quoted. */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return "unlimited";
  const gb = bytes / 2 ** 30;
  if (gb >= 1) return `${gb.toFixed(2)} GB`;
  const mb = bytes / 2 ** 20;
  if (mb >= 1) return `${mb.toFixed(1)} MB`;
  return `${Math.ceil(bytes / 1024)} KB`;
}

/**
 * A workload that does not fit in the backend's tensor memory: either found before the work (the
 * estimate exceeds the capacity; nothing was allocated and the backend is unharmed) or after a
 * kernel ran out of heap (`afterCrash`; that backend instance may no longer be usable).
 */
export class MemoryBudgetError extends Error {
  override name = "MemoryBudgetError";

  constructor(
    message: string,
    readonly details: { neededBytes?: number; availableBytes?: number; backend: string; afterCrash: boolean },
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const WASM_CRASH = [/^Aborted\(/, /memory access out of bounds/];
// The native addon's bounds check fails only when an output was allocated outside the heap,
// which happens only when the heap could not grow to hold it.
const NATIVE_HEAP_CHECK = /^pbrl_native: .* outside the heap of \d+ bytes/;

/** Whether `err` is how a wasm or native kernel dies when the heap is full. */
export function isHeapExhaustion(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === "RuntimeError") return WASM_CRASH.some((re) => re.test(err.message));
  return NATIVE_HEAP_CHECK.test(err.message);
}

/**
 * The {@link MemoryBudgetError} for a kernel that ran out of heap during `what` ("generation",
 * "a training step", "loading the model"), or `err` itself when it is something else.
 */
export function translateHeapExhaustion(err: unknown, what: string): unknown {
  if (err instanceof MemoryBudgetError || !isHeapExhaustion(err)) return err;
  const e = err as Error;
  // Only wasm and native run wasm kernels; the active one is the one that crashed.
  const backend = tf.getBackend();
  // Measured: after a wasm crash every later call on that instance fails too, however small; the
  // addon's bounds check stops before writing, but the heap is full all the same.
  const state =
    e.name === "RuntimeError"
      ? `this ${backend} backend instance is no longer usable (later calls on it fail too): restart the process`
      : `this ${backend} backend instance's heap is full and may hold a failed allocation: restart the process`;
  const message =
    `the ${backend} backend's WebAssembly heap (at most 4 GB) ran out of memory during ${what} (${e.name}: ${e.message.split("\n")[0]}); ${state}. ` +
    "Then give the work less at once: a smaller batch (train_batch_size, generation_batch_size, fewer num_return_sequences or max_new_tokens, shorter prompts), " +
    "or a backend without the 4 GB limit (backend=libtorch, or backend=cpu, which is much slower). See docs/memory.md.";
  return new MemoryBudgetError(message, { backend, afterCrash: true }, { cause: err });
}

/** Runs `fn`, turning a heap exhaustion inside it into a {@link MemoryBudgetError} (sync or async). */
export function guardHeap<T>(what: string, fn: () => T): T {
  let result: T;
  try {
    result = fn();
  } catch (err) {
    throw translateHeapExhaustion(err, what);
  }
  if (result instanceof Promise) {
    return result.catch((err: unknown) => {
      throw translateHeapExhaustion(err, what);
    }) as T;
  }
  return result;
}
