"""The tiny Llama and Qwen2 checkpoints of make_model_fixtures.py (randomly initialised, float32),
and what every tiny checkpoint shares: its size, its weight init and the two tokenizers' token ids.

The other families are built in family_fixtures.py with build_tiny. Imported by
make_model_fixtures.py, which sets torch's determinism knobs before building anything.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, GenerationConfig, LlamaForCausalLM, Qwen2ForCausalLM

# Model init seeds: picked by scanning seeds 0..39 for the largest minimum top-1/top-2 logit gap
# over all greedy steps (must be > MIN_MARGIN; asserted in model_fixtures_reference.reference_for).
LLAMA_SEED = 9
QWEN2_SEED = 19
INIT_STD = 0.2  # ~10x the HF default (0.02) for all projection matrices
EMBED_STD = 0.5  # embed_tokens / lm_head: logits std ~ 0.5*sqrt(64) = 4 -> peaked next-token distributions

# The size of every tiny checkpoint; a family's builder overrides what makes it differ.
TINY_CONFIG = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
    "initializer_range": INIT_STD,
}

# The Llama-style tokenizer's specials (<pad>, <s>, </s> at the start of the vocab, like Llama 2).
LLAMA_IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}


def llama_ids_generation() -> GenerationConfig:
    return GenerationConfig(**LLAMA_IDS)


def qwen_ids(endoftext: int) -> dict[str, int]:
    # Like Qwen2 base config.json: bos = eos = pad = <|endoftext|>.
    return {"bos_token_id": endoftext, "eos_token_id": endoftext, "pad_token_id": endoftext}


def qwen_ids_generation(endoftext: int, im_end: int) -> GenerationConfig:
    # Like Qwen2-*-Instruct generation_config.json: eos is a list [<|im_end|>, <|endoftext|>].
    return GenerationConfig(bos_token_id=endoftext, eos_token_id=[im_end, endoftext], pad_token_id=endoftext)


# --------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------


def randomise_(model: torch.nn.Module, seed: int, norm_center: float) -> None:
    """Every parameter drawn from a seeded generator, with much larger spreads than HF's init.

    Norm weights are norm_center + N(0, 0.2^2): 1 for weight-style RMSNorms, 0 for Gemma's
    (1 + weight) RMSNorm, so that both scale hidden states by about 1.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if name.endswith("norm.weight") or "layernorm" in name:
                p.copy_(norm_center + 0.2 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name or "lm_head" in name:
                p.copy_(EMBED_STD * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(INIT_STD * torch.randn(p.shape, generator=g))


def build_tiny(model_cls, vocab: int, seed: int, generation: GenerationConfig, norm_center: float = 1.0, **config):
    """model_cls made from TINY_CONFIG updated with config: eager attention, weights from
    randomise_(seed, norm_center), generation as its generation config, in eval mode."""
    cfg = model_cls.config_class(**{**TINY_CONFIG, "vocab_size": vocab, **config})
    cfg._attn_implementation = "eager"
    # randomise_ overwrites every parameter, but HF's own init draws from the global generator
    # first: seeding it keeps that, and whatever runs after, reproducible.
    torch.manual_seed(seed)
    model = model_cls(cfg)
    randomise_(model, seed, norm_center)
    model.generation_config = generation
    return model.eval()


def build_llama(vocab: int, seed: int) -> LlamaForCausalLM:
    return build_tiny(
        LlamaForCausalLM, vocab, seed, llama_ids_generation(),
        intermediate_size=160,
        hidden_act="silu",
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        rope_theta=10000.0,
        attention_bias=False,
        mlp_bias=False,
        **LLAMA_IDS,
    )


def build_qwen2(vocab: int, seed: int, endoftext: int, im_end: int) -> Qwen2ForCausalLM:
    return build_tiny(
        Qwen2ForCausalLM, vocab, seed, qwen_ids_generation(endoftext, im_end),
        intermediate_size=128,
        hidden_act="silu",
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        rope_theta=1000000.0,
        use_sliding_window=False,
        **qwen_ids(endoftext),
    )


def load_model(path: Path) -> torch.nn.Module:
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager")
    return model.float().eval()
