/**
 * Process groups on PyTorch's c10d (libtorch/src/distributed.cc): ranks meet through a TCPStore
 * that rank 0 hosts, as torchrun's ranks do, and exchange CPU tensors over Gloo — the objects
 * torch.distributed makes, so pbrl ranks and Python ranks can share one group.
 *
 * Every collective returns a Promise: c10d issues it at once, in call order (every rank must call
 * the same collectives in the same order), and it completes off Node's event loop. Inputs are
 * never changed; results are new tensors the caller disposes.
 */
import { hostname } from "node:os";
import type { tf } from "../tf.js";
import { timerDelayMs } from "../timer-delay.js";
import { distributedAddon } from "./availability.js";
import type { DistributedAddon, ProcessGroupBackend, ReduceOp } from "./addon-functions.js";
import { fromAddon, toAddon } from "./addon-tensors.js";
import { checkProcessGroupOptions, parseTorchrunEnv, type ProcessGroupOptions, type TorchrunEnv } from "./torchrun-env.js";

/** A collective or the rendezvous failed (a rank died, stalled, or never came); the message names the ranks and what to do. */
export class ProcessGroupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProcessGroupError";
  }
}

function rethrow(e: unknown): never {
  throw new ProcessGroupError(e instanceof Error ? e.message : String(e));
}

export class ProcessGroup {
  private handle: number | undefined;

  /** @internal Use {@link initProcessGroup} or {@link processGroupFromEnv}. */
  constructor(
    private readonly addon: DistributedAddon,
    handle: number,
    readonly rank: number,
    readonly worldSize: number,
    readonly masterAddr: string,
    /** The store's port: the one rank 0 picked when it was given 0. */
    readonly masterPort: number,
    readonly timeoutSeconds: number,
  ) {
    this.handle = handle;
  }

  private live(): number {
    if (this.handle === undefined) throw new ProcessGroupError(`process group (rank ${this.rank} of ${this.worldSize}) used after destroy()`);
    return this.handle;
  }

  private async run(tensors: readonly tf.Tensor[], call: (ids: number[]) => Promise<number[][]>): Promise<tf.Tensor[]> {
    this.live();
    const inputs = toAddon(this.addon, tensors);
    let refs: number[][];
    try {
      // The addon copies the inputs into its buckets before it returns, so the copies made for
      // another backend can go before the collective completes.
      const pending = call(inputs.ids);
      inputs.release();
      refs = await pending;
    } catch (e) {
      inputs.release();
      rethrow(e);
    }
    return fromAddon(this.addon, refs);
  }

  /**
   * Reduces each tensor over all ranks: "sum" (default), "avg" (the sum divided by the world size;
   * float tensors), "max" or "min". Any number of tensors of any shapes go in one call (one bucket
   * per dtype on the wire), the way gradients should: every rank passes tensors of the same shapes
   * in the same order. Returns the reduced tensors, in order.
   */
  allReduce(tensors: readonly tf.Tensor[], op: ReduceOp = "sum"): Promise<tf.Tensor[]> {
    return this.run(tensors, (ids) => this.addon.distAllReduce(this.live(), ids, op));
  }

  /** Root's tensors on every rank (every rank passes tensors of the same shapes and dtypes, in the same order). */
  broadcast(tensors: readonly tf.Tensor[], root: number): Promise<tf.Tensor[]> {
    if (!Number.isInteger(root) || root < 0 || root >= this.worldSize) {
      return Promise.reject(new RangeError(`broadcast: root ${root} is not a rank of this group (0 to ${this.worldSize - 1})`));
    }
    return this.run(tensors, (ids) => this.addon.distBroadcast(this.live(), ids, root));
  }

  /** Every rank's tensor, in rank order (every rank passes a tensor of the same shape and dtype). */
  allGather(tensor: tf.Tensor): Promise<tf.Tensor[]> {
    return this.run([tensor], (ids) => this.addon.distAllGather(this.live(), ids[0]!));
  }

  /** Resolves once every rank has called barrier(). */
  async barrier(): Promise<void> {
    try {
      await this.addon.distBarrier(this.live());
    } catch (e) {
      rethrow(e);
    }
  }

