#!/usr/bin/env python3
"""PyTorch side of `pbrl bench`: the same model and workloads with torch + transformers on CPU.

`pbrl bench` runs this with the model's config.json and the workload sizes as JSON, once in
float32 and once with --bf16:

    python apps/cli/assets/bench/torch_bench.py --config '{"model_type": "llama", ...}' \
        --workloads '{"train_batch": 8, "train_seq_len": 128, ...}' [--model DIR] [--bf16] [--threads N]

The model is AutoModelForCausalLM.from_config(config) (Llama or Qwen2), randomly initialised
after torch.manual_seed(0), or with --model DIR the checkpoint folder's weights
(from_pretrained, in float32); `load_s` is the seconds either takes. Training steps are forward
+ backward + torch.optim.AdamW with the loss from `labels=`; with --bf16 the forward and the loss
run under torch.autocast("cpu", dtype=torch.bfloat16), weights, gradients and AdamW state stay
float32. Generation is `model.generate(do_sample=True, temperature, no top-k/top-p,
min_new_tokens = max_new_tokens)` with the KV cache, and without it when the workloads'
gen_uncached is true; with --bf16 it runs under the same autocast, and then once more with the
model cast to bfloat16 (`model.to(torch.bfloat16)`, KV cache only):
gen_b{B}_cached_bf16_weights_tokens_per_s. Progress goes to stderr; stdout gets one JSON object
with the metric names pbrl uses (train_tokens_per_s, gen_b{B}_{cached,uncached}_tokens_per_s,
load_s, peak_rss_mb = ru_maxrss of this process, ...). Threads: torch's default
(torch.get_num_threads()) unless --threads is given.
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


TAG = "pytorch"


def peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux, bytes on macOS.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)


def say(msg: str) -> None:
    print(f"pbrl bench [{TAG}]: {msg}", file=sys.stderr, flush=True)


def main() -> int:
    global TAG
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="the model's config.json as a JSON string")
    ap.add_argument("--workloads", required=True, help="workload sizes as a JSON string (see pbrl bench)")
    ap.add_argument("--model", help="a checkpoint folder to load instead of initialising from --config")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast for forward and loss; also time generation with bf16 weights")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads(N) (default: torch's choice)")
    args = ap.parse_args()
    cfg = json.loads(args.config)
    w = json.loads(args.workloads)
    start = time.perf_counter()
    if args.bf16:
        TAG = "pytorch bf16"

    import contextlib

    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    transformers.logging.set_verbosity_error()
    if args.threads:
        torch.set_num_threads(args.threads)

    def autocast():
        return torch.autocast("cpu", dtype=torch.bfloat16) if args.bf16 else contextlib.nullcontext()

    torch.manual_seed(0)
    t0 = time.perf_counter()
    if args.model:
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    else:
        fields = {k: v for k, v in cfg.items() if k != "model_type"}
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(cfg["model_type"], **fields), dtype=torch.float32)
    load_s = time.perf_counter() - t0
    rss_after_load = peak_rss_mb()
    config = model.config
    vocab = config.vocab_size
    parameters = sum(p.numel() for p in model.parameters())
    say(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.get_num_threads()} threads, "
        f"ATen {torch.backends.cpu.get_cpu_capability()} kernels, attention {config._attn_implementation}, "
        f"{parameters:,} parameters, {'loaded' if args.model else 'initialised'} in {load_s:.2f} s"
        f"{', bf16 autocast' if args.bf16 else ''}")
    data = torch.Generator().manual_seed(0)

    # Training: forward + backward + AdamW on batch × seq_len random tokens, loss from labels=.
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=w["lr"], weight_decay=w["weight_decay"])
    b, t = w["train_batch"], w["train_seq_len"]

    def train_step() -> tuple[float, float]:
        ids = torch.randint(0, vocab, (b, t), generator=data)
        t0 = time.perf_counter()
        with autocast():
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

    # --lora: the same steps training a PEFT LoRA adapter on every linear layer (the base frozen).
    lora_report: dict[str, float] = {}
    if w.get("lora"):
        from peft import LoraConfig, get_peft_model

        lw = w["lora"]
        peft_model = get_peft_model(model, LoraConfig(r=lw["r"], lora_alpha=lw["alpha"], lora_dropout=lw["dropout"],
                                                      target_modules=lw["target_modules"], task_type="CAUSAL_LM"))
        peft_model.train()
        opt = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=w["lr"], weight_decay=w["weight_decay"])

        def lora_step() -> tuple[float, float]:
            ids = torch.randint(0, vocab, (b, t), generator=data)
            t0 = time.perf_counter()
            with autocast():
                loss = peft_model(input_ids=ids, labels=ids, use_cache=False).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return time.perf_counter() - t0, loss.item()

        for _ in range(w["train_warmup_steps"]):
            s, loss = lora_step()
            say(f"train (LoRA) warm-up step: {s:.2f} s, loss {loss:.4f}")
        lora_steps = []
        for i in range(w["train_steps"]):
            s, loss = lora_step()
            lora_steps.append(s)
            say(f"train (LoRA) step {i + 1}/{w['train_steps']} ({b}×{t}): {s:.2f} s, {b * t / s:.0f} tokens/s, loss {loss:.4f}")
        lora_report = {
            "lora_train_tokens_per_s": b * t * len(lora_steps) / sum(lora_steps),
            "lora_train_step_s_mean": sum(lora_steps) / len(lora_steps),
            "lora_parameters": sum(p.numel() for p in peft_model.parameters() if p.requires_grad),
        }
        del opt
        model = peft_model.unload()  # the base model again, for generation

    # Generation: random prompts, sampling, every row produces exactly gen_new_tokens tokens.
    model.eval()
    new = w["gen_new_tokens"]
    modes = (True, False) if w.get("gen_uncached", True) else (True,)
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
            pad_token_id=config.pad_token_id if config.pad_token_id is not None else config.eos_token_id,
        )

    def time_generation(modes: tuple[bool, ...], suffix: str, what: str) -> None:
        warm = torch.randint(0, vocab, (1, w["gen_prompt_len"]), generator=data)
        for use_cache in modes:
            run_generate(warm, 4, use_cache)
        for gb in w["gen_batch_sizes"]:
            for use_cache in modes:
                prompts = torch.randint(0, vocab, (gb, w["gen_prompt_len"]), generator=data)
                torch.manual_seed(gb)
                t0 = time.perf_counter()
                out = run_generate(prompts, new, use_cache)
                s = time.perf_counter() - t0
                produced = (out.shape[1] - prompts.shape[1]) * gb
                if produced != gb * new:
                    raise RuntimeError(f"generation produced {produced} tokens, expected {gb}×{new}")
                key = f"gen_b{gb}_{'cached' if use_cache else 'uncached'}{suffix}_tokens_per_s"
                results[key] = produced / s
                say(f"generate batch {gb}, {'KV cache' if use_cache else 'no cache'}{what}: {new} new tokens per row in {s:.2f} s, "
                    f"{produced / s:.1f} tokens/s")

    with torch.inference_mode():
        with autocast():
            time_generation(modes, "", "")
        if args.bf16:
            model.to(torch.bfloat16)
            time_generation((True,), "_bf16_weights", ", bf16 weights")

    usage = resource.getrusage(resource.RUSAGE_SELF)
    report = {
        "precision": "bf16" if args.bf16 else "float32",
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "attn_implementation": config._attn_implementation,
        "parameters": parameters,
        "workloads": w,
        "load_s": load_s,
        "train_tokens_per_s": b * t * len(steps) / train_s,
        "train_step_s_mean": train_s / len(steps),
        "train_step_s_min": min(s for s, _ in steps),
        "train_loss_first": steps[0][1],
        "train_loss_last": steps[-1][1],
        **lora_report,
        **results,
        "peak_rss_mb": peak_rss_mb(),
        "peak_rss_mb_after_load": rss_after_load,
        "wall_s": time.perf_counter() - start,
        "cpu_s": usage.ru_utime + usage.ru_stime,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
