/**
 * Where a run computes: the backend (`backend`), the precision of its matrix products (`bf16`)
 * and the devices of its models (`agent_devices`, `reference_devices`, `comparator_devices`,
 * `reward_model_device`, `critic_devices`). Checked once, when the backend starts and before any
 * model is loaded: a device or precision the backend cannot give is an error naming the field,
 * never accepted and ignored.
 */
import {
  checkDevice,
  cudaDeviceCount,
  decideBackend,
  MemoryBudgetError,
  parseTorchrunEnv,
  resolveDevices,
  setComputePrecision,
  useBackendSetting,
  type BackendInfo,
  type BackendNeeds,
  type BackendSetting,
  type DeviceSpec,
} from "@pbrl/core-tensor";
import type { ResolvedAgent } from "./agents.js";
import { disposeAgents } from "./agents.js";
import { ConfigError } from "./config/define-config.js";
import { hostRankDevices } from "./parallel/rank-devices.js";

const DEVICE_FIELDS = ["agent_devices", "reference_devices", "comparator_devices", "reward_model_device", "critic_devices"] as const;

export interface ComputeArgs {
  backend: BackendSetting;
  bf16: boolean;
  agent_devices: DeviceSpec;
  reference_devices?: DeviceSpec;
  comparator_devices?: DeviceSpec;
  reward_model_device?: DeviceSpec;
  critic_devices?: DeviceSpec;
  /** "ddp": the agents of this rank default to its own GPU (rank-devices.ts). */
  parallel_training?: "none" | "mp" | "ddp";
}

export interface Compute {
  backend: BackendInfo;
  /** The device of each actor model (agent_devices resolved: "auto" is the backend's default; with ddp, cuda:LOCAL_RANK where GPUs are seen). */
  agentDevices: string[];
}

/** Device names of the config's device fields (null and unset fields give none). */
function deviceNames(args: ComputeArgs): string[] {
  return DEVICE_FIELDS.flatMap((field) => {
    const spec = args[field];
    return spec === null || spec === undefined ? [] : typeof spec === "string" ? [spec] : [...spec];
  });
}

/** What the run asks of its backend: the backend rule (core-tensor's decideBackend) weighs it for backend="auto". */
function needsOf(args: ComputeArgs): BackendNeeds {
  return { bf16: args.bf16, devices: deviceNames(args) };
}

/**
 * Starts the backend a config asks for and checks its precision and device fields against it.
 * core-tensor's backend rule decides what backend="auto" runs on for the run's needs (bf16, its
 * devices, and `outgrew` when {@link startRunAgents} found it does not fit a backend's heap).
 */
export async function startCompute(configName: string, args: ComputeArgs, actors: number, needs: BackendNeeds = needsOf(args)): Promise<Compute> {
  const backend = await useBackendSetting(args.backend, needs);
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
  let devices: string[] = [];
  try {
    devices =
      args.parallel_training === "ddp"
        ? hostRankDevices(args.agent_devices, actors, parseTorchrunEnv(process.env), cudaDeviceCount())
        : resolveDevices(args.agent_devices, actors, "agent_devices");
  } catch (e) {
    problems.push(`agent_devices: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (problems.length > 0) throw new ConfigError(configName, problems);
  return { backend, agentDevices: devices.map((d) => (d === backend.device ? "auto" : d)) };
}

/**
 * The agents of a run, loaded on the backend it computes on. When the backend rule would move the
 * run elsewhere if it did not fit (backend="auto" on native or wasm, with libtorch built), `fits`
 * runs (the trainer's memory check of the whole run); a MemoryBudgetError from it moves the run
 * where the rule says, loading the agents again there. Measured on this project's AMD EPYC
 * (Zen 5): native trains as fast as libtorch in float32 or faster (0.95–1.27×) at every size its
 * heap holds (the demo's 1M parameters, 23M, 58M, 134M untied), so libtorch is chosen for what
 * native cannot do, not before (docs/libtorch-backend.md, "The auto backend").
 */
export async function startRunAgents(o: {
  configName: string;
  args: ComputeArgs;
  actors: number;
  resolve: (devices: string[]) => Promise<ResolvedAgent[]>;
  fits: (agents: readonly ResolvedAgent[]) => void | Promise<void>;
  log: (line: string) => void;
}): Promise<{ compute: Compute; agents: ResolvedAgent[] }> {
  const compute = await startCompute(o.configName, o.args, o.actors);
  const agents = await o.resolve(compute.agentDevices);
  const outgrown = (bytes?: number): BackendNeeds => ({ ...needsOf(o.args), outgrew: { backend: compute.backend.name, bytes } });
  if (decideBackend(o.args.backend, outgrown()).name === compute.backend.name) return { compute, agents };
  try {
    await o.fits(agents);
    return { compute, agents };
  } catch (e) {
    if (!(e instanceof MemoryBudgetError) || e.details.afterCrash) throw e;
    const needs = outgrown(e.details.neededBytes);
    const choice = decideBackend(o.args.backend, needs);
    o.log(`pbrl: backend=auto: ${choice.reason}; it runs on ${choice.name}`);
    disposeAgents(agents);
    const moved = await startCompute(o.configName, o.args, o.actors, needs);
    return { compute: moved, agents: await o.resolve(moved.agentDevices) };
  }
}
