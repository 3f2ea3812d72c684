/**
 * Messages between ranks of parallel_training="ddp" as int32 words: c10d moves tensors, so a
 * structured-clone message (v8.serialize: typed arrays, Maps and plain objects, as worker threads
 * post them) travels as its bytes packed four to a word, with its byte length beside it.
 */
import { deserialize, serialize } from "node:v8";

/** The message's bytes, padded to whole int32 words, and how many of them count. */
export function packMessage(message: unknown): { words: Int32Array; bytes: number } {
  const buf = serialize(message);
  const words = new Int32Array(Math.ceil(buf.length / 4));
  new Uint8Array(words.buffer).set(buf);
  return { words, bytes: buf.length };
}

/** The message packMessage packed into `words` (its first `bytes` bytes). */
export function unpackMessage<T>(words: Int32Array, bytes: number): T {
  if (bytes > words.length * 4) throw new RangeError(`unpackMessage: ${bytes} bytes do not fit in ${words.length} words`);
  return deserialize(new Uint8Array(words.buffer, words.byteOffset, bytes)) as T;
}

/**
 * The ranks that hold agent `agent` of `numAgents` in a world of W ranks: with no more ranks than
 * agents, rank a mod W (a rank may hold several agents); with more, ranks a, a + A, a + 2A, …
 * below W, the agent's data-parallel replicas — the first answers for it (generation, snapshots).
 */
export function replicaRanks(agent: number, numAgents: number, worldSize: number): number[] {
  if (worldSize <= numAgents) return [agent % worldSize];
  const ranks: number[] = [];
  for (let r = agent; r < worldSize; r += numAgents) ranks.push(r);
  return ranks;
}

/** The agents rank `rank` holds (see {@link replicaRanks}). */
export function agentsOnRank(rank: number, numAgents: number, worldSize: number): number[] {
  return Array.from({ length: numAgents }, (_, a) => a).filter((a) => replicaRanks(a, numAgents, worldSize).includes(rank));
}

/** `n` things in `k` contiguous shares as even as can be, as [start, end) ranges, in order. */
export function evenShares(n: number, k: number): [number, number][] {
  return Array.from({ length: k }, (_, i) => [Math.floor((n * i) / k), Math.floor((n * (i + 1)) / k)]);
}
