# SDDMM: (A %*% t(B)) sampled at the nonzeros of S, combined with S as `mode` says, plus
# beta times the previous values of P; plans keep the analysis of a pattern for reuse.

sddmm_modes <- c(scaled = 0L, pattern = 1L, residual = 2L)
sddmm_algorithms <- c(auto = 0L, row_split = 1L, nnz_split = 2L, tiled = 3L, cusparse = 4L)

# An operand's pointer and whether it is a fresh conversion (closed by the caller).
dense_handle <- function(cptr, m, arg) {
  if (inherits(m, "sfac_dense")) return(list(ptr = ptr_of(m, "sfac_dense", arg), temp = FALSE))
  if (!is.matrix(m) || !is.numeric(m)) {
    sfac_abort(sprintf("'%s' must be a numeric matrix or an sfac_dense", arg))
  }
  # The library is row-major; R is column-major.
  list(ptr = sfac_ok(native_dense_create(cptr, nrow(m), ncol(m), 0L, as.double(t(m))),
                     arg)[[1L]], temp = TRUE)
}

# The values of `x` in the canonical (row-major) order of the library matrix `pattern`; `x`
# must have exactly that pattern. A numeric vector is taken as those values already.
values_on_pattern <- function(pattern, x, ctx, arg) {
  if (is.numeric(x) && is.null(dim(x))) {
    if (length(x) != pattern$nnz) {
      sfac_abort(sprintf("'%s' has %d values, the pattern %s nonzeros", arg, length(x),
                         format(pattern$nnz, scientific = FALSE)), 4L)
    }
    return(as.double(x))
  }
  xm <- as_sparse_arg(x, ctx, arg)
  on.exit(if (!is.null(xm$temp)) close(xm$temp))
  holder <- if (is.null(xm$temp)) x else xm$temp
  if (!identical(dim(holder), dim(pattern))) {
    sfac_abort(sprintf("'%s' is %s x %s, the pattern %s x %s", arg, holder$nrow, holder$ncol,
                       pattern$nrow, pattern$ncol), 4L)
  }
  want <- sparse_triplets(pattern)
  have <- sparse_triplets(holder)
  if (!identical(have$i, want$i) || !identical(have$j, want$j)) {
    sfac_abort(sprintf("'%s' does not have the sparsity pattern of the SDDMM's s", arg), 4L)
  }
  have$x
}

sfac_sddmm_plan <- function(pattern, k, algorithm = c("auto", "row_split", "nnz_split", "tiled", "cusparse"),
                            ctx = default_context()) {
  algorithm <- match.arg(algorithm)
  check_count(k, "k", min = 1)
  cptr <- ptr_of(ctx, "sfac_context", "ctx")
  pm <- as_sparse_arg(pattern, ctx, "pattern")
  if (is.null(pm$temp)) {
    pm$matrix <- pattern
  }
  ptr <- sfac_ok(native_sddmm_plan_create(cptr, pm$ptr, as.double(k),
                                          sddmm_algorithms[[algorithm]]), "sfac_sddmm_plan")[[1L]]
  resolved <- sfac_ok(native_sddmm_plan_get_algorithm(ptr, 1), "sfac_sddmm_plan")[[1L]]
  # The plan keeps its pattern: sfac_sddmm(plan = ) runs on matrices sharing it.
  new_sfac_object(ptr, "sfac_sddmm_plan", pattern = pm$matrix, k = as.double(k),
                  algorithm = names(sddmm_algorithms)[match(resolved, sddmm_algorithms)],
                  ctx = ctx)
}

print.sfac_sddmm_plan <- function(x, ...) {
  state <- if (is_open(x)) "" else " (closed)"
  cat(sprintf("<sparsefac SDDMM plan: %s, %s x %s pattern with %s nonzeros, k = %s>%s\n",
              x$algorithm, format(x$pattern$nrow, scientific = FALSE),
              format(x$pattern$ncol, scientific = FALSE),
              format(x$pattern$nnz, scientific = FALSE), format(x$k, scientific = FALSE), state))
  invisible(x)
}

sfac_sddmm <- function(a, b, s = NULL, mode = c("pattern", "scaled", "residual"), alpha = 1,
                       beta = 0, p = NULL, plan = NULL, ctx = default_context()) {
  mode <- match.arg(mode)
  cptr <- ptr_of(ctx, "sfac_context", "ctx")
  for (name in c("alpha", "beta")) {
    v <- get(name)
    if (!is.numeric(v) || length(v) != 1L || is.na(v)) {
      sfac_abort(sprintf("'%s' must be a single number", name))
    }
  }
  plan_ptr <- NULL
  if (!is.null(plan)) {
    plan_ptr <- ptr_of(plan, "sfac_sddmm_plan", "plan")
    if (!is_open(plan$pattern)) sfac_abort("the plan's pattern matrix is closed", 2L)
  }
  if (is.null(s)) {
    if (is.null(plan)) sfac_abort("sfac_sddmm needs 's' (or a plan, whose pattern is used)")
    s <- plan$pattern
  }
  if (!is.null(plan) && !inherits(s, "sfac_matrix")) {
    # A plan applies to matrices made from its pattern: s's values on the plan's pattern.
    values <- values_on_pattern(plan$pattern, s, ctx, "s")
    sm <- list(ptr = NULL, temp = wrap_sparse(sfac_ok(native_sparse_create_like(
      plan$pattern$ptr, values), "sfac_sddmm")[[1L]]))
    sm$ptr <- sm$temp$ptr
  } else {
    sm <- as_sparse_arg(s, ctx, "s")
  }
  on.exit(if (!is.null(sm$temp)) close(sm$temp))
  s_obj <- if (is.null(sm$temp)) s else sm$temp
  ad <- dense_handle(cptr, a, "a")
  on.exit(if (ad$temp) native_r_close(ad$ptr), add = TRUE)
  bd <- dense_handle(cptr, b, "b")
  on.exit(if (bd$temp) native_r_close(bd$ptr), add = TRUE)
  # P starts from p's values (s's when p is NULL); they are only read when beta != 0.
  old <- if (beta == 0) NULL else if (is.null(p)) NULL else values_on_pattern(s_obj, p, ctx, "p")
  if (beta != 0 && is.null(p)) old <- sparse_triplets(s_obj)$x
  out <- wrap_sparse(sfac_ok(native_sparse_create_like(sm$ptr, old), "sfac_sddmm")[[1L]])
  on.exit(close(out), add = TRUE)
  sfac_ok(native_sddmm(cptr, sddmm_modes[[mode]], as.double(alpha), ad$ptr, bd$ptr, sm$ptr,
                       as.double(beta), out$ptr, plan_ptr), "sfac_sddmm")
  as_dgc(out)
}
