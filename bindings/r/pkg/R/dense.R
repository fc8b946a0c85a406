# Dense matrices kept in the library (row-major), in float32 or a 16-bit storage type. They
# serve sfac_sddmm as operands without a conversion per call.

dtype_codes <- c(float32 = 0L, float16 = 1L, bfloat16 = 2L)

sfac_dense <- function(x, dtype = c("float32", "float16", "bfloat16"), ctx = default_context()) {
  dtype <- match.arg(dtype)
  cptr <- ptr_of(ctx, "sfac_context", "ctx")
  if (!is.matrix(x) || !is.numeric(x)) sfac_abort("'x' must be a numeric matrix")
  ptr <- sfac_ok(native_dense_create(cptr, nrow(x), ncol(x), dtype_codes[[dtype]],
                                     as.double(t(x))), "sfac_dense")[[1L]]
  wrap_dense(ptr)
}

wrap_dense <- function(ptr) {
  shape <- sfac_ok(native_dense_get_shape(ptr, 1, 1), "sfac_dense")
  code <- sfac_ok(native_dense_get_dtype(ptr, 1), "sfac_dense")[[1L]]
  new_sfac_object(ptr, "sfac_dense", nrow = shape[[1L]], ncol = shape[[2L]],
                  dtype = names(dtype_codes)[match(code, dtype_codes)])
}

dim.sfac_dense <- function(x) c(x$nrow, x$ncol)

print.sfac_dense <- function(x, ...) {
  state <- if (is_open(x)) "" else " (closed)"
  cat(sprintf("<sparsefac dense matrix: %s x %s, %s>%s\n", format(x$nrow, scientific = FALSE),
              format(x$ncol, scientific = FALSE), x$dtype, state))
  invisible(x)
}

# Download: the stored values, converted to double.
as.matrix.sfac_dense <- function(x, ...) {
  ptr <- ptr_of(x, "sfac_dense", "x")
  v <- sfac_ok(native_dense_download(ptr, x$nrow * x$ncol), "as.matrix")[[1L]]
  matrix(v, nrow = x$nrow, ncol = x$ncol, byrow = TRUE)
}

# Replaces the contents (same shape), converted to the matrix's dtype.
dense_upload <- function(x, values) {
  ptr <- ptr_of(x, "sfac_dense", "x")
  if (!is.matrix(values) || !is.numeric(values)) sfac_abort("'values' must be a numeric matrix")
  if (nrow(values) != x$nrow || ncol(values) != x$ncol) {
    sfac_abort(sprintf("'values' is %d x %d, the matrix %s x %s", nrow(values), ncol(values),
                       format(x$nrow, scientific = FALSE), format(x$ncol, scientific = FALSE)),
               4L)
  }
  sfac_ok(native_dense_upload(ptr, as.double(t(values))), "dense_upload")
  invisible(x)
}

# A new dense matrix (same dtype) whose row r is row order[r] of x: as.matrix(x)[order, ].
# order is 1-based and checked by order_to_index (sparse.R).
permute_rows <- function(x, order) {
  ptr <- ptr_of(x, "sfac_dense", "x")
  idx <- order_to_index(order, x$nrow, "order", "rows")
  if (is.null(idx)) sfac_abort("'order' must be a permutation of the rows, not NULL")
  wrap_dense(sfac_ok(native_dense_permute_rows(ptr, idx), "permute_rows")[[1L]])
}
