#!/usr/bin/env bash
# One madpo_iter round on libtorch and its peak RSS beside the run's own memory estimate: the
# measurement behind docs/memory.md's "libtorch: the estimate against the process's peak RSS".
#
#   pnpm build && node scripts/bench/shape_checkpoint.mjs --preset qwen2.5-0.5b --out /tmp/qwen-0.5b
#   bash scripts/bench/round_memory.sh /tmp/qwen-0.5b 4 use_peft=true lora_target_modules=all-linear
#
# 4 items, 2 candidates, 8 new tokens, batch 2, random rewards (a random-init model's texts are
# often all empty, and the round must train). Needs GNU time (/usr/bin/time).
set -euo pipefail
model=${1:?usage: round_memory.sh CHECKPOINT_DIR NUM_AGENTS [key=value ...]}
agents=${2:?usage: round_memory.sh CHECKPOINT_DIR NUM_AGENTS [key=value ...]}
shift 2
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/pbrl-round-memory-XXXXXX")
trap 'rm -rf "$work"' EXIT
for i in a b c d; do echo "{\"id\":\"$i\",\"prompt\":\"Write a short note about item $i.\"}"; done > "$work/items.jsonl"
echo 'export function reward_func(completions) { return completions[0].map(() => Math.random()); }' > "$work/reward.mjs"
cat > "$work/run.yaml" <<YAML
trainer: madpo_iter
train_dataset: items.jsonl
reward_func: reward.mjs
num_iterations: 1
preference_num_candidates: 2
max_new_tokens: 8
train_batch_size: 2
generation_batch_size: 8
eval_interval: 0
backend: libtorch
comparator_policy: current
verbose: true
YAML
cd "$work"
/usr/bin/time -v node "$repo/apps/cli/dist/main.js" train --config run.yaml agent_model="$model" num_agents="$agents" output_dir="$work/out" "$@" > log 2>&1 || { tail -20 log; exit 1; }
grep -m1 'memory estimate:' log >&2
estimate=$(grep -o 'memory estimate: [0-9.]* [GM]B' log | head -1)
peak_kb=$(grep 'Maximum resident set size' log | grep -o '[0-9]*$')
echo "$estimate; peak RSS $(awk -v k="$peak_kb" 'BEGIN { printf "%.2f GB", k / 1048576 }'); $(grep 'Elapsed' log | sed 's/^\s*//')"
