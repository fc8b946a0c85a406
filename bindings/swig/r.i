/*
 * R typemaps for the one SWIG interface (sparsefac.i), used with `swig -r`.
 *
 * A wrapped function that returns an sfac_status gives it as an integer; one with outputs gives
 * a list headed by that integer, its outputs following in declaration order. The wrappers are
 * named native_<name> (see the %rename below). The idiomatic layer
 * (bindings/r/pkg/R) turns a non-zero status into an R condition; R code outside it never sees
 * these wrappers (the package exports none of them).
 *
 * How values cross:
 * - Handles are external pointers tagged with their type name (a symbol). Output handles carry a
 *   C finalizer that destroys the object; sfac_r_close() destroys early and clears the pointer,
 *   so a closed or finalized handle has address NULL and can never be freed twice. The
 *   library's *_destroy functions are not wrapped for the same reason.
 * - const pointers are inputs: `const int32_t*` takes an R integer vector (no copy),
 *   `const float*` and `const int64_t*` a double vector converted into scratch memory
 *   (R_alloc, reclaimed when .Call returns, even through an R error). R NULL passes NULL.
 * - Non-const pointers are outputs: the R argument is the element count to allocate (0 passes
 *   NULL, for the outputs the library lets callers skip); the converted vector is appended to
 *   the result. Callers size them from shape queries.
 * - int64 and uint64 scalars and arrays cross as doubles: integral and |x| <= 2^53, else an R
 *   error before the library is called.
 * - The epoch callback: sfac_r_epoch_trampoline evaluates an R function with R_tryEval; an R
 *   error (or interrupt) returns -1, so the library aborts training with SFAC_ERR_CALLBACK. The
 *   idiomatic layer wraps the user's function in tryCatch to keep the condition for the user.
 */

