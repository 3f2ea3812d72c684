"""PyTorch+PEFT reference for MARLHF's joint reward model on a LoRA backbone (use_peft).

The reward model of make_reward_model_fixtures.py (tiny-llama backbone, the same seeded head,
the same pairs and right-padded batch), with the PEFT adapter of
tests/test-fixtures/models/lora/tiny-llama (make_lora_fixtures.py) on its backbone: the
Bradley-Terry loss and its gradients with respect to the adapter's factors (named as pbrl names
them: model.layers.0.self_attn.q_proj.lora_A.weight) and the head; the base stays frozen.

Writes packages/reward-model/test/fixtures/: reward_lora_reference.json, reward_lora_grads.safetensors.
Run: .venv-ref/bin/python scripts/reference/make_reward_lora_fixtures.py (peft 0.21)
"""
import json

import torch
import torch.nn.functional as F
from peft import PeftModel
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from make_reward_model_fixtures import MODEL, OUT, PAIRS, joint_text

ADAPTER = MODEL.parent / "lora" / "tiny-llama"


def main():
    torch.set_num_threads(1)
    tok = AutoTokenizer.from_pretrained(MODEL)
    tok.padding_side = "right"
    base = AutoModelForCausalLM.from_pretrained(MODEL, attn_implementation="eager", dtype=torch.float32)
    model = PeftModel.from_pretrained(base, ADAPTER)
    model.train()  # the adapter's lora_dropout is 0
    for n, p in model.named_parameters():
        p.requires_grad_("lora_" in n)
    saved = load_file(str(OUT / "reward_head.safetensors"))
    head = torch.nn.Linear(base.config.hidden_size, 1, bias=True)
    with torch.no_grad():
        head.weight.copy_(saved["reward_head.weight"])
        head.bias.copy_(saved["reward_head.bias"])

    texts = [joint_text(p["prompts"], p["winner_completions"]) for p in PAIRS] + [joint_text(p["prompts"], p["loser_completions"]) for p in PAIRS]
    enc = tok(texts, padding=True, return_tensors="pt")
    out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], output_hidden_states=True, use_cache=False)
    h = out.hidden_states[-1]
    last = (enc["attention_mask"] * torch.arange(enc["attention_mask"].shape[1])).argmax(dim=1)
    scores = head(h[torch.arange(h.shape[0]), last]).squeeze(-1)
    n = len(PAIRS)
    loss = F.softplus(-(scores[:n] - scores[n:])).mean()
    loss.backward()

    grads = {n.removeprefix("base_model.model.").replace(".default.", "."): p.grad.detach().clone().contiguous() for n, p in model.named_parameters() if p.grad is not None}
    grads["reward_head.weight"] = head.weight.grad.detach().clone().contiguous()
    grads["reward_head.bias"] = head.bias.grad.detach().clone().contiguous()
    save_file(grads, str(OUT / "reward_lora_grads.safetensors"), metadata={"format": "pt"})
    result = {"loss": loss.item(), "scores": scores.tolist()}
    (OUT / "reward_lora_reference.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
