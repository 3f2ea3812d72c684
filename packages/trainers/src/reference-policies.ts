/**
 * The frozen references of MARLHF's KL penalty (reference_kl_enabled): each agent's initial
 * policy, on reference_devices. A failure part-way frees what was already made.
 */
import * as path from "node:path";
import type { CausalLM } from "@pbrl/models";
import { frozenReference } from "@pbrl/rl-backends";
import { loadSavedAgent, type ResolvedAgent } from "./agents.js";
import type { MARLHFConfig } from "./config/marlhf-config.js";
import { referenceDevices } from "./role-devices.js";

type ReferenceFields = Pick<MARLHFConfig, "reference_kl_enabled" | "reference_devices">;

/** Frozen copies of the agents as they are now (the initial policies, when learning starts from them); none when the KL is off. */
export function referencesFor(a: ReferenceFields, initial: readonly ResolvedAgent[]): CausalLM[] | undefined {
  if (!a.reference_kl_enabled) return undefined;
  const devices = referenceDevices(a.reference_devices, initial);
  const refs: CausalLM[] = [];
  freeOnFailure(refs, () => initial.forEach((ag, i) => refs.push(frozenReference(ag.model, devices[i]))));
  return refs;
}

/** The initial policies as a run saved them to `dir` (agent_<i>), e.g. before round 1 of an iterative run; none when the KL is off. */
export async function loadReferences(a: ReferenceFields, agents: readonly ResolvedAgent[], dir: string): Promise<CausalLM[] | undefined> {
  if (!a.reference_kl_enabled) return undefined;
  const devices = referenceDevices(a.reference_devices, agents);
  const refs: CausalLM[] = [];
  await freeOnFailure(refs, async () => {
    for (let i = 0; i < agents.length; i++) refs.push(await loadSavedAgent(path.join(dir, `agent_${i}`), agents[i]!.model, devices[i]!));
  });
  return refs;
}

/** Runs `fill` (sync or async); if it fails, frees the models it had made. */
function freeOnFailure<T>(made: CausalLM[], fill: () => T): T {
  const free = (err: unknown): never => {
    made.forEach((m) => m.dispose());
    throw err;
  };
  let result: T;
  try {
    result = fill();
  } catch (err) {
    return free(err);
  }
  return (result instanceof Promise ? result.catch(free) : result) as T;
}
