#!/usr/bin/env bash
# bench/kit.sh -- time the kernels `atl emit` prints for the six workloads of the
# shared benchmark kit (../shared/bench) against its peers (naive and hand-optimized
# C, Halide and its autoschedulers, numpy/OpenBLAS), in one run of the kit: the
# hand-written schedules (`atl`) and the ones `atl schedule` found (`atl_sched`,
# bench/schedules/*.atl, written by bench/schedule.sh).
#
#   bash bench/kit.sh [run.sh arguments...]     e.g. --quick, --only blur3x3,matmul,
#                                                    --threads 1,2, --no-numpy
#   ATL_KIT_RULES=1 bash bench/kit.sh ...       also the rule-level schedules (atl_rules)
#
# What is timed is exactly what `atl emit` printed (the definitions listed in KERNELS
# below), compiled with the kit's CFLAGS and linked with bench/adapter.c, which only
# maps the kit's C ABI onto the emitted one. Environment: KIT (the kit's directory,
# default ../shared/bench next to this repository), ATL_KIT_BUILD (where the
# kernels are built, default target/kit), and everything run.sh reads (CC, CFLAGS,
# BENCH_BUILD, BENCH_TMP, BENCH_VENV, OMP_WAIT_POLICY, BENCH_BUDGET).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
KIT="${KIT:-$ROOT/../shared/bench}"
OUT="${ATL_KIT_BUILD:-$ROOT/target/kit}"
CC="${CC:-gcc}"
CFLAGS="${CFLAGS:--O3 -march=native -fopenmp}"

# workload symbol | file | definition
KERNELS=(
  "kit_blur3x3|examples/blur/blur.atl|fast"
  "kit_matmul|examples/matmul/matmul.atl|fast"
  "kit_tensor_add4d|examples/tensor_add/tensor_add.atl|fast"
  "kit_conv1d|examples/conv1d_kit/conv1d_kit.atl|fast"
  "kit_bmm|examples/bmm/bmm.atl|fast"
  "kit_dwconv|examples/dwconv/dwconv.atl|fast"
)

# The searched schedules: bench/schedules/WORKLOAD.atl holds the specification and the
# `derive SPEC_scheduled` block `atl schedule` appended (bench/schedule.sh). A workload
# without a file is left out of that candidate.
WORKLOADS=(blur3x3 matmul tensor_add4d conv1d bmm dwconv)
SCHED_KERNELS=()
SCHED_MISSING=()
for w in "${WORKLOADS[@]}"; do
  f="bench/schedules/$w.atl"
  if [ -f "$ROOT/$f" ]; then
    def=$(sed -n 's/^derive \([A-Za-z0-9_]*\) from .*/\1/p' "$ROOT/$f" | tail -1)
    SCHED_KERNELS+=("kit_$w|$f|$def")
  else
    SCHED_MISSING+=("-DATL_KIT_NO_$w")
  fi
done

if [ ! -x "$KIT/run.sh" ] && [ ! -f "$KIT/run.sh" ]; then
  echo "kit.sh: no benchmark kit at $KIT (set KIT=...)" >&2
  exit 2
fi

mkdir -p "$OUT"
echo "[kit.sh] building atl (release)" >&2
(cd "$ROOT" && cargo build --release -q -p atl-cli)
ATL="$ROOT/target/release/atl"
[ -n "${CARGO_TARGET_DIR:-}" ] && ATL="$CARGO_TARGET_DIR/release/atl"

# ATL_KIT_RULES=1 also times the rule-level schedules (`fast_rules`; tensor_add's
# specification), as the candidate `atl_rules`, in the same run: the directive-only
# schedules against the rule-level ones they replace (issue 20).
RULE_KERNELS=(
  "kit_blur3x3|examples/blur/blur.atl|fast_rules"
  "kit_matmul|examples/matmul/matmul.atl|fast_rules"
  "kit_tensor_add4d|examples/tensor_add/tensor_add.atl|tensor_add"
  "kit_conv1d|examples/conv1d_kit/conv1d_kit.atl|fast_rules"
)

# build_kernels DIR SO ADAPTER_FLAGS KERNEL...: emits, compiles and links one shared
# object (ADAPTER_FLAGS: `-DATL_KIT_NO_…` for the workloads it lacks, or "").
build_kernels() {
  local dir="$1" so="$2" adapter_flags="$3"
  shift 3
  mkdir -p "$dir"
  local objects=()
  for k in "$@"; do
    IFS='|' read -r sym file def <<< "$k"
    echo "[kit.sh] atl emit $file --def $def --name $sym" >&2
    "$ATL" emit "$ROOT/$file" --def "$def" --name "$sym" -o "$dir/$sym.c"
    # shellcheck disable=SC2086
    $CC $CFLAGS -fPIC -c "$dir/$sym.c" -o "$dir/$sym.o"
    objects+=("$dir/$sym.o")
  done
  # shellcheck disable=SC2086
  $CC $CFLAGS $adapter_flags -fPIC -c "$HERE/adapter.c" -o "$dir/adapter.o"
  # shellcheck disable=SC2086
  $CC $CFLAGS -shared "${objects[@]}" "$dir/adapter.o" -o "$so" -lm
}

build_kernels "$OUT" "$OUT/atl_kernels.so" "" "${KERNELS[@]}"
candidates=(--candidate "atl=$OUT/atl_kernels.so")
if [ "${#SCHED_KERNELS[@]}" -gt 0 ]; then
  build_kernels "$OUT/sched" "$OUT/atl_sched_kernels.so" "${SCHED_MISSING[*]:-}" "${SCHED_KERNELS[@]}"
  candidates+=(--candidate "atl_sched=$OUT/atl_sched_kernels.so")
fi
if [ "${ATL_KIT_RULES:-0}" = 1 ]; then
  build_kernels "$OUT/rules" "$OUT/atl_rules_kernels.so" "-DATL_KIT_NO_bmm -DATL_KIT_NO_dwconv" "${RULE_KERNELS[@]}"
  candidates+=(--candidate "atl_rules=$OUT/atl_rules_kernels.so")
fi

# Halide's host-target detection reports AVX-512 on this VM although the OS does not
# enable it (no avx512f in /proc/cpuinfo), and the Halide peers then die with SIGILL.
# In that case run a copy of the kit whose generator drops the avx512 features from
# the detected target; nothing else of the kit changes.
RUN_KIT="$KIT"
if ! grep -q avx512f /proc/cpuinfo && grep -q 'target = hl.get_host_target()' "$KIT/halide/gen_halide.py"; then
  RUN_KIT="$OUT/kit"
  rm -rf "$RUN_KIT"
  cp -r "$KIT" "$RUN_KIT"
  rm -rf "$RUN_KIT/build"
  python3 - "$RUN_KIT/halide/gen_halide.py" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace(
    "target = hl.get_host_target()",
    'target = hl.Target("-".join(f for f in str(hl.get_host_target()).split("-")'
    ' if not f.startswith("avx512")))  # atl kit.sh: the OS has no AVX-512',
)
open(p, "w").write(s)
PY
  echo "[kit.sh] no AVX-512 in /proc/cpuinfo: Halide peers built without avx512 features ($RUN_KIT)" >&2
fi

export BENCH_BUILD="${BENCH_BUILD:-$OUT/kit-build}"
exec bash "$RUN_KIT/run.sh" "${candidates[@]}" "$@"
