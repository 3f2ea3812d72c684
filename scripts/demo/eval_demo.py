#!/usr/bin/env python3
"""Check that the demo checkpoint is a good starting point for preference learning.

For every eval item, samples K completions per agent (summarizer, expander) at temperature T
(no top-k / top-p, like pbrl's defaults), scores candidate j with the joint reward of
(summary_j, expansion_j), and reports the mean reward, the mean best-of-K reward, how many
completions end with EOS before max_new_tokens, mean reward components and a few examples.

    .venv-ref/bin/python scripts/demo/eval_demo.py [--model DIR] [--k 8] [--seed 0] [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from reward import components, summary_expansion_reward  # noqa: E402

REPO_ROOT = HERE.parents[1]
PROMPTS = ["Text: {text}\nSummary:", "Text: {text}\nExpansion:"]


def load_items(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@torch.no_grad()
def sample(model, tok, prompts: list[str], k: int, temperature: float, max_new: int, seed: int):
    torch.manual_seed(seed)
    tok.padding_side = "left"
    enc = tok(prompts, return_tensors="pt", padding=True)
    out = model.generate(**enc, do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                         max_new_tokens=max_new, num_return_sequences=k,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    new = out[:, enc["input_ids"].shape[1]:]
    texts, ended, lengths = [], [], []
    for row in new.tolist():
        if tok.eos_token_id in row:
            n = row.index(tok.eos_token_id)
            ended.append(True)
            row = row[:n]
        else:
            ended.append(False)
            n = len(row)
        lengths.append(n)
        texts.append(tok.decode(row, skip_special_tokens=True))
    # [prompt][candidate]
    return ([texts[i * k:(i + 1) * k] for i in range(len(prompts))],
            [ended[i * k:(i + 1) * k] for i in range(len(prompts))], lengths)


def evaluate(model_dir: Path, items_path: Path, k: int = 8, temperature: float = 1.0, max_new: int = 32,
             seed: int = 0) -> tuple[dict, list[dict]]:
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(model_dir)
    items = load_items(items_path)
    t0 = time.time()
    per_agent = [sample(model, tok, [p.format(text=it["text"]) for it in items], k, temperature, max_new, seed + a)
                 for a, p in enumerate(PROMPTS)]
    wall = time.time() - t0
    comps: dict[str, list[float]] = {}
    rows = []
    for i, it in enumerate(items):
        s, e = per_agent[0][0][i], per_agent[1][0][i]
        r = summary_expansion_reward([s, e], it["text"])
        for j in range(k):
            for name, v in components(s[j], e[j], it["text"]).items():
                comps.setdefault(name, []).append(v)
        rows.append({"id": it["id"], "text": it["text"], "summaries": s, "expansions": e, "rewards": r})
    all_r = [x for row in rows for x in row["rewards"]]
    ended = [[x for row in per_agent[a][1] for x in row] for a in range(2)]
    report = {
        "model": str(model_dir),
        "items": len(items), "k": k, "temperature": temperature, "max_new_tokens": max_new, "seed": seed,
        "mean_reward": statistics.mean(all_r),
        "std_reward": statistics.pstdev(all_r),
        "mean_best_of_k": statistics.mean(max(row["rewards"]) for row in rows),
        "mean_worst_of_k": statistics.mean(min(row["rewards"]) for row in rows),
        "mean_within_item_std": statistics.mean(statistics.pstdev(row["rewards"]) for row in rows),
        "eos_fraction_summary": sum(ended[0]) / len(ended[0]),
        "eos_fraction_expansion": sum(ended[1]) / len(ended[1]),
        "mean_new_tokens_summary": statistics.mean(per_agent[0][2]),
        "mean_new_tokens_expansion": statistics.mean(per_agent[1][2]),
        "components": {name: statistics.mean(v) for name, v in comps.items()},
        "sampling_wall_s": round(wall, 1),
    }
    return report, rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path, default=REPO_ROOT / "apps/cli/assets/demo-model")
    ap.add_argument("--items", type=Path, default=REPO_ROOT / "apps/cli/assets/demo-task/eval.jsonl")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--examples", type=int, default=4)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(2)
    report, rows = evaluate(args.model, args.items, args.k, args.temperature, args.max_new_tokens, args.seed)
    print(json.dumps(report, indent=1))
    for row in rows[:args.examples]:
        print(f"\n== {row['id']}: {row['text']}")
        for j in range(args.k):
            print(f"  r={row['rewards'][j]:.3f}  S: {row['summaries'][j]!r}\n           E: {row['expansions'][j]!r}")
    if args.json:
        args.json.write_text(json.dumps({"report": report, "rows": rows}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
