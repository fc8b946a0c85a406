"""libsparsefac through ctypes, for the Python benchmarks (no compiled binding needed).

Sfac(path)("sfac_fn", args...) calls a C API function and raises RuntimeError with the status
and sfac_last_error() when it fails. Only the functions the benchmarks call are declared.
"""
import ctypes

SFAC_BACKEND_AUTO, SFAC_BACKEND_CPU, SFAC_BACKEND_CUDA = 0, 1, 2
SFAC_ALGO_ALS, SFAC_ALGO_IALS, SFAC_ALGO_SGD = 0, 1, 2
OPT_RANK, OPT_ITERATIONS, OPT_LAMBDA = 1, 2, 3
OPT_ALS_REGULARIZATION, OPT_ALS_SOLVER, OPT_ALS_CG_STEPS, OPT_IMPLICIT_ALPHA = 100, 101, 102, 103
REG_PLAIN = 0
SOLVER_CHOLESKY, SOLVER_CG = 0, 1
FEEDBACK_EXPLICIT, FEEDBACK_IMPLICIT = 0, 1


class Sfac:
    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(path)
        vp, i64, i32, f64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_double
        out = ctypes.POINTER(ctypes.c_void_p)
        sig = {
            "sfac_context_create": [i32, i32, i32, ctypes.c_uint64, out],
            "sfac_context_destroy": [vp],
            "sfac_sparse_create_csr": [vp, i64, i64, vp, vp, vp, i64, ctypes.c_uint32, out],
            "sfac_sparse_get_shape": [vp, vp, vp, vp],
            "sfac_sparse_download_csr": [vp, vp, i64, vp, vp, i64],
            "sfac_sparse_destroy": [vp],
            "sfac_dense_destroy": [vp],
            "sfac_synthesize_ratings": [vp, i32, i64, i64, i64, i64, f64, f64, out, out, out],
            "sfac_train_options_create": [i32, out],
            "sfac_train_options_destroy": [vp],
            "sfac_train_options_set_int": [vp, i32, i64],
            "sfac_train_options_set_double": [vp, i32, f64],
            "sfac_train": [vp, vp, vp, out],
            "sfac_trainer_create": [vp, vp, vp, out],
            "sfac_trainer_destroy": [vp],
            "sfac_trainer_run": [vp, i32, ctypes.POINTER(i32)],
            "sfac_trainer_get_loss": [vp, ctypes.POINTER(f64)],
            "sfac_trainer_get_model": [vp, out],
            "sfac_model_destroy": [vp],
            "sfac_model_get_user_factors": [vp, vp, i64],  # capacity in floats
            "sfac_model_get_item_factors": [vp, vp, i64],
            "sfac_model_set_user_factors": [vp, vp],
            "sfac_model_set_item_factors": [vp, vp],
            "sfac_model_recommend": [vp, i64, vp, i32, vp, i64, vp, vp, vp, i64],
            "sfac_model_recalculate_users": [vp, i64, vp, vp, vp, vp, vp, i64, vp],
            "sfac_model_copy": [vp, vp, out],
        }
        for name, argtypes in sig.items():
            f = getattr(lib, name)
            f.argtypes = argtypes
            f.restype = ctypes.c_int
        for name in ("sfac_last_error", "sfac_version_string"):
            getattr(lib, name).restype = ctypes.c_char_p
            getattr(lib, name).argtypes = []
        lib.sfac_status_string.restype = ctypes.c_char_p
        lib.sfac_status_string.argtypes = [ctypes.c_int]

    def __call__(self, name, *args):
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise RuntimeError("%s: %s: %s" % (name, self.lib.sfac_status_string(status).decode(),
                                               self.lib.sfac_last_error().decode()))

    def version(self):
        return self.lib.sfac_version_string().decode()


def ptr(a):
    """The address of a contiguous numpy array, for a pointer argument."""
    return ctypes.c_void_p(a.ctypes.data)
