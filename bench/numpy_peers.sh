#!/usr/bin/env bash
# bench/numpy_peers.sh -- time the examples issue 30 compares with numpy (attention and
# TTM, and the row softmax) against numpy on this machine, in one process, the calls interleaved in a
# shuffled order, at 1 thread (OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1).
#
#   bash bench/numpy_peers.sh [--runs N] [DEFINITION...]
#
# Each kernel is built as `atl emit --python` builds it (-O3 -march=native, its own
# module) and called on numpy float32 arrays; numpy computes the same result with its
# BLAS (`Q @ K.T`, `np.einsum`) and its own vector `exp`. Before timing, each kernel's
# result is compared with numpy's in float64. Prints the medians and numpy / kernel
# (above 1: the kernel is faster). Definitions are `FILE:DEF` (default: attention's
# `fast`, TTM's `fast`, softmax_rows16's `fast_vec`, and the searched schedules of
# bench/schedules/attention.atl and ttm.atl where they exist).
# Needs python3 with numpy ($PYTHON overrides the interpreter).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
RUNS=41
DEFS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) DEFS+=("$1"); shift ;;
  esac
done
if [ "${#DEFS[@]}" -eq 0 ]; then
  DEFS=("examples/attention/attention.atl:fast" "examples/ttm/ttm.atl:fast"
    "examples/softmax/softmax_rows16.atl:fast_vec")
  for w in attention ttm; do
    if [ -f "$HERE/schedules/$w.atl" ]; then
      DEFS+=("bench/schedules/$w.atl:${w}_scheduled")
    fi
  done
fi
PYTHON="${PYTHON:-python3}"

(cd "$ROOT" && cargo build --release -q -p atl-cli)
ATL="$ROOT/target/release/atl"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
MODULES=()
for d in "${DEFS[@]}"; do
  file="${d%%:*}"
  def="${d##*:}"
  case "$file" in /*) ;; *) file="$ROOT/$file" ;; esac
  # One directory per module: the kernel's symbol is the workload and the definition.
  kind="$(basename "$file" .atl)"
  name="${kind}_${def}"
  "$ATL" emit "$file" --def "$def" --name "$name" --python "$WORK/$name" >/dev/null
  MODULES+=("$kind:$name:$WORK/$name")
done

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
"$PYTHON" - "$RUNS" "${MODULES[@]}" <<'PY'
import importlib.util, platform, random, sys, time
import numpy as np

runs = int(sys.argv[1])
rng = np.random.default_rng(7)

def f32(*shape):
    return rng.standard_normal(shape, dtype=np.float32)

# workload -> (sizes, inputs, numpy's computation)
N, D = 512, 64
Q, K, V = f32(N, D), f32(N, D), f32(N, D)
def attention(Q, K, V):
    S = (Q @ K.T) * Q.dtype.type(0.125)
    E = np.exp(S - S.max(axis=1, keepdims=True))
    return (E / E.sum(axis=1, keepdims=True)) @ V
I, J, KK, R = 128, 128, 128, 32
T, U = f32(I, J, KK), f32(R, KK)
def ttm(T, U):
    return np.einsum("ijk,rk->ijr", T, U, optimize=True)
SN, SM = 512, 1024
X = f32(SN, SM)
def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
WORKLOADS = {
    "attention": (f"N={N}, D={D}", (Q, K, V), attention),
    "softmax_rows16": (f"n={SN}, m={SM}", (X,), softmax),
    "ttm": (f"I={I}, J={J}, K={KK}, R={R}", (T, U), ttm),
}

calls = {}
for spec in sys.argv[2:]:
    kind, name, directory = spec.split(":", 2)
    sizes, inputs, peer = WORKLOADS[kind]
    module_spec = importlib.util.spec_from_file_location(name, f"{directory}/{name}.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    module.set_threads(1)
    kernel = getattr(module, name)
    out = kernel(*inputs)
    want = peer(*(x.astype(np.float64) for x in inputs))
    error = float(np.abs(out - want).max() / max(1.0, np.abs(want).max()))
    if not error < 1e-4:
        sys.exit(f"{name}: differs from numpy by {error:.2e} (relative to the largest value)")
    calls.setdefault(kind, {"numpy": lambda p=peer, i=inputs: p(*i)})
    calls[kind][name] = lambda k=kernel, i=inputs: k(*i)

print(f"{platform.processor() or platform.machine()}, numpy {np.__version__}, 1 thread, {runs} interleaved runs, float32")
for kind, fns in calls.items():
    times = {n: [] for n in fns}
    order = list(fns)
    for n in order:  # warm up
        fns[n]()
    for _ in range(runs):
        random.shuffle(order)
        for n in order:
            t = time.perf_counter()
            fns[n]()
            times[n].append(time.perf_counter() - t)
    base = float(np.median(times["numpy"]))
    print(f"{kind} ({WORKLOADS[kind][0]})")
    for n, ts in times.items():
        m = float(np.median(ts))
        print(f"  {n:28s} median {m * 1e3:8.3f} ms   numpy / this {base / m:5.2f}")
PY
