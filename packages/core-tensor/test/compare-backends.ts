// Comparing a backend's kernels with the pure-JS `cpu` reference (used by the native and
// libtorch kernel tests).
import { expect } from "vitest";
import { tf, useBackend, type BackendName } from "../src/index.js";

/** Deterministic values in [-1, 1) (a small LCG), so failures reproduce. */
export function values(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

export function rand(shape: number[], seed: number): tf.Tensor {
  return tf.tensor(
    values(
      shape.reduce((a, b) => a * b, 1),
      seed,
    ),
    shape,
  );
}

/** Runs `f` on a backend and returns its outputs' shapes and values (tensors created inside). */
export async function on(backend: BackendName, f: () => tf.Tensor | tf.Tensor[]): Promise<{ shape: number[]; data: Float32Array | Int32Array }[]> {
  await useBackend(backend);
  const before = tf.memory().numTensors;
  const outs = tf.tidy(f);
  const list = Array.isArray(outs) ? outs : [outs];
  const result = list.map((t) => ({ shape: t.shape.slice(), data: t.dataSync() as Float32Array | Int32Array }));
  tf.dispose(list);
  expect(tf.memory().numTensors).toBe(before);
  return result;
}

/**
 * `f` on `backend` against `reference` (default `f`) on cpu: max |backend - cpu| ≤ tol × max(1, max |cpu|),
 * i.e. float32 sums in another order and nothing more; non-finite values must match exactly.
 */
export async function expectSame(backend: BackendName, f: () => tf.Tensor | tf.Tensor[], tol = 1e-5, reference = f): Promise<void> {
  const ref = await on("cpu", reference);
  const got = await on(backend, f);
  expect(got.length).toBe(ref.length);
  got.forEach((g, i) => {
    const r = ref[i]!;
    expect(g.shape).toEqual(r.shape);
    let scale = 1;
    let diff = 0;
    for (let j = 0; j < r.data.length; j++) {
      const a = g.data[j]!;
      const b = r.data[j]!;
      if (Number.isNaN(b) || !Number.isFinite(b)) {
        expect(Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b))).toBe(true);
        continue;
      }
      scale = Math.max(scale, Math.abs(b));
      diff = Math.max(diff, Math.abs(a - b));
    }
    expect(diff).toBeLessThanOrEqual(tol * scale);
  });
}

export function expectClose(got: number[], want: number[], tol = 1e-5): void {
  expect(got.length).toBe(want.length);
  got.forEach((g, i) => expect(Math.abs(g - want[i]!)).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(want[i]!))));
}
