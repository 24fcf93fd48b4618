"""Times the scaled matrix product of smm.atl (`smm_fast`) compiled for this machine
(the module's default, -O3 -march=native) and portable (ATL_PORTABLE=1: -O3), against
numpy, at one thread, in one run:

    atl emit smm.atl --def smm_fast --python BUILD
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python3 bench_smm.py BUILD [SIZE]

Each figure is the best of 10 calls, in milliseconds; the results are checked against
numpy's first.
"""
import importlib.util
import os
import sys
import time

import numpy as np


def load(name, portable):
    """The module BUILD/smm_fast.py, loaded afresh as `name` (its own compiled libraries)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(sys.argv[1], "smm_fast.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.PORTABLE = portable
    module.set_threads(1)
    return module


def best(f, repeat=10):
    f()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


n = int(sys.argv[2]) if len(sys.argv) > 2 else 512
native, portable = load("smm_native", False), load("smm_portable", True)
rng = np.random.default_rng(1)
for dtype in (np.float32, np.float64):
    A = rng.standard_normal((n, n)).astype(dtype)
    B = rng.standard_normal((n, n)).astype(dtype)
    expected = 2.0 * (A @ B)
    tol = 1e-3 if dtype == np.float32 else 1e-9
    for module in (native, portable):
        np.testing.assert_allclose(module.smm_fast(2.0, A, B), expected, rtol=tol, atol=tol * n)
    row = [best(lambda m=m: m.smm_fast(2.0, A, B)) for m in (portable, native)]
    row.append(best(lambda: 2.0 * (A @ B)))
    print(
        "%s %dx%dx%d: portable (-O3) %.2f ms, native (-O3 -march=native) %.2f ms, numpy %.2f ms"
        % (np.dtype(dtype).name, n, n, n, *row)
    )
print("native build:", " ".join(native.BUILD["float32"]["command"]))
print("portable build:", " ".join(portable.BUILD["float32"]["command"]))
