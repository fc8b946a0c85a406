# SDDMM: (A %*% t(B)) sampled at the nonzeros of S, combined with S as `mode` says.

sddmm_modes <- c(scaled = 0L, pattern = 1L, residual = 2L)

dense_handle <- function(cptr, m, arg) {
  if (!is.matrix(m) || !is.numeric(m)) sfac_abort(sprintf("'%s' must be a numeric matrix", arg))
  # The library is row-major; R is column-major.
  sfac_ok(native_dense_create(cptr, nrow(m), ncol(m), 0L, as.double(t(m))), arg)[[1L]]
}

sfac_sddmm <- function(a, b, s, mode = c("pattern", "scaled", "residual"), alpha = 1,
                       ctx = default_context()) {
  mode <- match.arg(mode)
  cptr <- ptr_of(ctx, "sfac_context", "ctx")
  sm <- as_sparse_arg(s, ctx, "s")
  on.exit(if (!is.null(sm$temp)) close(sm$temp))
  aptr <- dense_handle(cptr, a, "a")
  on.exit(native_r_close(aptr), add = TRUE)
  bptr <- dense_handle(cptr, b, "b")
  on.exit(native_r_close(bptr), add = TRUE)
  p <- wrap_sparse(sfac_ok(native_sparse_create_like(sm$ptr, NULL), "sfac_sddmm")[[1L]])
  on.exit(close(p), add = TRUE)
  sfac_ok(native_sddmm(cptr, sddmm_modes[[mode]], as.double(alpha), aptr, bptr, sm$ptr, 0, p$ptr,
                     NULL), "sfac_sddmm")
  as_dgc(p)
}
