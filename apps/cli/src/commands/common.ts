import { parseBackendName, useBackend, useDefaultBackend } from "@pbrl/core-tensor";
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

export async function loadWithTokenizer(source: string, command: string): Promise<Pretrained & { tokenizer: NonNullable<Pretrained["tokenizer"]> }> {
  const p = await loadPretrained(source);
  if (p.tokenizer === undefined) {
    p.model.dispose();
    throw new UsageError(`pbrl ${command}: ${p.dir} has no tokenizer.json, which ${command} needs to read text`);
  }
  return p as Pretrained & { tokenizer: NonNullable<Pretrained["tokenizer"]> };
}
