import { currentBackend } from "@pbrl/core-tensor";

/** A device setting as configs hold it: null/"auto", one name for all agents, or a list. */
export type DeviceSpec = string | readonly string[] | null | undefined;

/** The device pbrl computes on: the backend's one device (tfjs has no per-tensor placement). */
export function backendDevice(): string {
  return currentBackend()?.device ?? "cpu";
}

/**
 * One device name per agent: null/"auto" → the backend's device (pbrl never assumes CUDA); a
 * name → that name for every agent; a list of one → replicated; a list of `count` → as given.
 */
export function resolveDevices(spec: DeviceSpec, count: number, field: string): string[] {
  const fallback = backendDevice();
  if (spec === null || spec === undefined || spec === "auto") return Array.from({ length: count }, () => fallback);
  if (typeof spec === "string") return Array.from({ length: count }, () => spec);
  if (spec.length === 1) return Array.from({ length: count }, () => (spec[0] === "auto" ? fallback : spec[0]!));
  if (spec.length === count) return spec.map((d) => (d === "auto" ? fallback : d));
  throw new RangeError(`${field}: has ${spec.length} entries; give one device or ${count} (one per agent)`);
}

/**
 * Whether the comparator asks for other devices than the agents use, at the given agent indices
 * (comparator_devices falls back to agent_devices, as in CoMLRL). The comparison is by name only.
 */
export function comparatorDevicesDiffer(comparatorDevices: DeviceSpec, agentDevices: DeviceSpec, count: number, indices: readonly number[]): boolean {
  const agents = resolveDevices(agentDevices, count, "agent_devices");
  const comparator = resolveDevices(comparatorDevices ?? agentDevices, count, "comparator_devices");
  return indices.some((i) => agents[i] !== comparator[i]);
}
