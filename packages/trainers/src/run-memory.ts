/**
 * What a whole training run holds in tensor memory at its peak, checked before anything is
 * written to output_dir: the agents' weights and AdamW moments for the whole run (plus MARLHF's
 * frozen references), and on top the largest of its phases, which run one after another: one
 * agent's generation (with the comparator's copies of the agents), one agent's training step,
 * and MARLHF's reward-model fit. Agents take their phases in turn in this thread; with
 * parallel_training="mp" each worker thread has a heap of its own, so the sum is conservative.
 */
import { formatBytes, tf } from "@pbrl/core-tensor";
import {
  activeKernelFamily,
  checkMemory,
  generationEstimate,
  memoryEstimate,
  modelSizes,
  optimizerTemporaryBytes,
  sumEstimates,
  trainingStepEstimate,
  type CausalLMConfig,
  type KernelFamily,
  type MemoryEstimate,
  type MemoryItem,
} from "@pbrl/models";
import type { ResolvedAgent } from "./agents.js";

/** The run's shape, as far as memory goes (every count per agent unless said otherwise). */
export interface RunMemoryPlan {
  /** One config per actor model. */
  agents: readonly CausalLMConfig[];
  /** The longest prompt in tokens. */
  promptTokens: number;
  maxNewTokens: number;
  /** Rows of one generate call (prompts × candidates). */
  generationRows: number;
  /** Prompts of one generate call: each prefilled once for its candidates. */
  generationPrompts: number;
  /** Sequences in one training step's forward pass. */
  trainSequences: number;
  /** Frozen copies of every agent the comparator holds while it answers (0, or 1 for current_copy, history, model). */
  comparatorCopies: number;
  /** Frozen copies of every agent kept for the whole run (MARLHF's KL references). */
  referenceCopies: number;
  /** MARLHF's reward model, fitted on a backbone like agent 0's: sequences and tokens per step. */
  rewardModel?: { sequences: number; seqLen: number };
  /** Separate critics (MAAC, IAC with use_separate_critic), each a backbone like agent 0's with its own optimizer. */
  critics: number;
  kernels: KernelFamily;
  /** The native backend's decoder keeps the KV cache in host memory. */
  nativeDecode: boolean;
  /**
   * bf16 on libtorch: every model that multiplies keeps a bfloat16 copy of its weights (2 bytes a
   * parameter) beside the float32 ones for as long as they live (libtorch's Bf16Copy); a LoRA
   * base, which never changes, is held in bfloat16 alone once its adapters are on it (storeInBf16).
   */
  bf16: boolean;
  /**
   * use_peft: the agents are LoRA views over `bases` shared frozen weight sets (the agents' configs,
   * first come first), each agent training an adapter of `adapterParameters` weights; comparator
   * copies, references and critics copy the adapter, not the base.
   */
  lora?: {
    adapterParameters: number;
    bases: number;
    largestFactor: number;
    /** Sum of the adapted modules' input and output widths in one layer (memory-estimate.ts's adapterWidths). */
    adapterWidths: number;
  };
  /**
   * libtorch: the process's resident memory besides its tensors (Node.js, libtorch's libraries,
   * the tokenizer, the reward worker), measured before the run; resident already, so in the
   * estimate's total but not in what the check asks of free memory. 0 elsewhere: wasm and native
   * count their heap, not the process.
   */
  processBytes?: number;
  /** gradient_checkpointing: the training step keeps each layer's input, not its activations. */
  gradientCheckpointing?: boolean;
}

const prefixed = (e: MemoryEstimate, prefix: string): MemoryItem[] => e.items.map((i) => ({ ...i, label: `${prefix}${i.label}` }));

function without(e: MemoryEstimate, drop: (label: string) => boolean): MemoryEstimate {
  return memoryEstimate(e.items.filter((i) => !drop(i.label)));
}

