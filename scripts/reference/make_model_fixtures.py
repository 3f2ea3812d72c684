#!/usr/bin/env python3
"""Build deterministic reference fixtures for pbrl's model package.

Writes tiny Llama / Qwen2 / Qwen3 / Mistral / Gemma 3 / Phi-3 checkpoints (randomly initialised,
float32 safetensors; the last four are described in family_fixtures.py),
their byte-level BPE tokenizers (trained here on a generated corpus) and JSON
files with reference logits, greedy generations, log-probs, tokenizer ids and
rendered chat templates, all computed with Hugging Face transformers on CPU.

Usage (from the repository root):

    .venv-ref/bin/python scripts/reference/make_model_fixtures.py
    .venv-ref/bin/python scripts/reference/make_model_fixtures.py --out /tmp/fx
    .venv-ref/bin/python scripts/reference/make_model_fixtures.py \
        --check-pbrl-dir DIR --against tiny-llama|tiny-qwen2|tiny-llama-bf16|tiny-qwen3|...

Everything is deterministic: running the script twice yields byte-identical
files. See scripts/reference/README.md for what every fixture is.
"""

from __future__ import annotations

import argparse
import os
import sys

# Determinism / quietness knobs. Must be set before torch / tokenizers import.
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import copy  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import tokenizers  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

import family_fixtures as families  # noqa: E402  (next to this script)

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
transformers.logging.set_verbosity_error()
transformers.logging.disable_progress_bar()

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "tests" / "test-fixtures" / "models"

VOCAB_SIZE = 384
MAX_NEW_TOKENS = 12
MIN_MARGIN = 1e-3
CHECK_TOL = 1e-4

CORPUS_SEED = 1234
# Model init seeds: picked by scanning seeds 0..39 for the largest minimum top-1/top-2 logit gap
# over all greedy steps (must be > MIN_MARGIN; asserted below).
LLAMA_SEED = 9
QWEN2_SEED = 19
INIT_STD = 0.2  # ~10x the HF default (0.02) for all projection matrices
EMBED_STD = 0.5  # embed_tokens / lm_head: logits std ~ 0.5*sqrt(64) = 4 -> peaked next-token distributions

# --------------------------------------------------------------------------------------
# Chat templates
# --------------------------------------------------------------------------------------

# Llama-3-like: bos_token once at the start, a header per role, content trimmed, eos_token
# closing each turn (Llama 3 uses <|start_header_id|>/<|eot_id|>; we only have <s>/</s>).
LLAMA_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% set content = '<|' + message['role'] + '|>\\n\\n' + message['content'] | trim + eos_token %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n\\n' }}{% endif %}"
)

# Verbatim the ChatML template of Qwen2-*-Instruct (default system message when none is given).
QWEN2_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

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
# Corpus
# --------------------------------------------------------------------------------------


