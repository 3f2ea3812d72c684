#!/usr/bin/env bash
# The libtorch backend on a CUDA machine, unattended, from a fresh clone (with ../shared beside it):
#   1. libtorch: PBRL_LIBTORCH (a libtorch folder) or PBRL_PYTHON (a Python with a CUDA torch) when
#      set, else a virtual environment with the CUDA torch wheel (and transformers, for the bench's
#      PyTorch side), made once and cached outside the clone;
#   2. `pnpm install`, whose install step builds the libtorch addon against it — and the addon
#      must load with CUDA devices;
#   3. the core-tensor, models, dpo and reward-model suites on libtorch (PBRL_BACKEND=libtorch,
#      PBRL_REQUIRE_LIBTORCH=1: a test that cannot run fails instead of skipping);
#   4. the device tests with PBRL_TEST_DEVICES=cuda:0 (cuda:0,cuda:1 with two GPUs or more): two
#      agents placed there train one iterative MADPO round, each MARLHF role's models and the
#      comparator models land on the devices their fields name;
#   5. process groups between 2 ranks (`pbrl train --nproc_per_node 2` test ranks): with two GPUs
#      or more NCCL, each rank on cuda:LOCAL_RANK; with one, Gloo with CUDA tensors on cuda:0
#      (through host memory); then the launch tests (ddp runs; on libtorch with agent_devices
#      unset, each rank's agents on cuda:LOCAL_RANK, or refused up front with one GPU);
#   6. `pbrl bench --json --backends libtorch`, its JSON written to a file.
# Every step runs even after an earlier one failed (the install excepted), each with its log in
# the output folder; a summary comes last, and the exit status is non-zero when any step failed.
#
# Settings (environment): PBRL_LIBTORCH, PBRL_PYTHON (use that libtorch / torch instead of the
# cached venv); PBRL_GPU_CACHE (venv cache, default ~/.cache/pbrl-gpu); PBRL_TORCH_VERSION (default
# 2.13.0); PBRL_TORCH_INDEX_URL (pip index of the CUDA wheels, e.g.
# https://download.pytorch.org/whl/cu128; default pip's own index, whose Linux x86-64 torch wheel
# is a CUDA build); PBRL_GPU_OUT (output folder, default ./gpu-check); PBRL_BENCH_ARGS (extra
# arguments for the bench, e.g. "--preset smollm2-135m"); PBRL_GPU_SKIP_INSTALL=1 (a rerun: keep
# the installed packages and addon); PBRL_GPU_ALLOW_CPU=1 (a rehearsal of the script itself on a
# CPU libtorch: the device tests then place on "cpu").
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1 CI=1

OUT=${PBRL_GPU_OUT:-$ROOT/gpu-check}
mkdir -p "$OUT"
SUMMARY=()
FAILED=0

# run <name> <command…>: runs a step with its output in $OUT/<name>.log, records the outcome.
run() {
  local name=$1
  shift
  local log="$OUT/$name.log" start=$SECONDS status
  echo "gpu-check: $name …"
  "$@" >"$log" 2>&1
  status=$?
  local took=$((SECONDS - start))
  if [ "$status" = 0 ]; then
    SUMMARY+=("ok      $name (${took} s)")
  else
    SUMMARY+=("FAILED  $name (${took} s, exit $status; log: $log)")
    FAILED=1
    tail -n 30 "$log" | sed 's/^/    /'
  fi
  return "$status"
}

# in_dir <dir> <command…>: the command run in <dir>.
in_dir() {
  local dir=$1
  shift
  (cd "$dir" && "$@")
}

summary() {
  echo
  echo "gpu-check summary (logs and bench JSON in $OUT):"
  printf '  %s\n' "${SUMMARY[@]}"
  if [ "$FAILED" = 0 ]; then echo "gpu-check: all steps passed"; else echo "gpu-check: some steps FAILED"; fi
}

abort() {
  summary
  exit 1
}

# 1. libtorch.
if [ -n "${PBRL_LIBTORCH:-}" ]; then
  echo "gpu-check: libtorch from PBRL_LIBTORCH=$PBRL_LIBTORCH"
  PY=${PBRL_PYTHON:-python3}
elif [ -n "${PBRL_PYTHON:-}" ]; then
  echo "gpu-check: torch of PBRL_PYTHON=$PBRL_PYTHON"
  PY=$PBRL_PYTHON