/** The phases that do not overlap, each as what it adds to the run's resident memory. */
function phases(p: RunMemoryPlan): { name: string; estimate: MemoryEstimate }[] {
  const first = p.agents[0]!;
  const largest = p.agents.reduce((a, c) => (modelSizes(c).parameters > modelSizes(a).parameters ? c : a), first);
  const copied = (c: CausalLMConfig) => (p.lora !== undefined ? p.lora.adapterParameters : modelSizes(c).parameters) * 4;
  const copyItems: MemoryItem[] =
    p.comparatorCopies > 0
      ? p.agents.map((c, i) => ({
          label: `comparator's copy of agent ${i}${p.lora !== undefined ? "'s LoRA adapter" : ""}`,
          bytes: copied(c) * p.comparatorCopies,
          pool: "tensors",
        }))
      : [];
  // LoRA: gradients of the adapter only, and the optimizer's temporaries are its factors' size.
  const adapterItems: MemoryItem[] =
    p.lora !== undefined
      ? [
          { label: "LoRA adapter gradients", bytes: p.lora.adapterParameters * 4, pool: "tensors" },
          { label: "optimizer-step temporaries (LoRA factors)", bytes: optimizerTemporaryBytes(p.kernels, p.lora.largestFactor), pool: "tensors" },
        ]
      : [];
  // libtorch: one agent's step after another's finds the blocks the first freed kept for reuse
  // (the allocator's cache, glibc's untrimmed heap) in other sizes and places: two fully trained
  // Qwen2.5-0.5B-shaped agents peaked 1.1 GB (0.6 of a gradient set) above what one agent's steps
  // add (docs/memory.md).
  const successiveSteps: MemoryItem[] =
    p.kernels === "aten" && p.lora === undefined && p.agents.length > 1
      ? [{ label: "blocks kept for reuse between agents' steps", bytes: 0.6 * modelSizes(largest).parameters * 4, pool: "tensors" }]
      : [];
  // bf16 LoRA: a base is loaded in float32, then held in bfloat16 (resident, 2 bytes a parameter).
  const loading =
    p.lora !== undefined && p.bf16
      ? [
          {
            name: "loading",
            estimate: memoryEstimate(
              p.agents.slice(0, p.lora.bases).map((c, b) => ({
                label: `base weights ${b} in float32 until they are held in bfloat16`,
                bytes: modelSizes(c).parameters * 2,
                pool: "tensors" as const,
              })),
            ),
          },
        ]
      : [];
  const out = [
    ...loading,
    {
      name: "generation",
      estimate: memoryEstimate([
        ...copyItems,
        ...generationEstimate(largest, {
          rows: p.generationRows,
          prompts: p.generationPrompts,
          promptLen: p.promptTokens,
          maxNewTokens: p.maxNewTokens,
          kernels: p.kernels,
          nativeDecode: p.nativeDecode,
        }).items,
      ]),
    },
    {
      name: "training step",
      // The weights and moments are resident already; LoRA: gradients of the adapter only.
      estimate: memoryEstimate([
        ...without(
          trainingStepEstimate(largest, {
            sequences: p.trainSequences,
            seqLen: p.promptTokens + p.maxNewTokens,
            kernels: p.kernels,
            gradientCheckpointing: p.gradientCheckpointing === true,
            frozenWeights: p.lora !== undefined,
            adapterWidths: p.lora?.adapterWidths ?? 0,
          }),
          (l) => l.startsWith("weights") || l.startsWith("AdamW") || (p.lora !== undefined && (l.startsWith("gradients") || l.startsWith("optimizer-step"))),
        ).items,
        ...adapterItems,
        ...successiveSteps,
      ]),
    },
  ];
  if (p.rewardModel !== undefined) {
    const fit = trainingStepEstimate(
      first,
      { ...p.rewardModel, kernels: p.kernels, frozenWeights: p.lora !== undefined, adapterWidths: p.lora?.adapterWidths ?? 0 },
      "reward model",
    );
    // LoRA: the reward model's backbone is a copy of agent 0's adapter over the shared base.
    const estimate =
      p.lora === undefined
        ? fit
        : memoryEstimate([
            ...without(fit, (l) => l.startsWith("weights") || l.startsWith("gradients") || l.startsWith("AdamW")).items,
            { label: "reward model's LoRA adapter, gradients and AdamW moments", bytes: 16 * p.lora.adapterParameters, pool: "tensors" },
          ]);
    out.push({ name: "reward-model fit", estimate });
  }
  return out;
}

