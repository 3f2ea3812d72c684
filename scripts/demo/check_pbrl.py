#!/usr/bin/env python3
"""Check that pbrl (the TypeScript CLI, wasm backend) loads the demo checkpoint like transformers.

Needs a built CLI (`pnpm build`). For a few eval prompts it compares the prompt token ids and the
per-token log-probs of a completion (+ </s>) from `pbrl score --json` with transformers, then
samples a few completions with `pbrl generate` and scores them with the joint reward.

    .venv-ref/bin/python scripts/demo/check_pbrl.py [--model DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from reward import joint_reward  # noqa: E402

REPO_ROOT = HERE.parents[1]
CLI = REPO_ROOT / "apps" / "cli" / "dist" / "main.js"


def pbrl(*args: str) -> dict:
    out = subprocess.run(["node", str(CLI), *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path, default=REPO_ROOT / "apps/cli/assets/demo-model")
    args = ap.parse_args()
    torch.set_num_threads(2)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(args.model)
    items = [json.loads(x) for x in (REPO_ROOT / "apps/cli/assets/demo-task/eval.jsonl").read_text().splitlines()[:3]]
    worst = 0.0
    for it in items:
        text = it["text"]
        for prompt, completion in ((f"Text: {text}\nSummary:", " " + " ".join(text.split()[:4]) + ".\n"),
                                   (f"Text: {text}\nExpansion:", " " + text.rstrip(".") + ", and that was all.\n")):
            ref_p = tok(prompt)["input_ids"]
            ref_c = tok(completion, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
            with torch.no_grad():
                logits = model(torch.tensor([ref_p + ref_c])).logits[0].float()
            lp = torch.log_softmax(logits, -1)
            ref_lp = [float(lp[len(ref_p) - 1 + i, t]) for i, t in enumerate(ref_c)]
            got = pbrl("score", "--model", str(args.model), "--prompt", prompt, "--completion", completion, "--add_eos")
            assert got["prompt_ids"] == ref_p, (got["prompt_ids"], ref_p)
            assert got["completion_ids"] == ref_c, (got["completion_ids"], ref_c)
            diff = max(abs(a - b) for a, b in zip(got["token_logprobs"], ref_lp))
            worst = max(worst, diff)
            print(f"{prompt.splitlines()[1]:<11} ids match, {len(ref_c)} completion tokens, "
                  f"sum logprob pbrl {got['sum']:.5f} vs torch {sum(ref_lp):.5f} (max token diff {diff:.2e})")
    print(f"max |pbrl - torch| per-token log-prob: {worst:.2e}")
    assert worst < 1e-3

    text = items[0]["text"]
    outs = []
    for role in ("Summary", "Expansion"):
        g = pbrl("generate", "--model", str(args.model), "--prompt", f"Text: {text}\n{role}:", "--temperature", "1.0",
                 "--seed", "1", "--max_new_tokens", "32", "--num_return_sequences", "4")
        outs.append(g["results"])
    print(f"\npbrl generate (T=1.0, seed 1) on: {text}")
    for s, e in zip(*outs):
        r = joint_reward(s["text"], e["text"], text)
        print(f"  r={r:.3f}  S[{s['finish_reason']}]:{s['text'].rstrip()}\n"
              f"           E[{e['finish_reason']}]:{e['text'].rstrip()}")


if __name__ == "__main__":
    main()