def make_corpus(n_lines: int = 480) -> list[str]:
    rng = random.Random(CORPUS_SEED)
    subjects = ["The cat", "The dog", "A robot", "The baker", "My friend", "The teacher", "A child",
                "The old man", "The scientist", "Our neighbour", "The bird", "Anna", "Luca"]
    verbs = ["walks", "sleeps", "reads", "sings", "runs", "drinks coffee", "eats bread", "writes code",
             "plays", "looks", "waits", "thinks", "travels", "works"]
    places = ["in the park", "at the café", "in Zürich", "near the river", "in the garden",
              "at home", "in the kitchen", "on the train", "in São Paulo", "at the station", "in the city"]
    times = ["today", "every morning", "at night", "on Sunday", "in the evening", "once upon a time",
             "yesterday", "tomorrow", "sometimes"]
    adjectives = ["sunny", "cold", "warm", "rainy", "windy", "quiet", "naïve", "happy", "tired", "busy"]
    weather = ["The weather today is {a}.", "It is {a} and {b} in {p}.", "Tomorrow will be {a}, they say.",
               "The sky over {p} is {a} today."]
    emojis = ["🙂", "☕", "🚀", "🌧", "😀"]
    out: list[str] = []
    for i in range(n_lines):
        kind = i % 8
        if kind == 0:
            out.append(f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(places)} {rng.choice(times)}.")
        elif kind == 1:
            t = rng.choice(weather)
            out.append(t.format(a=rng.choice(adjectives), b=rng.choice(adjectives),
                                p=rng.choice(places).split(" ", 1)[1]))
        elif kind == 2:
            a, b = rng.randint(0, 99), rng.randint(0, 99)
            out.append(f"Question: what is {a} plus {b}?\nAnswer: {a + b}")
        elif kind == 3:
            nums = ", ".join(str(rng.randint(0, 1000)) for _ in range(rng.randint(2, 5)))
            out.append(f"Numbers: {nums} and {rng.randint(0, 9)}.{rng.randint(0, 99):02d}!")
        elif kind == 4:
            out.append(f"Once upon a time {rng.choice(places)}, {rng.choice(subjects).lower()} "
                       f"{rng.choice(verbs)} and was {rng.choice(adjectives)}.")
        elif kind == 5:
            out.append(f"{rng.choice(subjects)} says: \"I love {rng.choice(['coffee', 'tea', 'bread', 'music'])} "
                       f"{rng.choice(emojis)}\" — déjà vu?")
        elif kind == 6:
            out.append(f"def f(x):\n    return x * {rng.randint(1, 9)} + {rng.randint(0, 9)}  # {rng.choice(adjectives)}")
        else:
            out.append(f"The children play {rng.choice(places)} while their parents "
                       f"{rng.choice(['drink coffee', 'read', 'talk', 'wait'])} {rng.choice(times)}.")
    return out


# --------------------------------------------------------------------------------------
# Tokenizers
# --------------------------------------------------------------------------------------


# Qwen2's pre-tokenizer regex (transformers' Qwen2Tokenizer / Qwen2 tokenizer.json): single digits.
QWEN2_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


def train_bpe(corpus: list[str], vocab_size: int, special_tokens: list[str], qwen_style: bool) -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False, fuse_unk=False))
    if qwen_style:
        # Exactly what transformers 5's Qwen2Tokenizer rebuilds on load (it ignores the
        # normalizer/pre_tokenizer stored in tokenizer.json for model_type "qwen2"), so that
        # tokenizer.json and transformers agree.
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    else:
        # GPT-2 style byte-level pre-tokenizer (its built-in regex).
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
    return tok


def build_llama_tokenizer(corpus: list[str]) -> PreTrainedTokenizerFast:
    # Special tokens first, like Llama 2 (<unk>=0, <s>=1, </s>=2): here <pad>=0, <s>=1, </s>=2.
    tok = train_bpe(corpus, VOCAB_SIZE, ["<pad>", "<s>", "</s>"], qwen_style=False)
    assert tok.token_to_id("<s>") == 1 and tok.token_to_id("</s>") == 2 and tok.token_to_id("<pad>") == 0
    tok.post_processor = processors.TemplateProcessing(
        single="<s>:0 $A:0",
        pair="<s>:0 $A:0 <s>:1 $B:1",
        special_tokens=[("<s>", 1)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=256,
        clean_up_tokenization_spaces=False,
        chat_template=LLAMA_CHAT_TEMPLATE,
    )


def build_qwen2_tokenizer(corpus: list[str]) -> PreTrainedTokenizerFast:
    # Special tokens at the end of the vocab, like Qwen2 (151643..151645).
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = train_bpe(corpus, VOCAB_SIZE - len(specials), [], qwen_style=True)
    assert tok.get_vocab_size() == VOCAB_SIZE - len(specials), tok.get_vocab_size()
    tok.add_special_tokens(specials)
    # Qwen2's tokenizer.json uses a ByteLevel post-processor (adds nothing, no BOS).
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        extra_special_tokens=["<|im_start|>", "<|im_end|>"],
        model_max_length=256,
        clean_up_tokenization_spaces=False,
        chat_template=QWEN2_CHAT_TEMPLATE,
    )


