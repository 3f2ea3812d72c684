/**
 * The libtorch addon's process-group functions (libtorch/src/distributed.cc). They are not among
 * the functions the addon must have to load (libtorch/addon.ts): an addon built before them still
 * runs the libtorch backend, and {@link distributedAddon} says it must be rebuilt for groups.
 */
import type { LibtorchAddon, TensorRef } from "../libtorch/addon.js";

export type ReduceOp = "sum" | "avg" | "max" | "min";

/** Gloo moves CPU tensors (CUDA ones through host memory); NCCL moves CUDA tensors between GPUs. */
export type ProcessGroupBackend = "gloo" | "nccl";

export interface DistributedFunctions {
  /** False when the libtorch built against has no c10d headers. */
  distAvailable(): boolean;
  /** Rank 0 starts the TCPStore, the others connect to it (with a subgroup name all connect to the running one); → [group handle, the store's port]. */
  distInit(
    rank: number,
    worldSize: number,
    masterAddr: string,
    masterPort: number,
    timeoutMs: number,
    subgroup: string | null,
    backend: ProcessGroupBackend,
    cudaDevice: number,
  ): Promise<[number, number]>;
  /** Forms the group (Gloo's rendezvous through the store); resolves once every rank has joined. */
  distJoin(group: number): Promise<void>;
  distAllReduce(group: number, ids: readonly number[], op: ReduceOp): Promise<TensorRef[]>;
  distBroadcast(group: number, ids: readonly number[], root: number): Promise<TensorRef[]>;
  distAllGather(group: number, id: number): Promise<TensorRef[]>;
  distBarrier(group: number): Promise<void>;
  distDestroy(group: number): void;
  /** The backends this addon was built with: "gloo", and "nccl" against a CUDA libtorch with NCCL's headers. */
  distBackends(): ProcessGroupBackend[];
}

export type DistributedAddon = LibtorchAddon & DistributedFunctions;

const FUNCTIONS = [
  "distAvailable",
  "distInit",
  "distJoin",
  "distAllReduce",
  "distBroadcast",
  "distAllGather",
  "distBarrier",
  "distDestroy",
  "distBackends",
] as const satisfies readonly (keyof DistributedFunctions)[];

/** The addon's functions that are missing (an addon built from older sources). */
export function missingDistributedFunctions(addon: LibtorchAddon): string[] {
  return FUNCTIONS.filter((f) => typeof (addon as unknown as Record<string, unknown>)[f] !== "function");
}
