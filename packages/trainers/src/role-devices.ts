/**
 * Where the models of each role live besides the agents, from the config's device fields and the
 * agents' own devices, with CoMLRL's fallbacks: reference_devices and critic_devices fall back to
 * the agents' devices, reward_model_device to the trainer's device (agent 0's). "auto" is the
 * backend's default: a model loaded from disk goes where the backend puts new tensors (libtorch:
 * the CPU), a copied one stays where its source is. The names were checked against the backend
 * when it started (compute.ts); comparator_devices is placed by @pbrl/comparators.
 */
import { resolveDevices, type DeviceSpec } from "@pbrl/core-tensor";
import type { ResolvedAgent } from "./agents.js";

/** One device per agent: where its model is now (agent_devices as they were applied). */
export function agentDevicesOf(agents: readonly ResolvedAgent[]): string[] {
  return agents.map((ag) => ag.model.device());
}

/** reference_devices per actor; null → each actor's own device. */
export function referenceDevices(spec: DeviceSpec, agents: readonly ResolvedAgent[]): string[] {
  return spec === null || spec === undefined ? agentDevicesOf(agents) : resolveDevices(spec, agents.length, "reference_devices", "auto");
}

/** reward_model_device; null → the trainer's device, agent 0's. */
export function rewardModelDevice(device: string | null | undefined, agents: readonly ResolvedAgent[]): string {
  return device ?? agents[0]?.model.device() ?? "auto";
}

/** `loadPretrained`'s options for a device: none for "auto", so the backend decides. */
export function loadOn(device: string): { device?: string } {
  return device === "auto" ? {} : { device };
}