%{
#include <R.h>
#include <Rinternals.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The largest integer magnitude a double holds exactly. */
#define SFAC_R_MAX_EXACT 9007199254740992.0

static int64_t sfac_r_to_int64(SEXP x, const char* name) {
  double v;
  if (TYPEOF(x) == INTSXP && XLENGTH(x) == 1 && INTEGER(x)[0] != NA_INTEGER) return INTEGER(x)[0];
  if (TYPEOF(x) != REALSXP || XLENGTH(x) != 1) Rf_error("%s must be a single number", name);
  v = REAL(x)[0];
  if (!R_FINITE(v) || v != floor(v) || fabs(v) > SFAC_R_MAX_EXACT)
    Rf_error("%s must be a whole number of magnitude at most 2^53 (got %g)", name, v);
  return (int64_t)v;
}

static const int64_t* sfac_r_int64_array(SEXP x, const char* name) {
  R_xlen_t i, n;
  int64_t* out;
  if (Rf_isNull(x)) return NULL;
  if (TYPEOF(x) != REALSXP) Rf_error("%s must be a double vector", name);
  n = XLENGTH(x);
  out = (int64_t*)R_alloc(n > 0 ? (size_t)n : 1, sizeof(int64_t));
  for (i = 0; i < n; ++i) {
    double v = REAL(x)[i];
    if (!R_FINITE(v) || v != floor(v) || fabs(v) > SFAC_R_MAX_EXACT)
      Rf_error("%s[%ld] must be a whole number of magnitude at most 2^53", name, (long)i + 1);
    out[i] = (int64_t)v;
  }
  return out;
}

static const float* sfac_r_float_array(SEXP x, const char* name) {
  R_xlen_t i, n;
  float* out;
  if (Rf_isNull(x)) return NULL;
  if (TYPEOF(x) != REALSXP) Rf_error("%s must be a double vector", name);
  n = XLENGTH(x);
  out = (float*)R_alloc(n > 0 ? (size_t)n : 1, sizeof(float));
  /* NaN and values beyond float range (-> Inf) go through: the library rejects non-finite
   * values with a message naming the argument and index. */
  for (i = 0; i < n; ++i) out[i] = (float)REAL(x)[i];
  return out;
}

static const int* sfac_r_int32_array(SEXP x, const char* name) {
  if (Rf_isNull(x)) return NULL;
  if (TYPEOF(x) != INTSXP) Rf_error("%s must be an integer vector", name);
  return INTEGER(x);
}

/* Scratch for an output array of `count` elements; 0 means "not wanted" (NULL). */
static void* sfac_r_out_buffer(SEXP count, size_t elem, const char* name, R_xlen_t* n) {
  int64_t c = sfac_r_to_int64(count, name);
  void* buffer;
  if (c < 0) Rf_error("%s: negative output length", name);
  *n = (R_xlen_t)c;
  if (c == 0) return NULL;
  /* Zeroed: outputs the library leaves unwritten (a bias of a model without biases) read 0. */
  buffer = R_alloc((size_t)c, elem);
  memset(buffer, 0, (size_t)c * elem);
  return buffer;
}

/* Stores an output after the status and the outputs before it (slots start as NULL and every
 * appended value is non-NULL). */
static void sfac_r_append(SEXP list, SEXP value) {
  R_xlen_t i;
  for (i = 1; i < XLENGTH(list); ++i) {
    if (VECTOR_ELT(list, i) == R_NilValue) {
      SET_VECTOR_ELT(list, i, value);
      return;
    }
  }
}

static SEXP sfac_r_from_float(const float* p, R_xlen_t n) {
  R_xlen_t i;
  SEXP v = Rf_allocVector(REALSXP, p ? n : 0);
  for (i = 0; p && i < n; ++i) REAL(v)[i] = p[i];
  return v;
}

static SEXP sfac_r_from_double(const double* p, R_xlen_t n) {
  R_xlen_t i;
  SEXP v = Rf_allocVector(REALSXP, p ? n : 0);
  for (i = 0; p && i < n; ++i) REAL(v)[i] = p[i];
  return v;
}

static SEXP sfac_r_from_int(const int* p, R_xlen_t n) {
  SEXP v = Rf_allocVector(INTSXP, p ? n : 0);
  if (p && n > 0) memcpy(INTEGER(v), p, (size_t)n * sizeof(int));
  return v;
}

static SEXP sfac_r_from_int64(const int64_t* p, R_xlen_t n) {
  R_xlen_t i;
  SEXP v = Rf_allocVector(REALSXP, p ? n : 0);
  for (i = 0; p && i < n; ++i) {
    /* Beyond 2^53 a double would silently change the count. */
    if ((double)p[i] > SFAC_R_MAX_EXACT || (double)p[i] < -SFAC_R_MAX_EXACT)
      Rf_error("a 64-bit value (%lld) does not fit a double exactly", (long long)p[i]);
    REAL(v)[i] = (double)p[i];
  }
  return v;
}

static SEXP sfac_r_from_uint64(const uint64_t* p, R_xlen_t n) {
  R_xlen_t i;
  SEXP v = Rf_allocVector(REALSXP, p ? n : 0);
  for (i = 0; p && i < n; ++i) {
    if ((double)p[i] > SFAC_R_MAX_EXACT)
      Rf_error("a 64-bit value (%llu) does not fit a double exactly", (unsigned long long)p[i]);
    REAL(v)[i] = (double)p[i];
  }
  return v;
}

/* ---- Handles ---- */

typedef sfac_status (*sfac_r_destroy_fn)(void*);

static sfac_status sfac_r_destroy_context(void* p) { return sfac_context_destroy((sfac_context*)p); }
static sfac_status sfac_r_destroy_sparse(void* p) { return sfac_sparse_destroy((sfac_sparse*)p); }
static sfac_status sfac_r_destroy_dense(void* p) { return sfac_dense_destroy((sfac_dense*)p); }
static sfac_status sfac_r_destroy_idmap(void* p) { return sfac_idmap_destroy((sfac_idmap*)p); }
static sfac_status sfac_r_destroy_plan(void* p) {
  return sfac_sddmm_plan_destroy((sfac_sddmm_plan*)p);
}
static sfac_status sfac_r_destroy_options(void* p) {
  return sfac_train_options_destroy((sfac_train_options*)p);
}
static sfac_status sfac_r_destroy_trainer(void* p) { return sfac_trainer_destroy((sfac_trainer*)p); }
static sfac_status sfac_r_destroy_model(void* p) { return sfac_model_destroy((sfac_model*)p); }

static const struct {
  const char* tag;
  sfac_r_destroy_fn destroy;
} sfac_r_kinds[] = {
    {"sfac_context", sfac_r_destroy_context}, {"sfac_sparse", sfac_r_destroy_sparse},
    {"sfac_dense", sfac_r_destroy_dense},     {"sfac_idmap", sfac_r_destroy_idmap},
    {"sfac_sddmm_plan", sfac_r_destroy_plan}, {"sfac_train_options", sfac_r_destroy_options},
    {"sfac_trainer", sfac_r_destroy_trainer}, {"sfac_model", sfac_r_destroy_model}};

static sfac_r_destroy_fn sfac_r_destroyer(SEXP ptr) {
  size_t i;
  SEXP tag;
  if (TYPEOF(ptr) != EXTPTRSXP) return NULL;
  tag = R_ExternalPtrTag(ptr);
  for (i = 0; i < sizeof(sfac_r_kinds) / sizeof(sfac_r_kinds[0]); ++i)
    if (tag == Rf_install(sfac_r_kinds[i].tag)) return sfac_r_kinds[i].destroy;
  return NULL;
}

/* Runs at garbage collection and at exit; a no-op once closed. */
static void sfac_r_finalize(SEXP ptr) {
  sfac_r_destroy_fn destroy = sfac_r_destroyer(ptr);
  void* addr = R_ExternalPtrAddr(ptr);
  if (destroy && addr) {
    R_ClearExternalPtr(ptr);
    destroy(addr);
  }
}

static SEXP sfac_r_wrap_handle(void* addr, const char* tag) {
  SEXP ptr = PROTECT(R_MakeExternalPtr(addr, Rf_install(tag), R_NilValue));
  if (addr) R_RegisterCFinalizerEx(ptr, sfac_r_finalize, TRUE);
  UNPROTECT(1);
  return ptr;
}

/* R NULL passes NULL (optional arguments); a closed handle also reaches the library as NULL,
 * which answers SFAC_ERR_INVALID_HANDLE. A handle of another type never reaches it. */
static void* sfac_r_handle_addr(SEXP x, const char* tag, const char* name) {
  if (Rf_isNull(x)) return NULL;
  if (TYPEOF(x) != EXTPTRSXP || R_ExternalPtrTag(x) != Rf_install(tag))
    Rf_error("%s must be a %s handle", name, tag);
  return R_ExternalPtrAddr(x);
}

/* ---- Epoch callback ---- */

static int sfac_r_epoch_trampoline(int epoch, double train_loss, double validation_rmse,
                                   double seconds, void* user_data) {
  int failed = 0, verdict = 0;
  SEXP call, result;
  /* Each argument is protected before the next allocation can collect it. */
  SEXP e = PROTECT(Rf_ScalarInteger(epoch));
  SEXP l = PROTECT(Rf_ScalarReal(train_loss));
  SEXP v = PROTECT(Rf_ScalarReal(validation_rmse));
  SEXP t = PROTECT(Rf_ScalarReal(seconds));
  call = PROTECT(Rf_lang5((SEXP)user_data, e, l, v, t));
  /* Nothing below allocates, so the result needs no protection (and is NULL on error). */
  result = R_tryEval(call, R_GlobalEnv, &failed);
  if (failed) {
    verdict = -1;
  } else if (Rf_isLogical(result) && XLENGTH(result) == 1) {
    verdict = LOGICAL(result)[0] == TRUE ? 1 : 0;
  } else if (Rf_isNumeric(result) && XLENGTH(result) == 1) {
    double answer = Rf_asReal(result);
    verdict = answer > 0 ? 1 : (answer < 0 ? -1 : 0);
  }
  UNPROTECT(5);
  return verdict;
}
%}

