"""sparsefac: sparse matrix factorization (SDDMM, ALS, implicit ALS, SGD) on CPU and CUDA.

Python binding of libsparsefac. Objects own library handles: `close()` them (or use `with`)
to free memory early; they are also freed when collected. Failures raise SparsefacError
subclasses that also derive from the matching builtin (ValueError, IndexError, OSError...).
"""

from . import _core
from ._context import Context, cuda_device_count, default_context
from ._data import leave_k_out_split, synthesize_ratings, train_test_split
from ._dense import DenseMatrix
from ._errors import *  # noqa: F401,F403
from ._errors import __all__ as _error_names
from ._models import (SGD, AlternatingLeastSquares, ImplicitALS, MatrixFactorization,
                      Trainer, load_model)
from ._sddmm import SddmmPlan, sddmm
from ._sparse import Bals, IdMap, SparseMatrix

__version__ = _core.sfac_version_string()


def build_info():
    """JSON description of the loaded library: version, backends, CUDA architectures."""
    return _core.sfac_build_info()


__all__ = [
    "Context", "default_context", "cuda_device_count", "SparseMatrix", "IdMap", "Bals",
    "DenseMatrix",
    "sddmm", "SddmmPlan", "MatrixFactorization", "AlternatingLeastSquares", "ImplicitALS",
    "SGD", "Trainer", "load_model", "synthesize_ratings", "train_test_split", "leave_k_out_split",
    "build_info",
] + list(_error_names)
