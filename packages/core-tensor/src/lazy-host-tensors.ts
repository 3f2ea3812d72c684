import type { HostTensor } from "./safetensors.js";

/**
 * Host tensors as a read-only map that makes each one when it is asked for (from disk, or
 * generated), so that code which uploads them one at a time (CausalLM.fromHostWeights) lets each
 * host copy be collected right after: a full map holds a second copy of every weight in host
 * memory (2 GB for Qwen2.5-0.5B), and nothing makes the garbage collector free it before the
 * backend's own allocations, which it does not see, pile on top.
 */
export class LazyHostTensors implements ReadonlyMap<string, HostTensor> {
  constructor(
    private readonly names: ReadonlySet<string>,
    private readonly make: (name: string) => HostTensor,
  ) {}

  get size(): number {
    return this.names.size;
  }

  has(name: string): boolean {
    return this.names.has(name);
  }

  /** Makes the tensor again on every call. */
  get(name: string): HostTensor | undefined {
    return this.names.has(name) ? this.make(name) : undefined;
  }

  keys(): SetIterator<string> {
    return this.names.values();
  }

  *entries(): MapIterator<[string, HostTensor]> {
    for (const name of this.names) yield [name, this.make(name)];
  }

  *values(): MapIterator<HostTensor> {
    for (const name of this.names) yield this.make(name);
  }

  forEach(fn: (value: HostTensor, key: string, map: ReadonlyMap<string, HostTensor>) => void): void {
    for (const [name, t] of this.entries()) fn(t, name, this);
  }

  [Symbol.iterator](): MapIterator<[string, HostTensor]> {
    return this.entries();
  }
}