/** The run's peak: resident memory plus its largest phase. Pure; see {@link RunMemoryPlan}. */
export function runMemoryEstimate(p: RunMemoryPlan): { estimate: MemoryEstimate; largestPhase: string } {
  if (p.agents.length === 0) throw new RangeError("a run needs at least one agent");
  const resident: MemoryItem[] = [];
  const bf16Copies = (what: string, float32Bytes: number): void => {
    if (p.bf16) resident.push({ label: `${what}: bfloat16 copy of the weights (bf16)`, bytes: float32Bytes / 2, pool: "tensors" });
  };
  if (p.lora !== undefined) {
    const lora = p.lora;
    p.agents.slice(0, lora.bases).forEach((c, b) => {
      const bytes = modelSizes(c).parameters * (p.bf16 ? 2 : 4);
      resident.push({ label: `base weights ${b} (frozen, shared by the agents that load it${p.bf16 ? ", bfloat16" : ""})`, bytes, pool: "tensors" });
    });
    const adapter = lora.adapterParameters * 4;
    p.agents.forEach((_, i) => {
      resident.push({ label: `agent ${i} LoRA adapter and its AdamW moments`, bytes: 3 * adapter, pool: "tensors" });
      // A fresh adapter's reference is its base with the adapter off; a loaded one's a copy of the adapter.
      if (p.referenceCopies > 0)
        resident.push({ label: `agent ${i} frozen reference (its adapter's copy at most)`, bytes: adapter * p.referenceCopies, pool: "tensors" });
    });
    for (let k = 0; k < p.critics; k++) resident.push({ label: `critic ${k}: LoRA adapter and AdamW moments`, bytes: 3 * adapter, pool: "tensors" });
  } else {
    p.agents.forEach((c, i) => {
      const bytes = modelSizes(c).parameters * 4;
      resident.push({ label: `agent ${i} weights`, bytes, pool: "tensors" });
      resident.push({ label: `agent ${i} AdamW moments`, bytes: 2 * bytes, pool: "tensors" });
      bf16Copies(`agent ${i}`, bytes);
      if (p.referenceCopies > 0) {
        resident.push({ label: `agent ${i} frozen reference`, bytes: bytes * p.referenceCopies, pool: "tensors" });
        bf16Copies(`agent ${i} frozen reference`, bytes * p.referenceCopies);
      }
    });
    const backbone = modelSizes(p.agents[0]!).parameters * 4;
    for (let k = 0; k < p.critics; k++) {
      resident.push({ label: `critic ${k}: weights and AdamW moments`, bytes: 3 * backbone, pool: "tensors" });
      bf16Copies(`critic ${k}`, backbone);
    }
  }
  if ((p.processBytes ?? 0) > 0)
    resident.push({ label: "this process besides its tensors (Node.js, the backend's libraries), resident already", bytes: p.processBytes!, pool: "host" });
  const all = phases(p);
  const top = all.reduce((a, b) => (b.estimate.tensorBytes > a.estimate.tensorBytes ? b : a));
  return { estimate: sumEstimates([memoryEstimate(resident), memoryEstimate(prefixed(top.estimate, `${top.name}: `))]), largestPhase: top.name };
}

/** The config fields the plan reads; MADPO's, with the iterative and MARLHF ones when present. */
export interface RunMemoryArgs {
  max_new_tokens: number;
  train_batch_size: number;
  preference_num_candidates: number;
  generation_batch_size: number;
  comparator_policy?: string;
  comparator_num_candidates?: number | null;
  reference_kl_enabled?: boolean;
  rl_algorithm?: string;
  num_generations?: number;
  reward_train_batch_size?: number;
  reward_max_length?: number | null;
  use_separate_critic?: boolean;
  bf16?: boolean;
  gradient_checkpointing?: boolean;
}

/** Rows of one generate call: as many prompts as fit in generation_batch_size (and the data set has), each with n candidates. */
function rowsPerCall(candidates: number, batchRows: number, items: number): number {
  return candidates * Math.max(1, Math.min(items, Math.floor(batchRows / candidates)));
}

/** What the plan needs besides the config: the agents, the data and the backend. */
export interface RunMemoryContext {
  agents: readonly CausalLMConfig[];
  /** The longest prompt in tokens. */
  promptTokens: number;
  /** Training items (a generate call holds at most this many prompts). */
  items: number;
  kernels: KernelFamily;
  nativeDecode: boolean;
}

/** The plan of a trainer run from its name, its config and {@link RunMemoryContext}. */
export function runMemoryPlan(trainer: string, a: RunMemoryArgs, ctx: RunMemoryContext): RunMemoryPlan {
  const { agents, promptTokens, kernels, nativeDecode } = ctx;
  const marlhf = trainer.startsWith("marlhf");
  const candidates = Math.max(a.preference_num_candidates, a.comparator_num_candidates ?? 0);
  const copies = a.comparator_policy === "current_copy" || a.comparator_policy === "history" || a.comparator_policy === "model" ? 1 : 0;
  const completions = promptTokens + a.max_new_tokens;
  const plan: RunMemoryPlan = {
    agents,
    promptTokens,
    maxNewTokens: a.max_new_tokens,
    generationRows: rowsPerCall(candidates, a.generation_batch_size, Math.max(1, ctx.items)),
    generationPrompts: rowsPerCall(candidates, a.generation_batch_size, Math.max(1, ctx.items)) / candidates,
    // MADPO scores winners and losers together; the RL step every item's num_generations samples.
    trainSequences: marlhf ? a.train_batch_size * (a.num_generations ?? 1) : 2 * a.train_batch_size,
    comparatorCopies: copies,
    referenceCopies: marlhf && a.reference_kl_enabled === true ? 1 : 0,
    critics:
      marlhf && (a.rl_algorithm === "maac" || (a.rl_algorithm === "iac" && a.use_separate_critic !== false))
        ? a.rl_algorithm === "maac"
          ? 1
          : agents.length
        : 0,
    kernels,
    nativeDecode,
    bf16: a.bf16 === true,
    gradientCheckpointing: a.gradient_checkpointing === true,
  };
  // The reward model reads every agent's prompt and completion joined into one text.
  if (marlhf) plan.rewardModel = { sequences: 2 * (a.reward_train_batch_size ?? 1), seqLen: a.reward_max_length ?? completions * agents.length };
  return plan;
}