/* The package's R namespace holds both layers: the wrappers are native_<name> (sfac_sddmm ->
 * native_sddmm), leaving the sfac_* names to the idiomatic functions. */
%rename("%(regex:/^sfac_(.*)$/native_\\1/)s", %$isfunction) "";

/* ---- Results: a list headed by the status ---- */

%typemap(out) sfac_status %{ $result = Rf_ScalarInteger((int)$1); %}
%typemap(scoerceout) sfac_status ""
%typemap(scoercein) enum SWIGTYPE %{ $input = as.integer($input); %}
%typemap(in) enum SWIGTYPE %{
  if (!Rf_isInteger($input) || XLENGTH($input) != 1) Rf_error("$1_name must be a single integer");
  $1 = ($1_ltype)INTEGER($input)[0];
%}

/* ---- Handles ---- */

%define SFAC_R_HANDLE(TYPE)
%ignore TYPE ## _destroy;
%typemap(in, numinputs=0) TYPE** (TYPE* handle = NULL) %{ $1 = &handle; %}
%typemap(argout) TYPE** %{
  sfac_r_append(r_ans, sfac_r_wrap_handle((void*)handle$argnum, #TYPE));
%}
%typemap(freearg) TYPE** ""
%typemap(in) TYPE*, const TYPE* %{
  $1 = ($1_ltype)sfac_r_handle_addr($input, #TYPE, "$1_name");
%}
%typemap(scoercein) TYPE*, const TYPE* ""
%typemap(freearg) TYPE*, const TYPE* ""
%enddef

SFAC_R_HANDLE(sfac_context)
SFAC_R_HANDLE(sfac_sparse)
SFAC_R_HANDLE(sfac_dense)
SFAC_R_HANDLE(sfac_idmap)
SFAC_R_HANDLE(sfac_sddmm_plan)
SFAC_R_HANDLE(sfac_train_options)
SFAC_R_HANDLE(sfac_trainer)
SFAC_R_HANDLE(sfac_model)

/* ---- Scalars wider than R's integers ---- */

%typemap(in) int64_t %{ $1 = sfac_r_to_int64($input, "$1_name"); %}
%typemap(scoercein) int64_t ""
%typemap(in) uint64_t %{
  {
    int64_t v = sfac_r_to_int64($input, "$1_name");
    if (v < 0) Rf_error("$1_name must not be negative");
    $1 = (uint64_t)v;
  }
%}
%typemap(scoercein) uint64_t ""
%typemap(in) uint32_t %{
  {
    int64_t v = sfac_r_to_int64($input, "$1_name");
    if (v < 0 || v > 4294967295.0) Rf_error("$1_name must be in [0, 2^32)");
    $1 = (uint32_t)v;
  }
%}
%typemap(scoercein) uint32_t ""

/* ---- Input arrays ---- */

%typemap(in) const float* %{ $1 = ($1_ltype)sfac_r_float_array($input, "$1_name"); %}
%typemap(in) const int64_t* %{ $1 = ($1_ltype)sfac_r_int64_array($input, "$1_name"); %}
%typemap(in) const int32_t* %{ $1 = ($1_ltype)sfac_r_int32_array($input, "$1_name"); %}
%typemap(scoercein) const float*, const int64_t*, const int32_t* ""
%typemap(freearg) const float*, const int64_t*, const int32_t* ""
%typemap(argout) const float*, const int64_t*, const int32_t* ""

/* ---- Outputs ---- */

%define SFAC_R_OUT(CTYPE, CONVERT)
%typemap(in) CTYPE* (R_xlen_t outlen) %{
  $1 = ($1_ltype)sfac_r_out_buffer($input, sizeof(CTYPE), "$1_name", &outlen);
%}
%typemap(argout) CTYPE* %{ sfac_r_append(r_ans, CONVERT((const void*)$1, outlen$argnum)); %}
%typemap(scoercein) CTYPE* ""
%typemap(freearg) CTYPE* ""
%enddef

%{
#define sfac_r_out_float(p, n) sfac_r_from_float((const float*)(p), n)
#define sfac_r_out_double(p, n) sfac_r_from_double((const double*)(p), n)
#define sfac_r_out_int(p, n) sfac_r_from_int((const int*)(p), n)
#define sfac_r_out_int64(p, n) sfac_r_from_int64((const int64_t*)(p), n)
#define sfac_r_out_uint64(p, n) sfac_r_from_uint64((const uint64_t*)(p), n)
%}

SFAC_R_OUT(float, sfac_r_out_float)
SFAC_R_OUT(double, sfac_r_out_double)
SFAC_R_OUT(int32_t, sfac_r_out_int)
SFAC_R_OUT(int, sfac_r_out_int)
SFAC_R_OUT(int64_t, sfac_r_out_int64)
SFAC_R_OUT(uint64_t, sfac_r_out_uint64)
SFAC_R_OUT(sfac_backend, sfac_r_out_int)
SFAC_R_OUT(sfac_dtype, sfac_r_out_int)
SFAC_R_OUT(sfac_algorithm, sfac_r_out_int)
SFAC_R_OUT(sfac_sddmm_algorithm, sfac_r_out_int)

/* A string owned by its object (the device name): copied into an R string at once. */
%typemap(in, numinputs=0) const char** out (const char* text = NULL) %{ $1 = ($1_ltype)&text; %}
%typemap(argout) const char** out %{
  sfac_r_append(r_ans, Rf_mkString(text$argnum ? text$argnum : ""));
%}
%typemap(freearg) const char** out ""

/* ---- Epoch callback: an R function (or NULL to clear) ---- */

%typemap(in) (sfac_epoch_callback callback, void* user_data) %{
  if (Rf_isNull($input)) {
    $1 = NULL;
    $2 = NULL;
  } else if (Rf_isFunction($input)) {
    $1 = sfac_r_epoch_trampoline;
    $2 = (void*)$input;
    /* The options keep the function reachable for as long as they may call it. */
    if (TYPEOF(options) == EXTPTRSXP) R_SetExternalPtrProtected(options, $input);
  } else {
    Rf_error("callback must be a function or NULL");
  }
%}
%typemap(scoercein) (sfac_epoch_callback callback, void* user_data) ""

/* ---- Lifetime helpers for the idiomatic layer ---- */

%typemap(scoercein) SEXP ""
%typemap(scoerceout) SEXP ""

%inline %{
/* Destroys the object now (idempotent): later calls see a closed handle. */
SEXP sfac_r_close(SEXP handle) {
  sfac_r_finalize(handle);
  return R_NilValue;
}

/* TRUE while the handle still owns a live object. */
SEXP sfac_r_is_open(SEXP handle) {
  return Rf_ScalarLogical(TYPEOF(handle) == EXTPTRSXP && R_ExternalPtrAddr(handle) != NULL);
}
%}
