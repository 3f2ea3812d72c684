#!/usr/bin/env node
// Where one training step of `pbrl bench` spends its time, by phase and by tfjs kernel.
//
//   pnpm build && node scripts/bench/profile_train_step.mjs [--backend native|wasm|cpu|libtorch]
//                                                          [--preset default|tiny|smollm2-135m|qwen2.5-0.5b]
//                                                          [--batch 8] [--seq 128] [--top 15] [--bf16] [--steps N] [--lora]
//
// Same model and step as `pbrl bench` (random init, mean next-token NLL via completionLogProbs,
// tf.variableGrads, AdamW). After one warm-up step it times the phases of a step separately
// (forward only; forward + backward; AdamW update) and then profiles one full step with
// tf.profile, summing kernel time per kernel name and per (kernel, input shapes). A custom-gradient
// op shows as "unnamed scope", and its time includes the kernels inside it, which are also listed
// on their own: the per-kernel times add up to more than the step. `--steps N` first times N whole
// steps after the warm-up one, each with its CPU time (user, system) and minor page faults (Linux):
// on a shared machine one step drifts by tens of percent, and system time that rises with the
// faults is memory touched anew. `--lora` trains a LoRA adapter as `pbrl bench --lora` does (r 16,
// alpha 32, dropout 0.05, every linear layer) instead of every weight.
/* global console, performance, process */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { AdamW, RngStream, setComputePrecision, tf, useBackend } from "../../packages/core-tensor/dist/index.js";
import { buildScoringBatch, CausalLM, completionLogProbs, parseModelConfig } from "../../packages/models/dist/index.js";
import { fastRandomModel } from "../../apps/cli/dist/bench/fast-init.js";
import { presetConfigJson, REAL_SIZE_PRESETS } from "../../apps/cli/dist/bench/presets.js";

const { values } = parseArgs({
  options: {
    backend: { type: "string", default: "wasm" },
    preset: { type: "string", default: "default" },
    batch: { type: "string", default: "8" },
    seq: { type: "string", default: "128" },
    top: { type: "string", default: "15" },
    bf16: { type: "boolean", default: false },
    steps: { type: "string", default: "0" },
    lora: { type: "boolean", default: false },
  },
});
const B = Number(values.batch);
const T = Number(values.seq);
const top = Number(values.top);

const info = await useBackend(values.backend);
console.log(info.description);
if (values.bf16) setComputePrecision("bf16");
// Per-kernel timing would otherwise also read every output back to check for NaNs.
tf.env().set("CHECK_COMPUTATION_FOR_ERRORS", false);
const config = parseModelConfig(presetConfigJson(values.preset));
// As `pbrl bench`: the real-size presets get its fast seeded fill (normal init would take tens of seconds).
const full = REAL_SIZE_PRESETS.includes(values.preset) ? fastRandomModel(config, 0) : CausalLM.randomInit(config, RngStream.fromSeed(0, "bench"));
const lora = { r: 16, alpha: 32, dropout: 0.05, targetModules: "all-linear", useRslora: false };
const model = values.lora ? full.withLora(lora, RngStream.fromSeed(0, "bench-lora")) : full;
if (values.lora) model.dropoutStream = RngStream.fromSeed(0, "bench-lora-dropout");
const opt = new AdamW(model.params, { lr: 1e-4, weightDecay: 0.01 });
const data = RngStream.fromSeed(0, "bench-data");
console.log(`preset ${values.preset}: ${model.numParameters().toLocaleString("en-US")} parameters, batch ${B} × ${T} tokens`);

function makeBatch() {
  const rows = Array.from({ length: B }, () => Array.from({ length: T }, () => data.int(config.vocabSize)));
  return buildScoringBatch(
    rows.map((r) => ({ promptIds: r.slice(0, 1), completionIds: r.slice(1) })),
    0,
  );
}
// In a training pass (model.training), as the bench's step: LoRA applies its dropout there.
const lossFn = (batch) => () =>
  model.training(() => {
    const { tokens, sums } = completionLogProbs(model, batch);
    sums.dispose();
    return tf.neg(tf.mean(tokens));
  });
function step(batch) {
  const { value, grads } = tf.variableGrads(lossFn(batch), model.trainableVariables());
  opt.step(model.gradsByWeightName(grads));
  value.dataSync();
  value.dispose();
  tf.dispose(Object.values(grads));
}
const time = (fn) => {
  const t0 = performance.now();
  fn();
  return (performance.now() - t0) / 1000;
};

