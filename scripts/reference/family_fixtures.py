"""Tiny checkpoints of the model families beyond Llama/Qwen2: Qwen3, Mistral, Gemma 3 (text) and Phi-3.

Imported by make_model_fixtures.py, which trains the tokenizers, saves the checkpoints and
computes the reference JSON. Each builder returns a randomly initialised model in eval mode
(model_fixtures_models.build_tiny, which holds the size, weight init and token ids all fixtures
share) whose config uses the family's real config fields, chosen so the tests exercise what makes
the family differ from Llama:

* qwen3: per-head q/k RMSNorm, head_dim 32 independent of hidden_size/heads (16), GQA, tied.
* mistral: sliding_window 8, shorter than most test prompts (up to 20 tokens) and every
  generation, GQA, untied.
* gemma3_text: hidden 48 (so sqrt(hidden) is not exact in float32), head_dim 32, 4 heads over 1
  KV head, query_pre_attn_scalar 24 (not head_dim), one sliding (window 6) and one global layer
  with their own RoPE (local theta 1e4; global theta 1e6 with linear scaling 8, as Gemma 3 4B),
  final logit soft-capping, and attn_logit_softcapping set although transformers 5.18 does
  not apply it in Gemma 3 (pbrl follows), GeGLU (gelu_pytorch_tanh), tied.
* phi3: fused qkv_proj / gate_up_proj, longrope with short and long factors and
  original_max_position_embeddings 16: prompts longer than 16 tokens use the long factors, and a
  generation that grows past 16 drops its cache and recomputes with them (Phi-3's
  prepare_inputs_for_generation); in a left-padded batch the padding counts, so rows switch
  earlier than alone,
  partial_rotary_factor 0.75 (Phi-4-mini), sliding_window 10, GQA, untied.
"""

from __future__ import annotations

import torch
from transformers import Gemma3ForCausalLM, MistralForCausalLM, Phi3ForCausalLM, Qwen3ForCausalLM

from model_fixtures_models import LLAMA_IDS, build_tiny, llama_ids_generation, qwen_ids, qwen_ids_generation

# Model init seeds: the first seeds (scanning upward from 0) whose greedy generations keep every
# top-1/top-2 logit gap above model_fixtures_reference.MIN_MARGIN.
QWEN3_SEED = 0
MISTRAL_SEED = 0
GEMMA3_SEED = 0
PHI3_SEED = 0

MISTRAL_WINDOW = 8
GEMMA3_WINDOW = 6
PHI3_WINDOW = 10
PHI3_ORIGINAL_MAX = 16


def build_qwen3(vocab: int, seed: int, endoftext: int, im_end: int) -> Qwen3ForCausalLM:
    return build_tiny(
        Qwen3ForCausalLM, vocab, seed, qwen_ids_generation(endoftext, im_end),
        intermediate_size=128,
        head_dim=32,
        hidden_act="silu",
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        attention_bias=False,
        use_sliding_window=False,
        **qwen_ids(endoftext),
    )


def build_mistral(vocab: int, seed: int) -> MistralForCausalLM:
    return build_tiny(
        MistralForCausalLM, vocab, seed, llama_ids_generation(),
        intermediate_size=160,
        hidden_act="silu",
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        sliding_window=MISTRAL_WINDOW,
        **LLAMA_IDS,
    )


def build_gemma3(vocab: int, seed: int) -> Gemma3ForCausalLM:
    return build_tiny(
        Gemma3ForCausalLM, vocab, seed, llama_ids_generation(),
        norm_center=0.0,  # Gemma's RMSNorm scales by (1 + weight)
        hidden_size=48,
        intermediate_size=96,
        num_key_value_heads=1,
        head_dim=32,
        hidden_activation="gelu_pytorch_tanh",
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        query_pre_attn_scalar=24,
        sliding_window=GEMMA3_WINDOW,
        layer_types=["sliding_attention", "full_attention"],
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
        },
        attn_logit_softcapping=10.0,
        final_logit_softcapping=15.0,
        attention_bias=False,
        **LLAMA_IDS,
    )


def phi3_factors(n: int, seed: int) -> tuple[list[float], list[float]]:
    """Short and long longrope factors: ≥ 1 and growing with the frequency index, as Phi-3's are."""
    g = torch.Generator().manual_seed(seed)
    short = [round(1.0 + 0.05 * i + 0.1 * float(torch.rand((), generator=g)), 4) for i in range(n)]
    long = [round(1.0 + 1.5 * i + float(torch.rand((), generator=g)), 4) for i in range(n)]
    return short, long


def build_phi3(vocab: int, seed: int) -> Phi3ForCausalLM:
    head_dim = 64 // 4
    rotary = int(head_dim * 0.75)
    short, long = phi3_factors(rotary // 2, seed + 1000)
    return build_tiny(
        Phi3ForCausalLM, vocab, seed, llama_ids_generation(),
        intermediate_size=128,
        hidden_act="silu",
        max_position_embeddings=64,
        original_max_position_embeddings=PHI3_ORIGINAL_MAX,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        rope_parameters={
            "rope_type": "longrope",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.75,
            "short_factor": short,
            "long_factor": long,
        },
        sliding_window=PHI3_WINDOW,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attention_dropout=0.0,
        **LLAMA_IDS,
    )


PHI3_GENERATE_NOTE = (
    "transformers 5.18's Phi3ForCausalLM.prepare_inputs_for_generation drops the KV cache when the "
    "sequence first grows past original_max_position_embeddings, to recompute it with longrope's long "
    "factors, but generate still passes next_sequence_length=1, so that step and every later one run "
    "on their last token alone (hf_generate_new_token_ids). new_token_ids is greedy decoding by full "
    "recomputation, which is what the cache drop intends and what pbrl's generate does."
)


def generate_loses_context(model, prompt_len: int, new_tokens: int) -> bool:
    """Whether transformers 5.18's generate of this Phi-3 model crosses its longrope switch after the prompt."""
    if model.config.model_type != "phi3" or (model.config.rope_parameters or {}).get("rope_type") != "longrope":
        return False
    original = model.config.original_max_position_embeddings
    # The last forward pass runs over prompt_len + new_tokens - 1 positions.
    return prompt_len <= original < prompt_len + new_tokens - 1
