#!/usr/bin/env bash
# bench/schedule.sh -- search schedules of the kit's workloads with `atl schedule` on
# this machine, at the kit's (first) sizes, and write each specification with the block
# found to bench/schedules/WORKLOAD.atl, which bench/kit.sh times as the candidate
# `atl_sched`.
#
#   bash bench/schedule.sh [--budget SECONDS] [--threads N] [WORKLOAD...]
#
# Defaults: a budget of 120 s per workload, 2 threads (the schedule then has
# `parallel` on its outer loop, which serves the kit's T = 1 runs as well), every
# workload (the blur's stage is inlined by the search, docs/scheduling.md).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BUDGET=120
THREADS=2
ONLY=()
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) BUDGET="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) ONLY+=("$1"); shift ;;
  esac
done

# workload | specification file | definition | sizes (the kit's first)
SPECS=(
  "blur3x3|examples/blur/blur.atl|blur|H=2000,W=2000"
  "matmul|examples/matmul/matmul.atl|matmul|M=1024,N=1024,K=1024"
  "tensor_add4d|examples/tensor_add/tensor_add.atl|tensor_add|A=64,B=64,C=64,D=64"
  "conv1d|examples/conv1d_kit/conv1d_kit.atl|conv1d_kit|B=8,C=64,K=64,W=1024,R=3"
  "bmm|examples/bmm/bmm.atl|bmm|NB=16,M=256,N=256,K=256"
  "dwconv|examples/dwconv/dwconv.atl|dwconv|C=64,H=112,W=112"
  # Not kit workloads: TTM and attention, timed against numpy by bench/numpy_peers.sh
  # (at one thread: search them with `--threads 1`).
  "ttm|examples/ttm/ttm.atl|ttm|I=128,J=128,K=128,R=32"
  "attention|examples/attention/attention.atl|attention|N=512,D=64"
)

(cd "$ROOT" && cargo build --release -q -p atl-cli)
ATL="$ROOT/target/release/atl"
mkdir -p "$HERE/schedules"
for s in "${SPECS[@]}"; do
  IFS='|' read -r w file def sizes <<< "$s"
  if [ "${#ONLY[@]}" -gt 0 ] && [[ ! " ${ONLY[*]} " == *" $w "* ]]; then
    continue
  fi
  out="$HERE/schedules/$w.atl"
  tmp="$(mktemp)"
  # The specification alone: the declarations and the definition searched.
  awk -v def="$def" '
    /^(size|input|assume) / { print; next }
    $0 ~ "^def " def "( |$)" { on = 1 }
    on && (/^$/ || /^#/ || (/^(def|derive|rule) / && $0 !~ "^def " def "( |$)")) { on = 0 }
    on { print }
  ' "$ROOT/$file" > "$tmp"
  printf '# The kit workload `%s`: its specification (from %s) and the schedule\n# `bash bench/schedule.sh` found for it.\n' "$w" "$file" > "$out"
  cat "$tmp" >> "$out"
  rm -f "$tmp"
  echo "[schedule.sh] $w: atl schedule --sizes $sizes --budget $BUDGET --threads $THREADS" >&2
  if ! "$ATL" schedule "$out" --def "$def" --sizes "$sizes" --budget "$BUDGET" --threads "$THREADS" -o "$out"; then
    echo "[schedule.sh] $w: no schedule found" >&2
    rm -f "$out"
  fi
done
