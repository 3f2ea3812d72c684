/**
 * The README.md pushed with a checkpoint that has none: the metadata the hub indexes (library,
 * tags, base model) and a few lines on what the model is and how to load it.
 */
import { HUB_ID } from "./env.js";

export interface ModelCardInput {
  repo: string;
  /** The model training started from, when known. */
  baseModel?: string | undefined;
  /** The checkpoint's config.json, when it has one. */
  config?: Record<string, unknown> | undefined;
  /** The files pushed beside the card. */
  files?: string[];
}

/** The base model a config names, when it is a hub id (a local path would be rejected by the hub's metadata check). */
export function baseModelFromConfig(config: Record<string, unknown> | undefined): string | undefined {
  const v = config?.["_name_or_path"] ?? config?.["base_model"];
  return typeof v === "string" && HUB_ID.test(v) ? v : undefined;
}

export function modelCard(input: ModelCardInput): string {
  const explicit = input.baseModel !== undefined && HUB_ID.test(input.baseModel) ? input.baseModel : undefined;
  const base = explicit ?? baseModelFromConfig(input.config);
  const arch = Array.isArray(input.config?.["architectures"]) ? String((input.config["architectures"] as unknown[])[0]) : undefined;
  const modelType = typeof input.config?.["model_type"] === "string" ? (input.config["model_type"] as string) : undefined;
  const agents = (input.files ?? []).filter((f) => /^[^/]+\/config\.json$/.test(f)).map((f) => f.split("/")[0]!);
  const front = [
    "---",
    "library_name: transformers",
    "tags:",
    "- pbrl",
    "- preference-based-rl",
    "- multi-agent",
    ...(base !== undefined ? [`base_model: ${base}`] : []),
    "---",
    "",
  ];
  const body = [
    `# ${input.repo}`,
    "",
    `This model was trained with pbrl, which trains teams of LLM agents from preferences (multi-agent DPO and RLHF, after CoMLRL).`,
    "",
    `- Base model: ${base !== undefined ? `[${base}](https://huggingface.co/${base})` : "not recorded"}`,
    ...(arch !== undefined || modelType !== undefined
      ? [`- Architecture: ${[arch, modelType !== undefined ? `(${modelType})` : undefined].filter(Boolean).join(" ")}`]
      : []),
    ...(agents.length > 0 ? [`- Agents: ${agents.join(", ")} (one checkpoint folder each)`] : []),
    "",
    "## Use",
    "",
    "```python",
    "from transformers import AutoModelForCausalLM, AutoTokenizer",
    "",
    `model = AutoModelForCausalLM.from_pretrained("${input.repo}"${agents.length > 0 ? `, subfolder="${agents[0]}"` : ""})`,
    `tokenizer = AutoTokenizer.from_pretrained("${input.repo}"${agents.length > 0 ? `, subfolder="${agents[0]}"` : ""})`,
    "```",
    // pbrl loads a repository's root only, not a subfolder.
    ...(agents.length === 0 ? ["", `or with pbrl: \`pbrl generate --model ${input.repo} --prompt "..."\``] : []),
    "",
  ];
  return [...front, ...body].join("\n");
}
