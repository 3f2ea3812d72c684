import { existsSync, statSync } from "node:fs";
import * as path from "node:path";
import { loadPretrained, savePretrained, type CausalLM, type SaveDtype } from "@pbrl/models";
import { isPosInt, optNumber, parseFlags, requireString } from "../args.js";
import { UsageError, type CliIO } from "../io.js";
import { backendFlag, onChosenBackend } from "./common.js";
import { checkConvertOut, writeConvertOut } from "./convert-out.js";

export const CONVERT_HELP = `pbrl convert --model SRC --out DIR [options]

Loads a checkpoint (folder or hub id) and writes it back as a Hugging Face folder with pbrl's
writer: config.json, safetensors weights, tokenizer files, generation_config.json. A PEFT LoRA
adapter folder (adapter_config.json) is loaded onto its base model and written back as an adapter
folder, or with --merge as a full checkpoint with the adapter merged into the weights.

DIR must be new, empty, or an earlier pbrl convert output (it holds a .pbrl-convert.json listing
what convert wrote there); pbrl convert refuses the source folder itself, a folder inside or
around it, a file, and a folder with other files, so it never deletes anything it did not write.
The checkpoint is assembled in a temporary folder beside DIR and renamed into place.

  --dtype D            float32 (default), bfloat16 or float16
  --max_shard_bytes N  split the weights into shards of at most N bytes
  --merge              for an adapter: write the merged full checkpoint (W + s·B·A) that
                       transformers loads without PEFT
  --base_model B       for an adapter: the base checkpoint (folder or hub id) to load it onto,
                       instead of adapter_config.json's base_model_name_or_path
  --backend B          native, libtorch, wasm, cpu or tensorflow (default: $PBRL_BACKEND, else
                       native when built, else wasm; work too big for the 4 GB heap of native and
                       wasm then runs again on libtorch when that is built)
`;

const DTYPES: readonly SaveDtype[] = ["float32", "bfloat16", "float16"];

export async function convertCommand(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseFlags(
    argv,
    {
      model: { type: "string" },
      out: { type: "string" },
      dtype: { type: "string" },
      max_shard_bytes: { type: "string" },
      merge: { type: "boolean" },
      base_model: { type: "string" },
      ...backendFlag,
    },
    "convert",
  );
  const src = requireString(values.model, "model", "convert");
  const out = requireString(values.out, "out", "convert");
  const dtype = (values.dtype ?? "float32") as SaveDtype;
  if (!DTYPES.includes(dtype)) throw new UsageError(`pbrl convert: --dtype must be one of ${DTYPES.join(", ")}, got ${JSON.stringify(values.dtype)}`);
  const maxShardBytes = optNumber(values.max_shard_bytes, "max_shard_bytes", "convert", isPosInt, "a positive integer");
  // Before loading anything: a local source is known now (a hub id's folder once it is resolved).
  const localSource = existsSync(src) && statSync(src).isDirectory() ? src : undefined;
  checkConvertOut(out, localSource);
  return onChosenBackend(values.backend, io, "convert", async () => {
    const p = await loadPretrained(src, values.base_model !== undefined ? { baseModel: values.base_model } : {});
    try {
      if (values.merge === true && p.model.adapter === undefined)
        throw new UsageError(
          `pbrl convert: --merge merges a LoRA adapter into its base model, but ${src} is a full checkpoint (no adapter_config.json); leave --merge out`,
        );
      if (p.model.adapter !== undefined && values.merge !== true && dtype !== "float32")
        throw new UsageError(
          `pbrl convert: --dtype ${dtype} applies to full checkpoints; an adapter is written as PEFT writes it, in float32 (add --merge for a ${dtype} full checkpoint)`,
        );
      // The adapter's base is an input too: --out may not be it, inside it or around it.
      const base = p.model.adapter !== undefined ? p.model.origin : undefined;
      if (base !== undefined && existsSync(base)) checkConvertOut(out, base);
      const target = checkConvertOut(out, p.dir);
      await writeConvertOut(target, localSource !== undefined ? path.resolve(localSource) : src, (dir) =>
        savePretrained(dir, p, { dtype, merge: values.merge === true, ...(maxShardBytes !== undefined ? { maxShardBytes } : {}) }),
      );
      io.err(
        `pbrl: wrote ${target.dir}${target.existing === "earlier" ? " (replacing an earlier pbrl convert output)" : ""} (${describeWritten(p.model, values.merge === true, dtype)})\n`,
      );
      return 0;
    } finally {
      p.model.dispose();
    }
  });
}

function describeWritten(model: CausalLM, merge: boolean, dtype: SaveDtype): string {
  const n = (x: number) => x.toLocaleString("en-US");
  if (model.adapter === undefined) return `${n(model.numParameters())} parameters, ${dtype}`;
  if (merge) return `${n(model.numParameters() - model.adapter.numParameters())} parameters with the LoRA adapter merged, ${dtype}`;
  return `a LoRA adapter of ${n(model.adapter.numParameters())} parameters on ${model.adapter.spec.modules.length} modules, float32`;
}
