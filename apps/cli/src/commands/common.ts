import { currentBackend, loadLibtorchAddon, MemoryBudgetError, nativeThreads, parseBackendName, useBackend, useDefaultBackend } from "@pbrl/core-tensor";
import { loadPretrained, type Pretrained } from "@pbrl/models";
import { UsageError, type CliIO } from "../io.js";

/** --backend: every command that computes accepts it. */
export const backendFlag = { backend: { type: "string" } } as const;

/**
 * Selects the backend (--backend, else PBRL_BACKEND, else native when built and wasm otherwise)
 * and says which path runs, on stderr so --json output stays clean.
 */
export async function startBackend(value: string | undefined, io: CliIO): Promise<void> {
  const info = value !== undefined ? await useBackend(parseBackendName(value)) : await useDefaultBackend();
  io.err(`pbrl: ${info.description}\n`);
}

/**
 * Runs `work` (load a model, compute) on the backend startBackend chooses. Without --backend or
 * PBRL_BACKEND, when that is native or wasm and `work` does not fit its 4 GB heap (a
 * MemoryBudgetError found before anything was allocated), runs it again on libtorch when that is
 * built, as the trainers' backend="auto" does.
 */
export async function onChosenBackend<T>(value: string | undefined, io: CliIO, command: string, work: () => Promise<T>): Promise<T> {
  await startBackend(value, io);
  const forced = value !== undefined || (process.env["PBRL_BACKEND"] ?? "") !== "";
  try {
    return await work();
  } catch (e) {
    const heapBound = currentBackend()?.name === "native" || currentBackend()?.name === "wasm";
    if (forced || !heapBound || !(e instanceof MemoryBudgetError) || e.details.afterCrash || !loadLibtorchAddon(nativeThreads()).ok) throw e;
    io.err(`pbrl ${command}: does not fit the ${currentBackend()!.name} backend's tensor memory; running on libtorch\n`);
    await startBackend("libtorch", io);
    return work();
  }
}

export async function loadWithTokenizer(source: string, command: string): Promise<Pretrained & { tokenizer: NonNullable<Pretrained["tokenizer"]> }> {
  const p = await loadPretrained(source);
  if (p.tokenizer === undefined) {
    p.model.dispose();
    throw new UsageError(`pbrl ${command}: ${p.dir} has no tokenizer.json, which ${command} needs to read text`);
  }
  return p as Pretrained & { tokenizer: NonNullable<Pretrained["tokenizer"]> };
}
