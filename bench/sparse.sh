#!/usr/bin/env bash
# bench/sparse.sh -- time the sparse matrix-vector products of examples/sparse/spmv.atl
# (one matrix in CSR, CSC, DCSR, COO and 4 x 4-block BCSR, each kernel derived from the
# dense product) against scipy.sparse on this machine, in one process, the calls
# interleaved in a shuffled order, at 1 thread (OMP_NUM_THREADS=1).
#
#   bash bench/sparse.sh [--runs N] [--rows M]
#
# Matrices (fixed seeds, float32, M rows and columns, default 200000): `uniform`
# (10 values per row at random columns, 10% of the rows empty), `powerlaw` (row lengths
# from a Zipf law, mean about 10), `banded` (11 diagonals) and `blocked` (dense 4 x 4
# blocks, 3 per block row: the matrix BCSR is for). Each kernel is built as `atl emit
# --python` builds it (-O3 -march=native) and given the matrix through its module's
# `sparse_A` (the format's arrays from the scipy matrix, made once, outside the
# timing); scipy computes `A @ x` in CSR and, for the blocked matrix, in BSR. Before
# timing, each result is compared with scipy's in float64. Prints the medians, the
# ratio scipy CSR / this (above 1: faster than scipy) and the fraction of the memory
# bandwidth a numpy copy of 256 MiB reaches in this process, counting the bytes the
# kernel must read once (its arrays, x, and y written).
# Needs python3 with numpy and scipy ($PYTHON overrides the interpreter).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
RUNS=21
ROWS=200000
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --rows) ROWS="$2"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
PYTHON="${PYTHON:-python3}"
DEFS=(csr csc dcsr coo bcsr)

(cd "$ROOT" && cargo build --release -q -p atl-cli)
ATL="$ROOT/target/release/atl"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for def in "${DEFS[@]}"; do
  "$ATL" emit "$ROOT/examples/sparse/spmv.atl" --def "$def" --name "spmv_$def" \
    --python "$WORK/$def" >/dev/null
done

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
"$PYTHON" - "$RUNS" "$ROWS" "$WORK" "${DEFS[@]}" <<'PY'
import importlib.util, platform, random, sys, time
import numpy as np
import scipy, scipy.sparse as sp

runs, n, work, defs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
rng = np.random.default_rng(11)

def from_rows(lengths):
    """A CSR matrix whose row i has about lengths[i] values at random columns (drawn
    with replacement: the rare repeats are summed into one value)."""
    lengths = np.minimum(lengths, n)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    cols = rng.integers(0, n, indptr[-1])
    m = sp.csr_matrix((rng.standard_normal(indptr[-1]).astype(np.float32), cols, indptr),
                      shape=(n, n))
    m.sum_duplicates()
    return m

lengths = np.full(n, 10)
lengths[rng.random(n) < 0.1] = 0
matrices = {"uniform": from_rows(lengths)}
matrices["powerlaw"] = from_rows(np.minimum(rng.zipf(1.8, n), 2000) * 3)
matrices["banded"] = sp.diags([rng.standard_normal(n).astype(np.float32)] * 11,
                              list(range(-5, 6)), shape=(n, n), format="csr")
nb_rows = -(-n // 4)
block_cols = rng.integers(0, nb_rows, nb_rows * 3)
block_ptr = np.arange(0, nb_rows * 3 + 1, 3)
blocks = rng.standard_normal((nb_rows * 3, 4, 4)).astype(np.float32)
bsr = sp.bsr_matrix((blocks, block_cols, block_ptr), shape=(nb_rows * 4, nb_rows * 4))
bsr.sum_duplicates()
matrices["blocked"] = bsr.tocsr()[:n, :n].tocsr()

# The bandwidth this process reaches copying 256 MiB (read and write).
src = np.ones(64 << 20, dtype=np.float32)
dst = np.empty_like(src)
copies = []
for _ in range(5):
    t = time.perf_counter(); np.copyto(dst, src); copies.append(time.perf_counter() - t)
bandwidth = 2 * src.nbytes / min(copies)
del src, dst

modules = {}
for d in defs:
    name = f"spmv_{d}"
    spec = importlib.util.spec_from_file_location(name, f"{work}/{d}/{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.set_threads(1)
    modules[d] = module

print(f"{platform.processor() or platform.machine()}, scipy {scipy.__version__}, 1 thread, "
      f"{runs} interleaved runs, float32; copy bandwidth {bandwidth / 1e9:.1f} GB/s")
for label, a in matrices.items():
    x = rng.standard_normal(n).astype(np.float32)
    calls, traffic = {"scipy csr": lambda a=a: a @ x}, {}
    traffic["scipy csr"] = a.data.nbytes + a.indices.nbytes + a.indptr.nbytes + 2 * x.nbytes
    if label == "blocked":
        b = a.tobsr(blocksize=(4, 4))
        calls["scipy bsr"] = lambda b=b: b @ x
        traffic["scipy bsr"] = b.data.nbytes + b.indices.nbytes + b.indptr.nbytes + 2 * x.nbytes
    want = a.astype(np.float64) @ x.astype(np.float64)
    for d, module in modules.items():
        arrays = module.sparse_A(a)
        kernel = getattr(module, f"spmv_{d}")
        out = kernel(**arrays, x=x)
        error = float(np.abs(out - want).max() / max(1.0, np.abs(want).max()))
        if not error < 1e-4:
            sys.exit(f"{d} on {label}: differs from scipy by {error:.2e}")
        calls[d] = lambda k=kernel, arrays=arrays: k(**arrays, x=x)
        traffic[d] = sum(v.nbytes for v in arrays.values() if hasattr(v, "nbytes")) + 2 * x.nbytes
    order = list(calls)
    for c in order:
        calls[c]()
    times = {c: [] for c in order}
    for _ in range(runs):
        random.shuffle(order)
        for c in order:
            t = time.perf_counter(); calls[c](); times[c].append(time.perf_counter() - t)
    base = float(np.median(times["scipy csr"]))
    print(f"{label} ({n} x {n}, {a.nnz} values)")
    for c, ts in times.items():
        m = float(np.median(ts))
        print(f"  {c:10s} median {m * 1e3:8.3f} ms   scipy csr / this {base / m:5.2f}"
              f"   bandwidth {traffic[c] / m / bandwidth:5.2f}")
PY
