import { resolveDevices, tf, type DeviceSpec } from "@pbrl/core-tensor";

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
  return device !== "auto" && tf.getBackend() === "libtorch" ? device : undefined;
}
