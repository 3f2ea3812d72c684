#!/usr/bin/env python3
"""Build pbrl's embedded demo: the summary/expansion task split and the pretrained checkpoint.

Usage (from the repository root):

    .venv-ref/bin/python scripts/demo/make_demo.py                 # everything (~5 min on 2 CPUs)
    .venv-ref/bin/python scripts/demo/make_demo.py --data-only     # task files + reward examples
    .venv-ref/bin/python scripts/demo/make_demo.py --out /tmp/demo # model somewhere else

Writes
    apps/cli/assets/demo-task/train.jsonl, eval.jsonl   the task items {"id", "text"}
    apps/cli/assets/demo-model/                         LlamaForCausalLM + tokenizer (+ README.md)
    scripts/demo/reward_examples.json                   reward values the TS unit test checks

Everything is seeded. The data, tokenizer and reward examples are byte-identical across runs;
the model weights are deterministic for a given torch build and thread count (2 threads).
See scripts/demo/README.md.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import textgen  # noqa: E402
from reward import components, joint_reward  # noqa: E402

REPO_ROOT = HERE.parents[1]
ASSETS = REPO_ROOT / "apps" / "cli" / "assets"
TASK_DIR = ASSETS / "demo-task"
MODEL_DIR = ASSETS / "demo-model"
EXAMPLES_PATH = HERE / "reward_examples.json"

TASK_SEED = 20240601
CORPUS_SEED = 7
MODEL_SEED = 11
N_TRAIN = 64
N_EVAL = 32
N_CORPUS_TEXTS = 24000     # one summary document and one expansion document each
GOOD_FRACTION = 0.4        # share of good completions per role in the corpus

VOCAB_SIZE = 1024
MODEL = dict(hidden_size=128, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=4, max_position_embeddings=256)
STEPS = 4000
BATCH = 32
LR = 4e-3
WARMUP = 100
WEIGHT_DECAY = 0.05
THREADS = 2

SUMMARY_PROMPT = "Text: {text}\nSummary:"
EXPANSION_PROMPT = "Text: {text}\nExpansion:"


# ------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------


def make_task() -> tuple[list[dict], list[dict]]:
    rng = random.Random(TASK_SEED)
    seen: set[str] = set()
    texts: list[str] = []
    while len(texts) < N_TRAIN + N_EVAL:
        t = textgen.make_text(rng).text
        if t not in seen:
            seen.add(t)
            texts.append(t)
    train = [{"id": f"train-{i:03d}", "text": t} for i, t in enumerate(texts[:N_TRAIN])]
    evl = [{"id": f"eval-{i:03d}", "text": t} for i, t in enumerate(texts[N_TRAIN:])]
    return train, evl


def make_corpus(exclude: set[str]) -> list[tuple[str, str]]:
    """(prompt, completion) pairs; the document is prompt + completion + "\\n" + </s>."""
    rng = random.Random(CORPUS_SEED)
    texts: list[textgen.Text] = []
    seen = set(exclude)
    while len(texts) < N_CORPUS_TEXTS:
        t = textgen.make_text(rng)
        if t.text not in seen:  # fresh texts only: never a task text, never twice
            seen.add(t.text)
            texts.append(t)
    docs: list[tuple[str, str]] = []
    for t in texts:
        other = texts[rng.randrange(len(texts))]
        s = textgen.good_summary(t, rng) if rng.random() < GOOD_FRACTION else textgen.bad_summary(t, rng, other)
        other = texts[rng.randrange(len(texts))]
        e = textgen.good_expansion(t, rng) if rng.random() < GOOD_FRACTION else textgen.bad_expansion(t, rng, other)
        docs.append((SUMMARY_PROMPT.format(text=t.text), " " + s))
        docs.append((EXPANSION_PROMPT.format(text=t.text), " " + e))
    rng.shuffle(docs)
    return docs


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def make_reward_examples() -> list[dict]:
    """Joint rewards computed by reward.py, checked against the TypeScript port."""
    rng = random.Random(99)
    texts = [textgen.make_text(random.Random(5 + i)) for i in range(7)]
    t = texts[0]
    sub = dict(agent=t.agent, verb=t.verb, obj=t.obj, text=t.text, text_nodot=t.text.rstrip("."),
               AGENT=t.agent.upper(), VERB=t.verb.upper())
    fixed = [  # edge cases: empty, run-on after a newline, copies, off-topic, case/punctuation
        ("", ""),
        (" The {agent} {verb} the {obj}.\n", " {text_nodot}, and the {obj} was ready.\nText: more"),
        (" {text}", " The {agent}."),
        (" The cat sat on the mat.", " A dog ran in the park and played with a red ball all afternoon."),
        ("   {AGENT} {VERB}!!  ", "\n{text}"),
        (" {agent}", " {text_nodot}, because {agent} {agent} {agent}."),
    ]
    pairs = [(t.text, s.format(**sub), e.format(**sub)) for s, e in fixed]
    for t in texts[1:]:
        other = texts[rng.randrange(len(texts))]
        for good_s, good_e in ((True, True), (False, True), (True, False), (False, False)):
            s = " " + (textgen.good_summary(t, rng) if good_s else textgen.bad_summary(t, rng, other))
            e = " " + (textgen.good_expansion(t, rng) if good_e else textgen.bad_expansion(t, rng, other))
            pairs.append((t.text, s, e))
    return [{"text": x, "summary": s, "expansion": e, "components": components(s, e, x), "reward": joint_reward(s, e, x)}
            for x, s, e in pairs]


# ------------------------------------------------------------------------------------------
# Tokenizer and model
# ------------------------------------------------------------------------------------------


def build_tokenizer(docs: list[tuple[str, str]]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False, fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [p + c + "\n" for p, c in docs]
    tok.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
    assert tok.token_to_id("<pad>") == 0 and tok.token_to_id("<s>") == 1 and tok.token_to_id("</s>") == 2
    tok.post_processor = processors.TemplateProcessing(
        single="<s>:0 $A:0", pair="<s>:0 $A:0 <s>:1 $B:1", special_tokens=[("<s>", 1)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=MODEL["max_position_embeddings"],
        clean_up_tokenization_spaces=False,
    )


def encode_docs(tok, docs: list[tuple[str, str]]) -> list[tuple[list[int], int]]:
    """Token ids of <s> prompt completion \\n </s>, and where the completion starts."""
    out = []
    for p, c in docs:
        pi = tok(p)["input_ids"]  # with <s>
        ci = tok(c + "\n", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        full = tok(p + c + "\n")["input_ids"]
        assert full == pi + ci[:-1], (p, c)  # the prompt/completion boundary is a token boundary
        out.append((pi + ci, len(pi)))
    return out


def train_model(tok, docs, log) -> tuple[object, dict]:
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.set_num_threads(THREADS)
    torch.manual_seed(MODEL_SEED)
    cfg = LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_act="silu",
        initializer_range=0.02,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        rope_theta=10000.0,
        attention_bias=False,
        mlp_bias=False,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        **MODEL,
    )
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {n_params} parameters ({MODEL})")

    enc = encode_docs(tok, docs)
    lens = [len(x) for x, _ in enc]
    log(f"corpus: {len(enc)} documents, {sum(lens)} tokens, length {min(lens)}..{max(lens)}")
    rng = random.Random(MODEL_SEED)

    def batches():
        # Shuffled, with similar lengths batched together (chunks of 32 batches sorted by length)
        # to waste little compute on padding.
        while True:
            idx = list(range(len(enc)))
            rng.shuffle(idx)
            chunk = 32 * BATCH
            group: list[list[int]] = []
            for c in range(0, len(idx) - chunk + 1, chunk):
                part = sorted(idx[c:c + chunk], key=lambda i: lens[i])
                group.extend(part[i:i + BATCH] for i in range(0, chunk, BATCH))
            rng.shuffle(group)
            yield from group

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=LR, betas=(0.9, 0.98), eps=1e-8)

    def lr_at(step: int) -> float:
        if step < WARMUP:
            return LR * (step + 1) / WARMUP
        p = (step - WARMUP) / max(1, STEPS - WARMUP)
        return LR * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))

    model.train()
    t0 = time.time()
    it = batches()
    ema = None
    history = []
    seen_tokens = 0
    recent: list[float] = []
    for step in range(STEPS):
        ids = next(it)
        L = max(lens[i] for i in ids)
        x = torch.full((len(ids), L), tok.pad_token_id, dtype=torch.long)
        att = torch.zeros((len(ids), L), dtype=torch.long)
        y = torch.full((len(ids), L), -100, dtype=torch.long)
        for r, i in enumerate(ids):
            seq, start = enc[i]
            x[r, :len(seq)] = torch.tensor(seq)
            att[r, :len(seq)] = 1
            y[r, start:len(seq)] = torch.tensor(seq[start:])  # loss on completion (+ "\n" + </s>) only
        seen_tokens += int(att.sum())
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        out = model(input_ids=x, attention_mask=att, labels=y)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss = float(out.loss.detach())
        ema = loss if ema is None else 0.95 * ema + 0.05 * loss
        recent = (recent + [loss])[-100:]
        if step % 100 == 0 or step == STEPS - 1:
            log(f"step {step:5d}  loss {loss:.4f}  ema {ema:.4f}  lr {lr_at(step):.2e}  {time.time() - t0:6.1f}s")
            history.append((step, round(loss, 4), round(ema, 4)))
    wall = time.time() - t0
    model.eval()
    model.generation_config = GenerationConfig(
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        do_sample=True,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        max_new_tokens=32,
    )
    stats = dict(parameters=n_params, steps=STEPS, batch=BATCH, documents=len(enc), corpus_tokens=sum(lens),
                 tokens_seen=seen_tokens, final_loss=round(sum(recent) / len(recent), 4), final_loss_ema=history[-1][2],
                 wall_s=round(wall, 1), history=history)
    return model, stats


MODEL_README = """# pbrl demo model