/** What to change when a phase does not fit, by phase. */
const RUN_ADVICE: Record<string, string> = {
  generation:
    "generate fewer rows at once (generation_batch_size, preference_num_candidates), fewer max_new_tokens, a comparator that keeps no copy of the agents (comparator_policy=current or api), fewer agents or a smaller model",
  "training step":
    "train on fewer sequences at once (train_batch_size: each MADPO pair is two sequences; MARLHF: × num_generations), shorter completions (max_new_tokens) or prompts, fewer agents or a smaller model",
  "reward-model fit":
    "fit the reward model on smaller batches (reward_train_batch_size) or shorter texts (reward_max_length), or freeze its backbone (reward_freeze_backbone)",
};

/**
 * Stops a trainer before it writes anything when the run's peak does not fit in the backend's
 * tensor memory. The agents are loaded already: their weights are not needed again.
 * `promptTokens`: the longest prompt the run samples from (runPromptTokens).
 */
export function checkRunMemory(
  trainer: string,
  args: RunMemoryArgs,
  agents: readonly ResolvedAgent[],
  promptTokens: number,
  items: number,
): { estimate: MemoryEstimate; largestPhase: string } {
  const models = agents.map((ag) => ag.model);
  // LoRA views of one base count it once: the distinct bases first, in the agents' order.
  const bases = models.filter((m, i) => m.adapter === undefined || !models.slice(0, i).some((o) => o.sharesBaseWith(m)));
  const lora = models.every((m) => m.adapter !== undefined)
    ? {
        adapterParameters: Math.max(...models.map((m) => m.adapter!.numParameters())),
        bases: bases.length,
        largestFactor: Math.max(...models.flatMap((m) => [...m.adapter!.namedVariables().values()].map((v) => v.size))),
        adapterWidths: Math.max(
          ...models.map((m) => [...m.adapter!.modules.values()].reduce((sum, f) => sum + f.a.shape[1]! + f.b.shape[0]!, 0) / m.config.numLayers),
        ),
      }
    : undefined;
  const plan = runMemoryPlan(trainer, args, {
    agents: lora !== undefined ? [...bases, ...models.filter((m) => !bases.includes(m))].map((m) => m.config) : models.map((m) => m.config),
    promptTokens,
    items,
    kernels: activeKernelFamily(),
    nativeDecode: tf.getBackend() === "native",
  });
  if (lora !== undefined) plan.lora = lora;
  // A LoRA base under bf16 is held in bfloat16 (storeInBf16), which tf.memory() still counts at 4 bytes a value.
  const baseParameters = lora !== undefined ? bases.reduce((s, m) => s + m.numParameters() - m.adapter!.numParameters(), 0) : 0;
  const baseBytesEach = args.bf16 === true ? 2 : 4;
  const loaded =
    lora !== undefined
      ? baseParameters * baseBytesEach + models.length * lora.adapterParameters * 4
      : [...new Set(models)].reduce((s, m) => s + m.numParameters() * 4, 0);
  if (tf.getBackend() === "libtorch") {
    // What the process holds besides live tensors; dead host buffers (ArrayBuffers the garbage collector has yet to free) left out.
    const m = process.memoryUsage();
    const tensorBytes = tf.memory().numBytes - baseParameters * (4 - baseBytesEach);
    plan.processBytes = Math.max(0, m.rss - tensorBytes - m.arrayBuffers);
  }
  const { estimate, largestPhase } = runMemoryEstimate(plan);
  checkMemory(estimate, {
    what: `this ${trainer} run (${agents.length} agent${agents.length === 1 ? "" : "s"}, prompts up to ${plan.promptTokens} tokens, ${formatBytes(loaded)} of weights loaded; its largest phase is the ${largestPhase})`,
    advice: RUN_ADVICE[largestPhase] ?? RUN_ADVICE["training step"]!,
    alreadyLiveBytes: loaded,
  });
  return { estimate, largestPhase };
}

/** The verbose log's line: the run's estimated peak and where it comes from. */
export function describeRunMemory(r: { estimate: MemoryEstimate; largestPhase: string }): string {
  const e = r.estimate;
  return `memory estimate: ${formatBytes(e.tensorBytes + e.hostBytes)} at the run's peak (its largest phase is the ${r.largestPhase}; ${formatBytes(e.tensorBytes)} of tensors, ${formatBytes(e.hostBytes)} of host memory)`;
}
