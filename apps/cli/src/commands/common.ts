import {
  currentBackend,
  decideBackend,
  MemoryBudgetError,
  parseBackendName,
  useBackendSetting,
  type BackendNeeds,
  type BackendSetting,
} from "@pbrl/core-tensor";
import { loadPretrained, type Pretrained } from "@pbrl/models";
import { UsageError, type CliIO } from "../io.js";

/** --backend: every command that computes accepts it. */
export const backendFlag = { backend: { type: "string" } } as const;

/** The setting --backend gives: its backend, or "auto" (core-tensor's backend rule) without it. */
function settingOf(value: string | undefined): BackendSetting {
  return value === undefined ? "auto" : parseBackendName(value);
}

/**
 * Selects the backend (--backend, else as the backend rule decides: PBRL_BACKEND, else native
 * when built and wasm otherwise) and says which path runs, on stderr so --json output stays clean.
 */
export async function startBackend(value: string | undefined, io: CliIO, needs: BackendNeeds = {}): Promise<void> {
  const info = await useBackendSetting(settingOf(value), needs);
  io.err(`pbrl: ${info.description}\n`);
}

/**
 * Runs `work` (load a model, compute) on the backend startBackend chooses. When `work` does not
 * fit that backend's memory (a MemoryBudgetError found before anything was allocated) and the
 * backend rule moves such a run elsewhere (no --backend or PBRL_BACKEND, native or wasm, libtorch
 * built), runs it again there, as the trainers' backend="auto" does.
 */
export async function onChosenBackend<T>(value: string | undefined, io: CliIO, command: string, work: () => Promise<T>): Promise<T> {
  await startBackend(value, io);
  try {
    return await work();
  } catch (e) {
    const current = currentBackend()?.name;
    if (!(e instanceof MemoryBudgetError) || e.details.afterCrash || current === undefined) throw e;
    const needs: BackendNeeds = { outgrew: { backend: current, bytes: e.details.neededBytes } };
    const moved = decideBackend(settingOf(value), needs).name;
    if (moved === current) throw e;
    io.err(`pbrl ${command}: does not fit the ${current} backend's tensor memory; running on ${moved}\n`);
    await startBackend(value, io, needs);
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
