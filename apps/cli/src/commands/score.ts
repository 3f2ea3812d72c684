import { scoreCompletions } from "@pbrl/models";
import { parseFlags, requireString } from "../args.js";
import { UsageError, type CliIO } from "../io.js";
import { backendFlag, loadWithTokenizer, onChosenBackend } from "./common.js";

export const SCORE_HELP = `pbrl score --model DIR --prompt TEXT --completion TEXT [options]

Log-probability of COMPLETION after PROMPT under the model: the prompt is tokenized as the
model's tokenizer does by default (special tokens added), the completion without special tokens.

  --add_eos     append the EOS token (generation_config.json's first) to the completion
  --json        print token ids, per-token log-probs and their sum as JSON
  --backend B   native, libtorch, wasm, cpu or tensorflow (default: $PBRL_BACKEND, else
                native when built, else wasm; work too big for the 4 GB heap of native and
                wasm then runs again on libtorch when that is built)
`;

/**
 * Before the memory check: a text longer than the model's context is the cause to report (the
 * estimate for it would say "not enough memory" and suggest another backend), and the model never
 * saw positions beyond it in training.
 */
function checkContext(maxPositions: number, promptTokens: number, completionTokens: number): void {
  const total = promptTokens + completionTokens;
  if (total <= maxPositions) return;
  const fix =
    promptTokens < maxPositions
      ? `shorten the completion to at most ${maxPositions - promptTokens} tokens, or the prompt`
      : `shorten the prompt to fewer than ${maxPositions} tokens, leaving room for the completion`;
  throw new UsageError(
    `pbrl score: the ${promptTokens}-token prompt and ${completionTokens}-token completion are ${total} tokens, more than this model's max_position_embeddings (${maxPositions}); ${fix}`,
  );
}

export async function scoreCommand(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseFlags(
    argv,
    {
      model: { type: "string" },
      prompt: { type: "string" },
      completion: { type: "string" },
      add_eos: { type: "boolean" },
      json: { type: "boolean" },
      ...backendFlag,
    },
    "score",
  );
  const model = requireString(values.model, "model", "score");
  const prompt = requireString(values.prompt, "prompt", "score");
  const completion = values.completion;
  if (typeof completion !== "string") throw new UsageError("pbrl score: --completion is required");
  return onChosenBackend(values.backend, io, "score", async () => {
    const p = await loadWithTokenizer(model, "score");
    try {
      const promptIds = p.tokenizer.encode(prompt);
      const completionIds = p.tokenizer.encode(completion, { addSpecialTokens: false });
      if (values.add_eos === true) {
        // generation_config's first EOS is the end-of-turn token of chat models (e.g. <|im_end|>).
        const eos = p.generation.eosTokenIds[0] ?? p.tokenizer.eosTokenId ?? p.model.config.eosTokenIds[0];
        if (eos === undefined) throw new UsageError("pbrl score: --add_eos given but the checkpoint names no EOS token");
        completionIds.push(eos);
      }
      checkContext(p.model.config.maxPositionEmbeddings, promptIds.length, completionIds.length);
      const r = scoreCompletions(p.model, [{ promptIds, completionIds }]);
      const tokenLogProbs = r.tokenLogProbs[0]!;
      const sum = r.sums[0]!;
      if (values.json === true) {
        io.out(JSON.stringify({ prompt_ids: promptIds, completion_ids: completionIds, token_logprobs: tokenLogProbs, sum }, null, 2) + "\n");
      } else {
        completionIds.forEach((id, i) =>
          io.out(
            `${String(id).padStart(8)}  ${tokenLogProbs[i]!.toFixed(6).padStart(12)}  ${JSON.stringify(p.tokenizer.decode([id], { skipSpecialTokens: false }))}\n`,
          ),
        );
        io.out(`sum log-prob: ${sum.toFixed(6)} over ${completionIds.length} tokens\n`);
      }
      return 0;
    } finally {
      p.model.dispose();
    }
  });
}
