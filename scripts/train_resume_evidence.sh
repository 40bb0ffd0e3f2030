#!/bin/bash
# Resume evidence for the reference trainer on one GPU (NCCL, bf16 autocast; CPU/gloo works
# too): torchrun world size 1, an uninterrupted run, then a run stopped by SIGUSR1 mid-way
# and resumed from its checkpoint; prints steps/s, peak GPU memory and whether the two
# weights digests match. Not a CI test (CI has no GPU). From the repository root:
#   bash scripts/train_resume_evidence.sh          (STEPS, SIGNAL_AFTER, OUT, PY, WHEELS to override)
# WHEELS: a folder of wheels to install first on an offline machine (pydantic and its needs).
set -euo pipefail
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/train-resume-evidence}
CK=$(mktemp -d)
trap 'rm -rf "$CK"' EXIT
STEPS=${STEPS:-4000}
ARGS=(--steps "$STEPS" --save-every 500 --micro-batch 64 --accum 4 --lr 1e-2 --seed 7)

install_wheels() {
  if [ -n "${WHEELS:-}" ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl
    export PYTHONPATH=/tmp/site:$HERE
  else
    export PYTHONPATH=$HERE
  fi
}

describe() {
  nvidia-smi -L || true
  "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else "-", "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else "-")'
}

worker_of() {  # the training process under the torchrun whose arguments name $1 (from /proc: no procps needed)
  local dir=$1 proc cmd agent=""
  for proc in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' <"$proc/cmdline" 2>/dev/null || true)
    case $cmd in *torch.distributed.run*"--checkpoint-dir $dir "*) agent=${proc#/proc/} ;; esac
  done
  [ -n "$agent" ] || return 0
  for proc in /proc/[0-9]*; do
    if [ "$(awk '{print $4}' "$proc/stat" 2>/dev/null)" = "$agent" ]; then echo "${proc#/proc/}"; return 0; fi
  done
}

launch() {  # launch NAME DIR: torchrun world size 1, logs to $OUT/NAME.log
  "$PY" -m torch.distributed.run --standalone --nproc-per-node=1 -m gpucluster.train \
    --checkpoint-dir "$2" "${ARGS[@]}" >"$OUT/$1.out" 2>"$OUT/$1.log"
}

straight() {
  launch straight "$CK/a"
  cat "$OUT/straight.out"; grep -E "starting|ran |backend|nccl" "$OUT/straight.log" || true
}

interrupted() {
  launch interrupted "$CK/b" &
  local launcher=$! worker="" waited=0
  # Signal the training process, not torchrun (its agent has no SIGUSR1 handler and would die).
  until grep -q "starting" "$OUT/interrupted.log" 2>/dev/null; do
    sleep 0.2; waited=$((waited + 1))
    if [ "$waited" -gt 600 ]; then echo "no progress after 120 s" >&2; cat "$OUT/interrupted.log" >&2; exit 1; fi
  done
  sleep "${SIGNAL_AFTER:-2}"  # mid-run, not at the first update
  local tries=0
  until [ -n "$worker" ]; do
    worker=$(worker_of "$CK/b")
    tries=$((tries + 1)); [ "$tries" -gt 50 ] && { echo "no worker process found" >&2; exit 1; }
    [ -n "$worker" ] || sleep 0.1
  done
  echo "signalling worker pid $worker"
  kill -USR1 "$worker"
  wait "$launcher"
  echo "interrupted run exit 0"; grep -E "requeue|ran " "$OUT/interrupted.log"
  ls "$CK/b"
}

resumed() {
  launch resumed "$CK/b"
  cat "$OUT/resumed.out"; grep -E "resuming|ran " "$OUT/resumed.log"
}

compare() {
  local a b
  a=$(grep -o 'weights-sha256=[0-9a-f]*' "$OUT/straight.out")
  b=$(grep -o 'weights-sha256=[0-9a-f]*' "$OUT/resumed.out")
  if [ "$a" != "$b" ]; then echo "MISMATCH: resumed $b, uninterrupted $a" >&2; exit 1; fi
  echo "MATCH: resumed weights equal the uninterrupted run's ($a)"
}

cd "$HERE"  # python -m gpucluster.train from this checkout
mkdir -p "$OUT"
install_wheels
describe
straight
interrupted
resumed
compare
