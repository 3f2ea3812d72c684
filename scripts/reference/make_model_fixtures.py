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

# The work is split by responsibility into modules next to this script:
#   model_fixtures_tokenizers.py  corpus, BPE tokenizer training, chat templates
#   model_fixtures_models.py      tiny Llama / Qwen2 configs, build_tiny (shared size and weight init), load_model
#   family_fixtures.py            tiny Qwen3 / Mistral / Gemma 3 / Phi-3
#   model_fixtures_json.py        the reference JSON writer (float32 as shortest round-trip decimal)
#   model_fixtures_reference.py   reference inputs and outputs (logits, greedy, log-probs, tokenizer, chat)
#   model_fixtures_check.py       check mode (--check-pbrl-dir / --against)
# This file builds everything (build) and holds the command line (main).

import copy  # noqa: E402
import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast  # noqa: E402

import family_fixtures as families  # noqa: E402  (next to this script)
from model_fixtures_check import CHECK_TOL, check  # noqa: E402
from model_fixtures_json import write_json  # noqa: E402
from model_fixtures_models import LLAMA_SEED, QWEN2_SEED, build_llama, build_qwen2, load_model  # noqa: E402
from model_fixtures_reference import LOGPROB_PAIRS, PROMPTS, TOKENIZER_STRINGS_COMMON, reference_for  # noqa: E402
from model_fixtures_tokenizers import VOCAB_SIZE, build_llama_tokenizer, build_qwen2_tokenizer, make_corpus  # noqa: E402

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
transformers.logging.set_verbosity_error()
transformers.logging.disable_progress_bar()

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "tests" / "test-fixtures" / "models"

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


def save_checkpoint(d: Path, model, tok: PreTrainedTokenizerFast, template_in_config: bool):
    """Saves model and tokenizer to d; returns both as they load back from d, which references must use."""
    # The model goes first: transformers 5's AutoTokenizer picks the tokenizer class from config.json's
    # model_type (qwen2 -> Qwen2Tokenizer), so a tokenizer loaded before it exists can differ.
    model.save_pretrained(d)
    save_tokenizer(tok, d, template_in_config=template_in_config)
    tok = AutoTokenizer.from_pretrained(d)
    assert_tokenizer_json_agrees(d, tok)
    return load_model(d), tok


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
        model, tok = save_checkpoint(out / name, model, tok, template_in_config)
        ref = reference_for(name, model, tok)
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

    # ---------------- tiny-llama ----------------
    llama_dir = out / "tiny-llama"
    tok_l = build_llama_tokenizer(corpus)
    assert len(tok_l) == VOCAB_SIZE, len(tok_l)
    model_l, tok_l = save_checkpoint(llama_dir, build_llama(len(tok_l), LLAMA_SEED), tok_l, template_in_config=True)
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
    model_q, tok_q = save_checkpoint(qwen_dir, build_qwen2(len(tok_q), QWEN2_SEED, eot, im_end), tok_q,
                                     template_in_config=False)
    assert type(tok_q).__name__ == "Qwen2Tokenizer", type(tok_q)
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
# Command line
# --------------------------------------------------------------------------------------


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
        results = [check(d, args.out / f"{a}.reference.json", tol=args.tol, check_chat=not args.no_chat_check,
                         original=args.out / a if (args.out / a).is_dir() else None)[0]
                   for d, a in zip(args.check_pbrl_dir, args.against)]
        return 0 if all(results) else 1

    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
