import { RngStream } from "@pbrl/core-tensor";
import { generate } from "@pbrl/models";
import { aboveSafeInteger } from "@pbrl/trainers";
import { isNonNegInt, optNumber, parseFlags, requireString } from "../args.js";
import { UsageError, type CliIO } from "../io.js";
import { backendFlag, loadWithTokenizer, onChosenBackend } from "./common.js";

export const GENERATE_HELP = `pbrl generate --model DIR --prompt TEXT [options]

Generates a continuation of TEXT with a checkpoint folder (or hub id).

  --max_new_tokens N   tokens to generate (default: generation_config.json, else 64); the prompt
                       plus N must fit in the model's max_position_embeddings
  --greedy             greedy decoding (the default unless generation_config.json samples)
  --temperature T      sample with temperature T (implies sampling)
  --top_p P            nucleus sampling (implies sampling)
  --top_k K            top-k sampling (implies sampling)
  --seed S             sampling seed (default 0)
  --num_return_sequences N
                       sequences per prompt, generated in one batch; a batch the backend's
                       memory cannot hold stops first with exit code 2 (docs/memory.md)
  --chat               wrap TEXT as a user message with the chat template
  --json               print token ids and text as JSON
  --backend B          native, libtorch, wasm, cpu or tensorflow (default: $PBRL_BACKEND, else
                       native when built, else wasm; work too big for the 4 GB heap of native and
                       wasm then runs again on libtorch when that is built)
`;

/** Counts (tokens, sequences) must be exact integers: 1e20 is an integer but not a safe one. */
const isCount = (x: number) => Number.isSafeInteger(x) && x >= 1;

/**
 * The KV cache is sized for prompt + max_new_tokens positions up front, so a length beyond the
 * model's context is refused before anything is allocated (it would also decode positions the
 * model never saw in training).
 */
function checkContext(maxPositions: number, promptTokens: number, maxNewTokens: number, from: string): void {
  if (promptTokens + maxNewTokens <= maxPositions) return;
  const room = maxPositions - promptTokens;
  const fix = room > 0 ? `give --max_new_tokens ${room} or fewer, or a shorter prompt` : `shorten the prompt to fewer than ${maxPositions} tokens`;
  throw new UsageError(
    `pbrl generate: ${from}=${maxNewTokens} after a ${promptTokens}-token prompt needs ${promptTokens + maxNewTokens} positions, more than this model's max_position_embeddings (${maxPositions}); ${fix}`,
  );
}

export async function generateCommand(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseFlags(
    argv,
    {
      model: { type: "string" },
      prompt: { type: "string" },
      max_new_tokens: { type: "string" },
      greedy: { type: "boolean" },
      temperature: { type: "string" },
      top_p: { type: "string" },
      top_k: { type: "string" },
      seed: { type: "string" },
      num_return_sequences: { type: "string" },
      chat: { type: "boolean" },
      json: { type: "boolean" },
      ...backendFlag,
    },
    "generate",
  );
  const model = requireString(values.model, "model", "generate");
  const prompt = requireString(values.prompt, "prompt", "generate");
  const temperature = optNumber(values.temperature, "temperature", "generate", (n) => n > 0, "a number > 0");
  const topP = optNumber(values.top_p, "top_p", "generate", (n) => n > 0 && n <= 1, "in (0, 1]");
  const topK = optNumber(values.top_k, "top_k", "generate", isNonNegInt, "an integer ≥ 0");
  const seed = optNumber(values.seed, "seed", "generate", isNonNegInt, "an integer ≥ 0") ?? 0;
  // Checked before the model loads: the sampler's own check would say so only after, as a crash.
  if (seed > Number.MAX_SAFE_INTEGER) throw new UsageError(`pbrl generate: --seed ${aboveSafeInteger(String(values.seed).trim(), "seed", false)}`);
  const maxNew = optNumber(values.max_new_tokens, "max_new_tokens", "generate", isCount, "a whole number ≥ 1");
  const n = optNumber(values.num_return_sequences, "num_return_sequences", "generate", isCount, "a whole number ≥ 1") ?? 1;
  const asksSampling = temperature !== undefined || topP !== undefined || topK !== undefined || values.seed !== undefined;
  if (values.greedy === true && asksSampling) throw new UsageError("pbrl generate: --greedy cannot be combined with --temperature/--top_p/--top_k/--seed");

  return onChosenBackend(values.backend, io, "generate", async () => {
    const p = await loadWithTokenizer(model, "generate");
    try {
      const g = p.generation;
      const greedy = values.greedy === true || (!asksSampling && g.doSample !== true);
      const text = values.chat === true ? p.tokenizer.applyChatTemplate([{ role: "user", content: prompt }]) : prompt;
      // A rendered chat template already carries its special tokens.
      const promptIds = p.tokenizer.encode(text, { addSpecialTokens: values.chat !== true });
      const maxNewTokens = maxNew ?? g.maxNewTokens ?? 64;
      checkContext(
        p.model.config.maxPositionEmbeddings,
        promptIds.length,
        maxNewTokens,
        maxNew === undefined ? "generation_config.json's max_new_tokens" : "--max_new_tokens",
      );
      const eos = g.eosTokenIds.length > 0 ? g.eosTokenIds : p.model.config.eosTokenIds;
      const out = generate(p.model, [promptIds], {
        maxNewTokens,
        greedy,
        temperature: temperature ?? g.temperature ?? 1,
        topP: topP ?? g.topP ?? 1,
        topK: topK ?? g.topK ?? 0,
        eosTokenIds: eos,
        numReturnSequences: n,
        ...(greedy ? {} : { rng: RngStream.fromSeed(seed, "generate") }),
        ...(g.padTokenId !== undefined ? { padTokenId: g.padTokenId } : {}),
      });
      const results = out.map((o) => ({ token_ids: o.tokens, text: p.tokenizer.decode(o.tokens), finish_reason: o.finishReason }));
      if (values.json === true) {
        io.out(JSON.stringify({ prompt: text, prompt_ids: promptIds, greedy, ...(greedy ? {} : { seed }), results }, null, 2) + "\n");
      } else {
        for (const r of results) io.out(`${text}${r.text}\n`);
      }
      return 0;
    } finally {
      p.model.dispose();
    }
  });
}
