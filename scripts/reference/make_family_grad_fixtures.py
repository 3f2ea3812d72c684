"""PyTorch reference for MADPO gradients through the new model families.

Two tiny agents of the families most unlike Llama — tiny-gemma3 (sandwich and q/k norms,
(1 + w) RMSNorm, GeGLU, scaled embeddings, a sliding-window layer, logit soft-capping) and
tiny-phi3 (fused qkv/gate_up weights, partial rotary, longrope: sequences on both sides of its
16-position switch) — from tests/test-fixtures/models, and a fixed set of preference pairs
given as token ids. The loss is make_madpo_fixtures.py's: with margins
  δᵢ = Σ log πᵢ(winner tokens | prompt) − Σ log πᵢ(loser tokens | prompt)
(decentralized scoring: each completion's last token left out), agent i's loss is
mean_p −log σ(β (δᵢ(p) + Σ_{k≠i} δₖ(p).detach())), differentiated with respect to agent i's
parameters only. Every sequence is scored alone, as its own forward pass.

Writes tests/test-fixtures/models/madpo-families/: reference.json and grads_agent{0,1}.safetensors.
Run: .venv-ref/bin/python scripts/reference/make_family_grad_fixtures.py  (deterministic)
"""
import json
import os
import pathlib

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "test-fixtures" / "models"
OUT = MODELS / "madpo-families"
AGENTS = ["tiny-gemma3", "tiny-phi3"]
EOS = 2  # both fixtures use the Llama-style tokenizer: <pad>=0, <s>=1, </s>=2
BETA = 0.1


def load(name):
    m = AutoModelForCausalLM.from_pretrained(MODELS / name, attn_implementation="eager", dtype=torch.float32)
    m.train()  # no dropout in the fixtures: train mode only enables gradients
    return m


def seq_logprob(model, prompt, completion):
    comp = completion[:-1]  # decentralized scoring leaves the last completion token out
    if len(comp) == 0:
        return torch.zeros((), dtype=torch.float32)
    ids = torch.tensor([prompt + comp])
    logits = model(ids).logits[0].float()
    lp = F.log_softmax(logits[len(prompt) - 1 : len(prompt) - 1 + len(comp)], dim=-1)
    return lp.gather(1, torch.tensor(comp)[:, None]).sum()


def margins(model, pairs, agent):
    return torch.stack([
        seq_logprob(model, p[agent]["prompt"], p[agent]["winner"]) - seq_logprob(model, p[agent]["prompt"], p[agent]["loser"])
        for p in pairs
    ])


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    agents = [load(n) for n in AGENTS]
    g = torch.Generator().manual_seed(21)

    def rand_ids(n):
        return torch.randint(3, 381, (n,), generator=g).tolist()

    # (prompt, winner, loser) lengths: totals from 5 to 21 tokens, so tiny-phi3 scores sequences
    # with both longrope factor sets and tiny-gemma3's sliding window (6) hides part of most.
    specs = [(4, 6, 3), (7, 10, 5), (3, 14, 9), (5, 2, 12)]
    pairs = []
    for k, (plen, wlen, llen) in enumerate(specs):
        pair = []
        for _ in AGENTS:
            prompt = [1] + rand_ids(plen)
            winner = rand_ids(wlen) + ([EOS] if k == 0 else [])
            pair.append({"prompt": prompt, "winner": winner, "loser": rand_ids(llen)})
        pairs.append(pair)

    with torch.no_grad():
        detached = [margins(m, pairs, i) for i, m in enumerate(agents)]
    result = {"agents": AGENTS, "beta": BETA, "torch": torch.__version__, "pairs": pairs,
              "margins": [d.tolist() for d in detached], "agent_losses": []}
    for i, m in enumerate(agents):
        others = sum(d for k, d in enumerate(detached) if k != i)
        loss = (-F.logsigmoid(BETA * (margins(m, pairs, i) + others))).mean()
        result["agent_losses"].append(loss.item())
        m.zero_grad()
        loss.backward()
        grads = {n: p.grad.detach().clone().contiguous() for n, p in m.named_parameters() if p.grad is not None}
        save_file(grads, str(OUT / f"grads_agent{i}.safetensors"), metadata={"format": "pt"})
    (OUT / "reference.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "pairs"}, indent=1))


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
