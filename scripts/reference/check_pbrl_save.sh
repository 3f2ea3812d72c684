#!/usr/bin/env bash
# Shows that checkpoints written by pbrl load in transformers with the reference logits:
# each fixture — every supported family (llama, qwen2, qwen3, mistral, gemma3_text, phi3) — is
# re-saved with `pbrl convert` (float32, sharded float32; Llama also bfloat16) and checked by
# make_model_fixtures.py --check-pbrl-dir. Needs `pnpm install` (builds the CLI) and .venv-ref.
# (packages/models/test/families-model.test.ts runs the same check through the library, when the
# fixture Python is there.)
set -euo pipefail
cd "$(dirname "$0")/../.."
F=tests/test-fixtures/models
PY=${PYTHON:-.venv-ref/bin/python}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
check() { # <saved dir> <reference name>
  "$PY" scripts/reference/make_model_fixtures.py --check-pbrl-dir "$1" --against "$2"
}
for m in tiny-llama tiny-qwen2 tiny-qwen3 tiny-mistral tiny-gemma3 tiny-phi3; do
  node apps/cli/dist/main.js convert --model "$F/$m" --out "$out/$m"
  check "$out/$m" "$m"
  node apps/cli/dist/main.js convert --model "$F/$m" --out "$out/$m-sharded" --max_shard_bytes 60000
  check "$out/$m-sharded" "$m"
done
node apps/cli/dist/main.js convert --model "$F/tiny-llama" --out "$out/bf16" --dtype bfloat16
check "$out/bf16" tiny-llama-bf16
cmp "$out/bf16/model.safetensors" "$F/tiny-llama-bf16/model.safetensors" && echo "bfloat16 weights written by pbrl are byte-identical to transformers' own"
echo "all pbrl-saved checkpoints load in transformers with the reference logits"
