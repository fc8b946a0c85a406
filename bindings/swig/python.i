/*
 * Python typemaps for sparsefac.i. The generated module (sparsefac._core) is private: the
 * package `sparsefac` (bindings/python/sparsefac) wraps it. Choices made here:
 *
 * - A status other than SFAC_OK raises; the exception object comes from a factory the package
 *   registers (sfacpy_set_error_factory), so the low level raises the package's own classes.
 *   A successful call returns only its outputs (a list when there are several).
 * - Output handles (`sfac_x** out`) come back as opaque pointers; the package owns them and
 *   destroys them explicitly, so no SWIG proxy ever frees anything.
 * - Arrays cross through the buffer protocol without copies: inputs need a C-contiguous buffer
 *   of the right item size, outputs a writable one that the caller allocated. The capacity and
 *   count arguments stay explicit: the package passes each buffer's real length (a too-small
 *   output raises BufferTooSmallError naming the array) and sizes the rest before the call.
 * - Long calls release the GIL; the epoch-callback trampoline takes it back.
 */

%{
#include <string.h>

static PyObject* sfacpy_error_factory = NULL;

/* Raises the package's exception for `status` with the library's message. */
static void sfacpy_raise(sfac_status status) {
  const char* message = sfac_last_error();
  if (message == NULL || message[0] == '\0') message = sfac_status_string(status);
  if (sfacpy_error_factory != NULL) {
    PyObject* exc = PyObject_CallFunction(sfacpy_error_factory, "is", (int)status, message);
    if (exc != NULL) {
      PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
      Py_DECREF(exc);
    }
    /* A failing factory leaves its own exception set, which is still an error. */
    return;
  }
  PyErr_Format(PyExc_RuntimeError, "sparsefac: %s (status %d)", message, (int)status);
}

/* Acquires a C-contiguous buffer of `itemsize`-byte items whose format letter is in `formats`.
 * None gives NULL (the C API's "absent"). */
static int sfacpy_get_buffer(PyObject* obj, Py_buffer* view, Py_ssize_t itemsize,
                             const char* formats, int writable, void** out) {
  view->obj = NULL;
  if (obj == Py_None) {
    *out = NULL;
    return 0;
  }
  int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj, view, flags) != 0) return -1;
  const char* fmt = view->format != NULL ? view->format : "B";
  if (fmt[0] == '=' || fmt[0] == '<' || fmt[0] == '@') ++fmt;
  if (view->itemsize != itemsize || fmt[0] == '\0' || fmt[1] != '\0' ||
      strchr(formats, fmt[0]) == NULL) {
    PyErr_Format(PyExc_TypeError,
                 "sparsefac: expected a contiguous array of %zd-byte items of format '%s', "
                 "got format '%s' with %zd-byte items",
                 itemsize, formats, view->format != NULL ? view->format : "B", view->itemsize);
    PyBuffer_Release(view);
    view->obj = NULL;
    return -1;
  }
  *out = view->buf;
  return 0;
}

/* Called with the GIL released by the trainer; takes it back for the Python callable.
 * The package passes a wrapper that never raises (it stores the user's exception and returns
 * -1); an exception escaping anyway is reported as unraisable and aborts training. */
static int sfacpy_epoch_trampoline(int epoch, double train_loss, double validation_rmse,
                                   double seconds, void* user_data) {
  PyGILState_STATE gil = PyGILState_Ensure();
  int answer = -1;
  PyObject* result = PyObject_CallFunction((PyObject*)user_data, "iddd", epoch, train_loss,
                                           validation_rmse, seconds);
  if (result == NULL) {
    PyErr_WriteUnraisable((PyObject*)user_data);
  } else {
    long value = PyLong_AsLong(result);
    if (value == -1 && PyErr_Occurred()) {
      PyErr_WriteUnraisable((PyObject*)user_data);
    } else {
      answer = value > 0 ? 1 : (value < 0 ? -1 : 0);
    }
    Py_DECREF(result);
  }
  PyGILState_Release(gil);
  return answer;
}
%}

/* ---- Status: raise on failure, return nothing on success ------------------------------------ */

%typemap(out) sfac_status {
  if ($1 != SFAC_OK) {
    sfacpy_raise($1);
    SWIG_fail;
  }
  $result = SWIG_Py_Void();
}

/* ---- Output handles ------------------------------------------------------------------------- */

%define SFACPY_OUTPUT_HANDLE(TYPE)
%typemap(in, numinputs = 0) TYPE** (TYPE* handle_tmp = NULL) {
  $1 = &handle_tmp;
}
%typemap(argout) TYPE** {
  PyObject* handle_obj = *$1 != NULL ? SWIG_NewPointerObj(*$1, $*1_descriptor, 0) : SWIG_Py_Void();
  $result = SWIG_Python_AppendOutput($result, handle_obj);
}
%enddef

SFACPY_OUTPUT_HANDLE(sfac_context)
SFACPY_OUTPUT_HANDLE(sfac_sparse)
SFACPY_OUTPUT_HANDLE(sfac_dense)
SFACPY_OUTPUT_HANDLE(sfac_idmap)
SFACPY_OUTPUT_HANDLE(sfac_sddmm_plan)
SFACPY_OUTPUT_HANDLE(sfac_train_options)
SFACPY_OUTPUT_HANDLE(sfac_trainer)
SFACPY_OUTPUT_HANDLE(sfac_model)

/* ---- Scalar outputs --------------------------------------------------------------------------- */

