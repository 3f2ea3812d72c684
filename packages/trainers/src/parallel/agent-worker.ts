/**
 * A worker thread that holds one agent for parallel_training="mp": it generates the agent's
 * candidates, runs its share of each MADPO update (the detached margins, then its optimizer
 * step) and its REINFORCE-family steps and scoring in MARLHF's RL stage, with the same functions
 * as this work in the trainer's thread, on the trainer's backend, in a tfjs of its own.
 */
import { parentPort } from "node:worker_threads";
import {
  AdamW,
  cudaDeviceCount,
  NonFiniteError,
  onDevice,
  parseTorchrunEnv,
  RngStream,
  setComputePrecision,
  useBackend,
  type ProcessGroup,
} from "@pbrl/core-tensor";
import { agentGradients, agentStep, applyAgentGradients, detachedMargins } from "@pbrl/dpo";
import { CausalLM, scoreCompletions } from "@pbrl/models";
import { sampleAgentRows, type TrainableAgent } from "@pbrl/preference-data";
import { applyPolicyGradients, nonFiniteRow, policyGradients, policyGradientStep, type PolicyStepResult } from "@pbrl/rl-backends";
import { rankDevice } from "./rank-devices.js";
import { joinReplicas, sumOverReplicas } from "./replica-gradients.js";
import { transferables, type AgentSnapshot, type WorkerReply, type WorkerRequest } from "./worker-protocol.js";

if (parentPort === null) throw new Error('agent-worker.js runs as a worker thread (parallel_training="mp"), not as a script');
const port = parentPort;
let agent: { model: CausalLM; optimizer: AdamW | undefined; padTokenId: number } | undefined;
/** ddp with replicas: this agent's replica group (joined at the first load that names it). */
let replicas: { subgroup: string; group: ProcessGroup } | undefined;

function held(): NonNullable<typeof agent> {
  if (agent === undefined) throw new Error("agent worker: no agent loaded");
  return agent;
}

function trainable(): TrainableAgent {
  const a = held();
  if (a.optimizer === undefined) throw new Error("agent worker: the agent was loaded without optimizer state, for generation only");
  return { model: a.model, optimizer: a.optimizer, padTokenId: a.padTokenId };
}

function replicaGroup(): ProcessGroup {
  if (replicas === undefined) throw new Error("agent worker: asked for a replica's step, but no load named the agent's replica group");
  return replicas.group;
}

/**
 * A replica's share of a REINFORCE-family step: its rows' gradients summed with the other
 * replicas', and whether any replica met a non-finite log-prob (the one that did names the row;
 * the others say it was another's), so that all of them step or none does.
 */
async function replicaPolicyStep(index: number, job: Extract<WorkerRequest, { kind: "policyStep" }>["job"], total: number): Promise<PolicyStepResult> {
  const t = trainable();
  const mine = policyGradients(t, job, total);
  const bad = nonFiniteRow(index, job, mine.logProbs);
  const sum = await sumOverReplicas(replicaGroup(), t.model, mine.grads, [mine.loss, bad === undefined ? 0 : 1]);
  if (sum.scalars[1]! > 0) {
    for (const g of sum.grads.values()) g.dispose();
    throw bad ?? new NonFiniteError(`agent ${index} has a non-finite log-prob in another replica's rows in ${job.where}`);
  }
  return applyPolicyGradients(t, index, job, { grads: sum.grads, loss: sum.scalars[0]!, logProbs: mine.logProbs });
}

async function handle(req: WorkerRequest): Promise<{ value: unknown; transfer: ArrayBuffer[] }> {
  switch (req.kind) {
    case "load": {
      await useBackend(req.backend);
      setComputePrecision(req.precision);
      agent?.optimizer?.dispose();
      agent?.model.dispose();
      agent = undefined;
      const device = req.perRank === true ? rankDevice(req.device, parseTorchrunEnv(process.env).localRank, cudaDeviceCount()) : req.device;
      const model = onDevice(device, () => CausalLM.fromHostWeights(req.config, req.weights, "agent worker"));
      const s = req.optimizer;
      const optimizer = s === undefined ? undefined : new AdamW(model.params, { lr: s.lr, betas: s.betas, eps: s.eps, weightDecay: s.weightDecay });
      if (s !== undefined) optimizer!.setState(s);
      agent = { model, optimizer, padTokenId: req.padTokenId };
      if (req.replica !== undefined && replicas?.subgroup !== req.replica.subgroup) {
        replicas?.group.destroy();
        replicas = { subgroup: req.replica.subgroup, group: await joinReplicas(req.replica) };
      }
      return { value: model.device(), transfer: [] };
    }
    case "generate": {
      const a = held();
      const rows = sampleAgentRows(
        { model: a.model, eosTokenIds: req.eosTokenIds, padTokenId: a.padTokenId },
        req.promptIds,
        req.n,
        req.settings,
        RngStream.fromState(req.rng),
      );
      return { value: rows, transfer: [] };
    }
    case "margins":
      return { value: detachedMargins(trainable(), req.pairs, req.scoreLastToken), transfer: [] };
    case "step": {
      const t = trainable();
      if (req.total === undefined) agentStep(t, req.pairs, req.others, req.index, req.options);
      else {
        const mine = agentGradients(t, req.pairs, req.others, req.options, req.total);
        const sum = await sumOverReplicas(replicaGroup(), t.model, mine.grads, [mine.loss]);
        applyAgentGradients(t, { grads: sum.grads, loss: sum.scalars[0]! }, req.index, req.options);
      }
      return { value: undefined, transfer: [] };
    }
    case "policyStep":
      return {
        value: req.total === undefined ? policyGradientStep(trainable(), req.index, req.job) : await replicaPolicyStep(req.index, req.job, req.total),
        transfer: [],
      };
    case "tokenLogProbs": {
      const a = held();
      return { value: scoreCompletions(a.model, req.rows, { padTokenId: a.padTokenId, batchSize: req.batchSize }).tokenLogProbs, transfer: [] };
    }
    case "snapshot": {
      const a = trainable();
      const snap: AgentSnapshot = { weights: a.model.hostWeights(), optimizer: req.optimizer ? a.optimizer.getState() : undefined };
      return { value: snap, transfer: transferables(snap.weights, snap.optimizer) };
    }
  }
}

// One request at a time, in arrival order: the trainer awaits each before sending the next.
let queue = Promise.resolve();
port.on("message", ({ id, req }: { id: number; req: WorkerRequest }) => {
  queue = queue.then(async () => {
    let reply: WorkerReply;
    let transfer: ArrayBuffer[] = [];
    try {
      const r = await handle(req);
      reply = { id, ok: true, value: r.value };
      transfer = r.transfer;
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      reply = { id, ok: false, error: { name: err.name, message: err.message, stack: err.stack } };
    }
    port.postMessage(reply, transfer);
  });
});
