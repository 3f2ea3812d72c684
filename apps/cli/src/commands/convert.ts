import { loadPretrained, savePretrained, type SaveDtype } from "@pbrl/models";
import { isPosInt, optNumber, parseFlags, requireString } from "../args.js";
import { UsageError, type CliIO } from "../io.js";
import { backendFlag, onChosenBackend } from "./common.js";

export const CONVERT_HELP = `pbrl convert --model SRC --out DIR [options]

Loads a checkpoint (folder or hub id) and writes it back as a Hugging Face folder with pbrl's
writer: config.json, safetensors weights, tokenizer files, generation_config.json.

  --dtype D            float32 (default), bfloat16 or float16
  --max_shard_bytes N  split the weights into shards of at most N bytes
  --backend B          native, libtorch, wasm, cpu or tensorflow (default: native when built, else wasm)
`;

const DTYPES: readonly SaveDtype[] = ["float32", "bfloat16", "float16"];

export async function convertCommand(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseFlags(argv, { model: { type: "string" }, out: { type: "string" }, dtype: { type: "string" }, max_shard_bytes: { type: "string" }, ...backendFlag }, "convert");
  const src = requireString(values.model, "model", "convert");
  const out = requireString(values.out, "out", "convert");
  const dtype = (values.dtype ?? "float32") as SaveDtype;
  if (!DTYPES.includes(dtype)) throw new UsageError(`pbrl convert: --dtype must be one of ${DTYPES.join(", ")}, got ${JSON.stringify(values.dtype)}`);
  const maxShardBytes = optNumber(values.max_shard_bytes, "max_shard_bytes", "convert", isPosInt, "a positive integer");
  return onChosenBackend(values.backend, io, "convert", async () => {
    const p = await loadPretrained(src);
    try {
      await savePretrained(out, p, { dtype, ...(maxShardBytes !== undefined ? { maxShardBytes } : {}) });
      io.err(`pbrl: wrote ${out} (${p.model.numParameters().toLocaleString("en-US")} parameters, ${dtype})\n`);
      return 0;
    } finally {
      p.model.dispose();
    }
  });
}
