import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RngStream, tf } from "@pbrl/core-tensor";
import { chooseToken, generate, loadPretrained, type GeneratedSequence, type Pretrained, type SamplingOptions } from "../src/index.js";
import { FIXTURES, reference } from "./reference.js";

describe("generation behaviour", () => {
  let p: Pretrained;
  const ref = reference("tiny-llama");
  const prompts = ref.greedy.results.map((r) => r.input_ids);
  beforeAll(async () => {
    p = await loadPretrained(path.join(FIXTURES, "tiny-llama"));
  });
  afterAll(() => p.model.dispose());

  it("stops a row at an EOS or stop id, keeps the id, and leaves other rows running", () => {
    const greedy = ref.greedy.results[0]!.new_token_ids; // no EOS occurs: make the 4th token a stop id
    const stop = greedy[3]!;
    const [row] = generate(p.model, [prompts[0]!], { maxNewTokens: 12, greedy: true, stopTokenIds: [stop] });
    expect(row!.tokens).toEqual(greedy.slice(0, greedy.indexOf(stop) + 1));
    expect(row!.finishReason).toBe("stop");
    const both = generate(p.model, [prompts[0]!, prompts[1]!], { maxNewTokens: 12, greedy: true, eosTokenIds: [stop], padTokenId: 0 });
    expect(both[0]!.tokens).toEqual(row!.tokens);
    const other = ref.greedy.results[1]!.new_token_ids;
    const cut = other.indexOf(stop);
    expect(both[1]!.tokens).toEqual(cut >= 0 ? other.slice(0, cut + 1) : other);
  });

  it("samples reproducibly from a seed, differently across seeds, n sequences per prompt", () => {
    const run = (seed: number) =>
      generate(p.model, prompts.slice(0, 2), {
        maxNewTokens: 10,
        temperature: 1.5,
        topP: 0.95,
        topK: 50,
        numReturnSequences: 3,
        padTokenId: 0,
        rng: RngStream.fromSeed(seed, "policy"),
      });
    const a = run(7);
    expect(a.map((s) => s.promptIndex)).toEqual([0, 0, 0, 1, 1, 1]);
    expect(a.every((s) => s.tokens.length === 10)).toBe(true);
    expect(run(7)).toEqual(a);
    expect(run(8)).not.toEqual(a);
    // three samples of the same prompt are not all identical
    expect(new Set(a.slice(0, 3).map((s) => s.tokens.join())).size).toBeGreaterThan(1);
  });

  it("samples per row what each row alone samples, prompts prefilled once, finished rows leaving the batch, past eight rows", () => {
    const sampling: SamplingOptions = { greedy: false, temperature: 1.5, topK: 0, topP: 1 };
    const two = [prompts[0]!, prompts[1]!.slice(0, -2)]; // of different lengths: left padding
    const run = (stopTokenIds: number[]) =>
      // 14 rows: the decoders' few-rows products take more than eight rows in groups of eight (few_rows.h).
      generate(p.model, two, { maxNewTokens: 8, temperature: 1.5, numReturnSequences: 7, padTokenId: 0, stopTokenIds, rng: RngStream.fromSeed(3, "policy") });
    // A stop id some row draws early, so that rows finish at different steps.
    const stop = run([])[1]!.tokens[2]!;
    const got = run([stop]);
    expect(got.some((r) => r.finishReason === "stop" && r.tokens.length < 8)).toBe(true);
    expect(got.some((r) => r.finishReason === "length")).toBe(true);
    expect(got).toEqual(oneRowAtATime(two, 7, 8, sampling, [stop], RngStream.fromSeed(3, "policy")));
  });

  it("with a stream per row, samples each row's tokens whatever else is in the batch", () => {
    const [a, b, c] = [prompts[0]!, prompts[1]!.slice(0, -2), prompts[0]!.slice(1)];
    const n = 3;
    // A row's stream named after what the row is (its prompt and candidate), not where it sits.
    const streams = (names: string[]) => names.flatMap((name) => Array.from({ length: n }, (_, k) => RngStream.fromSeed(11, `${name}/${k}`)));
    const run = (ps: number[][], names: string[], stopTokenIds: number[] = []) =>
      generate(p.model, ps, { maxNewTokens: 8, temperature: 1.5, numReturnSequences: n, padTokenId: 0, stopTokenIds, rowRngs: streams(names) });
    const abc = run([a, b, c], ["a", "b", "c"]);
    const rowsOf = (out: GeneratedSequence[], promptIndex: number) => out.filter((r) => r.promptIndex === promptIndex).map((r) => r.tokens);
    // alone, in another order, beside another prompt, and with rows of others stopping early
    expect(rowsOf(run([b], ["b"]), 0)).toEqual(rowsOf(abc, 1));
    expect(rowsOf(run([c, b, a], ["c", "b", "a"]), 1)).toEqual(rowsOf(abc, 1));
    const stop = abc[0]!.tokens[1]!; // prompt a's first row stops by its 2nd token
    const cut = (t: number[]) => (t.includes(stop) ? t.slice(0, t.indexOf(stop) + 1) : t);
    const stopped = run([a, b], ["a", "b"], [stop]);
    expect(stopped[0]!.tokens.length).toBeLessThanOrEqual(2);
    expect(stopped.map((r) => r.tokens)).toEqual([...rowsOf(abc, 0), ...rowsOf(abc, 1)].map(cut));
    // one shared stream instead does depend on the batch: the same seed, prompt b alone and second
    const shared = (ps: number[][]) =>
      generate(p.model, ps, { maxNewTokens: 8, temperature: 1.5, numReturnSequences: n, padTokenId: 0, rng: RngStream.fromSeed(11, "policy") });
    expect(rowsOf(shared([b]), 0)).not.toEqual(rowsOf(shared([a, b]), 1));
    expect(() => generate(p.model, [a, b], { maxNewTokens: 2, temperature: 1, numReturnSequences: n, rowRngs: streams(["a"]), padTokenId: 0 })).toThrow(
      /rowRngs needs one stream per row: 2 prompts × 3 sequences = 6, got 3/,
    );
  });

  /**
   * The reference: every row's logits from its own unpadded sequence, recomputed in full, and the
   * draws taken from one stream in row order among the rows not yet stopped.
   */
  function oneRowAtATime(ps: number[][], n: number, maxNewTokens: number, o: SamplingOptions, stops: number[], rng: RngStream): GeneratedSequence[] {
    const rows = ps.flatMap((prompt, promptIndex) =>
      Array.from({ length: n }, () => ({ seq: [...prompt], promptIndex, tokens: [] as number[], stopped: false })),
    );
    for (let step = 0; step < maxNewTokens; step++)
      for (const r of rows.filter((row) => !row.stopped)) {
        const logits = tf.tidy(() =>
          p.model
            .forward({ ids: Int32Array.from(r.seq), batch: 1, length: r.seq.length })
            .slice([r.seq.length - 1, 0], [1, -1])
            .dataSync(),
        );
        const tok = chooseToken(logits, o, rng);
        r.seq.push(tok);
        r.tokens.push(tok);
        r.stopped = stops.includes(tok);
      }
    return rows.map((r) => ({ promptIndex: r.promptIndex, tokens: r.tokens, finishReason: r.stopped ? "stop" : "length" }));
  }

  it("validates its inputs", () => {
    expect(() => generate(p.model, [[1, 2], [1]], { maxNewTokens: 2, greedy: true })).toThrow(/pass padTokenId/);
    expect(() => generate(p.model, [[]], { maxNewTokens: 2, greedy: true })).toThrow(/at least one token/);
    expect(() => generate(p.model, [[1]], { maxNewTokens: 2 })).toThrow(/seeded RngStream/);
    expect(() => generate(p.model, [[1]], { maxNewTokens: -1, greedy: true })).toThrow(/max_new_tokens/);
    expect(() => generate(p.model, [[100000]], { maxNewTokens: 1, greedy: true })).toThrow(/outside the vocabulary/);
    expect(generate(p.model, [[1]], { maxNewTokens: 0, greedy: true })).toEqual([{ promptIndex: 0, tokens: [], finishReason: "length" }]);
  });
});
