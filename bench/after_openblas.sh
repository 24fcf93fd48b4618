#!/usr/bin/env bash
# bench/after_openblas.sh -- re-derives why our matmul looks slow in the kit's table:
# the kit's harness calls our kernel right after its `openblas` peer, whose idle
# worker keeps spinning (sched_yield) for ~100 ms after each call, so our OpenMP
# threads then share one vCPU. Builds bench/after_openblas.c and times, at n=1024
# and n=1000 with T=2 (and T=1 for reference): our matmul alone (after a 250 ms
# sleep), our matmul right after a cblas_sgemm, and OpenBLAS itself; plus each of
# our OpenMP threads' CPU time per call. See the header of after_openblas.c.
#
#   bash bench/kit.sh --only matmul --quick     # once: builds what this needs
#   bash bench/after_openblas.sh [ROUNDS]        # ROUNDS (default 15) is passed to
#                                                # the driver; ~1 s per round and run
#
# Needs target/kit/atl_kernels.so and target/kit/kit-build/peer_openblas.so (from
# bench/kit.sh) and the kit's python venv with numpy (for numpy's OpenBLAS).
# Environment: ATL_KIT_BUILD (target/kit), BENCH_BUILD (ATL_KIT_BUILD/kit-build),
# BENCH_VENV (/tmp/atl-bench-venv), BENCH_OPENBLAS_LIB (found in the venv if unset),
# OMP_WAIT_POLICY (passive, the kit's default), CC (gcc), AOB_SIZES ("1024 1000"),
# AOB_THREADS ("2 1"). Writes only ATL_KIT_BUILD/after_openblas. Exit status 1 if
# our output ever differs from OpenBLAS's, 2 if something needed is missing.
# (OMP_WAIT_POLICY=active shows our kernel with its threads never idle, but then
# our spinning pool slows OpenBLAS, so only the "alone" line is meaningful.)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
OUT="${ATL_KIT_BUILD:-$ROOT/target/kit}"
KB="${BENCH_BUILD:-$OUT/kit-build}"
VENV="${BENCH_VENV:-/tmp/atl-bench-venv}"
CC="${CC:-gcc}"
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

OURS="$OUT/atl_kernels.so"
PEER="$KB/peer_openblas.so"
for f in "$OURS" "$PEER"; do
  if [ ! -f "$f" ]; then
    echo "after_openblas.sh: missing $f; run first: bash bench/kit.sh --only matmul --quick" >&2
    exit 2
  fi
done

# numpy's bundled OpenBLAS, found as ../shared/bench/run.sh does
if [ -z "${BENCH_OPENBLAS_LIB:-}" ]; then
  PY="$VENV/bin/python"
  if [ ! -x "$PY" ]; then
    echo "after_openblas.sh: no venv at $VENV (set BENCH_VENV, or run bench/kit.sh once)" >&2
    exit 2
  fi
  NPDIR="$("$PY" -c 'import numpy,os;print(os.path.dirname(numpy.__file__))')"
  BENCH_OPENBLAS_LIB="$(ls "$NPDIR".libs/libscipy_openblas64_*.so 2>/dev/null | head -1 || true)"
fi
if [ ! -f "$BENCH_OPENBLAS_LIB" ]; then
  echo "after_openblas.sh: numpy's libscipy_openblas64_*.so not found (set BENCH_OPENBLAS_LIB)" >&2
  exit 2
fi
export BENCH_OPENBLAS_LIB

$CC -O2 -Wall -Wextra -fopenmp "$HERE/after_openblas.c" -o "$OUT/after_openblas" -ldl

echo "== after_openblas: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   ours: $OURS"
echo "   OpenBLAS: $BENCH_OPENBLAS_LIB (via $PEER)"
for n in ${AOB_SIZES:-1024 1000}; do
  for T in ${AOB_THREADS:-2 1}; do
    # as the kit's matmul harness: OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$OUT/after_openblas" "$OURS" "$PEER" "$n" "$T" "$@"
  done
done
