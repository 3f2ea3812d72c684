/**
 * Which joint answer a comparison shows on the left, derived from a seed and the comparison's id
 * alone, so a resumed run shows each comparison the same way and the order never depends on who
 * asked first.
 *
 * The hash, for anyone reproducing it: h = FNV-1a 32-bit over the UTF-8 bytes of
 * `${seed}\n${id}` (offset basis 0x811c9dc5, prime 0x01000193); then one mulberry32 step from
 * state h gives u in [0, 1); the target is on the left when u < 0.5. mulberry32's output mixing
 * spreads FNV's weak low bits, so nearby ids ("c1", "c2", …) do not fall on the same side.
 */

export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The first output of mulberry32 seeded with `state`, in [0, 1). */
export function mulberry32First(state: number): number {
  let t = (state + 0x6d2b79f5) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/** A `leftIsTarget` function for {@link LabelRound}: deterministic in (seed, comparison id). */
export function seededOrder(seed: number): (comparisonId: string) => boolean {
  if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be a safe integer, got ${seed}`);
  return (comparisonId) => mulberry32First(fnv1a32(`${seed}\n${comparisonId}`)) < 0.5;
}
