"""Access to the generated module: error hook, enum values and array conversions shared by
the idiomatic classes."""

import threading

import numpy as np

from . import _core
from ._errors import ClosedObjectError, OutOfRangeError, make_error

_core.sfacpy_set_error_factory(make_error)

_INT32_MIN = np.iinfo(np.int32).min
_INT32_MAX = np.iinfo(np.int32).max


def enum_value(name, value, table):
    """Maps a lower-case option string (or the enum's int) to the C enum value."""
    if isinstance(value, str):
        key = value.lower()
        if key in table:
            return table[key]
    elif isinstance(value, (int, np.integer)) and int(value) in table.values():
        return int(value)
    choices = ", ".join(repr(k) for k in table)
    raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def enum_name(value, table):
    for key, val in table.items():
        if val == value:
            return key
    return str(value)


def as_int32(values, name):
    """A C-contiguous int32 array; no copy when `values` already is one. Wider integers are
    range-checked so that a large id is an error instead of silently wrapping around."""
    arr = np.asarray(values)
    if arr.dtype == np.int32:
        return np.ascontiguousarray(arr).reshape(-1)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int32)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    lo, hi = arr.min(), arr.max()
    if lo < _INT32_MIN or hi > _INT32_MAX:
        bad = lo if lo < _INT32_MIN else hi
        raise OutOfRangeError(f"{name} holds {bad}, outside the int32 index range",
                              "out of range", 3)
    return np.ascontiguousarray(arr, dtype=np.int32).reshape(-1)


def as_order(order, length, name, side):
    """`order` as a C-contiguous int32 array of `length` entries, one per row or column (`side`
    says which). Whether it is a permutation is the library's check: its message names the
    first repeated or outside index."""
    arr = as_int32(order, name)
    if arr.size != length:
        raise ValueError(f"{name} has {arr.size} entries, expected {side} = {length}")
    return arr


def as_int64(values, name):
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.int64).reshape(-1)


def shared_length(*arrays):
    """The real length, in elements, of the shortest of these arrays (None skipped; 0 when all
    are None): the one capacity or count a C call takes for arrays that share a length, so that
    the library checks every buffer it reads or writes against what the buffer really holds."""
    sizes = [arr.size for arr in arrays if arr is not None]
    return min(sizes) if sizes else 0


def as_float32(values, name):
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.float32)


class Handle:
    """Owns one library handle; `close()` (or leaving a `with` block, or garbage collection)
    destroys it exactly once. Using a closed object raises ClosedObjectError.

    Library calls run without the GIL, so another thread may close an object while a call is
    using it: every call holds the object (see `call`), and a close during a call only
    retires the handle; the last call to finish destroys it."""

    _destroy = None  # the sfac_*_destroy function of the subclass
    _kind = "object"

    def __init__(self, ptr):
        self._lock = threading.Lock()
        self._busy = 0
        self._retired = None
        self._ptr = ptr

    def _closed_error(self):
        return ClosedObjectError(f"this {self._kind} is closed", "invalid handle", 2)

    def _acquire(self):
        lock = getattr(self, "_lock", None)
        if lock is None:
            raise self._closed_error()
        with lock:
            if self._ptr is None:
                raise self._closed_error()
            self._busy += 1
            return self._ptr

    def _release(self):
        with self._lock:
            self._busy -= 1
            retired = self._retired if self._busy == 0 else None
            if retired is not None:
                self._retired = None
        if retired is not None:
            type(self)._destroy(retired)

    def _check_open(self):
        if self.closed:
            raise self._closed_error()

    @property
    def closed(self):
        return getattr(self, "_ptr", None) is None

    def close(self):
        lock = getattr(self, "_lock", None)
        if lock is None:
            return  # __init__ never ran (the constructor failed)
        with lock:
            ptr, self._ptr = self._ptr, None
            if ptr is not None and self._busy:
                self._retired, ptr = ptr, None
        if ptr is not None:
            type(self)._destroy(ptr)

    def __enter__(self):
        self._check_open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass  # interpreter shutdown: the module may already be gone


def call(fn, *args):
    """fn(*args) with every Handle argument replaced by its pointer and held for the call."""
    held = []
    try:
        converted = []
        for arg in args:
            if isinstance(arg, Handle):
                converted.append(arg._acquire())
                held.append(arg)
            else:
                converted.append(arg)
        return fn(*converted)
    finally:
        for handle in held:
            handle._release()
