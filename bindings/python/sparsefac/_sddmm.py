"""Sampled dense-dense matrix multiplication."""

from . import _core
from ._dense import as_dense
from ._lib import Handle, call, enum_name, enum_value
from ._sparse import as_sparse

MODES = {"scaled": _core.SFAC_SDDMM_SCALED, "pattern": _core.SFAC_SDDMM_PATTERN,
         "residual": _core.SFAC_SDDMM_RESIDUAL}
ALGORITHMS = {"auto": _core.SFAC_SDDMM_ALG_AUTO, "row_split": _core.SFAC_SDDMM_ALG_ROW_SPLIT,
              "nnz_split": _core.SFAC_SDDMM_ALG_NNZ_SPLIT, "tiled": _core.SFAC_SDDMM_ALG_TILED,
              "cusparse": _core.SFAC_SDDMM_ALG_CUSPARSE}


class SddmmPlan(Handle):
    """Analysis of one sparsity pattern for one K, reusable by every sddmm call on matrices
    sharing the pattern."""

    _destroy = staticmethod(_core.sfac_sddmm_plan_destroy)
    _kind = "SddmmPlan"

    def __init__(self, pattern, k, algorithm="auto"):
        s = as_sparse(pattern, name="pattern")
        Handle.__init__(self, call(_core.sfac_sddmm_plan_create, s.context, s, int(k),
                                   enum_value("algorithm", algorithm, ALGORITHMS)))
        self.context = s.context
        self._pattern = s  # the plan analysed this matrix's pattern; keep it alive with it

    @property
    def algorithm(self):
        return enum_name(call(_core.sfac_sddmm_plan_get_algorithm, self), ALGORITHMS)

    def __repr__(self):
        if self.closed:
            return "<sparsefac.SddmmPlan (closed)>"
        return f"<sparsefac.SddmmPlan algorithm={self.algorithm!r}>"


def sddmm(a, b, s, mode="scaled", alpha=1.0, beta=0.0, out=None, plan=None):
    """P = f(A B^T, S) at the nonzeros of S, with d = dot(A[i], B[j]):

    scaled   P_ij = alpha * d * S_ij + beta * P_ij
    pattern  P_ij = alpha * d + beta * P_ij
    residual P_ij = alpha * (S_ij - d) + beta * P_ij

    a (M x K) and b (N x K) are DenseMatrix or 2-D arrays; s is a SparseMatrix (M x N) or a
    scipy.sparse matrix. `out` (a matrix with s's pattern, e.g. `s.like()` or s itself) is
    written in place; without it a new matrix is returned."""
    s = as_sparse(s, name="s")
    ctx = s.context
    da = as_dense(a, ctx, "a")
    db = as_dense(b, ctx, "b")
    p = s.like() if out is None else as_sparse(out, name="out")
    call(_core.sfac_sddmm, ctx, enum_value("mode", mode, MODES), float(alpha), da, db, s,
         float(beta), p, plan)
    return p
