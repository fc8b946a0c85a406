/*
 * Go typemaps for sparsefac.i (swig -go -cgo -intgosize 64), used by bindings/go/internal/capi.
 *
 * The generated layer is internal: the idiomatic package bindings/go wraps it, checks slice
 * lengths against the shapes the C API assumes, passes each output slice's length as the
 * capacity the C API takes for it (and an input slice's length as nnz where it takes one), and
 * turns statuses into *sparsefac.Error.
 *
 * - Numeric pointers become Go slices of the same element type. The C side receives the slice's
 *   backing array directly (no copy): cgo allows this because the elements hold no Go pointers,
 *   and the C API never keeps an input pointer past the call. A nil slice is NULL, which the C
 *   API accepts wherever an argument "may be NULL".
 * - Output handles `sfac_x** out` become *uintptr; the Go layer converts the address back into
 *   the generated handle type. No Go memory ever holds a C pointer the GC would have to trace.
 * - A CUDA stream (the caller's cudaStream_t) is a uintptr, as Go's CUDA bindings hand it out:
 *   `void* stream` in, `void** out` as *uintptr; 0 is NULL.
 * - The epoch callback is a runtime/cgo.Handle (uintptr) to a Go function; the C side installs
 *   the trampoline of trampoline.c with the handle as user_data (0 clears the callback).
 */

/* C int is 32 bits; Go's int is 64 with -intgosize 64, so int* must become []int32. */
%define SFAC_GO_SLICE(CTYPE, GOTYPE)
%typemap(gotype) CTYPE*, const CTYPE* "[]GOTYPE"
%typemap(in) CTYPE*, const CTYPE* %{ $1 = ($1_ltype)$input.array; %}
%typemap(argout) CTYPE*, const CTYPE* ""
%typemap(freearg) CTYPE*, const CTYPE* ""
%enddef

SFAC_GO_SLICE(float, float32)
SFAC_GO_SLICE(double, float64)
SFAC_GO_SLICE(int, int32)
SFAC_GO_SLICE(int32_t, int32)
SFAC_GO_SLICE(int64_t, int64)
SFAC_GO_SLICE(uint64_t, uint64)
/* Enum outputs (sfac_backend* out, ...): C enums here are int-sized. */
SFAC_GO_SLICE(sfac_backend, int32)
SFAC_GO_SLICE(sfac_dtype, int32)
SFAC_GO_SLICE(sfac_algorithm, int32)
SFAC_GO_SLICE(sfac_solver, int32)
SFAC_GO_SLICE(sfac_sddmm_algorithm, int32)

%define SFAC_GO_OUT_HANDLE(CTYPE)
%typemap(gotype) CTYPE** "*uintptr"
%typemap(in) CTYPE** %{ $1 = ($1_ltype)$input; %}
%typemap(argout) CTYPE** ""
%typemap(freearg) CTYPE** ""
%enddef

SFAC_GO_OUT_HANDLE(sfac_context)
SFAC_GO_OUT_HANDLE(sfac_sparse)
SFAC_GO_OUT_HANDLE(sfac_dense)
SFAC_GO_OUT_HANDLE(sfac_idmap)
SFAC_GO_OUT_HANDLE(sfac_sddmm_plan)
SFAC_GO_OUT_HANDLE(sfac_train_options)
SFAC_GO_OUT_HANDLE(sfac_trainer)
SFAC_GO_OUT_HANDLE(sfac_model)

/* CUDA streams: opaque addresses the library never dereferences on the Go side. */
%typemap(gotype) void* stream "uintptr"
%typemap(in) void* stream %{ $1 = (void*)$input; %}
%typemap(gotype) void** out "*uintptr"
%typemap(in) void** out %{ $1 = ($1_ltype)$input; %}
%typemap(argout) void** out ""
%typemap(freearg) void** out ""

/* The device name is owned by the context: copy it into a Go string before returning. */
%typemap(gotype) const char** out "*string"
%typemap(in) const char** out (const char* temp) %{
  temp = NULL;
  $1 = ($1_ltype)&temp;
%}
%typemap(argout, fragment="AllocateString") const char** out %{
  if ($input && temp$argnum) {
    *$input = Swig_AllocateString(temp$argnum, strlen(temp$argnum));
  }
%}
%typemap(goargout, fragment="CopyString") const char** out %{
  if $input != nil {
    *$input = swigCopyString(*$input)
  }
%}
%typemap(freearg) const char** out ""

%{
#include <string.h>
/* Defined in bindings/go/internal/capi/trampoline.c; calls the exported Go dispatcher. */
extern int sfac_go_epoch_trampoline(int epoch, double train_loss, double validation_rmse,
                                    double seconds, void* user_data);
%}

%typemap(gotype) (sfac_epoch_callback callback, void* user_data) "uintptr"
%typemap(in) (sfac_epoch_callback callback, void* user_data) %{
  $1 = $input ? sfac_go_epoch_trampoline : NULL;
  $2 = (void*)(uintptr_t)$input;
%}
