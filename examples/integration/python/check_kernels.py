"""Checks the modules `atl emit --python` wrote for kernels.atl against numpy.

    atl emit kernels.atl --def matvec_blocked --name py_matvec --python BUILD
    atl emit kernels.atl --def rownorm --name py_rownorm --dtype f64 --python BUILD
    python3 check_kernels.py BUILD

Every value is a small integer (or a quotient of such), so every sum is exact in any
order and the results must equal numpy's exactly. Prints `ok: ...` and exits 0, or
raises.
"""
import sys

import numpy as np

sys.path.insert(0, sys.argv[1])
import py_matvec  # noqa: E402
import py_rownorm  # noqa: E402


def expect(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        return str(e)
    raise AssertionError("%s(%s) did not raise %s" % (fn.__name__, args, exc.__name__))


rng = np.random.default_rng(7)
for threads in (2, 1):
    py_matvec.set_threads(threads)
    for n, m in ((1, 1), (3, 4), (7, 5), (33, 16)):
        A = rng.integers(-4, 5, size=(n, m)).astype(np.float32)
        x = rng.integers(-4, 5, size=m).astype(np.float32)
        got = py_matvec.py_matvec(A, x)  # n, m read from the shapes
        assert got.dtype == np.float32 and got.shape == (n,)
        np.testing.assert_array_equal(got, A @ x)
        # Explicit sizes and a given output array.
        out = np.full(n, np.nan, dtype=np.float32)
        assert py_matvec.py_matvec(A, x, n=n, m=m, out=out) is out
        np.testing.assert_array_equal(out, A @ x)

for n, m in ((1, 1), (2, 3), (6, 9)):
    A = rng.integers(1, 9, size=(n, m)).astype(np.float64)
    got = py_rownorm.py_rownorm(A)  # rownorm reads A only, so it takes A only
    np.testing.assert_array_equal(got, A / A.sum(axis=1, keepdims=True))

# Refused calls: nothing reaches C.
A = np.ones((3, 4), dtype=np.float32)
x = np.ones(4, dtype=np.float32)
assert "dtype float64" in expect(TypeError, py_matvec.py_matvec, A.astype(np.float64), x)
assert "C-contiguous" in expect(TypeError, py_matvec.py_matvec, np.ones((4, 3), np.float32).T, x)
assert "shape (3,)" in expect(ValueError, py_matvec.py_matvec, A, x[:3])
assert "m >= 1" in expect(ValueError, py_matvec.py_matvec, A, x, m=0)
shared = np.ones((2, 2))
assert "shares memory" in expect(ValueError, py_rownorm.py_rownorm, shared, out=shared)
assert "int64" in expect(ValueError, py_matvec.py_matvec, A, x, n=2**64)

print("ok: py_matvec and py_rownorm agree with numpy (OpenMP: %s)" % py_matvec.OPENMP)
