"""Exceptions raised by sparsefac.

Every failure of the library raises a SparsefacError carrying the library's status and message.
Each status has a subclass that also derives from the matching builtin, so callers can catch
either `sparsefac.OutOfRangeError` or plain `IndexError`.
"""

__all__ = [
    "SparsefacError",
    "InvalidArgumentError",
    "InvalidHandleError",
    "ClosedObjectError",
    "OutOfRangeError",
    "ShapeMismatchError",
    "InvalidValueError",
    "DuplicateEntryError",
    "OutOfMemoryError",
    "DeviceError",
    "SparsefacIOError",
    "ParseError",
    "UnsupportedError",
    "NotConvergedError",
    "BufferTooSmallError",
    "CallbackError",
    "InternalError",
]


class SparsefacError(Exception):
    """A libsparsefac call failed. `status` is the library's status name (e.g. "out of range"),
    `code` its numeric value and `message` the library's message naming the offending argument."""

    def __init__(self, message, status="error", code=-1):
        Exception.__init__(self, message)
        self.message = message
        self.status = status
        self.code = code

    def __str__(self):
        return f"{self.message} [{self.status}]"

    def __reduce__(self):
        return (type(self), (self.message, self.status, self.code))


class InvalidArgumentError(SparsefacError, ValueError):
    pass


class InvalidHandleError(SparsefacError, ValueError):
    pass


class ClosedObjectError(InvalidHandleError):
    """The Python object was closed (or never opened); its library handle is gone."""


class OutOfRangeError(SparsefacError, IndexError):
    pass


class ShapeMismatchError(SparsefacError, ValueError):
    pass


class InvalidValueError(SparsefacError, ValueError):
    pass


class DuplicateEntryError(SparsefacError, ValueError):
    pass


class OutOfMemoryError(SparsefacError, MemoryError):
    pass


class DeviceError(SparsefacError, RuntimeError):
    pass


class SparsefacIOError(SparsefacError, OSError):
    # OSError.__init__ would read (message, status) as (errno, strerror).
    def __init__(self, message, status="error", code=-1):
        SparsefacError.__init__(self, message, status, code)

    def __str__(self):
        return SparsefacError.__str__(self)


class ParseError(SparsefacError, ValueError):
    pass


class UnsupportedError(SparsefacError, NotImplementedError):
    pass


class NotConvergedError(SparsefacError, ArithmeticError):
    pass


class BufferTooSmallError(SparsefacError, ValueError):
    pass


class CallbackError(SparsefacError, RuntimeError):
    """Training stopped because the epoch callback raised; the callback's exception is the
    `__cause__`."""


class InternalError(SparsefacError, RuntimeError):
    pass


# Indexed by the pinned sfac_status values.
_BY_CODE = {
    1: InvalidArgumentError,
    2: InvalidHandleError,
    3: OutOfRangeError,
    4: ShapeMismatchError,
    5: InvalidValueError,
    6: DuplicateEntryError,
    7: OutOfMemoryError,
    8: DeviceError,
    9: SparsefacIOError,
    10: ParseError,
    11: UnsupportedError,
    12: NotConvergedError,
    13: BufferTooSmallError,
    14: CallbackError,
    15: InternalError,
}


# C names in the library's messages that Python callers spell as keyword arguments. The rest of
# the message (which entry, where in the input) is kept as the library wrote it.
_C_TO_PYTHON = (("pass SFAC_SPARSE_SUM_DUPLICATES", "pass sum_duplicates=True"),)


def _pythonic(message):
    for c_name, py_name in _C_TO_PYTHON:
        message = message.replace(c_name, py_name)
    return message


def make_error(code, message, status_name=None):
    """The exception for a failed call (registered with the low-level module)."""
    cls = _BY_CODE.get(code, SparsefacError)
    message = _pythonic(message)
    if status_name is None:
        from . import _core

        status_name = _core.sfac_status_string(code)
    return cls(message, status_name, code)
