"""Context: the backend (CPU or CUDA), its device, threads and seed."""

import threading

from . import _core
from ._lib import Handle, call, enum_name, enum_value

BACKENDS = {"auto": _core.SFAC_BACKEND_AUTO, "cpu": _core.SFAC_BACKEND_CPU,
            "cuda": _core.SFAC_BACKEND_CUDA}


class Context(Handle):
    """Where work runs. `backend` is "auto" (CUDA when usable for everything, else CPU), "cpu"
    or "cuda"; `threads=0` uses every core; `seed` drives every random choice (initialization,
    shuffles, synthetic data). Usable as a context manager; objects made from a context stay
    valid after it is closed."""

    _destroy = staticmethod(_core.sfac_context_destroy)
    _kind = "Context"

    def __init__(self, backend="auto", device=0, threads=0, seed=0):
        code = enum_value("backend", backend, BACKENDS)
        Handle.__init__(self, _core.sfac_context_create(code, int(device), int(threads),
                                                        int(seed)))

    @property
    def backend(self):
        return enum_name(call(_core.sfac_context_get_backend, self), BACKENDS)

    @property
    def device_name(self):
        return call(_core.sfac_context_get_device_name, self)

    @property
    def threads(self):
        return call(_core.sfac_context_get_num_threads, self)

    @property
    def seed(self):
        return call(_core.sfac_context_get_seed, self)

    def synchronize(self):
        call(_core.sfac_context_synchronize, self)

    @property
    def memory_limit(self):
        """Bytes of host memory one object built for this context (a sparse matrix read or
        created, a dense matrix on the CPU) may need; a larger one raises OutOfMemoryError before
        anything is allocated, so that a small file declaring a huge shape cannot exhaust a
        service's memory. 0 (the default): the memory available when the object is built."""
        return call(_core.sfac_context_get_memory_limit, self)

    @memory_limit.setter
    def memory_limit(self, limit):
        call(_core.sfac_context_set_memory_limit, self, int(limit))

    @property
    def device_memory_limit(self):
        """Bytes of device memory a model's GPU copy for inference and one inference call may
        take on a CUDA context; a call needing more raises OutOfMemoryError and the model stays
        usable. 0 (the default): the memory the device has free. Unused on CPU contexts."""
        return call(_core.sfac_context_get_device_memory_limit, self)

    @device_memory_limit.setter
    def device_memory_limit(self, limit):
        call(_core.sfac_context_set_device_memory_limit, self, int(limit))

    @property
    def stream(self):
        """The CUDA stream the context queues its device work on, as an integer handle: its own
        unless set_stream chose another; 0 on CPU contexts."""
        return call(_core.sfac_context_get_stream, self)

    def set_stream(self, stream):
        """Queue this CUDA context's work on a caller's stream of its device, ordered with the
        caller's own kernels: an integer handle or an object carrying one (torch.cuda.Stream's
        `cuda_stream`, cupy's `ptr`). None or 0 restores the context's own stream. The stream
        must stay alive until it is replaced or the context and its objects are closed. CPU
        contexts accept only None or 0."""
        if stream is None:
            handle = 0
        else:
            handle = getattr(stream, "cuda_stream", getattr(stream, "ptr", stream))
        call(_core.sfac_context_set_stream, self, int(handle))

    def __repr__(self):
        if self.closed:
            return "<sparsefac.Context (closed)>"
        return (f"<sparsefac.Context backend={self.backend!r} device={self.device_name!r} "
                f"threads={self.threads} seed={self.seed}>")


_default = None
_default_lock = threading.Lock()


def default_context():
    """The context used when none is given: CPU-or-CUDA ("auto"), all cores, seed 0."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Context("auto")
        return _default


def resolve(context):
    return default_context() if context is None else context


def cuda_device_count():
    return _core.sfac_cuda_device_count()
