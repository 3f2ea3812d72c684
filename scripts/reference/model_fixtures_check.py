"""Check mode of make_model_fixtures.py (--check-pbrl-dir DIR --against NAME): does a checkpoint,
e.g. one written by pbrl, load in transformers with the reference logits, tokenizer ids and
rendered chat templates? Also run at the end of every build on the fresh checkpoints.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from transformers import AutoTokenizer

from model_fixtures_models import load_model
from model_fixtures_reference import forward_logits

CHECK_TOL = 1e-4

# --------------------------------------------------------------------------------------
# Check mode
# --------------------------------------------------------------------------------------


def check(ckpt: Path, ref_path: Path, verbose: bool = True, tol: float = CHECK_TOL,
          check_chat: bool = True, original: Path | None = None) -> tuple[bool, float]:
    """`original`: the fixture folder `ckpt` was saved from; its logits are computed here too, so
    `max_abs_logit_diff_vs_original` compares the two checkpoints on this machine's kernels (the
    reference JSON's logits were computed on another CPU, whose kernels may round differently)."""
    ref = json.loads(ref_path.read_text(encoding="utf-8"))
    tok = AutoTokenizer.from_pretrained(ckpt)
    model = load_model(ckpt)
    original_model = load_model(original) if original is not None else None
    max_vs_original = 0.0
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
        if original_model is not None:
            same = forward_logits(original_model, p["input_ids"]).numpy().astype(np.float64)
            max_vs_original = max(max_vs_original, float(np.max(np.abs(logits - same))))
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
        if original_model is not None:
            print(f"max_abs_logit_diff_vs_original={max_vs_original:.9g}")
        print("OK" if ok else "FAIL")
    return ok, max_diff
