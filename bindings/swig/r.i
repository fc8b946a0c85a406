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
 * - Output capacities (the C API's `capacity`, `offsets_capacity`, ... after its output arrays)
 *   never cross: each such function is wrapped through a shim below (sfac_r_<name>, wrapped as
 *   native_<name> in its place) that passes, for every array, the element count the wrapper
 *   allocated for it, so a count too small for the call is SFAC_ERR_BUFFER_TOO_SMALL from the
 *   library and never an overrun.
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

/* An output buffer is preceded by a header holding its element count (sfac_r_out_length);
 * 16 bytes keep the elements as aligned as R_alloc's block. */
#define SFAC_R_OUT_HEADER 16

/* Scratch for an output array of `count` elements; 0 means "not wanted" (NULL). */
static void* sfac_r_out_buffer(SEXP count, size_t elem, const char* name, R_xlen_t* n) {
  int64_t c = sfac_r_to_int64(count, name);
  char* block;
  if (c < 0) Rf_error("%s: negative output length", name);
  *n = (R_xlen_t)c;
  if (c == 0) return NULL;
  /* Zeroed: outputs the library leaves unwritten (a bias of a model without biases) read 0. */
  block = R_alloc((size_t)c * elem + SFAC_R_OUT_HEADER, 1);
  memset(block, 0, (size_t)c * elem + SFAC_R_OUT_HEADER);
  memcpy(block, &c, sizeof c);
  return block + SFAC_R_OUT_HEADER;
}

/* The element count sfac_r_out_buffer allocated for `buffer`: the capacity the library gets for
 * it (0 for NULL, whose capacity the library ignores). */
static int64_t sfac_r_out_length(const void* buffer) {
  int64_t c = 0;
  if (buffer) memcpy(&c, (const char*)buffer - SFAC_R_OUT_HEADER, sizeof c);
  return c;
}

/* The capacity of output arrays that share one: the shortest of those allocated (NULL, i.e.
 * skipped, arrays aside; 0 when all are skipped). */
static int64_t sfac_r_shared_capacity(const void* a, const void* b, const void* c) {
  const void* arrays[3];
  int64_t capacity = -1;
  int i;
  arrays[0] = a;
  arrays[1] = b;
  arrays[2] = c;
  for (i = 0; i < 3; ++i) {
    if (arrays[i] && (capacity < 0 || sfac_r_out_length(arrays[i]) < capacity))
      capacity = sfac_r_out_length(arrays[i]);
  }
  return capacity < 0 ? 0 : capacity;
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
SFAC_R_OUT(sfac_solver, sfac_r_out_int)
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

/* ---- Output capacities: shims ----
 *
 * Each C function that takes the capacities of its output arrays is wrapped through a shim with
 * the same parameters less the capacities, named native_<name> like the function it replaces
 * (whose generated wrapper is dropped). The shim passes each array's allocated length
 * (sfac_r_out_length), or for arrays that share a capacity their shortest allocated length, as
 * the C API's rule asks: the real buffer length, never a recomputed size. The output arrays go
 * through the SFAC_R_OUT typemaps above like any other; a single-element output without a
 * capacity (has_biases, global_mean, bias) is non-NULL only with a count of at least 1.
 * The axis of sfac_sparse_degree_order crosses as an int (the enum's value). */

%define SFAC_R_CAPACITY_SHIM(NAME)
%ignore sfac_##NAME;
%rename(native_##NAME) sfac_r_##NAME;
%enddef

SFAC_R_CAPACITY_SHIM(sparse_download_coo)
SFAC_R_CAPACITY_SHIM(sparse_download_csr)
SFAC_R_CAPACITY_SHIM(sparse_download_csc)
SFAC_R_CAPACITY_SHIM(sparse_degree_order)
SFAC_R_CAPACITY_SHIM(sparse_download_bals)
SFAC_R_CAPACITY_SHIM(dense_download)
SFAC_R_CAPACITY_SHIM(idmap_get_ids)
SFAC_R_CAPACITY_SHIM(model_get_user_factors)
SFAC_R_CAPACITY_SHIM(model_get_item_factors)
SFAC_R_CAPACITY_SHIM(model_get_biases)
SFAC_R_CAPACITY_SHIM(model_recommend)
SFAC_R_CAPACITY_SHIM(model_similar_items)
SFAC_R_CAPACITY_SHIM(model_similar)
SFAC_R_CAPACITY_SHIM(model_recalculate_user)
SFAC_R_CAPACITY_SHIM(model_recalculate_users)

%inline %{
sfac_status sfac_r_sparse_download_coo(const sfac_sparse* matrix, int32_t* row_indices,
                                       int32_t* col_indices, float* values) {
  return sfac_sparse_download_coo(matrix, row_indices, col_indices, values,
                                  sfac_r_shared_capacity(row_indices, col_indices, values));
}

sfac_status sfac_r_sparse_download_csr(const sfac_sparse* matrix, int64_t* row_offsets,
                                       int32_t* col_indices, float* values) {
  return sfac_sparse_download_csr(matrix, row_offsets, sfac_r_out_length(row_offsets),
                                  col_indices, values,
                                  sfac_r_shared_capacity(col_indices, values, NULL));
}

sfac_status sfac_r_sparse_download_csc(const sfac_sparse* matrix, int64_t* col_offsets,
                                       int32_t* row_indices, float* values) {
  return sfac_sparse_download_csc(matrix, col_offsets, sfac_r_out_length(col_offsets),
                                  row_indices, values,
                                  sfac_r_shared_capacity(row_indices, values, NULL));
}

sfac_status sfac_r_sparse_degree_order(const sfac_sparse* matrix, int axis, int32_t* order) {
  return sfac_sparse_degree_order(matrix, (sfac_axis)axis, order, sfac_r_out_length(order));
}

sfac_status sfac_r_sparse_download_bals(const sfac_sparse* matrix, int64_t tile_rows,
                                        int64_t tile_cols, uint32_t flags, int64_t* tile_ptr,
                                        int32_t* tile_col, int64_t* seg_ptr, int32_t* seg_col,
                                        float* values, int32_t* row_order, int32_t* col_order) {
  return sfac_sparse_download_bals(
      matrix, tile_rows, tile_cols, flags, tile_ptr, sfac_r_out_length(tile_ptr), tile_col,
      sfac_r_out_length(tile_col), seg_ptr, sfac_r_out_length(seg_ptr), seg_col, values,
      sfac_r_shared_capacity(seg_col, values, NULL), row_order, sfac_r_out_length(row_order),
      col_order, sfac_r_out_length(col_order));
}

sfac_status sfac_r_dense_download(const sfac_dense* matrix, float* data) {
  return sfac_dense_download(matrix, data, sfac_r_out_length(data));
}

sfac_status sfac_r_idmap_get_ids(const sfac_idmap* map, int64_t* original_ids) {
  return sfac_idmap_get_ids(map, original_ids, sfac_r_out_length(original_ids));
}

sfac_status sfac_r_model_get_user_factors(const sfac_model* model, float* out) {
  return sfac_model_get_user_factors(model, out, sfac_r_out_length(out));
}

sfac_status sfac_r_model_get_item_factors(const sfac_model* model, float* out) {
  return sfac_model_get_item_factors(model, out, sfac_r_out_length(out));
}

sfac_status sfac_r_model_get_biases(const sfac_model* model, int* has_biases, float* global_mean,
                                    float* user_biases, float* item_biases) {
  return sfac_model_get_biases(model, has_biases, global_mean, user_biases,
                               sfac_r_out_length(user_biases), item_biases,
                               sfac_r_out_length(item_biases));
}

sfac_status sfac_r_model_recommend(const sfac_model* model, int64_t count, const int32_t* users,
                                   int n, const sfac_sparse* exclude, int64_t allowed_count,
                                   const int32_t* allowed_items, int32_t* out_items,
                                   float* out_scores) {
  return sfac_model_recommend(model, count, users, n, exclude, allowed_count, allowed_items,
                              out_items, out_scores,
                              sfac_r_shared_capacity(out_items, out_scores, NULL));
}

sfac_status sfac_r_model_similar_items(const sfac_model* model, int64_t count,
                                       const int32_t* items, int n, int32_t* out_items,
                                       float* out_scores) {
  return sfac_model_similar_items(model, count, items, n, out_items, out_scores,
                                  sfac_r_shared_capacity(out_items, out_scores, NULL));
}

sfac_status sfac_r_model_similar(const sfac_model* model, int side, int similarity, int64_t count,
                                 const int32_t* ids, int n, int32_t* out_ids, float* out_scores) {
  return sfac_model_similar(model, (sfac_axis)side, (sfac_similarity)similarity, count, ids, n,
                            out_ids, out_scores, sfac_r_shared_capacity(out_ids, out_scores, NULL));
}

sfac_status sfac_r_model_recalculate_user(sfac_model* model, int32_t user, int64_t count,
                                          const int32_t* items, const float* ratings,
                                          float* factors, float* bias) {
  return sfac_model_recalculate_user(model, user, count, items, ratings, factors,
                                     sfac_r_out_length(factors), bias);
}

sfac_status sfac_r_model_recalculate_users(sfac_model* model, int64_t count, const int32_t* users,
                                           const int64_t* offsets, const int32_t* items,
                                           const float* ratings, float* out_factors,
                                           float* out_biases) {
  return sfac_model_recalculate_users(model, count, users, offsets, items, ratings, out_factors,
                                      sfac_r_out_length(out_factors), out_biases);
}
%}

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
