// Agreement with Hugging Face transformers on the committed fixture checkpoints, on each
// backend: logits, greedy generations (single and left-padded batches), sequence log-probs. The
// family fixtures (qwen3, mistral, gemma3_text, phi3: scripts/reference/family_fixtures.py) have
// sliding windows shorter than the prompts and generations, GQA, tied and untied embeddings.
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadLibtorchAddon, loadNativeAddon, nativeThreads, tf, useBackend, type BackendName } from "@pbrl/core-tensor";
import { generate, loadPretrained, scoreCompletions, type Pretrained } from "../src/index.js";
import { FIXTURES, maxAbsDiff, reference } from "./reference.js";

const CASES: { dir: string; ref: string }[] = [
  { dir: "tiny-llama", ref: "tiny-llama" },
  { dir: "tiny-qwen2", ref: "tiny-qwen2" },
  { dir: "tiny-qwen2-sharded", ref: "tiny-qwen2" },
  { dir: "tiny-llama-bf16", ref: "tiny-llama-bf16" },
  { dir: "tiny-qwen3", ref: "tiny-qwen3" },
  { dir: "tiny-mistral", ref: "tiny-mistral" },
  { dir: "tiny-gemma3", ref: "tiny-gemma3" },
  { dir: "tiny-phi3", ref: "tiny-phi3" },
];
// tiny-phi3's longrope switches to its long factors past 16 positions: a cached generation that
// crosses there recomputes its cache (Phi-3's rule in transformers), so cached and recomputed
// decoding agree for it too. (Its reference generations are transformers' greedy decoding by
// recomputation; see the "note" in tiny-phi3.reference.json for the 5.18 generate bug.)
const CACHE_EQUALS_RECOMPUTE = (ref: string) => ref !== "tiny-llama-bf16";
const BACKENDS: BackendName[] = ["native", "libtorch", "wasm", "cpu"];
// native and libtorch need the addons the install step builds; without one (no OpenBLAS, no
// libtorch) its cases skip, saying why, unless PBRL_REQUIRE_NATIVE=1 / PBRL_REQUIRE_LIBTORCH=1
// (CI where they can be built) makes them run and fail.
const nativeLoad = loadNativeAddon();
const libtorchLoad = loadLibtorchAddon(nativeThreads());
const MISSING: Partial<Record<BackendName, string>> = {
  ...(nativeLoad.ok || process.env["PBRL_REQUIRE_NATIVE"] === "1" ? {} : { native: nativeLoad.reason }),
  ...(libtorchLoad.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? {} : { libtorch: libtorchLoad.reason }),
};

describe.each(BACKENDS)("parity with transformers on %s", (backend) => {
  const skip = MISSING[backend];
  describe.skipIf(skip !== undefined).each(CASES)(skip === undefined ? "$dir" : `$dir (skipped: ${skip.replace(/[%$]/g, "")})`, ({ dir, ref: refName }) => {
    const ref = reference(refName);
    let p: Pretrained;
    beforeAll(async () => {
      await useBackend(backend);
      p = await loadPretrained(path.join(FIXTURES, dir));
    });
    afterAll(() => p.model.dispose());

    it("logits within 1e-4 for every prompt and position", () => {
      for (const prompt of ref.prompts) {
        const ids = Int32Array.from(prompt.input_ids);
        const logits = p.model.forward({ ids, batch: 1, length: ids.length });
        const diff = maxAbsDiff(logits.dataSync(), prompt.logits.flat());
        logits.dispose();
        expect(diff).toBeLessThanOrEqual(1e-4);
      }
    });

    it.runIf(refName !== "tiny-llama-bf16")("greedy generations token-identical, one prompt at a time", () => {
      for (const r of ref.greedy.results) {
        const [out] = generate(p.model, [r.input_ids], { maxNewTokens: ref.greedy.max_new_tokens, greedy: true });
        expect(out!.tokens).toEqual(r.new_token_ids);
        expect(p.tokenizer!.decode(out!.tokens)).toBe(r.text);
      }
    });

    it.runIf(refName !== "tiny-llama-bf16")("greedy generations token-identical in a left-padded batch", () => {
      const gb = ref.greedy_batched;
      const prompts = gb.rows.map((r) => r.input_ids.filter((_, i) => r.attention_mask[i] === 1));
      const out = generate(p.model, prompts, { maxNewTokens: gb.max_new_tokens, greedy: true, padTokenId: gb.pad_token_id });
      expect(out.map((o) => o.tokens)).toEqual(gb.rows.map((r) => r.new_token_ids));
    });

    it.runIf(CACHE_EQUALS_RECOMPUTE(refName))("the KV cache changes nothing: cached and recomputed greedy decoding agree", () => {
      const prompts = ref.greedy.results.map((r) => r.input_ids);
      const opts = { maxNewTokens: 8, greedy: true, padTokenId: ref.greedy_batched.pad_token_id };
      expect(generate(p.model, prompts, { ...opts, useCache: false })).toEqual(generate(p.model, prompts, opts));
    });

    it.runIf(refName !== "tiny-llama-bf16")("sequence log-probs within 1e-4, per token and summed", () => {
      const items = ref.logprobs.items;
      const scored = scoreCompletions(
        p.model,
        items.map((it) => ({ promptIds: it.prompt_ids, completionIds: it.completion_ids })),
      );
      items.forEach((it, i) => {
        expect(maxAbsDiff(scored.tokenLogProbs[i]!, it.token_logprobs)).toBeLessThanOrEqual(1e-4);
        expect(Math.abs(scored.sums[i]! - it.sum)).toBeLessThanOrEqual(1e-4);
      });
    });
  });

  it("leaves no tensors behind", () => {
    expect(tf.memory().numTensors).toBe(0);
  });
});