A tiny `LlamaForCausalLM` pretrained from scratch for `pbrl demo` (the built-in
summary/expansion task). It is **not** a useful language model: it only knows the synthetic
prompt format

    Text: <one or two short sentences>
    Summary: <completion>
    Text: <one or two short sentences>
    Expansion: <completion>

and was deliberately trained on completions of mixed quality (about {good_pct}% good, the rest too
long / too short / off-topic / copies), so that sampled completions get a spread of rewards and
preference learning has something to improve.

Made by `scripts/demo/make_demo.py` (see `scripts/demo/README.md`):

    .venv-ref/bin/python scripts/demo/make_demo.py

| | |
|---|---|
| architecture | LlamaForCausalLM, hidden {hidden_size}, {num_hidden_layers} layers, {num_attention_heads} heads ({num_key_value_heads} kv), MLP {intermediate_size}, tied embeddings |
| parameters | {parameters:,} (float32 safetensors) |
| tokenizer | byte-level BPE, {vocab} tokens (`<pad>`=0, `<s>`=1 prepended, `</s>`=2 = EOS) |
| corpus | {documents:,} documents (`<s>` prompt completion `\\n` `</s>`), {corpus_tokens:,} tokens, from {n_texts:,} fresh synthetic texts (no task text) |
| training | {steps} steps of AdamW, batch {batch}, peak lr {lr}, warmup {warmup} + cosine to 10%, loss on completion tokens only, {threads} CPU threads, torch {torch} |
| final loss | {final_loss} (mean of the last 100 steps; EMA {final_loss_ema}) |
| tokens seen | {tokens_seen:,} (prompt + completion tokens, padding excluded) |
| wall time | {wall_s} s |

