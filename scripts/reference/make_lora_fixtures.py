"""LoRA adapters saved by PEFT on the tiny fixture checkpoints, with reference outputs.

For each family fixture (tests/test-fixtures/models/tiny-*), PEFT 0.21 wraps the model with a LoRA
config (ranks, alphas, target modules and rsLoRA differ between families so every rule is used),
the factors are drawn from a seeded generator (B too, so the update is not zero), and the adapter
is saved with `save_pretrained` into tests/test-fixtures/models/lora/<family>/. The reference JSON
beside it holds, computed by the PEFT model (CPU, float32, eager attention, dropout off):
  - logits of the family reference's prompts,
  - log-probs of its completion pairs (the family reference's rule),
  - the merged model's logits of the first prompt (merge_and_unload), for pbrl's --merge.

Check mode (--check-pbrl-adapter DIR --against FAMILY, repeatable): loads an adapter folder pbrl
saved onto the family's base with `PeftModel.from_pretrained` and prints the largest logit
difference from a given reference JSON (--expect FILE, one per adapter), exactly as
model_fixtures_check.py does for full checkpoints. --check-merged DIR --against FAMILY does the
same for a merged checkpoint pbrl wrote, loaded by transformers alone.

    .venv-ref/bin/pip install --retries 0 peft==0.21.0
    .venv-ref/bin/python scripts/reference/make_lora_fixtures.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import peft
import torch
from peft import LoraConfig, PeftModel, get_peft_model

from model_fixtures_json import F32, F64, f32_list, write_json
from model_fixtures_models import load_model
from model_fixtures_reference import forward_logits

REPO_ROOT = Path(__file__).resolve().parents[2]
MODELS = REPO_ROOT / "tests" / "test-fixtures" / "models"
OUT = MODELS / "lora"

# family fixture -> (LoraConfig arguments, factor seed)
FAMILIES: dict[str, tuple[dict, int]] = {
    "tiny-llama": (dict(r=4, lora_alpha=8, target_modules="all-linear"), 101),
    "tiny-qwen2": (dict(r=8, lora_alpha=16), 102),  # PEFT's default targets for qwen2: q_proj, v_proj
    "tiny-qwen3": (dict(r=4, lora_alpha=16, use_rslora=True, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]), 103),
    "tiny-mistral": (dict(r=2, lora_alpha=6, target_modules=["gate_proj", "up_proj", "down_proj"]), 104),
    "tiny-gemma3": (dict(r=4, lora_alpha=4, target_modules="all-linear", rank_pattern={"down_proj": 2}, alpha_pattern={"o_proj": 12}), 105),
    "tiny-phi3": (dict(r=4, lora_alpha=8, target_modules=["qkv_proj", "gate_up_proj"]), 106),
}


def randomise_factors(model, seed: int) -> None:
    """PEFT starts B at zero (no change to the model): draw every factor so the adapter matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "lora_" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)


def logprob_items(model, family_ref: dict) -> list[dict]:
    items = []
    for it in family_ref["logprobs"]["items"]:
        ids = it["prompt_ids"] + it["completion_ids"]
        logp = torch.log_softmax(forward_logits(model, ids), dim=-1)
        start = len(it["prompt_ids"]) - 1
        toks = [float(logp[start + i, t]) for i, t in enumerate(it["completion_ids"])]
        sum64 = float(np.sum(np.array(toks, dtype=np.float32).astype(np.float64)))
        items.append({"prompt_ids": it["prompt_ids"], "completion_ids": it["completion_ids"], "token_logprobs": [F32(t) for t in toks], "sum": F64(sum64)})
    return items


def build() -> None:
    torch.manual_seed(0)
    OUT.mkdir(parents=True, exist_ok=True)
    for family, (kwargs, seed) in FAMILIES.items():
        base = load_model(MODELS / family)
        cfg = LoraConfig(task_type="CAUSAL_LM", lora_dropout=0.0, **kwargs)
        model = get_peft_model(base, cfg)
        randomise_factors(model, seed)
        model.eval()
        folder = OUT / family
        model.save_pretrained(folder)
        # A portable base path: relative to the repository root (the tests pass the base explicitly).
        conf = json.loads((folder / "adapter_config.json").read_text())
        conf["base_model_name_or_path"] = f"tests/test-fixtures/models/{family}"
        (folder / "adapter_config.json").write_text(json.dumps(conf, indent=2, sort_keys=True) + "\n")
        (folder / "README.md").unlink(missing_ok=True)
        family_ref = json.loads((MODELS / f"{family}.reference.json").read_text())
        prompts = [{"input_ids": p["input_ids"], "logits": f32_list(forward_logits(model, p["input_ids"]))} for p in family_ref["prompts"]]
        merged = model.merge_and_unload()
        merged_logits = f32_list(forward_logits(merged, family_ref["prompts"][0]["input_ids"]))
        ref = {
            "family": family,
            "lora_config": json.loads(json.dumps(kwargs)),
            "versions": {"torch": torch.__version__, "peft": peft.__version__},
            "prompts": prompts,
            "merged_first_prompt_logits": merged_logits,
        }
        # Log-probs from the adapter as saved, loaded the way users load it (merge_and_unload changed `model`).
        fresh = PeftModel.from_pretrained(load_model(MODELS / family), folder)
        fresh.eval()
        ref["logprobs"] = logprob_items(fresh, family_ref)
        write_json(OUT / f"{family}.reference.json", ref)
        print(f"{family}: {sum(p.numel() for n, p in fresh.named_parameters() if 'lora_' in n)} LoRA parameters")


def check(adapter: Path, family: str, expect: Path) -> float:
    ref = json.loads(expect.read_text())
    model = PeftModel.from_pretrained(load_model(MODELS / family), adapter)
    model.eval()
    worst = 0.0
    for p in ref["prompts"]:
        got = forward_logits(model, p["input_ids"]).numpy().astype(np.float64)
        worst = max(worst, float(np.max(np.abs(got - np.array(p["logits"], dtype=np.float64)))))
    print(f"{adapter} ({family}) max_abs_logit_diff={worst:.9g}")
    return worst


def check_merged(folder: Path, family: str) -> float:
    ref = json.loads((OUT / f"{family}.reference.json").read_text())
    model = load_model(folder)
    got = forward_logits(model, ref["prompts"][0]["input_ids"]).numpy().astype(np.float64)
    worst = float(np.max(np.abs(got - np.array(ref["merged_first_prompt_logits"], dtype=np.float64))))
    print(f"{folder} ({family}, merged) max_abs_logit_diff={worst:.9g}")
    return worst


def main() -> int:
    torch.set_num_threads(1)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check-pbrl-adapter", type=Path, action="append")
    ap.add_argument("--check-merged", type=Path, action="append")
    ap.add_argument("--against", action="append", choices=list(FAMILIES))
    ap.add_argument("--expect", type=Path, action="append", help="reference JSON for each --check-pbrl-adapter (default: the family's)")
    args = ap.parse_args()
    if args.check_pbrl_adapter or args.check_merged:
        adapters = args.check_pbrl_adapter or []
        merged = args.check_merged or []
        if not args.against or len(args.against) != len(adapters) + len(merged):
            ap.error("every --check-pbrl-adapter / --check-merged needs its --against (adapters first)")
        expects = args.expect or [OUT / f"{a}.reference.json" for a in args.against[: len(adapters)]]
        for d, a, e in zip(adapters, args.against, expects):
            check(d, a, e)
        for d, a in zip(merged, args.against[len(adapters):]):
            check_merged(d, a)
        return 0
    build()
    return 0


if __name__ == "__main__":
    sys.exit(main())
