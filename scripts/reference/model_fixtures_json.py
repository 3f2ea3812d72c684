"""The reference JSON writer of make_model_fixtures.py.

Floats are float32 values written as their shortest round-trip decimal; numeric arrays stay on
one line (a matrix: one row per line), so the files are deterministic and diffable.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch

# --------------------------------------------------------------------------------------
# JSON writing (float32 as shortest round-trip decimal; numeric arrays inline)
# --------------------------------------------------------------------------------------


class F32:
    """A float32 value serialised as its shortest round-trip decimal string."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = np.float32(v)


class F64:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = float(v)


def f32_list(t) -> list:
    arr = t.detach().cpu().to(torch.float32).numpy() if isinstance(t, torch.Tensor) else np.asarray(t, np.float32)
    if arr.ndim == 1:
        return [F32(x) for x in arr]
    return [f32_list(row) for row in arr]


def _num(x) -> str:
    if isinstance(x, F32):
        assert np.isfinite(x.v), x.v
        s = str(x.v)  # numpy: shortest repr that round-trips to the same float32
        assert np.float32(float(s)) == x.v
        return s
    if isinstance(x, F64):
        assert math.isfinite(x.v)
        return repr(x.v)
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return json.dumps(x, ensure_ascii=False)
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, float):
        assert math.isfinite(x)
        return repr(x)
    raise TypeError(type(x))


def _is_scalar(x) -> bool:
    return not isinstance(x, (dict, list, tuple))


def to_json(obj, indent: int = 0) -> str:
    pad = "  " * indent
    pad1 = "  " * (indent + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad1}{json.dumps(str(k), ensure_ascii=False)}: {to_json(v, indent + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, (list, tuple)):
        if not obj:
            return "[]"
        if all(_is_scalar(x) for x in obj):
            return "[" + ",".join(_num(x) for x in obj) + "]"
        if all(isinstance(x, (list, tuple)) and all(_is_scalar(y) for y in x) for x in obj):
            # matrix: one row per line
            rows = [pad1 + to_json(x, indent + 1) for x in obj]
            return "[\n" + ",\n".join(rows) + "\n" + pad + "]"
        items = [pad1 + to_json(x, indent + 1) for x in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return _num(obj)


def write_json(path: Path, obj) -> None:
    path.write_text(to_json(obj) + "\n", encoding="utf-8")
