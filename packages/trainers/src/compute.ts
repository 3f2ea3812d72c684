/**
 * Where a run computes: the backend (`backend`), the precision of its matrix products (`bf16`)
 * and the devices of its models (`agent_devices`, `reference_devices`, `comparator_devices`,
 * `reward_model_device`, `critic_devices`). Checked once, when the backend starts and before any
 * model is loaded: a device or precision the backend cannot give is an error naming the field,
 * never accepted and ignored.
 */
import {
  checkDevice,
  currentBackend,
  loadLibtorchAddon,
  MemoryBudgetError,
  nativeThreads,
  setComputePrecision,
  useBackendSetting,
  type BackendInfo,
  type BackendSetting,
} from "@pbrl/core-tensor";
import { resolveDevices, type DeviceSpec } from "@pbrl/comparators";
import type { ResolvedAgent } from "./agents.js";
import { disposeAgents } from "./agents.js";
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

/** Device names of the config's device fields (null and unset fields give none). */
function deviceNames(args: ComputeArgs): string[] {
  return DEVICE_FIELDS.flatMap((field) => {
    const spec = args[field];
    return spec === null || spec === undefined ? [] : typeof spec === "string" ? [spec] : [...spec];
  });
}

/** Whether backend="auto" may choose libtorch: its addon is built and PBRL_BACKEND does not decide. */
function libtorchForAuto(): boolean {
  const forced = process.env["PBRL_BACKEND"];
  return (forced === undefined || forced === "") && loadLibtorchAddon(nativeThreads()).ok;
}

/**
 * Starts the backend a config asks for and checks its precision and device fields against it.
 * backend="auto" is the default backend (native when built, else wasm: see useDefaultBackend),
 * except that a run asking for what only libtorch gives — bf16, a device other than the CPU —
 * starts on libtorch when it is built; {@link startRunAgents} also moves a run there that does
 * not fit the native heap. `backend` overrides the config's setting.
 */
export async function startCompute(configName: string, args: ComputeArgs, actors: number, backendOverride?: BackendSetting): Promise<Compute> {
  const needsLibtorch = args.bf16 || deviceNames(args).some((d) => d !== "auto" && d !== "cpu");
  const setting = backendOverride ?? (args.backend === "auto" && needsLibtorch && libtorchForAuto() ? "libtorch" : args.backend);
  const backend = await useBackendSetting(setting);
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

/**
 * The agents of a run, loaded on the backend it computes on. With backend="auto" the run starts on
 * the default backend, and when that is native or wasm and the run does not fit their 4 GB heap
 * (`fits` throws a MemoryBudgetError: the trainer's memory check of the whole run), it moves to
 * libtorch when that is built, loading the agents again there. Measured on this project's AMD EPYC
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
  const heapBound = currentBackend()?.name === "native" || currentBackend()?.name === "wasm";
  if (o.args.backend !== "auto" || !heapBound || !libtorchForAuto()) return { compute, agents };
  try {
    await o.fits(agents);
    return { compute, agents };
  } catch (e) {
    if (!(e instanceof MemoryBudgetError) || e.details.afterCrash) throw e;
    const need = e.details.neededBytes === undefined ? "" : ` (it needs about ${(e.details.neededBytes / 2 ** 30).toFixed(2)} GB)`;
    o.log(`pbrl: backend=auto: the run does not fit the ${compute.backend.name} backend's tensor memory${need}; it runs on libtorch`);
    disposeAgents(agents);
    const moved = await startCompute(o.configName, o.args, o.actors, "libtorch");
    return { compute: moved, agents: await o.resolve(moved.agentDevices) };
  }
}
