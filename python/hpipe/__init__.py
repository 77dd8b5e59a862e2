"""hpipe: Halide kernels for spectral imaging (CASSI) and batched tensor math.

Functions take NumPy arrays or anything with ``__dlpack__`` (PyTorch CPU/CUDA tensors, CuPy),
float32 or float64, read in place; results go into ``out=`` or a new array of the input's kind.
``help(hpipe.<function>)`` gives shapes, accuracy and an example.
"""
# In a build tree the compiled core lives in <build>/python/hpipe, beside this source folder on
# PYTHONPATH; extend_path makes one package of both (installed, they are one folder anyway).
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

from . import _core  # noqa: E402
from ._core import *  # noqa: E402,F401,F403

__all__ = [name for name in dir(_core) if not name.startswith("_")]
for _name in __all__:  # help() and reprs name the package, not its compiled core
    getattr(_core, _name).__module__ = __name__
del _name