%define SFACPY_OUTPUT_SCALAR(CTYPE, NAME, TO_PY)
%typemap(in, numinputs = 0) CTYPE* NAME (CTYPE scalar_tmp = 0) {
  $1 = &scalar_tmp;
}
%typemap(argout) CTYPE* NAME {
  $result = SWIG_Python_AppendOutput($result, TO_PY(*$1));
}
%typemap(freearg) CTYPE* NAME ""
%enddef

SFACPY_OUTPUT_SCALAR(int64_t, rows, PyLong_FromLongLong)
SFACPY_OUTPUT_SCALAR(int64_t, cols, PyLong_FromLongLong)
SFACPY_OUTPUT_SCALAR(int64_t, nnz, PyLong_FromLongLong)
SFACPY_OUTPUT_SCALAR(int64_t, users, PyLong_FromLongLong)
SFACPY_OUTPUT_SCALAR(int64_t, items, PyLong_FromLongLong)
SFACPY_OUTPUT_SCALAR(int64_t, rank, PyLong_FromLongLong)
SFACPY_OUTPUT_SCALAR(int64_t, out, PyLong_FromLongLong)
SFACPY_OUTPUT_SCALAR(uint64_t, out, PyLong_FromUnsignedLongLong)
SFACPY_OUTPUT_SCALAR(int, out, PyLong_FromLong)
SFACPY_OUTPUT_SCALAR(int, epochs_done, PyLong_FromLong)
SFACPY_OUTPUT_SCALAR(int, has_biases, PyLong_FromLong)
SFACPY_OUTPUT_SCALAR(double, , PyFloat_FromDouble)
SFACPY_OUTPUT_SCALAR(sfac_backend, out, PyLong_FromLong)
SFACPY_OUTPUT_SCALAR(sfac_dtype, out, PyLong_FromLong)
SFACPY_OUTPUT_SCALAR(sfac_sddmm_algorithm, out, PyLong_FromLong)
SFACPY_OUTPUT_SCALAR(sfac_algorithm, out, PyLong_FromLong)
SFACPY_OUTPUT_SCALAR(sfac_solver, solver, PyLong_FromLong)
SFACPY_OUTPUT_SCALAR(int32_t, cg_steps, PyLong_FromLong)

%typemap(in, numinputs = 0) const char** out (const char* str_tmp = NULL) {
  $1 = ($1_ltype)&str_tmp;
}
%typemap(argout) const char** out {
  $result = SWIG_Python_AppendOutput($result, PyUnicode_FromString(*$1 != NULL ? *$1 : ""));
}

/* ---- CUDA streams: integer handles (torch's Stream.cuda_stream, cupy's Stream.ptr) ---------- */

%typemap(in) void* stream {
  $1 = $input == Py_None ? NULL : PyLong_AsVoidPtr($input);
  if (PyErr_Occurred()) SWIG_fail;
}
%typemap(in, numinputs = 0) void** out (void* stream_tmp = NULL) {
  $1 = &stream_tmp;
}
%typemap(argout) void** out {
  $result = SWIG_Python_AppendOutput($result, PyLong_FromVoidPtr(*$1));
}

/* ---- Arrays (buffer protocol) ----------------------------------------------------------------- */

%define SFACPY_ARRAY(CTYPE, ITEMSIZE, FORMATS, WRITABLE)
%typemap(in) CTYPE* (Py_buffer view = {0}) {
  void* buf_ptr = NULL;
  if (sfacpy_get_buffer($input, &view, ITEMSIZE, FORMATS, WRITABLE, &buf_ptr) != 0) SWIG_fail;
  $1 = ($1_ltype)buf_ptr;
}
%typemap(freearg) CTYPE* {
  if (view$argnum.obj != NULL) PyBuffer_Release(&view$argnum);
}
%enddef

SFACPY_ARRAY(const float, 4, "f", 0)
SFACPY_ARRAY(float, 4, "f", 1)
SFACPY_ARRAY(const int32_t, 4, "il", 0)
SFACPY_ARRAY(int32_t, 4, "il", 1)
SFACPY_ARRAY(const int64_t, 8, "lq", 0)
SFACPY_ARRAY(int64_t, 8, "lq", 1)

/* ---- Epoch callback --------------------------------------------------------------------------- */

/* The options keep only the pointer: the package holds a reference to the callable for as long
 * as the options (and any training run using them) live. */
%typemap(in) (sfac_epoch_callback callback, void* user_data) {
  if ($input == Py_None) {
    $1 = NULL;
    $2 = NULL;
  } else if (!PyCallable_Check($input)) {
    PyErr_SetString(PyExc_TypeError, "sparsefac: the epoch callback must be callable or None");
    SWIG_fail;
  } else {
    $1 = sfacpy_epoch_trampoline;
    $2 = (void*)$input;
  }
}

/* ---- GIL ------------------------------------------------------------------------------------ */

/* swig runs with -threads, which releases the GIL around every call (training, SDDMM and
 * recommend can run for minutes; the rest is cheap either way). Calls that only read static or
 * thread-local strings keep it. */
%nothread sfac_status_string;
%nothread sfac_last_error;
%nothread sfac_clear_last_error;
%nothread sfac_version_string;
%nothread sfac_version_number;
%nothread sfac_build_info;

/* Hooks of the package, not part of the C API. */
%nothread sfacpy_set_error_factory;
%inline %{
static PyObject* sfacpy_set_error_factory(PyObject* factory) {
  Py_XINCREF(factory);
  Py_XDECREF(sfacpy_error_factory);
  sfacpy_error_factory = factory;
  Py_RETURN_NONE;
}
%}