  /** Leaves the group: its connections close once no collective waits on them. Calling it again does nothing. */
  destroy(): void {
    if (this.handle !== undefined) this.addon.distDestroy(this.handle);
    this.handle = undefined;
  }
}

/**
 * The store connection (distInit), or a rejection once the timeout has passed: c10d's client
 * keeps retrying a store host that does not answer for up to about twice the timeout (measured:
 * 5–8 s for 3 s). The addon's call then finishes on its own and its group is dropped.
 */
function storeWithin(addon: DistributedAddon, o: ReturnType<typeof checkProcessGroupOptions>): Promise<[number, number]> {
  const init = addon.distInit(
    o.rank,
    o.worldSize,
    o.masterAddr,
    o.masterPort,
    Math.round(o.timeoutSeconds * 1000),
    o.subgroup ?? null,
    o.backend,
    o.cudaDevice,
  );
  let timer: NodeJS.Timeout | undefined;
  let late = false;
  const deadline = new Promise<never>((_, reject) => {
    // A second of grace: rank 0 hosts the store itself and answers at once; the others' own
    // connection timeout, when c10d keeps it, rejects with c10d's message first.
    timer = setTimeout(
      () => {
        late = true;
        reject(
          new ProcessGroupError(
            `pbrl distributed: rank ${o.rank} of ${o.worldSize} (host ${hostname()} pid ${process.pid}): rank 0's TCPStore at ${o.masterAddr}:${o.masterPort} did not answer within ${o.timeoutSeconds} s. ` +
              "Rank 0 hosts the store: check that it runs, and that MASTER_ADDR and MASTER_PORT are the same on every rank and reachable from this host.",
          ),
        );
      },
      timerDelayMs(o.timeoutSeconds + 1),
    );
  });
  init.then(
    ([handle]) => {
      if (late) addon.distDestroy(handle);
    },
    () => undefined,
  );
  return Promise.race([init, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Forms a process group: rank 0 hosts the rendezvous store at masterAddr:masterPort, every rank
 * connects to it, and Gloo connects every pair of ranks. Resolves once all `worldSize` ranks have
 * joined; rejects with a {@link ProcessGroupError} naming the ranks that did not come within
 * `timeoutSeconds`. Throws a DistributedUnavailableError when the libtorch addon is missing (the
 * message says how to get it) and a DistributedConfigError for invalid options.
 */
export async function initProcessGroup(options: ProcessGroupOptions): Promise<ProcessGroup> {
  const o = checkProcessGroupOptions(options);
  const addon = distributedAddon();
  let handle: number, port: number;
  try {
    [handle, port] = await storeWithin(addon, o);
  } catch (e) {
    rethrow(e);
  }
  try {
    options.onStoreReady?.(port);
    await addon.distJoin(handle);
  } catch (e) {
    addon.distDestroy(handle);
    if (e instanceof Error && !/^pbrl distributed: /.test(e.message)) throw e;
    rethrow(e);
  }
  return new ProcessGroup(addon, handle, o.rank, o.worldSize, o.masterAddr, port, o.timeoutSeconds);
}

/**
 * A process group from torchrun's environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE; see
 * {@link parseTorchrunEnv}, which also gives LOCAL_RANK and LOCAL_WORLD_SIZE), else as
 * {@link initProcessGroup}.
 */
export async function processGroupFromEnv(
  options: { timeoutSeconds?: number; env?: Readonly<Record<string, string | undefined>>; backend?: ProcessGroupBackend } = {},
): Promise<ProcessGroup> {
  const env: TorchrunEnv = parseTorchrunEnv(options.env ?? process.env);
  return await initProcessGroup({
    ...env,
    ...(options.timeoutSeconds !== undefined ? { timeoutSeconds: options.timeoutSeconds } : {}),
    // NCCL: one GPU per local rank, as torchrun's users place them (cuda:LOCAL_RANK).
    ...(options.backend !== undefined ? { backend: options.backend, cudaDevice: env.localRank } : {}),
  });
}

/** The process group backends the libtorch addon was built with ("gloo"; "nccl" too against a CUDA libtorch with NCCL). */
export function distributedBackends(): ProcessGroupBackend[] {
  return distributedAddon().distBackends();
}