else
  VERSION=${PBRL_TORCH_VERSION:-2.13.0}
  VENV="${PBRL_GPU_CACHE:-$HOME/.cache/pbrl-gpu}/torch-cuda-$VERSION"
  PY="$VENV/bin/python"
  make_venv() {
    local index=()
    if [ -n "${PBRL_TORCH_INDEX_URL:-}" ]; then index=(--index-url "$PBRL_TORCH_INDEX_URL" --extra-index-url https://pypi.org/simple); fi
    python3 -m venv "$VENV" &&
      "$PY" -m pip install -q --upgrade pip &&
      "$PY" -m pip install -q "${index[@]}" "torch==$VERSION" &&
      "$PY" -m pip install -q transformers==5.18.0
  }
  if ! "$PY" -c "import torch, transformers" >/dev/null 2>&1; then
    run venv make_venv || abort
  else
    echo "gpu-check: reusing $VENV"
  fi
  export PBRL_PYTHON=$PY
fi
# A CPU wheel would build an addon without devices: every CUDA step below would fail less clearly.
if [ -z "${PBRL_LIBTORCH:-}" ] && [ "${PBRL_GPU_ALLOW_CPU:-0}" != 1 ]; then
  run torch-has-cuda "$PY" -c "import torch, sys; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'devices', torch.cuda.device_count()); sys.exit(0 if torch.version.cuda and torch.cuda.is_available() else 1)" || abort
fi

# 2. Install: node packages, the addons, every package's build (the CLI included).
if [ "$(pnpm --version 2>/dev/null || true)" != "12.4.2" ]; then
  run pnpm npm i -g pnpm@12.4.2 || abort
fi
if [ "${PBRL_GPU_SKIP_INSTALL:-0}" = 1 ]; then
  echo "gpu-check: PBRL_GPU_SKIP_INSTALL=1: using the packages and addon installed before"
else
  run install pnpm install --frozen-lockfile --prefer-offline || abort
  grep -E "pbrl (libtorch|native) addon" "$OUT/install.log" || true
fi
ADDON_INFO=$(node --input-type=module -e "
  import { loadLibtorchAddon, nativeThreads } from '$ROOT/packages/core-tensor/dist/index.js';
  const l = loadLibtorchAddon(nativeThreads());
  if (!l.ok) { console.error(l.reason); process.exit(1); }
  console.log(l.info.torchVersion, l.info.cuda ? 1 : 0, l.info.cudaDevices);
" 2>"$OUT/addon.log" | tail -n 1)
if [ -z "$ADDON_INFO" ]; then
  SUMMARY+=("FAILED  addon (the libtorch addon does not load; log: $OUT/addon.log)")
  FAILED=1
  cat "$OUT/addon.log"
  abort
fi
read -r TORCH_VERSION HAS_CUDA GPUS <<<"$ADDON_INFO"
if [ "$HAS_CUDA" = 1 ] && [ "$GPUS" -ge 1 ]; then
  SUMMARY+=("ok      addon (libtorch $TORCH_VERSION with CUDA, $GPUS device(s))")
  if [ "$GPUS" -ge 2 ]; then DEVICES=cuda:0,cuda:1; else DEVICES=cuda:0; fi
elif [ "${PBRL_GPU_ALLOW_CPU:-0}" = 1 ]; then
  SUMMARY+=("ok      addon (libtorch $TORCH_VERSION without CUDA: a CPU rehearsal, devices cpu)")
  DEVICES=cpu
else
  SUMMARY+=("FAILED  addon (libtorch $TORCH_VERSION: CUDA $HAS_CUDA, $GPUS devices; a CUDA libtorch and a visible GPU are needed)")
  FAILED=1
  abort
fi

# 3. The parity suites on libtorch.
for p in core-tensor models dpo reward-model; do
  run "suite-$p" in_dir "packages/$p" env PBRL_BACKEND=libtorch PBRL_REQUIRE_LIBTORCH=1 PBRL_TEST_DEVICES=$DEVICES pnpm exec vitest run
done

# 4. Models on the CUDA devices, every role.
run "devices-trainers" in_dir packages/trainers env PBRL_REQUIRE_LIBTORCH=1 PBRL_TEST_DEVICES=$DEVICES pnpm exec vitest run test/devices-libtorch.test.ts
run "devices-comparators" in_dir packages/comparators env PBRL_REQUIRE_LIBTORCH=1 PBRL_TEST_DEVICES=$DEVICES pnpm exec vitest run test/devices.test.ts
run "devices-rl-backends" in_dir packages/rl-backends env PBRL_REQUIRE_LIBTORCH=1 PBRL_TEST_DEVICES=$DEVICES pnpm exec vitest run test/devices.test.ts

# 5. Process groups with CUDA tensors: NCCL between two GPUs, else Gloo with tensors on the one GPU.
BACKENDS=$(node --input-type=module -e "
  import { distributedBackends } from '$ROOT/packages/core-tensor/dist/index.js';
  console.log(distributedBackends().join(','));
" 2>>"$OUT/addon.log" | tail -n 1)
SUMMARY+=("        process group backends: ${BACKENDS:-none}")
distributed() {
  local out
  out=$(PBRL_TEST_RANK=allreduce-device "$@" node apps/cli/dist/main.js train --nproc_per_node 2) || return 1
  echo "$out"
  # Ranks 0 and 1 add (1, 10) and (2, 20): both must hold (3, 30), on their device.
  [ "$(echo "$out" | grep -c "allreduce 3,30 on ")" = 2 ]
}
if [ "$DEVICES" = cuda:0,cuda:1 ]; then
  if [[ ",$BACKENDS," == *,nccl,* ]]; then
    run distributed-nccl distributed env PBRL_TEST_DIST_BACKEND=nccl
  else
    SUMMARY+=("FAILED  distributed-nccl (the addon has no NCCL: see the NCCL lines of $OUT/install.log)")
    FAILED=1
  fi
fi
run distributed-gloo distributed env PBRL_TEST_DEVICE="${DEVICES%%,*}"
run launch in_dir apps/cli env PBRL_REQUIRE_LIBTORCH=1 PBRL_TEST_DEVICES=$DEVICES pnpm exec vitest run test/launch.test.ts

# 6. The bench on libtorch, with PyTorch beside it.
bench() {
  # shellcheck disable=SC2086 # PBRL_BENCH_ARGS is a list of arguments
  node apps/cli/dist/main.js bench --json --backends libtorch --python "$PY" ${PBRL_BENCH_ARGS:-} >"$OUT/bench.json"
}
run bench bench && SUMMARY+=("        bench JSON: $OUT/bench.json")

summary
exit "$FAILED"
