"""Checks the modules `atl emit --python` wrote for kernels.atl and smm.atl against numpy.

    atl emit kernels.atl --def matvec_blocked --name py_matvec --python BUILD
    atl emit kernels.atl --def rownorm --name py_rownorm --dtype f64 --python BUILD
    atl emit smm.atl --def smm_tiled --name py_smm --python BUILD
    python3 check_kernels.py BUILD

Every value is a small integer (or a quotient of such), so every sum is exact in any
order and the results must equal numpy's exactly. Each module serves float32 and
float64 arrays; a scalar input also takes a Python or numpy number. Prints `ok: ...`
and exits 0, or raises.
"""
import sys

import numpy as np

sys.path.insert(0, sys.argv[1])
import py_matvec  # noqa: E402
import py_rownorm  # noqa: E402
import py_smm  # noqa: E402


def expect(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        return str(e)
    raise AssertionError("%s(%s) did not raise %s" % (fn.__name__, args, exc.__name__))


rng = np.random.default_rng(7)
DTYPES = (np.float32, np.float64)
for threads in (2, 1):
    py_matvec.set_threads(threads)
    for dtype in DTYPES:
        for n, m in ((1, 1), (3, 4), (7, 5), (33, 16)):
            A = rng.integers(-4, 5, size=(n, m)).astype(dtype)
            x = rng.integers(-4, 5, size=m).astype(dtype)
            got = py_matvec.py_matvec(A, x)  # n, m read from the shapes
            assert got.dtype == dtype and got.shape == (n,)
            np.testing.assert_array_equal(got, A @ x)
            # Explicit sizes and a given output array.
            out = np.full(n, np.nan, dtype=dtype)
            assert py_matvec.py_matvec(A, x, n=n, m=m, out=out) is out
            np.testing.assert_array_equal(out, A @ x)

for dtype in DTYPES:
    for n, m in ((1, 1), (2, 3), (6, 9)):
        A = rng.integers(1, 9, size=(n, m)).astype(dtype)
        got = py_rownorm.py_rownorm(A)  # rownorm reads A only, so it takes A only
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, A / A.sum(axis=1, keepdims=True))

# The scalar input `alpha` (shape []): a Python float or int, a numpy scalar of the
# arrays' dtype, or a 0-d array; the result has the arrays' dtype.
for dtype in DTYPES:
    for M, N, K in ((1, 1, 1), (7, 17, 5), (13, 33, 8)):
        A = rng.integers(-3, 4, size=(M, K)).astype(dtype)
        B = rng.integers(-3, 4, size=(K, N)).astype(dtype)
        for alpha in (2.0, -3, dtype(0.5), np.array(1.5, dtype)):
            got = py_smm.py_smm(alpha, A, B)
            assert got.dtype == dtype and got.shape == (M, N)
            np.testing.assert_array_equal(got, dtype(alpha) * (A @ B))

# A call whose arguments are all Python numbers runs in the module's DTYPE (--dtype).
assert py_rownorm._atl_dtype([("A", None)]) == np.float64
assert py_smm._atl_dtype([("alpha", None)]) == np.float32

# Refused calls: nothing reaches C.
A = np.ones((3, 4), dtype=np.float32)
x = np.ones(4, dtype=np.float32)
assert "dtype int64; the kernel takes float32 or float64" in expect(
    TypeError, py_matvec.py_matvec, A.astype(np.int64), x
)
assert "mixed dtypes: `A` is float64 but `x` is float32" in expect(
    TypeError, py_matvec.py_matvec, A.astype(np.float64), x
)
assert "mixed dtypes: `A` is float32 but `out` is float64" in expect(
    TypeError, py_matvec.py_matvec, A, x, out=np.zeros(3)
)
assert "mixed dtypes: `alpha` is float64 but `A` is float32" in expect(
    TypeError, py_smm.py_smm, np.float64(2), A, np.ones((4, 2), np.float32)
)
assert "C-contiguous" in expect(TypeError, py_matvec.py_matvec, np.ones((4, 3), np.float32).T, x)
assert "shape (3,)" in expect(ValueError, py_matvec.py_matvec, A, x[:3])
assert "m >= 1" in expect(ValueError, py_matvec.py_matvec, A, x, m=0)
shared = np.ones((2, 2))
assert "shares memory" in expect(ValueError, py_rownorm.py_rownorm, shared, out=shared)
assert "int64" in expect(ValueError, py_matvec.py_matvec, A, x, n=2**64)
# A wrong number of dimensions names the input, its shape and what was given.
msg = expect(ValueError, py_matvec.py_matvec, A.ravel(), x)
assert msg == "py_matvec: `A` must have 2 dimensions (shape [n, m]), got an array with 1 (shape (12,))", msg
msg = expect(ValueError, py_matvec.py_matvec, A, A)
assert msg == "py_matvec: `x` must have 1 dimension (shape [m]), got an array with 2 (shape (3, 4))", msg
msg = expect(ValueError, py_smm.py_smm, np.ones(1, np.float32), A, np.ones((4, 2), np.float32))
assert "`alpha` must have 0 dimensions (shape [])" in msg, msg
assert "must be a numpy.ndarray of 1 dimension (shape [m]), not list" in expect(
    TypeError, py_matvec.py_matvec, A, [1.0, 2.0, 3.0, 4.0]
)
# Numbers only for the scalar input: not bool, str, or a float out of the dtype's range.
for bad in (True, "2", None):
    assert "`alpha` (shape []) must be a number" in expect(
        TypeError, py_smm.py_smm, bad, A, np.ones((4, 2), np.float32)
    )
assert "does not fit in float32" in expect(ValueError, py_smm.py_smm, 1e300, A, np.ones((4, 2), np.float32))
# Masked arrays are refused (their mask would be ignored), as any argument.
masked = np.ma.masked_array(A, mask=A > 0)
assert ".filled(value)" in expect(TypeError, py_matvec.py_matvec, masked, x)
assert ".filled(value)" in expect(TypeError, py_matvec.py_matvec, A, np.ma.masked_array(x))
assert ".filled(value)" in expect(
    TypeError, py_smm.py_smm, np.ma.masked_array(np.float32(2)), A, np.ones((4, 2), np.float32)
)
assert "`out` is a masked array" in expect(
    TypeError, py_matvec.py_matvec, A, x, out=np.ma.masked_array(np.zeros(3, np.float32))
)
# A scipy.sparse matrix for a dense input is refused with the conversion to make (where
# scipy is installed; the kernels do not need it).
try:
    import scipy.sparse
except ImportError:
    scipy = None
if scipy is not None:
    assert ".toarray()" in expect(TypeError, py_matvec.py_matvec, scipy.sparse.csr_matrix(A), x)
    assert ".toarray()" in expect(TypeError, py_matvec.py_matvec, scipy.sparse.coo_array(A), x)

# Compiled for this machine unless ATL_PORTABLE or CFLAGS say otherwise (the test
# runs this script in the default environment).
for module in (py_matvec, py_rownorm, py_smm):
    for dtype in ("float32", "float64"):
        assert "-march=native" in module.BUILD[dtype]["command"], module.BUILD

print(
    "ok: py_matvec, py_rownorm and py_smm agree with numpy in float32 and float64 (OpenMP: %s)"
    % py_matvec.OPENMP
)
