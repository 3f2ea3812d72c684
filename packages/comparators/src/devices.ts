import { currentBackend, tf } from "@pbrl/core-tensor";

/** A device setting as configs hold it: null/"auto", one name for all agents, or a list. */
export type DeviceSpec = string | readonly string[] | null | undefined;

/** The device pbrl computes on by default: the backend's (libtorch's default device is the CPU). */
export function backendDevice(): string {
  return currentBackend()?.device ?? "cpu";
}

/**
 * One device name per agent: null/"auto" → `fallback` (default the backend's device: pbrl never
 * assumes CUDA); a name → that name for every agent; a list of one → replicated; a list of
 * `count` → as given.
 */
export function resolveDevices(spec: DeviceSpec, count: number, field: string, fallback: string = backendDevice()): string[] {
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

/**
 * The device each agent's comparator model is placed on: comparator_devices, else agent_devices
 * (CoMLRL's fallback), "auto" where neither names one — a loaded model then goes where the
 * backend puts new tensors and a model object stays where it is.
 */
export function comparatorDevices(comparatorDevices: DeviceSpec, agentDevices: DeviceSpec, count: number): string[] {
  return resolveDevices(comparatorDevices ?? agentDevices, count, "comparator_devices", "auto");
}

/**
 * Where to put a comparator model, or undefined to leave it where the backend puts it: for
 * "auto", and for every name on a backend with one device (wasm, native, cpu, tfjs-node), where
 * all models live on that one device and the names only decide whether current_copy copies (by
 * name, as CoMLRL compares them). The trainers refuse a name their backend cannot place before
 * anything is loaded (startCompute); on libtorch a bad name fails where the model is placed.
 */
export function placement(device: string | undefined): string | undefined {
  if (device === undefined || device === "auto") return undefined;
  return tf.getBackend() === "libtorch" ? device : undefined;
}
