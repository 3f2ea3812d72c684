"""PyTorch reference for pbrl's joint reward model (MARLHF's R̃ψ) and its Bradley–Terry loss.

Backbone: the tiny-llama fixture of packages/models. Head: a torch.nn.Linear(hidden, 1) with
bias and PyTorch's default initialisation (seeded), as CoMLRL's JointRewardModel; its weights are
written as `reward_head.safetensors` (names `reward_head.weight` / `reward_head.bias`, plus the
`pbrl_head` metadata that pbrl's ScalarHead reads), so the TypeScript test runs the very same
head.

Texts are CoMLRL's joint layout ("\\n\\n"-joined: `Joint multi-agent response`, then per agent
`Agent i prompt:\\n…` and `Agent i response:\\n…`), tokenised with the fixture tokenizer
(special tokens added). A score is the head applied to the final hidden state (after the last
RMSNorm: `hidden_states[-1]`, checked equal to the base model's `last_hidden_state`) at the last
non-pad token of each row. The loss is mean(−log σ(s_w − s_l)) over the pairs, winners and losers
of all pairs run as one right-padded batch with its attention mask; gradients are taken with
respect to every backbone weight and the head.

Also: every text scored alone (no padding), and one text truncated to a few tokens with
truncation_side="left" (pbrl keeps the end of a joint text, where the responses are).

Writes packages/reward-model/test/fixtures/: reward_model_reference.json, reward_head.safetensors,
reward_grads_backbone.safetensors, reward_grads_head.safetensors.
Run: .venv-ref/bin/python scripts/reference/make_reward_model_fixtures.py
"""
import json
import os
import pathlib

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

torch.set_num_threads(1)
ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "tests" / "test-fixtures" / "models" / "tiny-llama"
OUT = ROOT / "packages" / "reward-model" / "test" / "fixtures"
TRUNCATE_TO = 24

PAIRS = [
    {
        "prompts": ["Write a greeting.", "Add a farewell."],
        "winner_completions": ["Hello there, friend!", "Goodbye and take care."],
        "loser_completions": ["hi", "bye"],
    },
    {
        "prompts": ["Sum 2 and 3.", "Check the sum."],
        "winner_completions": ["5", "Yes, 2 + 3 = 5."],
        "loser_completions": ["6", "No."],
    },
    {
        "prompts": ["Name a city.", "Describe it."],
        "winner_completions": ["Zürich", "A calm city by a lake."],
        "loser_completions": ["The weather today is sunny", "?"],
    },
]


def joint_text(prompts, completions):
    """CoMLRL's _format_joint_text."""
    parts = ["Joint multi-agent response"]
    for i in range(len(prompts)):
        parts.append(f"Agent {i + 1} prompt:\n{prompts[i]}")
        parts.append(f"Agent {i + 1} response:\n{completions[i]}")
    return "\n\n".join(parts)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(MODEL)
    tok.padding_side = "right"
    backbone = AutoModelForCausalLM.from_pretrained(MODEL, attn_implementation="eager", dtype=torch.float32)
    backbone.train()  # no dropout in the fixture; train mode only enables gradients
    hidden = backbone.config.hidden_size
    torch.manual_seed(13)
    head = torch.nn.Linear(hidden, 1, bias=True)  # PyTorch default init: U(±1/√hidden)

    winners = [joint_text(p["prompts"], p["winner_completions"]) for p in PAIRS]
    losers = [joint_text(p["prompts"], p["loser_completions"]) for p in PAIRS]
    texts = winners + losers
    single_ids = [tok(t)["input_ids"] for t in texts]

    def score_rows(input_ids, attention_mask):
        out = backbone(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, use_cache=False)
        h = out.hidden_states[-1]
        # pbrl's CausalLM.hidden() returns the final hidden states after the last norm: check that
        # hidden_states[-1] is exactly that.
        with torch.no_grad():
            base = backbone.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
        assert torch.equal(h.detach(), base), "hidden_states[-1] is not the normed last hidden state"
        positions = torch.arange(attention_mask.shape[1])
        last = (attention_mask * positions).argmax(dim=1)  # last non-pad token, either padding side
        return head(h[torch.arange(h.shape[0]), last]).squeeze(-1)

    enc = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    assert enc["input_ids"].shape[1] < 256
    scores = score_rows(enc["input_ids"], enc["attention_mask"])
    n = len(PAIRS)
    diff = scores[:n] - scores[n:]
    loss = F.softplus(-diff).mean()
    backbone.zero_grad()
    head.zero_grad()
    loss.backward()

    with torch.no_grad():
        single_scores = [score_rows(torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.long)).item() for ids in single_ids]

    tok.truncation_side = "left"
    truncated = tok(winners[0], truncation=True, max_length=TRUNCATE_TO)["input_ids"]
    with torch.no_grad():
        truncated_score = score_rows(torch.tensor([truncated]), torch.ones(1, len(truncated), dtype=torch.long)).item()

    # One metadata key only: safetensors writes its metadata map in hash order, so two keys would
    # make the file's bytes vary from run to run. pbrl's ScalarHead needs `pbrl_head`.
    head_meta = {"pbrl_head": json.dumps({"hiddenSize": hidden, "hiddenDim": 0, "bias": True, "prefix": "reward_head"})}
    head_weights = {"reward_head.weight": head.weight.detach().clone().contiguous(), "reward_head.bias": head.bias.detach().clone().contiguous()}
    save_file(head_weights, str(OUT / "reward_head.safetensors"), metadata=head_meta)
    backbone_grads = {name: p.grad.detach().clone().contiguous() for name, p in backbone.named_parameters() if p.grad is not None}
    save_file(backbone_grads, str(OUT / "reward_grads_backbone.safetensors"), metadata={"format": "pt"})
    head_grads = {"reward_head.weight": head.weight.grad.detach().clone().contiguous(), "reward_head.bias": head.bias.grad.detach().clone().contiguous()}
    save_file(head_grads, str(OUT / "reward_grads_head.safetensors"), metadata={"format": "pt"})

    result = {
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "pairs": PAIRS,
        "texts": texts,
        "token_ids": single_ids,
        "padded": {"padding_side": "right", "input_ids": enc["input_ids"].tolist(), "attention_mask": enc["attention_mask"].tolist()},
        "scores": scores.tolist(),
        "single_scores": single_scores,
        "loss": loss.item(),
        "accuracy": (diff > 0).float().mean().item(),
        "margin": diff.mean().item(),
        "truncation": {"text": winners[0], "max_length": TRUNCATE_TO, "side": "left", "input_ids": truncated, "score": truncated_score},
    }
    (OUT / "reward_model_reference.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps({k: result[k] for k in ("scores", "single_scores", "loss", "accuracy", "margin")}, indent=1))
    print("token counts", [len(i) for i in single_ids], "truncated", truncated)


if __name__ == "__main__":
    main()
