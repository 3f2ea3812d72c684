"""Reference fixtures for @pbrl/core-tensor, computed with PyTorch.

Writes packages/core-tensor/test/fixtures/:
  dtypes.safetensors + dtypes.json  tensors stored as F32, F16, BF16, I64 by the safetensors
                                    library, and their values as float64 after torch's upcast
  adamw.json                        torch.optim.AdamW: three steps on a fixed least-squares
                                    problem, parameters, gradients and moments after each step
  clip.json                         torch.nn.utils.clip_grad_norm_ on fixed gradients

Run:  .venv-ref/bin/python scripts/reference/make_core_fixtures.py
Deterministic: running it twice gives identical files.
"""
import json
import pathlib

import torch
from safetensors.torch import save_file

OUT = pathlib.Path(__file__).resolve().parents[2] / "packages" / "core-tensor" / "test" / "fixtures"


def dtypes() -> None:
    g = torch.Generator().manual_seed(0)
    base = torch.randn(3, 5, generator=g, dtype=torch.float32) * 3
    specials = torch.tensor([0.0, -0.0, 1.0, -2.5, 65504.0, 1e-7, 3.0e-5, 7.1e4], dtype=torch.float32)
    tensors = {
        "f32": base.clone(),
        "f16": base.to(torch.float16),
        "bf16": base.to(torch.bfloat16),
        "f16_specials": specials[:-1].to(torch.float16),  # 7.1e4 overflows F16
        "bf16_specials": torch.cat([specials, torch.tensor([1e30, -3e-39])]).to(torch.bfloat16),
        "i64": torch.tensor([[0, 1, -7], [2**31 - 1, -(2**31), 42]], dtype=torch.int64),
    }
    save_file(tensors, str(OUT / "dtypes.safetensors"), metadata={"format": "pt", "note": "pbrl fixture"})
    expected = {
        name: {"shape": list(t.shape), "values": t.to(torch.float64).flatten().tolist()} for name, t in tensors.items()
    }
    # What rounding float32 -> f16/bf16 must give (torch rounds to nearest even).
    expected["rounding_source_f32"] = {"shape": list(base.shape), "values": base.to(torch.float64).flatten().tolist()}
    (OUT / "dtypes.json").write_text(json.dumps(expected, indent=1) + "\n")


def adamw() -> None:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(8, 4, generator=g)
    y = torch.randn(8, 3, generator=g)
    w = torch.randn(4, 3, generator=g, requires_grad=True)
    b = torch.randn(3, generator=g, requires_grad=True)
    init = {"w": w.detach().flatten().tolist(), "b": b.detach().flatten().tolist()}
    opt = torch.optim.AdamW([w, b], lr=0.05, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, foreach=False)
    steps = []
    for _ in range(3):
        opt.zero_grad()
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        grads = {"w": w.grad.flatten().tolist(), "b": b.grad.flatten().tolist()}
        opt.step()
        steps.append({
            "loss": loss.item(),
            "grads": grads,
            "params": {"w": w.detach().flatten().tolist(), "b": b.detach().flatten().tolist()},
            "exp_avg": {"w": opt.state[w]["exp_avg"].flatten().tolist(), "b": opt.state[b]["exp_avg"].flatten().tolist()},
            "exp_avg_sq": {"w": opt.state[w]["exp_avg_sq"].flatten().tolist(), "b": opt.state[b]["exp_avg_sq"].flatten().tolist()},
        })
    fixture = {
        "x": x.flatten().tolist(), "x_shape": [8, 4],
        "y": y.flatten().tolist(), "y_shape": [8, 3],
        "w_shape": [4, 3], "b_shape": [3],
        "init": init,
        "options": {"lr": 0.05, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1},
        "steps": steps,
        "torch": torch.__version__,
    }
    (OUT / "adamw.json").write_text(json.dumps(fixture, indent=1) + "\n")


def clip() -> None:
    g = torch.Generator().manual_seed(2)
    p1 = torch.zeros(3, 4, requires_grad=True)
    p2 = torch.zeros(5, requires_grad=True)
    p1.grad = torch.randn(3, 4, generator=g)
    p2.grad = torch.randn(5, generator=g) * 4
    before = {"a": p1.grad.flatten().tolist(), "b": p2.grad.flatten().tolist()}
    norm = torch.nn.utils.clip_grad_norm_([p1, p2], max_norm=1.5)
    after = {"a": p1.grad.flatten().tolist(), "b": p2.grad.flatten().tolist()}
    fixture = {"shapes": {"a": [3, 4], "b": [5]}, "max_norm": 1.5, "before": before, "total_norm": norm.item(), "after": after}
    (OUT / "clip.json").write_text(json.dumps(fixture, indent=1) + "\n")


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    dtypes()
    adamw()
    clip()
    print(f"wrote fixtures to {OUT}")