Loss log (step, loss, EMA):

{history}
"""


def save_model(model, tok, out: Path, stats: dict) -> None:
    import torch

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    model.config._attn_implementation = "eager"
    model.save_pretrained(out)
    os.chmod(out / "model.safetensors", 0o644)  # safetensors writes 0600
    tok.save_pretrained(out)
    (out / "README.md").write_text(
        MODEL_README.format(
            good_pct=int(GOOD_FRACTION * 100), vocab=VOCAB_SIZE, lr=LR, warmup=WARMUP, threads=THREADS,
            torch=torch.__version__, n_texts=N_CORPUS_TEXTS,
            history="\n".join(f"    {s:5d}  {l:.4f}  {e:.4f}" for s, l, e in stats["history"]),
            **MODEL, **{k: v for k, v in stats.items() if k != "history"},
        ),
        encoding="utf-8",
    )


def append_eval(out: Path, log) -> None:
    """Samples the saved checkpoint on the eval items (eval_demo.py) and adds the numbers to its README."""
    import eval_demo

    reports, rows0 = [], None
    for seed in (0, 1, 2):
        report, rows = eval_demo.evaluate(out, TASK_DIR / "eval.jsonl", k=8, temperature=1.0, max_new=32, seed=seed)
        reports.append(report)
        rows0 = rows0 or rows
    keys = ["mean_reward", "mean_best_of_k", "mean_worst_of_k", "mean_within_item_std", "eos_fraction_summary",
            "eos_fraction_expansion", "mean_new_tokens_summary", "mean_new_tokens_expansion"]
    lines = ["", "## Starting point", "",
             "`scripts/demo/eval_demo.py`: the 32 eval items, K=8 samples per agent at temperature 1.0 (no top-k/top-p),",
             "max_new_tokens 32, candidate j scored with the joint reward of (summary_j, expansion_j); seeds 0, 1, 2:", "",
             "| | seed 0 | seed 1 | seed 2 |", "|---|---|---|---|"]
    for k in keys:
        lines.append(f"| {k} | " + " | ".join(f"{r[k]:.3f}" for r in reports) + " |")
    for k in reports[0]["components"]:
        lines.append(f"| mean {k} | " + " | ".join(f"{r['components'][k]:.3f}" for r in reports) + " |")
    lines += ["", "Samples (seed 0, first two eval items):", ""]
    for row in rows0[:2]:
        lines.append(f"    {row['text']}")
        for j in range(4):
            lines.append(f"      r={row['rewards'][j]:.3f}  S:{row['summaries'][j].rstrip()!s}")
            lines.append(f"               E:{row['expansions'][j].rstrip()!s}")
    with (out / "README.md").open("a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    log("eval: " + ", ".join(f"{k} {sum(r[k] for r in reports) / 3:.3f}" for k in keys))


def main() -> None:
    global STEPS, BATCH, LR
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=MODEL_DIR, help="checkpoint folder")
    ap.add_argument("--data-only", action="store_true", help="only the task files and reward examples")
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--lr", type=float, default=LR)
    args = ap.parse_args()
    STEPS, BATCH, LR = args.steps, args.batch, args.lr

    def log(msg: str) -> None:
        print(msg, flush=True)

    train, evl = make_task()
    write_jsonl(TASK_DIR / "train.jsonl", train)
    write_jsonl(TASK_DIR / "eval.jsonl", evl)
    log(f"task: {len(train)} train, {len(evl)} eval items -> {TASK_DIR}")
    EXAMPLES_PATH.write_text(json.dumps(make_reward_examples(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    log(f"reward examples -> {EXAMPLES_PATH}")
    if args.data_only:
        return

    docs = make_corpus({r["text"] for r in train + evl})
    tok = build_tokenizer(docs)
    model, stats = train_model(tok, docs, log)
    save_model(model, tok, args.out, stats)
    append_eval(args.out, log)
    size = sum(f.stat().st_size for f in args.out.iterdir())
    log(f"saved {args.out} ({size / 1e6:.2f} MB); final loss {stats['final_loss']} in {stats['wall_s']} s")


if __name__ == "__main__":
    main()
