// Work that does not fit in the backend's tensor memory stops with a MemoryBudgetError before
// anything is allocated, on wasm and on native (each with its own 4 GB heap), and the backend
// goes on working; work that fits still runs. The native cases skip, saying why, when the addon
// is not built, unless PBRL_REQUIRE_NATIVE=1 (CI with OpenBLAS) makes that a failure.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { AdamW, loadNativeAddon, MemoryBudgetError, RngStream, tf, useBackend, type BackendName } from "@pbrl/core-tensor";
import {
  buildScoringBatch,
  checkTrainingStep,
  completionLogProbs,
  generate,
  llamaConfigJson,
  loadPretrained,
  parseModelConfig,
  scoreCompletions,
} from "../src/index.js";
import { FIXTURES } from "./reference.js";

const native = loadNativeAddon();
const nativeSkip = native.ok || process.env["PBRL_REQUIRE_NATIVE"] === "1" ? undefined : native.reason;
const suiteBackend = tf.getBackend() as BackendName;
afterAll(async () => {
  await useBackend(suiteBackend);
});

const smolJson = llamaConfigJson({
  vocabSize: 49152,
  hiddenSize: 576,
  intermediateSize: 1536,
  numLayers: 30,
  numHeads: 9,
  numKvHeads: 3,
  tieWordEmbeddings: true,
  maxPositionEmbeddings: 8192,
});
const smol = parseModelConfig(smolJson, "SmolLM2-135M shape");

/** One NLL training step of the tiny fixture model: proof that the backend still trains. */
async function tinyTrainingStep(): Promise<number> {
  const p = await loadPretrained(path.join(FIXTURES, "tiny-llama"));
  try {
    const batch = buildScoringBatch(
      [
        { promptIds: [1, 5, 9], completionIds: [7, 3, 2] },
        { promptIds: [1, 4], completionIds: [8, 8, 6, 2] },
      ],
      0,
    );
    checkTrainingStep(p.model.config, { sequences: batch.batch, seqLen: batch.length }, { alreadyLiveBytes: p.model.numParameters() * 4 });
    const opt = new AdamW(p.model.params, { lr: 1e-3 });
    const { value, grads } = tf.variableGrads(() => {
      const { tokens, sums } = completionLogProbs(p.model, batch);
      tokens.dispose();
      return tf.neg(tf.mean(sums)) as tf.Scalar;
    }, p.model.trainableVariables());
    opt.step(p.model.gradsByWeightName(grads));
    const loss = value.dataSync()[0]!;
    tf.dispose([value, ...Object.values(grads)]);
    opt.dispose();
    return loss;
  } finally {
    p.model.dispose();
  }
}

describe.each<[BackendName, string | undefined]>([
  ["wasm", undefined],
  ["native", nativeSkip],
])("on %s", (backend, skip) => {
  it.skipIf(skip !== undefined)(
    `a SmolLM2-135M-shaped training step at 4 × 128 stops with the memory error, and the backend still trains${skip ? ` (skipped: ${skip})` : ""}`,
    async () => {
      await useBackend(backend);
      const tensors = tf.memory().numTensors;
      let err: unknown;
      try {
        checkTrainingStep(smol, { sequences: 4, seqLen: 128 });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(MemoryBudgetError);
      const m = err as MemoryBudgetError;
      expect(m.message).toMatch(
        /^a training step of this model \(llama, 134\.5M parameters, 30 layers, hidden 576, vocabulary 49152\) on 4 sequences × 128 tokens needs about \d+\.\d\d GB of tensor memory, more than the (wasm|native) backend can hold: its WebAssembly heap holds at most 4\.00 GB, whatever the machine has(, and other live tensors take [\d.]+ [KMG]B of it)?\. Estimated need:/,
      );
      expect(m.message).toMatch(
        /\n {2}weights +513\.1 MB\n {2}gradients +513\.1 MB\n {2}AdamW moments, 2 per weight +1\.00 GB\n {2}activations of 4 sequences × 128 tokens, forward and backward +\d/,
      );
      expect(m.message).toMatch(/What to do: train on smaller batches \(train_batch_size.*backend=cpu/);
      expect(m.details).toMatchObject({ backend, afterCrash: false });
      expect(m.details.neededBytes!).toBeGreaterThan(m.details.availableBytes!);
      expect(tf.memory().numTensors).toBe(tensors);
      // A model that fits trains on the same backend instance.
      expect(Number.isFinite(await tinyTrainingStep())).toBe(true);
    },
  );

  it.skipIf(skip !== undefined)(
    `generating 1000000 sequences per prompt stops before allocating, and generation still works${skip ? ` (skipped: ${skip})` : ""}`,
    async () => {
      await useBackend(backend);
      const p = await loadPretrained(path.join(FIXTURES, "tiny-llama"));
      try {
        const tensors = tf.memory().numTensors;
        const opts = { maxNewTokens: 32, temperature: 1, rng: RngStream.fromSeed(0, "memory") };
        expect(() => generate(p.model, [[1, 5, 9, 4]], { ...opts, numReturnSequences: 1_000_000 })).toThrow(MemoryBudgetError);
        expect(() => generate(p.model, [[1, 5, 9, 4]], { ...opts, numReturnSequences: 1_000_000 })).toThrow(
          /^generating 32 tokens for 1000000 rows after a 4-token prompt with this model \(llama, .*\) needs about \d+\.\d\d GB of tensor memory, more than the (wasm|native) backend can hold: its WebAssembly heap holds at most 4\.00 GB, whatever the machine has, and other live tensors take \d/,
        );
        expect(() => generate(p.model, [[1, 5, 9, 4]], { ...opts, numReturnSequences: 1_000_000 })).toThrow(
          /What to do: generate fewer rows at once \(fewer prompts or num_return_sequences/,
        );
        expect(tf.memory().numTensors).toBe(tensors);
        const out = generate(p.model, [[1, 5, 9, 4]], { ...opts, numReturnSequences: 4 });
        expect(out).toHaveLength(4);
        expect(out.every((o) => o.tokens.length > 0)).toBe(true);
        // Scoring checks its batches the same way.
        const long = Array.from({ length: 200 }, (_, i) => 3 + (i % 50));
        expect(() =>
          scoreCompletions(
            p.model,
            Array.from({ length: 4000 }, () => ({ promptIds: [1], completionIds: long })),
            { batchSize: 4000 },
          ),
        ).toThrow(/^scoring 4000 sequences × 201 tokens/);
      } finally {
        p.model.dispose();
      }
    },
  );

  it.skipIf(skip !== undefined)(`loading a checkpoint whose weights cannot fit stops before reading them${skip ? ` (skipped: ${skip})` : ""}`, async () => {
    await useBackend(backend);
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-too-big-"));
    try {
      // A 1.5B-parameter shape, and no weights file: the check comes first.
      writeFileSync(
        path.join(dir, "config.json"),
        JSON.stringify(llamaConfigJson({ vocabSize: 151936, hiddenSize: 1536, intermediateSize: 8960, numLayers: 28, numHeads: 12, numKvHeads: 2 })),
      );
      await expect(loadPretrained(dir)).rejects.toThrow(
        /^loading .* \(llama, 1\d\d\d\.\dM parameters, 28 layers.*\) needs about 5\.\d\d GB .*What to do: use a smaller model, or a backend without the 4 GB heap limit/s,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("on cpu (host memory, no limit)", () => {
  it("nothing is refused", async () => {
    await useBackend("cpu");
    expect(() => checkTrainingStep(smol, { sequences: 4, seqLen: 128 })).not.toThrow();
  });
});
