import { promises as fs } from "node:fs";
import * as path from "node:path";
import { Template } from "@huggingface/jinja";
import { Tokenizer as HFTokenizer } from "@huggingface/tokenizers";

export interface ChatMessage {
  role: string;
  content: string;
}

/** Renders chat messages with a compiled chat template (see Tokenizer.chatTemplateRenderer). */
export type ChatTemplateRenderer = (messages: ChatMessage[], options?: { addGenerationPrompt?: boolean }) => string;

export class TokenizerLoadError extends Error {
  override name = "TokenizerLoadError";
}

/** The tokenizer files of a checkpoint, kept verbatim so saving reproduces them exactly. */
export interface TokenizerFiles {
  "tokenizer.json": string;
  "tokenizer_config.json"?: string;
  "chat_template.jinja"?: string;
  "special_tokens_map.json"?: string;
}

const OPTIONAL_FILES = ["tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json"] as const;

type Json = Record<string, unknown>;

function tokenContent(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (v !== null && typeof v === "object" && typeof (v as Json)["content"] === "string") return (v as Json)["content"] as string;
  return undefined;
}

/**
 * A Hugging Face tokenizer (tokenizer.json through @huggingface/tokenizers) with its special
 * tokens and chat template (chat_template.jinja, or `chat_template` in tokenizer_config.json,
 * rendered through @huggingface/jinja as transformers' apply_chat_template does).
 */
export class Tokenizer {
  private readonly inner: HFTokenizer;
  private readonly config: Json;
  private readonly renderChat: ChatTemplateRenderer | undefined;
  private longestToken: number | undefined;
  readonly chatTemplate: string | undefined;
  readonly specialTokens: Record<string, string>;

  constructor(
    readonly files: TokenizerFiles,
    source = "tokenizer",
  ) {
    let tokenizerJson: Json;
    try {
      tokenizerJson = JSON.parse(files["tokenizer.json"]) as Json;
      this.config = files["tokenizer_config.json"] !== undefined ? (JSON.parse(files["tokenizer_config.json"]) as Json) : {};
    } catch (err) {
      throw new TokenizerLoadError(`${source}: invalid tokenizer JSON (${(err as Error).message})`);
    }
    this.inner = new HFTokenizer(tokenizerJson, this.config);
    const specialMap = files["special_tokens_map.json"] !== undefined ? (JSON.parse(files["special_tokens_map.json"]) as Json) : {};
    this.specialTokens = {};
    for (const key of ["bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token"]) {
      const v = tokenContent(this.config[key]) ?? tokenContent(specialMap[key]);
      if (v !== undefined) this.specialTokens[key] = v;
    }
    const fromConfig = this.config["chat_template"];
    this.chatTemplate = files["chat_template.jinja"] ?? (typeof fromConfig === "string" ? fromConfig : undefined);
    if (Array.isArray(fromConfig) && this.chatTemplate === undefined) {
      // Named templates: transformers uses the one called "default".
      const def = (fromConfig as Json[]).find((t) => t["name"] === "default");
      if (def !== undefined && typeof def["template"] === "string") this.chatTemplate = def["template"] as string;
    }
    try {
      this.renderChat = this.chatTemplate !== undefined ? Tokenizer.chatTemplateRenderer(this.chatTemplate, this.specialTokens) : undefined;
    } catch (err) {
      throw new TokenizerLoadError(`${source}: the chat template does not parse (${(err as Error).message})`);
    }
  }

  /**
   * A chat template compiled once, rendering messages as apply_chat_template(tokenize=False): the
   * template sees the messages, add_generation_prompt and the special tokens (bos_token, …). A
   * worker thread renders with it from the template's text and the tokens alone (no vocabulary).
   */
  static chatTemplateRenderer(chatTemplate: string, specialTokens: Readonly<Record<string, string>>): ChatTemplateRenderer {
    const template = new Template(chatTemplate);
    return (messages, options = {}) => template.render({ messages, add_generation_prompt: options.addGenerationPrompt ?? true, ...specialTokens });
  }

  /** Reads tokenizer.json and, when present, tokenizer_config.json, chat_template.jinja, special_tokens_map.json. */
  static async fromDir(dir: string): Promise<Tokenizer> {
    const read = async (name: string): Promise<string | undefined> => {
      try {
        return await fs.readFile(path.join(dir, name), "utf8");
      } catch {
        return undefined;
      }
    };
    const main = await read("tokenizer.json");
    if (main === undefined) throw new TokenizerLoadError(`${dir} has no tokenizer.json (pbrl needs a fast tokenizer file)`);
    const files: TokenizerFiles = { "tokenizer.json": main };
    for (const name of OPTIONAL_FILES) {
      const text = await read(name);
      if (text !== undefined) files[name] = text;
    }
    return new Tokenizer(files, dir);
  }

  /** Writes the tokenizer files unchanged into `dir`. */
  async save(dir: string, write: (file: string, text: string) => Promise<void>): Promise<void> {
    for (const [name, text] of Object.entries(this.files)) if (text !== undefined) await write(path.join(dir, name), text);
  }

  private idOf(key: string): number | undefined {
    const tok = this.specialTokens[key];
    return tok === undefined ? undefined : this.inner.token_to_id(tok);
  }

  get bosTokenId(): number | undefined {
    return this.idOf("bos_token");
  }

  get eosTokenId(): number | undefined {
    return this.idOf("eos_token");
  }

  get padTokenId(): number | undefined {
    return this.idOf("pad_token");
  }

  get vocabSize(): number {
    return this.inner.get_vocab(true).size;
  }

  /**
   * The UTF-8 length of the vocabulary's longest token, as the vocabulary writes it (byte-level
   * and SentencePiece vocabularies write each byte or space in one or more bytes, so no token
   * stands for more text than this): a prompt of more bytes than this times the model's context
   * cannot fit it, whatever its tokens.
   */
  get longestTokenBytes(): number {
    if (this.longestToken === undefined) {
      let longest = 1;
      for (const token of this.inner.get_vocab(true).keys()) longest = Math.max(longest, Buffer.byteLength(token, "utf8"));
      this.longestToken = longest;
    }
    return this.longestToken;
  }

  tokenToId(token: string): number | undefined {
    return this.inner.token_to_id(token);
  }

  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    return this.inner.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }).ids;
  }

  decode(ids: readonly number[], options: { skipSpecialTokens?: boolean } = {}): string {
    return this.inner.decode([...ids], { skip_special_tokens: options.skipSpecialTokens ?? true });
  }

  /** Renders messages with the chat template, as apply_chat_template(tokenize=False). */
  applyChatTemplate(messages: ChatMessage[], options: { addGenerationPrompt?: boolean } = {}): string {
    if (this.renderChat === undefined)
      throw new TokenizerLoadError("this tokenizer has no chat template (chat_template.jinja or chat_template in tokenizer_config.json)");
    return this.renderChat(messages, options);
  }
}
