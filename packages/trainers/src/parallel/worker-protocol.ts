/**
 * Messages between a trainer and its agent workers (parallel_training="mp"). Every request
 * carries an id; the worker answers each with the same id, in order.
 */
import type { AdamWState, BackendName, ComputePrecision, HostTensor, RngState } from "@pbrl/core-tensor";
import type { MadpoUpdateOptions } from "@pbrl/dpo";
import type { CausalLMConfig, ScoringItem } from "@pbrl/models";
import type { AgentPairTokens, GenerationSettings } from "@pbrl/preference-data";
import type { PolicyStepJob } from "@pbrl/rl-backends";
import type { ReplicaGroupSpec } from "./replica-gradients.js";

export type WorkerRequest =
  /** Takes the agent's weights (and optimizer state, to train), replacing what the worker held (→ the device it placed them on). */
  | {
      kind: "load";
      backend: BackendName;
      precision: ComputePrecision;
      device: string;
      /** ddp: `device` is an agent_devices entry, placed by the rank that holds the worker (rankDevice). */
      perRank?: boolean;
      config: CausalLMConfig;
      weights: Map<string, HostTensor>;
      optimizer: AdamWState | undefined;
      padTokenId: number;
      /** ddp with replicas: the agent's replica group, which the worker joins once (the first load that names it). */
      replica?: ReplicaGroupSpec;
    }
  /** The agent's candidates, as sampleAgentRows gives them here, from the given stream state (→ number[][]). */
  | { kind: "generate"; promptIds: number[][]; n: number; settings: GenerationSettings; eosTokenIds: number[]; rng: RngState }
  /** The agent's margins on its pairs without gradients (→ number[]). */
  | { kind: "margins"; pairs: AgentPairTokens[]; scoreLastToken: boolean }
  /**
   * One optimizer step on the agent's live margins plus the others' detached sum (→ undefined).
   * `total` (replicas): the pairs are this replica's share of a batch of that many, and the
   * replicas sum their gradients before the step.
   */
  | { kind: "step"; pairs: AgentPairTokens[]; others: Float32Array; index: number; options: MadpoUpdateOptions; total?: number }
  /** One REINFORCE-family optimizer step on the agent's rows and advantages (→ PolicyStepResult); `total` as for "step". */
  | { kind: "policyStep"; index: number; job: PolicyStepJob; total?: number }
  /** The agent's per-token log-probs on rows, without gradients (→ number[][]). */
  | { kind: "tokenLogProbs"; rows: ScoringItem[]; batchSize: number }
  /** The agent's weights, and its optimizer state when asked (→ AgentSnapshot). */
  | { kind: "snapshot"; optimizer: boolean };

export interface AgentSnapshot {
  weights: Map<string, HostTensor>;
  optimizer: AdamWState | undefined;
}

export type WorkerReply =
  { id: number; ok: true; value: unknown } | { id: number; ok: false; error: { name: string; message: string; stack: string | undefined } };

/** Buffers a message can hand over instead of copying (the sender never reads them again). */
export function transferables(weights: ReadonlyMap<string, HostTensor>, optimizer: AdamWState | undefined): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const t of weights.values()) out.add(t.data.buffer as ArrayBuffer);
  for (const m of [optimizer?.expAvg, optimizer?.expAvgSq]) for (const a of m?.values() ?? []) out.add(a.buffer as ArrayBuffer);
  return [...out];
}
