/**
 * Where a run computes: the backend (`backend`), the precision of its matrix products (`bf16`)
 * and the devices of its models (`agent_devices`, `reference_devices`, `comparator_devices`,
 * `reward_model_device`, `critic_devices`). Checked once, when the backend starts and before any
 * model is loaded: a device or precision the backend cannot give is an error naming the field,
 * never accepted and ignored.
 */
import { checkDevice, setComputePrecision, useBackendSetting, type BackendInfo, type BackendSetting } from "@pbrl/core-tensor";
import { resolveDevices, type DeviceSpec } from "@pbrl/comparators";
import { ConfigError } from "./config/define-config.js";

const DEVICE_FIELDS = ["agent_devices", "reference_devices", "comparator_devices", "reward_model_device", "critic_devices"] as const;

export interface ComputeArgs {
  backend: BackendSetting;
  bf16: boolean;
  agent_devices: DeviceSpec;
  reference_devices?: DeviceSpec;
  comparator_devices?: DeviceSpec;
  reward_model_device?: DeviceSpec;
  critic_devices?: DeviceSpec;
}

export interface Compute {
  backend: BackendInfo;
  /** The device of each actor model (agent_devices resolved: "auto" is the backend's default). */
  agentDevices: string[];
}

/** Starts the backend a config asks for and checks its precision and device fields against it. */
export async function startCompute(configName: string, args: ComputeArgs, actors: number): Promise<Compute> {
  const backend = await useBackendSetting(args.backend);
  const problems: string[] = [];
  for (const field of DEVICE_FIELDS) {
    const spec = args[field];
    const names = spec === null || spec === undefined ? [] : typeof spec === "string" ? [spec] : spec;
    for (const name of new Set(names)) {
      try {
        checkDevice(name);
      } catch (e) {
        problems.push(`${field}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }
  try {
    setComputePrecision(args.bf16 ? "bf16" : "float32");
  } catch (e) {
    problems.push(`bf16: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (problems.length > 0) throw new ConfigError(configName, problems);
  return { backend, agentDevices: resolveDevices(args.agent_devices, actors, "agent_devices").map((d) => (d === backend.device ? "auto" : d)) };
}
