"""The tiny Llama and Qwen2 checkpoints of make_model_fixtures.py (randomly initialised, float32).

The other families are built in family_fixtures.py. Imported by make_model_fixtures.py, which
sets torch's determinism knobs before building anything.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import (
    AutoModelForCausalLM,
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

# Model init seeds: picked by scanning seeds 0..39 for the largest minimum top-1/top-2 logit gap
# over all greedy steps (must be > MIN_MARGIN; asserted in model_fixtures_reference.reference_for).
LLAMA_SEED = 9
QWEN2_SEED = 19
INIT_STD = 0.2  # ~10x the HF default (0.02) for all projection matrices
EMBED_STD = 0.5  # embed_tokens / lm_head: logits std ~ 0.5*sqrt(64) = 4 -> peaked next-token distributions

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
