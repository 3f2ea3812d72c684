"""Reference outputs of make_model_fixtures.py: logits, greedy generations (single and left-padded
batch), log-probs of completions, tokenizer ids and rendered chat templates, all computed with
Hugging Face transformers (CPU, float32, eager attention).

Imported by make_model_fixtures.py (the build) and model_fixtures_check.py (forward_logits). See
scripts/reference/README.md ("Reference JSON format") for what every field is.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import tokenizers
import torch
import transformers

import family_fixtures as families  # (next to this script)
from model_fixtures_json import F32, F64, f32_list

MAX_NEW_TOKENS = 12
MIN_MARGIN = 1e-3

# --------------------------------------------------------------------------------------
# Fixture inputs (shared by both models)
# --------------------------------------------------------------------------------------

PROMPTS = [
    "The cat",
    "Once upon a time in Zürich, the baker",
    "Numbers: 1, 2, 3 and 42 are",
    "The weather today is sunny and the children play",
]

LOGPROB_PAIRS = [
    # (prompt, completion, append_eos)
    ("The dog", " sleeps in the garden.", False),
    ("Once upon a time", " there was a naïve robot.", False),
    ("We drink", " coffee at the café ☕", True),
    ("Question: what is 7 plus 5?\nAnswer:", " 12", False),
]

TOKENIZER_STRINGS_COMMON = [
    "Hello world",
    "  leading spaces and  double  spaces ",
    "line one\nline two\n\nline four\r\n",
    "Numbers 0123456789 and 3.14159, 1,000,000!",
    "naïve café in Zürich — déjà vu",
    "emoji 🙂 and ☕ coffee 🚀",
    "tabs\tand\tmixed   whitespace\u00a0nbsp",
]

CHAT_MESSAGES = [
    [
        {"role": "system", "content": "You are a tiny test model."},
        {"role": "user", "content": "What is the weather in Zürich?"},
    ],
    [
        {"role": "user", "content": "Hello! "},
        {"role": "assistant", "content": " Hi, how can I help?"},
        {"role": "user", "content": "Tell me a story about a cat 🙂"},
    ],
]

# --------------------------------------------------------------------------------------
# Reference computations
# --------------------------------------------------------------------------------------


@torch.no_grad()
def forward_logits(model, ids: list[int]) -> torch.Tensor:
    out = model(input_ids=torch.tensor([ids], dtype=torch.long))
    return out.logits[0].to(torch.float32)


@torch.no_grad()
def manual_greedy(model, ids: list[int], n: int) -> tuple[list[int], float]:
    """Greedy decoding by full recomputation (no KV cache); returns tokens and min top1-top2 margin."""
    seq = list(ids)
    new, margins = [], []
    for _ in range(n):
        last = forward_logits(model, seq)[-1]
        top2 = torch.topk(last, 2)
        margins.append(float(top2.values[0] - top2.values[1]))
        nxt = int(top2.indices[0])
        new.append(nxt)
        seq.append(nxt)
    return new, min(margins)


class NoEos:
    """Temporarily remove eos from model.generation_config so generate never stops early.

    (In transformers 5.18 passing eos_token_id=None to generate() also works, but values that are
    None in a passed GenerationConfig are filled from model.generation_config, so clearing it on the
    model is the unambiguous way.)
    """

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.saved = self.model.generation_config.eos_token_id
        self.model.generation_config.eos_token_id = None
        return self

    def __exit__(self, *exc):
        self.model.generation_config.eos_token_id = self.saved


@torch.no_grad()
def hf_generate(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, pad_id: int):
    with NoEos(model):
        out = model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            max_new_tokens=MAX_NEW_TOKENS,
            do_sample=False,
            pad_token_id=pad_id,
            return_dict_in_generate=True,
            output_logits=True,
        )
    seqs = out.sequences[:, input_ids.shape[1]:]
    assert seqs.shape[1] == MAX_NEW_TOKENS, seqs.shape
    logits = torch.stack(out.logits, dim=1).to(torch.float32)  # [B, steps, V]
    return seqs, logits


def eos_ids_of(model) -> list[int]:
    e = model.generation_config.eos_token_id
    return [e] if isinstance(e, int) else list(e or [])


def config_summary(model, tok) -> dict:
    c = model.config
    rp = c.rope_parameters or {}
    if c.model_type == "gemma3_text":
        rp = rp["full_attention"]  # per layer type; the sliding layers' are in config_json
    summary = {
        "architecture": c.architectures[0] if c.architectures else type(model).__name__,
        "model_type": c.model_type,
        "vocab_size": c.vocab_size,
        "tokenizer_len": len(tok),
        "hidden_size": c.hidden_size,
        "intermediate_size": c.intermediate_size,
        "num_hidden_layers": c.num_hidden_layers,
        "num_attention_heads": c.num_attention_heads,
        "num_key_value_heads": c.num_key_value_heads,
        "head_dim": getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads,
        "rope_theta": F64(rp.get("rope_theta")),
        "rope_type": rp.get("rope_type"),
        "rms_norm_eps": F64(c.rms_norm_eps),
        "tie_word_embeddings": bool(c.tie_word_embeddings),
        "attention_bias": bool(getattr(c, "attention_bias", True)),
        "max_position_embeddings": c.max_position_embeddings,
        "bos_token_id": c.bos_token_id,
        "eos_token_id": c.eos_token_id,
        "pad_token_id": c.pad_token_id,
        "generation_config_eos_token_id": model.generation_config.eos_token_id,
        "tokenizer_bos_token": tok.bos_token,
        "tokenizer_eos_token": tok.eos_token,
        "tokenizer_pad_token": tok.pad_token,
        "dtype_of_reference_compute": "float32",
        "attn_implementation": "eager",
    }
    if c.model_type in NEW_FAMILIES:
        # attention_bias is not a field of every family; the saved config.json says what is.
        summary["attention_bias"] = bool(getattr(c, "attention_bias", False))
        summary["config_json"] = json.loads(c.to_json_string(use_diff=True))
    return summary


NEW_FAMILIES = ("qwen3", "mistral", "gemma3_text", "phi3")


def versions() -> dict:
    return {
        "python": ".".join(map(str, sys.version_info[:3])),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "numpy": np.__version__,
    }


def prompt_section(model, tok) -> tuple[list, list[torch.Tensor]]:
    entries, all_logits = [], []
    for text in PROMPTS:
        ids = tok(text, add_special_tokens=True)["input_ids"]
        assert 3 <= len(ids) <= 20, (text, len(ids))
        logits = forward_logits(model, ids)
        all_logits.append(logits)
        entries.append({"text": text, "input_ids": ids, "logits": f32_list(logits)})
    return entries, all_logits


def reference_for(name: str, model, tok, prompt_logits_only: bool = False) -> dict:
    ref: dict = {
        "name": name,
        "description": "Reference outputs computed with Hugging Face transformers (CPU, float32, eager attention). "
        "Float values are float32 written as their shortest round-trip decimal (use Math.fround in JS).",
        "versions": versions(),
        "config": config_summary(model, tok),
    }
    prompts, prompt_logits = prompt_section(model, tok)
    ref["prompts"] = prompts
    if prompt_logits_only:
        return ref

    pad_id = tok.pad_token_id
    eos = eos_ids_of(model)

    # --- greedy, one unpadded prompt at a time
    greedy = []
    for p in prompts:
        ids = torch.tensor([p["input_ids"]], dtype=torch.long)
        seqs, step_logits = hf_generate(model, ids, torch.ones_like(ids), pad_id)
        new_ids = seqs[0].tolist()
        top2 = torch.topk(step_logits[0], 2, dim=-1).values
        margin = float((top2[:, 0] - top2[:, 1]).min())
        man_ids, man_margin = manual_greedy(model, p["input_ids"], MAX_NEW_TOKENS)
        extra = {}
        if families.generate_loses_context(model, len(p["input_ids"]), MAX_NEW_TOKENS):
            # transformers 5.18's Phi-3 generate drops its cache at the longrope switch but then
            # feeds only the last token (see family_fixtures.generate_loses_context): the
            # reference is greedy decoding by full recomputation, what that cache drop intends.
            assert man_ids != new_ids, (name, p["text"], "transformers' generate no longer loses its context here: drop this workaround")
            extra = {"hf_generate_new_token_ids": new_ids, "note": families.PHI3_GENERATE_NOTE}
            new_ids, margin = man_ids, man_margin
        assert man_ids == new_ids, (name, p["text"], man_ids, new_ids)
        margin = min(margin, man_margin)
        assert margin > MIN_MARGIN, (name, p["text"], margin)
        greedy.append({
            "text_prompt": p["text"],
            "input_ids": p["input_ids"],
            "new_token_ids": new_ids,
            "text": tok.decode(new_ids, skip_special_tokens=True),
            "min_margin": F32(margin),
            "stopped_at_eos": False,
            "eos_generated": any(t in eos for t in new_ids),
            **extra,
        })
    ref["greedy"] = {
        "max_new_tokens": MAX_NEW_TOKENS,
        "do_sample": False,
        "eos_handling": "EOS stopping disabled (generation_config.eos_token_id=None during generate); "
        "always exactly max_new_tokens tokens. eos_generated says whether an EOS id appears anyway.",
        "results": greedy,
    }

    # --- greedy, all prompts in one left-padded batch
    tok.padding_side = "left"
    enc = tok(PROMPTS, add_special_tokens=True, padding=True, return_tensors="pt")
    tok.padding_side = "right"
    seqs, step_logits = hf_generate(model, enc["input_ids"], enc["attention_mask"], pad_id)
    mask = enc["attention_mask"]
    pos = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)
    rows = []
    for i, p in enumerate(prompts):
        new_ids = seqs[i].tolist()
        top2 = torch.topk(step_logits[i], 2, dim=-1).values
        rows.append({
            "text_prompt": p["text"],
            "input_ids": enc["input_ids"][i].tolist(),
            "attention_mask": mask[i].tolist(),
            "position_ids": pos[i].tolist(),
            "new_token_ids": new_ids,
            "text": tok.decode(new_ids, skip_special_tokens=True),
            "min_margin": F32(float((top2[:, 0] - top2[:, 1]).min())),
            "matches_unbatched": new_ids == greedy[i]["new_token_ids"],
        })
    ref["greedy_batched"] = {
        "max_new_tokens": MAX_NEW_TOKENS,
        "padding_side": "left",
        "pad_token_id": pad_id,
        "position_ids_rule": "prompt: cumsum(attention_mask)-1, masked_fill(attention_mask==0, 0); "
        "each generated token: previous last position + 1",
        "rows": rows,
    }

    # --- log-probs of completions
    lps = []
    for prompt, completion, add_eos in LOGPROB_PAIRS:
        p_ids = tok(prompt, add_special_tokens=True)["input_ids"]
        c_ids = tok(completion, add_special_tokens=False)["input_ids"]
        if add_eos:
            c_ids = c_ids + [eos[0]]
        logits = forward_logits(model, p_ids + c_ids)
        logp = torch.log_softmax(logits, dim=-1)
        P = len(p_ids)
        tl = [logp[P - 1 + i, t] for i, t in enumerate(c_ids)]
        tl32 = np.array([float(x) for x in tl], dtype=np.float32)
        lps.append({
            "prompt": prompt,
            "completion": completion,
            "ends_with_eos": add_eos,
            "prompt_ids": p_ids,
            "completion_ids": c_ids,
            "token_logprobs": [F32(x) for x in tl32],
            "sum": F64(np.sum(tl32.astype(np.float64))),
        })
    ref["logprobs"] = {
        "rule": "input = prompt_ids + completion_ids (concatenated ids, not re-tokenized); "
        "token_logprobs[i] = log_softmax(logits[len(prompt_ids)-1+i])[completion_ids[i]] in float32; "
        "sum = float64 sum of the float32 token_logprobs",
        "items": lps,
    }

    # --- tokenizer
    specials_str = ("<s>Hello</s> <pad> x" if tok.bos_token == "<s>"
                    else "<|im_start|>user\nhi<|im_end|>\n<|endoftext|>")
    toks = []
    for s in TOKENIZER_STRINGS_COMMON + [specials_str]:
        ids = tok.encode(s, add_special_tokens=True)
        ids_ns = tok.encode(s, add_special_tokens=False)
        toks.append({
            "text": s,
            "ids": ids,
            "ids_no_special": ids_ns,
            "tokens_no_special": tok.convert_ids_to_tokens(ids_ns),
            "decoded": tok.decode(ids, skip_special_tokens=True),
            "decoded_with_special": tok.decode(ids, skip_special_tokens=False),
        })
    ref["tokenizer"] = toks

    # --- chat templates
    ref["chat_template"] = [
        {
            "messages": msgs,
            "add_generation_prompt": True,
            "rendered": tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True),
        }
        for msgs in CHAT_MESSAGES
    ]
    return ref
