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

/** Rank r owns agents r, r + W, r + 2W, … of a world of W ranks. */
export const ownerOf = (agent: number, worldSize: number): number => agent % worldSize;
