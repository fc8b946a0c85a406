"""DenseMatrix: a row-major matrix held by the library, stored as float32, float16 or bfloat16."""

import numpy as np

from . import _core
from ._context import resolve
from ._lib import Handle, as_float32, as_order, call, enum_name, enum_value

DTYPES = {"float32": _core.SFAC_DTYPE_FLOAT32, "float16": _core.SFAC_DTYPE_FLOAT16,
          "bfloat16": _core.SFAC_DTYPE_BFLOAT16}


class DenseMatrix(Handle):
    """Built from a 2-D array (converted to float32, then to the storage dtype by the library;
    float16/bfloat16 storage needs the CUDA backend). `to_numpy()` returns float32."""

    _destroy = staticmethod(_core.sfac_dense_destroy)
    _kind = "DenseMatrix"

    def __init__(self, data, dtype="float32", context=None):
        arr = as_float32(data, "data")
        if arr.ndim != 2:
            raise ValueError(f"data must be 2-D, got shape {arr.shape}")
        ctx = resolve(context)
        code = enum_value("dtype", dtype, DTYPES)
        Handle.__init__(self, call(_core.sfac_dense_create, ctx, arr.shape[0], arr.shape[1],
                                   code, arr))
        self.context = ctx

    @classmethod
    def _adopt(cls, ptr, context):
        self = cls.__new__(cls)
        Handle.__init__(self, ptr)
        self.context = context
        return self

    @classmethod
    def zeros(cls, rows, cols, dtype="float32", context=None):
        ctx = resolve(context)
        return cls._adopt(call(_core.sfac_dense_create, ctx, int(rows), int(cols),
                               enum_value("dtype", dtype, DTYPES), None), ctx)

    @property
    def shape(self):
        rows, cols = call(_core.sfac_dense_get_shape, self)
        return (rows, cols)

    @property
    def dtype(self):
        return enum_name(call(_core.sfac_dense_get_dtype, self), DTYPES)

    def to_numpy(self):
        out = np.empty(self.shape, np.float32)
        call(_core.sfac_dense_download, self, out, out.size)
        return out

    def __array__(self, dtype=None, copy=None):
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype)

    def upload(self, data):
        """Replaces the contents (same shape, finite values)."""
        arr = as_float32(data, "data")
        if arr.shape != self.shape:
            raise ValueError(f"data has shape {arr.shape}, the matrix is {self.shape}")
        call(_core.sfac_dense_upload, self, arr)

    def permute_rows(self, order):
        """A new matrix of the same dtype whose row r is row order[r] of this one (like
        `to_numpy()[order]`); order must hold every row index exactly once (else
        InvalidArgumentError). The inverse permutation (`np.argsort(order)`) undoes it, e.g. to
        return factors trained on a permuted matrix to the original numbering."""
        arr = as_order(order, self.shape[0], "order", "rows")
        return DenseMatrix._adopt(call(_core.sfac_dense_permute_rows, self, arr), self.context)

    def __repr__(self):
        if self.closed:
            return "<sparsefac.DenseMatrix (closed)>"
        rows, cols = self.shape
        return f"<sparsefac.DenseMatrix {rows}x{cols} {self.dtype}>"


def as_dense(obj, context, name):
    if isinstance(obj, DenseMatrix):
        obj._check_open()
        return obj
    return DenseMatrix(obj, context=context)