console.log(`warm-up step: ${time(() => step(makeBatch())).toFixed(2)} s`);

/** Minor page faults of this process so far (0 where /proc is missing). */
function minorFaults() {
  try {
    return Number(readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ")[7]);
  } catch {
    return 0;
  }
}
for (let i = 1; i <= Number(values.steps); i++) {
  const b = makeBatch();
  const [cpu, faults] = [process.cpuUsage(), minorFaults()];
  const wall = time(() => step(b));
  const used = process.cpuUsage(cpu);
  console.log(
    `step ${i}: ${wall.toFixed(3)} s, CPU user ${(used.user / 1e6).toFixed(2)} s, system ${(used.system / 1e6).toFixed(2)} s, ${minorFaults() - faults} minor page faults`,
  );
}

// Phases.
const batch = makeBatch();
const fwd = time(() => tf.tidy(() => lossFn(batch)().dataSync()));
let grads;
const fwdBwd = time(() => {
  const r = tf.variableGrads(lossFn(batch), model.trainableVariables());
  r.value.dataSync();
  r.value.dispose();
  grads = r.grads;
  for (const g of Object.values(grads)) g.dataSync();
});
const adam = time(() => opt.step(model.gradsByWeightName(grads)));
tf.dispose(Object.values(grads));
console.log(
  `phases: forward ${fwd.toFixed(2)} s; forward+backward ${fwdBwd.toFixed(2)} s (backward ≈ ${(fwdBwd - fwd).toFixed(2)} s); AdamW update ${adam.toFixed(2)} s`,
);

// Kernels of one full step.
const t0 = performance.now();
const profile = await tf.profile(() => step(makeBatch()));
const wall = (performance.now() - t0) / 1000;
const byName = new Map();
const byShape = new Map();
let total = 0;
for (const k of profile.kernels) {
  const ms = typeof k.kernelTimeMs === "number" ? k.kernelTimeMs : 0;
  total += ms;
  const a = byName.get(k.name) ?? { ms: 0, n: 0 };
  a.ms += ms;
  a.n += 1;
  byName.set(k.name, a);
  const key = `${k.name} ${k.inputShapes.map((s) => `[${s ?? ""}]`).join(" ")}`;
  const b = byShape.get(key) ?? { ms: 0, n: 0 };
  b.ms += ms;
  b.n += 1;
  byShape.set(key, b);
}
console.log(
  `profiled step: ${wall.toFixed(2)} s wall, ${(total / 1000).toFixed(2)} s in ${profile.kernels.length} kernel calls, peak tensor bytes ${(profile.peakBytes / 2 ** 20).toFixed(0)} MB`,
);
const show = (title, m) => {
  console.log(`\n${title}`);
  for (const [name, { ms, n }] of [...m].sort((x, y) => y[1].ms - x[1].ms).slice(0, top)) {
    console.log(`${(ms / 1000).toFixed(3).padStart(8)} s ${((100 * ms) / total).toFixed(1).padStart(5)}%  ${String(n).padStart(5)}×  ${name}`);
  }
};
show("by kernel:", byName);
// Memory: live tensor bytes before the step, when the backward pass starts, and at the peak.
const ks = profile.kernels;
const peakAt = ks.reduce((best, k, i) => (k.totalBytesSnapshot > ks[best].totalBytesSnapshot ? i : best), 0);
// The fused log-softmax of the loss runs one Exp over [N, vocab] forward and one in its gradient.
const vocabExps = ks.flatMap((k, i) => (k.name === "Exp" && k.inputShapes[0]?.[1] === config.vocabSize ? [i] : []));
const firstBackward = vocabExps[1] ?? -1;
const mb = (b) => `${(b / 2 ** 20).toFixed(0)} MB`;
console.log(
  `\nmemory: live tensor bytes before the step ${mb(ks[0].totalBytesSnapshot - ks[0].bytesAdded)}, ` +
    (firstBackward > 0 ? `at the start of the backward pass (kernel ${firstBackward}) ${mb(ks[firstBackward].totalBytesSnapshot)}, ` : "") +
    `peak ${mb(ks[peakAt].totalBytesSnapshot)} at kernel ${peakAt}/${ks.length} (${ks[peakAt].name} [${ks[peakAt].inputShapes.map((x) => `[${x}]`).join(" ")}])`,
);
show("by kernel and input shapes:", byShape);
opt.dispose();
model.dispose();