# --------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------


def randomise_(model: torch.nn.Module, seed: int) -> None:
    """Overwrite every parameter deterministically with a large-std init."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if name.endswith("norm.weight") or "layernorm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name or "lm_head" in name:
                p.copy_(EMBED_STD * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(INIT_STD * torch.randn(p.shape, generator=g))


def build_llama(vocab: int, seed: int) -> LlamaForCausalLM:
    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        hidden_act="silu",
        max_position_embeddings=256,
        initializer_range=INIT_STD,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        rope_theta=10000.0,
        attention_bias=False,
        mlp_bias=False,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    randomise_(model, seed)
    model.generation_config = GenerationConfig(bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return model.eval()


def build_qwen2(vocab: int, seed: int, endoftext: int, im_end: int) -> Qwen2ForCausalLM:
    cfg = Qwen2Config(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        hidden_act="silu",
        max_position_embeddings=256,
        initializer_range=INIT_STD,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        rope_theta=1000000.0,
        use_sliding_window=False,
        # Like Qwen2 base config.json: bos = eos = <|endoftext|>.
        bos_token_id=endoftext,
        eos_token_id=endoftext,
        pad_token_id=endoftext,
    )
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(cfg)
    randomise_(model, seed)
    # Like Qwen2-*-Instruct generation_config.json: eos is a list [<|im_end|>, <|endoftext|>].
    model.generation_config = GenerationConfig(
        bos_token_id=endoftext, eos_token_id=[im_end, endoftext], pad_token_id=endoftext
    )
    return model.eval()


def load_model(path: Path) -> torch.nn.Module:
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager")
    return model.float().eval()


# --------------------------------------------------------------------------------------
# JSON writing (float32 as shortest round-trip decimal; numeric arrays inline)
# --------------------------------------------------------------------------------------


class F32:
    """A float32 value serialised as its shortest round-trip decimal string."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = np.float32(v)


class F64:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = float(v)


def f32_list(t) -> list:
    arr = t.detach().cpu().to(torch.float32).numpy() if isinstance(t, torch.Tensor) else np.asarray(t, np.float32)
    if arr.ndim == 1:
        return [F32(x) for x in arr]
    return [f32_list(row) for row in arr]


def _num(x) -> str:
    if isinstance(x, F32):
        assert np.isfinite(x.v), x.v
        s = str(x.v)  # numpy: shortest repr that round-trips to the same float32
        assert np.float32(float(s)) == x.v
        return s
    if isinstance(x, F64):
        assert math.isfinite(x.v)
        return repr(x.v)
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return json.dumps(x, ensure_ascii=False)
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, float):
        assert math.isfinite(x)
        return repr(x)
    raise TypeError(type(x))


def _is_scalar(x) -> bool:
    return not isinstance(x, (dict, list, tuple))


