import zlib

import numpy as np
import pytest


@pytest.fixture
def rng(request):
    # One seed per test, reproducible from its name.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture(params=[np.float32, np.float64], ids=["float32", "float64"])
def dtype(request):
    return request.param


def poisoned(shape, dtype):
    """An output array full of NaN: every element the call leaves alone shows."""
    return np.full(shape, np.nan, dtype)


def layouts(a):
    """Views with a's values in the layouts hpipe reads in place: dense, a slice of a larger
    array (strided in every dimension), and the transpose of a dense array, transposed back."""
    strided = np.full(tuple(2 * n + 1 for n in a.shape), np.nan, a.dtype)
    view = strided[tuple(slice(1, None, 2) for _ in a.shape)]
    view[...] = a
    transposed = np.ascontiguousarray(a.T).T
    return {"dense": a, "strided": view, "transposed": transposed}
