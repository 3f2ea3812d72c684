"""PyTorch reference for pbrl's MADPO loss and per-agent gradients.

Two tiny agents (the tiny-llama and tiny-qwen2 fixtures of packages/models) and a fixed set of
preference pairs given as token ids. For each agent i, with margins
  δᵢ = Σ log πᵢ(winner tokens | prompt) − Σ log πᵢ(loser tokens | prompt)
(decentralized scoring: the last completion token is left out unless score_last_token), the
per-agent loss is mean_p −log σ(β (δᵢ(p) + Σ_{k≠i} δₖ(p).detach())) and its gradient is taken
with respect to agent i's parameters only. Also the single-agent case, −log σ(β (log π(w) − log π(l))).

The same through LoRA agents: each fixture with the PEFT adapter of
tests/test-fixtures/models/lora/ (make_lora_fixtures.py) on it, gradients taken with respect to the
adapters' factors only, named as pbrl names them (model.layers.0.self_attn.q_proj.lora_A.weight).

Writes packages/dpo/test/fixtures/: madpo_reference.json, madpo_grads_*.safetensors,
madpo_lora_reference.json and madpo_lora_grads_agent*.safetensors (peft 0.21 needed for the last).
Run: .venv-ref/bin/python scripts/reference/make_madpo_fixtures.py
"""
import json
import pathlib

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "test-fixtures" / "models"
OUT = ROOT / "packages" / "dpo" / "test" / "fixtures"
BETA = 0.1


def load(name):
    m = AutoModelForCausalLM.from_pretrained(MODELS / name, attn_implementation="eager", dtype=torch.float32)
    m.train()  # the fixtures have no dropout, so train mode only enables gradients
    return m


def seq_logprob(model, prompt, completion, score_last):
    comp = completion if score_last else completion[:-1]
    if len(comp) == 0:
        return torch.zeros((), dtype=torch.float32)
    ids = torch.tensor([prompt + comp])
    logits = model(ids).logits[0].float()
    lp = F.log_softmax(logits[len(prompt) - 1 : len(prompt) - 1 + len(comp)], dim=-1)
    return lp.gather(1, torch.tensor(comp)[:, None]).sum()


def margins(model, pairs, agent, score_last):
    return torch.stack([
        seq_logprob(model, p[agent]["prompt"], p[agent]["winner"], score_last) - seq_logprob(model, p[agent]["prompt"], p[agent]["loser"], score_last)
        for p in pairs
    ])


def grads_of(model, loss):
    model.zero_grad()
    loss.backward()
    return {n: p.grad.detach().clone().contiguous() for n, p in model.named_parameters() if p.grad is not None}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    agents = [load("tiny-llama"), load("tiny-qwen2")]
    g = torch.Generator().manual_seed(5)

    def rand_ids(n, vocab, avoid):
        ids = torch.randint(3, vocab - 3, (n,), generator=g).tolist()
        return [i for i in ids if i not in avoid] or [5]

    # Prompts of different lengths, completions of 1–9 tokens, one ending with each agent's EOS.
    specs = [(4, 6, 3), (7, 1, 5), (3, 9, 9), (5, 2, 1)]
    pairs = []
    for k, (plen, wlen, llen) in enumerate(specs):
        pair = []
        for a, (vocab, eos) in enumerate([(384, 2), (384, 383)]):
            prompt = ([1] if a == 0 else []) + rand_ids(plen, vocab, {eos})
            winner = rand_ids(wlen, vocab, {eos})
            loser = rand_ids(llen, vocab, {eos})
            if k == 0:
                winner = winner + [eos]
            pair.append({"prompt": prompt, "winner": winner, "loser": loser})
        pairs.append(pair)

    result = {"beta": BETA, "pairs": pairs, "torch": torch.__version__}
    for score_last in (False, True):
        key = "score_last" if score_last else "exclude_last"
        with torch.no_grad():
            detached = [margins(m, pairs, i, score_last) for i, m in enumerate(agents)]
        joint = detached[0] + detached[1]
        entry = {
            "margins": [d.tolist() for d in detached],
            "joint_loss": (-F.logsigmoid(BETA * joint)).mean().item(),
            "agent_losses": [],
        }
        for i, m in enumerate(agents):
            others = sum(d for k, d in enumerate(detached) if k != i)
            live = margins(m, pairs, i, score_last)
            loss = (-F.logsigmoid(BETA * (live + others))).mean()
            entry["agent_losses"].append(loss.item())
            if not score_last:
                save_file(grads_of(m, loss), str(OUT / f"madpo_grads_agent{i}.safetensors"), metadata={"format": "pt"})
        result[key] = entry

    # One agent alone: the plain reference-free DPO loss on summed log-probs.
    m = agents[0]
    live = margins(m, pairs, 0, False)
    loss = (-F.logsigmoid(BETA * live)).mean()
    result["single_agent"] = {"loss": loss.item(), "margins": live.tolist()}
    save_file(grads_of(m, loss), str(OUT / "madpo_grads_single.safetensors"), metadata={"format": "pt"})

    (OUT / "madpo_reference.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "pairs"}, indent=1))
    lora_agents(pairs)


def pbrl_name(torch_name):
    """base_model.model.<module>.lora_A.default.weight -> <module>.lora_A.weight (pbrl's weight names)."""
    return torch_name.removeprefix("base_model.model.").replace(".default.", ".")


def lora_agents(pairs):
    from peft import PeftModel

    agents = []
    for name in ("tiny-llama", "tiny-qwen2"):
        m = PeftModel.from_pretrained(load(name), MODELS / "lora" / name)
        m.train()  # the adapters have lora_dropout 0
        for n, p in m.named_parameters():
            p.requires_grad_("lora_" in n)
        agents.append(m)
    with torch.no_grad():
        detached = [margins(m, pairs, i, False) for i, m in enumerate(agents)]
    result = {"beta": BETA, "margins": [d.tolist() for d in detached], "agent_losses": []}
    for i, m in enumerate(agents):
        others = sum(d for k, d in enumerate(detached) if k != i)
        loss = (-F.logsigmoid(BETA * (margins(m, pairs, i, False) + others))).mean()
        result["agent_losses"].append(loss.item())
        grads = {pbrl_name(n): g for n, g in grads_of(m, loss).items()}
        save_file(grads, str(OUT / f"madpo_lora_grads_agent{i}.safetensors"), metadata={"format": "pt"})
    (OUT / "madpo_lora_reference.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