def to_json(obj, indent: int = 0) -> str:
    pad = "  " * indent
    pad1 = "  " * (indent + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad1}{json.dumps(str(k), ensure_ascii=False)}: {to_json(v, indent + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, (list, tuple)):
        if not obj:
            return "[]"
        if all(_is_scalar(x) for x in obj):
            return "[" + ",".join(_num(x) for x in obj) + "]"
        if all(isinstance(x, (list, tuple)) and all(_is_scalar(y) for y in x) for x in obj):
            # matrix: one row per line
            rows = [pad1 + to_json(x, indent + 1) for x in obj]
            return "[\n" + ",\n".join(rows) + "\n" + pad + "]"
        items = [pad1 + to_json(x, indent + 1) for x in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return _num(obj)


def write_json(path: Path, obj) -> None:
    path.write_text(to_json(obj) + "\n", encoding="utf-8")


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


# --------------------------------------------------------------------------------------
# Main build
# --------------------------------------------------------------------------------------


def save_tokenizer(tok: PreTrainedTokenizerFast, path: Path, template_in_config: bool) -> None:
    # transformers 5 writes a single chat template to chat_template.jinja by default and drops it
    # from tokenizer_config.json; save_jinja_files=False keeps the legacy "chat_template" key instead.
    tok.save_pretrained(path, save_jinja_files=not template_in_config)


def file_listing(out: Path) -> list[str]:
    return [str(p.relative_to(out)) for p in sorted(out.rglob("*")) if p.is_file()]


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


def copy_tokenizer_files(src: Path, dst: Path) -> None:
    for f in TOKENIZER_FILES:
        if (src / f).exists():
            shutil.copyfile(src / f, dst / f)


def assert_tokenizer_json_agrees(path: Path, tok) -> None:
    """The raw tokenizer.json (what pbrl reads) must encode exactly like transformers' AutoTokenizer."""
    raw = Tokenizer.from_file(str(path / "tokenizer.json"))
    texts = PROMPTS + TOKENIZER_STRINGS_COMMON + [p for p, _, _ in LOGPROB_PAIRS] + [c for _, c, _ in LOGPROB_PAIRS]
    texts += ["<s>Hello</s> <pad> x", "<|im_start|>user\nhi<|im_end|>\n<|endoftext|>"]
    for t in texts:
        for special in (True, False):
            a = raw.encode(t, add_special_tokens=special).ids
            b = tok.encode(t, add_special_tokens=special)
            assert a == b, (path.name, t, special, a, b)
            assert raw.decode(a, skip_special_tokens=True) == tok.decode(b, skip_special_tokens=True), (path.name, t)


FAMILY_FIXTURES = ["tiny-qwen3", "tiny-mistral", "tiny-gemma3", "tiny-phi3"]


def build_families(out: Path, corpus: list[str]) -> list[str]:
    """The tiny checkpoints of family_fixtures.py, each with the tokenizer style its family ships:
    Qwen3 the Qwen2 one (ChatML, chat_template.jinja), the others the Llama-like one."""
    tok_q = build_qwen2_tokenizer(corpus)
    eot, im_end = tok_q.convert_tokens_to_ids("<|endoftext|>"), tok_q.convert_tokens_to_ids("<|im_end|>")
    made = {
        "tiny-qwen3": (families.build_qwen3(len(tok_q), families.QWEN3_SEED, eot, im_end), tok_q, False),
    }
    for name, builder, seed in [("tiny-mistral", families.build_mistral, families.MISTRAL_SEED),
                                ("tiny-gemma3", families.build_gemma3, families.GEMMA3_SEED),
                                ("tiny-phi3", families.build_phi3, families.PHI3_SEED)]:
        tok = build_llama_tokenizer(corpus)
        made[name] = (builder(len(tok), seed), tok, True)
    assert list(made) == FAMILY_FIXTURES
    for name, (model, tok, template_in_config) in made.items():
        d = out / name
        model.save_pretrained(d)
        save_tokenizer(tok, d, template_in_config=template_in_config)
        tok = AutoTokenizer.from_pretrained(d)
        assert_tokenizer_json_agrees(d, tok)
        ref = reference_for(name, load_model(d), tok)
        if name != "tiny-phi3":
            # Left padding shifts every row's cache indices alike, so sliding windows see the same
            # keys. (Not Phi-3: its padding counts towards longrope's switch to the long factors.)
            assert all(r["matches_unbatched"] for r in ref["greedy_batched"]["rows"]), name
        write_json(out / f"{name}.reference.json", ref)
    return list(made)


def build(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    names = ["tiny-llama", "tiny-qwen2", "tiny-llama-bf16", "tiny-qwen2-sharded"] + FAMILY_FIXTURES
    for n in names:
        if (out / n).exists():
            shutil.rmtree(out / n)

    corpus = make_corpus()
    (out / "corpus.txt").write_text("\n".join(corpus) + "\n", encoding="utf-8")

    # Model files are written BEFORE the tokenizer is (re)loaded: transformers 5's AutoTokenizer picks
    # the tokenizer class from config.json's model_type (qwen2 -> Qwen2Tokenizer), so references must
    # be computed with the tokenizer as it loads from the finished checkpoint folder.

    # ---------------- tiny-llama ----------------
    llama_dir = out / "tiny-llama"
    tok_l = build_llama_tokenizer(corpus)
    assert len(tok_l) == VOCAB_SIZE, len(tok_l)
    model_l = build_llama(len(tok_l), LLAMA_SEED)
    model_l.save_pretrained(llama_dir)
    save_tokenizer(tok_l, llama_dir, template_in_config=True)
    tok_l = AutoTokenizer.from_pretrained(llama_dir)
    assert_tokenizer_json_agrees(llama_dir, tok_l)
    model_l = load_model(llama_dir)
    write_json(out / "tiny-llama.reference.json", reference_for("tiny-llama", model_l, tok_l))

    # ---------------- tiny-llama-bf16 ----------------
    bf_dir = out / "tiny-llama-bf16"
    copy.deepcopy(model_l).to(torch.bfloat16).save_pretrained(bf_dir)
    copy_tokenizer_files(llama_dir, bf_dir)
    model_bf = AutoModelForCausalLM.from_pretrained(bf_dir, dtype=torch.bfloat16, attn_implementation="eager")
    assert next(model_bf.parameters()).dtype == torch.bfloat16
    model_bf = model_bf.float().eval()
    ref_bf = reference_for("tiny-llama-bf16", model_bf, AutoTokenizer.from_pretrained(bf_dir), prompt_logits_only=True)
    ref_bf["description"] += " Weights are the tiny-llama weights rounded to bfloat16 (as stored), upcast to float32."
    write_json(out / "tiny-llama-bf16.reference.json", ref_bf)

    # ---------------- tiny-qwen2 ----------------
    qwen_dir = out / "tiny-qwen2"
    tok_q = build_qwen2_tokenizer(corpus)
    assert len(tok_q) == VOCAB_SIZE, len(tok_q)
    eot, im_end = tok_q.convert_tokens_to_ids("<|endoftext|>"), tok_q.convert_tokens_to_ids("<|im_end|>")
    model_q = build_qwen2(len(tok_q), QWEN2_SEED, eot, im_end)
    model_q.save_pretrained(qwen_dir)
    save_tokenizer(tok_q, qwen_dir, template_in_config=False)
    tok_q = AutoTokenizer.from_pretrained(qwen_dir)
    assert type(tok_q).__name__ == "Qwen2Tokenizer", type(tok_q)
    assert_tokenizer_json_agrees(qwen_dir, tok_q)
    model_q = load_model(qwen_dir)
    write_json(out / "tiny-qwen2.reference.json", reference_for("tiny-qwen2", model_q, tok_q))

    # ---------------- tiny-qwen2-sharded ----------------
    sh_dir = out / "tiny-qwen2-sharded"
    model_q.save_pretrained(sh_dir, max_shard_size="60KB")
    copy_tokenizer_files(qwen_dir, sh_dir)
    assert (sh_dir / "model.safetensors.index.json").exists()
    shards = sorted(sh_dir.glob("model-*.safetensors"))
    assert len(shards) > 2, shards
    model_s = load_model(sh_dir)
    sa, sb = model_s.state_dict(), model_q.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert torch.equal(sa[k], sb[k]), k

    # ---------------- qwen3, mistral, gemma3_text, phi3 (family_fixtures.py) ----------------
    fam = build_families(out, corpus)

    # Sanity: every checkpoint must pass the check mode against its reference with a diff of exactly 0.
    for d, ref in [(llama_dir, "tiny-llama"), (qwen_dir, "tiny-qwen2"), (bf_dir, "tiny-llama-bf16"),
                   (sh_dir, "tiny-qwen2")] + [(out / n, n) for n in fam]:
        ok, diff = check(d, out / f"{ref}.reference.json", verbose=False)
        assert ok and diff == 0.0, (d, ref, ok, diff)

    for f in file_listing(out):
        print(f"{(out / f).stat().st_size:>9}  {f}")


# --------------------------------------------------------------------------------------
# Check mode
# --------------------------------------------------------------------------------------


def check(ckpt: Path, ref_path: Path, verbose: bool = True, tol: float = CHECK_TOL,
          check_chat: bool = True) -> tuple[bool, float]:
    ref = json.loads(ref_path.read_text(encoding="utf-8"))
    tok = AutoTokenizer.from_pretrained(ckpt)
    model = load_model(ckpt)
    ok = True
    problems = []

    if model.config.vocab_size != ref["config"]["vocab_size"]:
        problems.append(f"vocab_size {model.config.vocab_size} != {ref['config']['vocab_size']}")

    max_diff = 0.0
    for p in ref["prompts"]:
        ids = tok(p["text"], add_special_tokens=True)["input_ids"]
        if ids != p["input_ids"]:
            problems.append(f"prompt ids differ for {p['text']!r}: {ids} != {p['input_ids']}")
        logits = forward_logits(model, p["input_ids"]).numpy().astype(np.float64)
        exp = np.array(p["logits"], dtype=np.float32).astype(np.float64)
        if logits.shape != exp.shape:
            problems.append(f"logits shape {logits.shape} != {exp.shape} for {p['text']!r}")
            max_diff = float("inf")
            continue
        max_diff = max(max_diff, float(np.max(np.abs(logits - exp))))
    if max_diff > tol:
        problems.append(f"max_abs_logit_diff {max_diff} > {tol}")

    for t in ref.get("tokenizer", []):
        ids = tok.encode(t["text"], add_special_tokens=True)
        ids_ns = tok.encode(t["text"], add_special_tokens=False)
        dec = tok.decode(ids, skip_special_tokens=True)
        if ids != t["ids"]:
            problems.append(f"tokenizer ids differ for {t['text']!r}: {ids} != {t['ids']}")
        if ids_ns != t["ids_no_special"]:
            problems.append(f"tokenizer ids_no_special differ for {t['text']!r}: {ids_ns} != {t['ids_no_special']}")
        if dec != t["decoded"]:
            problems.append(f"decode differs for {t['text']!r}: {dec!r} != {t['decoded']!r}")

    if check_chat:
        for c in ref.get("chat_template", []):
            try:
                r = tok.apply_chat_template(c["messages"], tokenize=False,
                                            add_generation_prompt=c["add_generation_prompt"])
            except Exception as e:  # noqa: BLE001
                r = f"<error: {e}>"
            if r != c["rendered"]:
                problems.append(f"chat template render differs: {r!r} != {c['rendered']!r}")

    ok = not problems
    if verbose:
        print(f"{ckpt} against {ref_path.name}:")
        for pr in problems:
            print("MISMATCH:", pr)
        print(f"max_abs_logit_diff={max_diff:.9g}")
        print("OK" if ok else "FAIL")
    return ok, max_diff


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="fixture folder (default: %(default)s)")
    ap.add_argument("--check-pbrl-dir", type=Path, action="append",
                    help="checkpoint folder written by pbrl to verify (repeatable, one --against each)")
    ap.add_argument("--against", action="append", choices=["tiny-llama", "tiny-qwen2", "tiny-llama-bf16"] + FAMILY_FIXTURES,
                    help="which reference JSON (in --out) to compare with")
    ap.add_argument("--tol", type=float, default=CHECK_TOL, help="max allowed |logit diff| (default %(default)s)")
    ap.add_argument("--no-chat-check", action="store_true", help="do not compare rendered chat templates")
    args = ap.parse_args()

    if args.check_pbrl_dir is not None:
        if not args.against or len(args.against) != len(args.check_pbrl_dir):
            ap.error("every --check-pbrl-dir needs its --against")
        # One process for several folders: torch and transformers load once.
        results = [check(d, args.out / f"{a}.reference.json", tol=args.tol, check_chat=not args.no_chat_check)[0]
                   for d, a in zip(args.check_pbrl_dir, args.against)]
        return 0 if all(results) else 1

    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
