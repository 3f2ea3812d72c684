/**
 * Random weights for the bench's presets, fast enough for 500M parameters.
 *
 * `CausalLM.randomInit` draws Box-Muller normals through RngStream: 45 ns a value on this
 * project's 2-core machine when quiet, 110–135 ns under load — 20 s to a minute for
 * Qwen2.5-0.5B, which would dominate the load time the bench reports. A throughput benchmark
 * only needs weights of a sane distribution, so linear and embedding weights are uniform on
 * [−√3·σ, √3·σ] — the standard deviation σ = initializer_range of transformers' normal init —
 * from a xorshift32 stream seeded per weight name (11–15 ns a value measured side by side under
 * the same load, about ten times faster); norms are ones and biases zeros, as transformers has them.
 * The losses start where transformers' init starts them (11.2–11.3 for SmolLM2-135M on random
 * tokens, both sides). Deterministic: the same seed and name give the same values in any order.
 */
import { LazyHostTensors, type HostTensor } from "@pbrl/core-tensor";
import { CausalLM, parameterSpecs, type CausalLMConfig, type ParameterSpec } from "@pbrl/models";

/** FNV-1a of the name mixed with the seed: a nonzero xorshift32 state per weight. */
function stateFor(seed: number, name: string): number {
  let h = (0x811c9dc5 ^ Math.imul(seed | 0, 0x9e3779b1)) >>> 0;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h === 0 ? 0x6d2b79f5 : h;
}

/** One weight's values: uniform with standard deviation `std` for linears and embeddings. */
export function fastInitValues(spec: ParameterSpec, std: number, seed: number): Float32Array {
  const n = spec.shape.reduce((a, x) => a * x, 1);
  const out = new Float32Array(n);
  if (spec.kind === "norm") return out.fill(spec.normInit ?? 1);
  if (spec.kind === "bias") return out;
  const half = Math.sqrt(3) * std;
  const scale = (2 * half) / 2 ** 32;
  let x = stateFor(seed, spec.name);
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = (x >>> 0) * scale - half;
  }
  return out;
}

/** A randomly initialised model of `config` (see the file comment for the distribution). */
export function fastRandomModel(config: CausalLMConfig, seed: number): CausalLM {
  const range = config.raw["initializer_range"];
  const std = typeof range === "number" && range > 0 ? range : 0.02;
  const specs = new Map(parameterSpecs(config).map((s) => [s.name, s]));
  const make = (name: string): HostTensor => {
    const spec = specs.get(name)!;
    return { dtype: "float32", shape: [...spec.shape], data: fastInitValues(spec, std, seed) };
  };
  // Made one at a time as the model uploads them (LazyHostTensors): no second copy of the weights.
  return CausalLM.fromHostWeights(config, new LazyHostTensors(new Set(specs.keys()), make), "bench random init");
}
