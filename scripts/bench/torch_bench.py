#!/usr/bin/env python3
"""PyTorch side of `pbrl bench`: the same model and workloads with torch + transformers on CPU.

`pbrl bench` runs this with the model's config.json and the workload sizes as JSON:

    python scripts/bench/torch_bench.py --config '{"model_type": "llama", ...}' \
        --workloads '{"train_batch": 8, "train_seq_len": 128, ...}' [--threads N]

The model is LlamaForCausalLM from a LlamaConfig with those sizes, randomly initialised after
torch.manual_seed(0). Training steps are forward + backward + torch.optim.AdamW with the loss
from `labels=`; generation is `model.generate(do_sample=True, temperature, no top-k/top-p,
min_new_tokens = max_new_tokens)` with and without KV cache. Progress goes to stderr; stdout
gets one JSON object with the metric names pbrl uses (train_tokens_per_s,
gen_b{B}_{cached,uncached}_tokens_per_s, peak_rss_mb = ru_maxrss of this process, ...).
Threads: torch's default (torch.get_num_threads()) unless --threads is given.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def say(msg: str) -> None:
    print(f"pbrl bench [pytorch]: {msg}", file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="the model's config.json as a JSON string")
    ap.add_argument("--workloads", required=True, help="workload sizes as a JSON string (see pbrl bench)")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads(N) (default: torch's choice)")
    args = ap.parse_args()
    cfg = json.loads(args.config)
    w = json.loads(args.workloads)
    start = time.perf_counter()

    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    transformers.logging.set_verbosity_error()
    if args.threads:
        torch.set_num_threads(args.threads)

    config = LlamaConfig.from_dict(cfg)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    vocab = config.vocab_size
    parameters = sum(p.numel() for p in model.parameters())
    say(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.get_num_threads()} threads, "
        f"attention {model.config._attn_implementation}, {parameters:,} parameters")
    data = torch.Generator().manual_seed(0)

    # Training: forward + backward + AdamW on batch × seq_len random tokens, loss from labels=.
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=w["lr"], weight_decay=w["weight_decay"])
    b, t = w["train_batch"], w["train_seq_len"]

    def train_step() -> tuple[float, float]:
        ids = torch.randint(0, vocab, (b, t), generator=data)
        t0 = time.perf_counter()
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        value = loss.item()
        return time.perf_counter() - t0, value

    for _ in range(w["train_warmup_steps"]):
        s, loss = train_step()
        say(f"train warm-up step: {s:.2f} s, loss {loss:.4f}")
    steps = []
    for i in range(w["train_steps"]):
        s, loss = train_step()
        steps.append((s, loss))
        say(f"train step {i + 1}/{w['train_steps']} ({b}×{t}): {s:.2f} s, {b * t / s:.0f} tokens/s, loss {loss:.4f}")
    train_s = sum(s for s, _ in steps)
    del opt

    # Generation: random prompts, sampling, every row produces exactly gen_new_tokens tokens.
    model.eval()
    new = w["gen_new_tokens"]
    results: dict[str, float] = {}

    def run_generate(prompts: torch.Tensor, max_new: int, use_cache: bool) -> torch.Tensor:
        return model.generate(
            input_ids=prompts,
            attention_mask=torch.ones_like(prompts),
            do_sample=True,
            temperature=w["gen_temperature"],
            top_k=0,
            top_p=1.0,
            max_new_tokens=max_new,
            min_new_tokens=max_new,
            use_cache=use_cache,
            pad_token_id=config.pad_token_id,
        )

    with torch.inference_mode():
        warm = torch.randint(0, vocab, (1, w["gen_prompt_len"]), generator=data)
        for use_cache in (True, False):
            run_generate(warm, 4, use_cache)
        for gb in w["gen_batch_sizes"]:
            for use_cache in (True, False):
                prompts = torch.randint(0, vocab, (gb, w["gen_prompt_len"]), generator=data)
                torch.manual_seed(gb)
                t0 = time.perf_counter()
                out = run_generate(prompts, new, use_cache)
                s = time.perf_counter() - t0
                produced = (out.shape[1] - prompts.shape[1]) * gb
                if produced != gb * new:
                    raise RuntimeError(f"generation produced {produced} tokens, expected {gb}×{new}")
                key = f"gen_b{gb}_{'cached' if use_cache else 'uncached'}_tokens_per_s"
                results[key] = produced / s
                say(f"generate batch {gb}, {'KV cache' if use_cache else 'no cache'}: {new} new tokens per row in {s:.2f} s, "
                    f"{produced / s:.1f} tokens/s")

    report = {
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "threads": torch.get_num_threads(),
        "attn_implementation": model.config._attn_implementation,
        "parameters": parameters,
        "workloads": w,
        "train_tokens_per_s": b * t * len(steps) / train_s,
        "train_step_s_mean": train_s / len(steps),
        "train_step_s_min": min(s for s, _ in steps),
        "train_loss_first": steps[0][1],
        "train_loss_last": steps[-1][1],
        **results,
        # ru_maxrss is in KiB on Linux, bytes on macOS.
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024),
        "wall_s": time.perf_counter() - start,
        "cpu_s": resource.getrusage(resource.RUSAGE_SELF).ru_utime + resource.getrusage(resource.RUSAGE_SELF).ru_stime,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
