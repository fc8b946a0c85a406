# Sparse matrices cross from Matrix::dgCMatrix (CSC, no copy of the pattern on the R side),
# Matrix::dgTMatrix (COO; duplicates summed, as Matrix does) and data.frames of
# (user, item, rating) with 1-based ids. Results come back as dgCMatrix.

sparse_flags <- c(default = 0, sum_duplicates = 1)

sfac_sparse <- function(x, ctx = default_context(), dims = NULL, sum_duplicates = FALSE) {
  cptr <- ptr_of(ctx, "sfac_context", "ctx")
  flags <- if (sum_duplicates) 1 else 0
  if (inherits(x, "sfac_matrix")) return(x)
  if (is.data.frame(x)) {
    ptr <- sparse_from_triplets(cptr, x, dims, flags)
  } else if (inherits(x, "dgCMatrix")) {
    # nnz is the length of the arrays passed (the library checks it against x@p); a
    # dgCMatrix built without validation could hold fewer row indices than values.
    if (length(x@i) != length(x@x)) {
      sfac_abort(sprintf("a dgCMatrix with %d row indices but %d values", length(x@i),
                         length(x@x)), 4L)
    }
    ptr <- sfac_ok(native_sparse_create_csc(cptr, nrow(x), ncol(x), as.double(x@p), x@i, x@x,
                                          length(x@x), flags), "sfac_sparse")[[1L]]
  } else if (inherits(x, "dgTMatrix")) {
    ptr <- sfac_ok(native_sparse_create_coo(cptr, nrow(x), ncol(x), length(x@i), x@i, x@j, x@x,
                                          1), "sfac_sparse")[[1L]]
  } else if (inherits(x, "sparseMatrix") || is.matrix(x)) {
    general <- methods::as(methods::as(methods::as(x, "CsparseMatrix"), "generalMatrix"),
                           "dMatrix")
    if (!inherits(general, "dgCMatrix")) {
      sfac_abort(sprintf("cannot make a sparse matrix from %s", class(x)[1L]))
    }
    return(sfac_sparse(general, ctx, dims, sum_duplicates))
  } else {
    sfac_abort(sprintf("cannot make a sparse matrix from %s", class(x)[1L]))
  }
  wrap_sparse(ptr)
}

# A data.frame's first three columns (or user/item/rating by name): 1-based integer ids.
sparse_from_triplets <- function(cptr, df, dims, flags) {
  cols <- if (all(c("user", "item", "rating") %in% names(df))) {
    df[c("user", "item", "rating")]
  } else {
    if (ncol(df) < 3L) sfac_abort("a ratings data.frame needs columns user, item, rating")
    df[1:3]
  }
  users <- ids_to_index(cols[[1L]], "user")
  items <- ids_to_index(cols[[2L]], "item")
  ratings <- cols[[3L]]
  if (!is.numeric(ratings)) sfac_abort("ratings must be numeric")
  if (is.null(dims)) {
    dims <- c(if (length(users)) max(users) + 1 else 0, if (length(items)) max(items) + 1 else 0)
  }
  if (length(dims) != 2L) sfac_abort("'dims' must be c(users, items)")
  sfac_ok(native_sparse_create_coo(cptr, as.double(dims[1L]), as.double(dims[2L]),
                                 length(users), users, items, as.double(ratings), flags),
          "sfac_sparse")[[1L]]
}

# 1-based R ids to the library's 0-based indices; range checks are the library's (its
# messages name the index), but NA and fractions are caught here.
# 1-based R ids to the library's 0-based indices. With `count` (the model's users or items),
# an id past it is reported here in R's numbering, with its position in `ids`; the library
# would name the 0-based index and position.
ids_to_index <- function(ids, what, count = NULL) {
  if (anyNA(ids)) sfac_abort(sprintf("%s ids must not be NA", what))
  if (!is.numeric(ids)) sfac_abort(sprintf("%s ids must be numeric", what))
  if (any(ids != floor(ids))) sfac_abort(sprintf("%s ids must be whole numbers", what))
  limit <- if (is.null(count)) .Machine$integer.max else count
  out <- ids < 1 | ids > limit
  if (any(out)) {
    at <- which(out)[1L]
    range <- if (is.null(count)) "ids start at 1" else sprintf("ids are 1..%s", format(count))
    sfac_abort(sprintf("%s id %s (position %d) out of range (%s)", what, format(ids[at]), at,
                       range), 3L)
  }
  as.integer(ids - 1)
}

wrap_sparse <- function(ptr) {
  shape <- sfac_ok(native_sparse_get_shape(ptr, 1, 1, 1), "sfac_sparse")
  new_sfac_object(ptr, "sfac_matrix", nrow = shape[[1L]], ncol = shape[[2L]],
                  nnz = shape[[3L]])
}

dim.sfac_matrix <- function(x) c(x$nrow, x$ncol)

print.sfac_matrix <- function(x, ...) {
  state <- if (is_open(x)) "" else " (closed)"
  cat(sprintf("<sparsefac sparse matrix: %s x %s, %s nonzeros>%s\n",
              format(x$nrow, scientific = FALSE), format(x$ncol, scientific = FALSE),
              format(x$nnz, scientific = FALSE), state))
  invisible(x)
}

# COO download, 1-based.
sparse_triplets <- function(m) {
  ptr <- ptr_of(m, "sfac_matrix", "x")
  out <- sfac_ok(native_sparse_download_coo(ptr, m$nnz, m$nnz, m$nnz), "download")
  list(i = out[[1L]] + 1L, j = out[[2L]] + 1L, x = out[[3L]])
}

as_dgCMatrix <- function(x) {
  if (!inherits(x, "sfac_matrix")) sfac_abort("'x' must be an sfac_matrix")
  as_dgc(x)
}

write_matrix_market <- function(x, path, ctx = default_context()) {
  check_path(path)
  m <- as_sparse_arg(x, ctx, "x")
  on.exit(if (!is.null(m$temp)) close(m$temp))
  sfac_ok(native_write_matrix_market(m$ptr, path.expand(path)), "write_matrix_market")
  invisible(path)
}

check_path <- function(path) {
  if (!is.character(path) || length(path) != 1L || is.na(path)) {
    sfac_abort("'path' must be a single file name")
  }
}

as_dgc <- function(m) {
  t <- sparse_triplets(m)
  sparseMatrix(i = t$i, j = t$j, x = t$x, dims = c(m$nrow, m$ncol))
}

as.data.frame.sfac_matrix <- function(x, row.names = NULL, optional = FALSE, ...) {
  t <- sparse_triplets(x)
  data.frame(user = t$i, item = t$j, rating = t$x, row.names = row.names)
}

sfac_read_sparse <- function(path, ctx = default_context(),
                             format = c("auto", "matrix_market", "triplets", "movielens_dat",
                                        "csv"),
                             one_based = FALSE, remap_ids = FALSE, sum_duplicates = FALSE) {
  format <- match.arg(format)
  code <- match(format, c("auto", "matrix_market", "triplets", "movielens_dat", "csv")) - 1L
  flags <- (if (sum_duplicates) 1 else 0) + (if (remap_ids) 256 else 0) +
    (if (one_based) 512 else 0)
  if (!is.character(path) || length(path) != 1L || is.na(path)) {
    sfac_abort("'path' must be a single file name")
  }
  out <- sfac_ok(native_read_sparse(ptr_of(ctx, "sfac_context", "ctx"), path.expand(path), code,
                                  flags), "sfac_read_sparse")
  m <- wrap_sparse(out[[1L]])
  if (remap_ids) {
    m$user_ids <- idmap_ids(out[[2L]])
    m$item_ids <- idmap_ids(out[[3L]])
    # The maps stay with the matrix for lookup_ids(); close(m) frees them too.
    m$id_maps <- list(user = out[[2L]], item = out[[3L]])
  }
  m
}

close.sfac_matrix <- function(con, ...) {
  for (map in con$id_maps) native_r_close(map)
  NextMethod()
}

# Original file ids -> 1-based indices of a matrix read with remap_ids = TRUE.
lookup_ids <- function(x, ids, side = c("user", "item"), strict = TRUE) {
  side <- match.arg(side)
  ptr_of(x, "sfac_matrix", "x")
  if (is.null(x$id_maps)) {
    sfac_abort("'x' has no id maps: read it with sfac_read_sparse(..., remap_ids = TRUE)")
  }
  map <- x$id_maps[[side]]
  if (!isTRUE(native_r_is_open(map))) sfac_abort("the id map is closed", 2L)
  if (!is.numeric(ids)) sfac_abort(sprintf("%s ids must be numeric", side))
  if (anyNA(ids)) sfac_abort(sprintf("%s ids must not be NA", side))
  if (any(ids != floor(ids) | abs(ids) > 2^53)) {
    sfac_abort(sprintf("%s ids must be whole numbers of magnitude at most 2^53", side))
  }
  found <- sfac_ok(native_idmap_lookup(map, length(ids), as.double(ids), length(ids)),
                   "lookup_ids")[[1L]]
  if (length(ids) == 0L) return(integer(0))
  missing <- found < 0L
  if (strict && any(missing)) {
    bad <- ids[missing]
    sfac_abort(sprintf("lookup_ids: %d %s id%s did not occur in the file (first: %s)",
                       length(bad), side, if (length(bad) == 1L) "" else "s",
                       format(bad[1L], scientific = FALSE)), 3L)
  }
  found <- found + 1L
  found[missing] <- NA_integer_
  found
}

idmap_ids <- function(ptr) {
  n <- sfac_ok(native_idmap_get_size(ptr, 1), "idmap")[[1L]]
  sfac_ok(native_idmap_get_ids(ptr, n), "idmap")[[1L]]
}

# Accepts what sfac_sparse accepts; a fresh conversion is closed by the caller's on.exit.
as_sparse_arg <- function(x, ctx, arg) {
  if (is.null(x)) return(list(ptr = NULL, temp = NULL))
  if (inherits(x, "sfac_matrix")) return(list(ptr = ptr_of(x, "sfac_matrix", arg), temp = NULL))
  m <- sfac_sparse(x, ctx)
  list(ptr = m$ptr, temp = m, matrix = m)
}

# ---- Reordering ---------------------------------------------------------------------------------
# Orders are 1-based, like every index of this package: degree_order() returns 1-based
# indices and permute(x, row_order, col_order) is x[row_order, col_order]. So that messages
# name R's indices, permutations are checked here (the library's checks, and its wording,
# with 1-based positions and values) before the 0-based copy goes to the library.

axis_codes <- c(rows = 0L, cols = 1L)

degree_order <- function(x, axis = c("rows", "cols"), ctx = default_context()) {
  axis <- match.arg(axis)
  m <- as_sparse_arg(x, ctx, "x")
  on.exit(if (!is.null(m$temp)) close(m$temp))
  holder <- if (is.null(m$temp)) x else m$temp
  n <- if (axis == "rows") holder$nrow else holder$ncol
  order <- sfac_ok(native_sparse_degree_order(m$ptr, axis_codes[[axis]], n),
                   "degree_order")[[1L]]
  order + 1L
}

permute <- function(x, row_order = NULL, col_order = NULL, ctx = default_context()) {
  m <- as_sparse_arg(x, ctx, "x")
  on.exit(if (!is.null(m$temp)) close(m$temp))
  holder <- if (is.null(m$temp)) x else m$temp
  rows <- order_to_index(row_order, holder$nrow, "row_order", "rows")
  cols <- order_to_index(col_order, holder$ncol, "col_order", "columns")
  out <- wrap_sparse(sfac_ok(native_sparse_permute(m$ptr, rows, cols), "permute")[[1L]])
  if (inherits(x, "sfac_matrix")) return(out)
  # R matrices in, a dgCMatrix out (as sfac_sddmm and split_random do).
  on.exit(close(out), add = TRUE)
  as_dgc(out)
}

# A 1-based permutation of 1..n (NULL passes through) as the library's 0-based integers.
order_to_index <- function(order, n, arg, side) {
  if (is.null(order)) return(NULL)
  if (!is.numeric(order)) sfac_abort(sprintf("'%s' must be numeric", arg))
  if (anyNA(order)) sfac_abort(sprintf("'%s' must not contain NA", arg))
  if (any(order != floor(order))) sfac_abort(sprintf("'%s' must hold whole numbers", arg))
  if (length(order) != n) {
    sfac_abort(sprintf("'%s' has %d entries, the matrix %s %s", arg, length(order),
                       format(n, scientific = FALSE), side), 4L)
  }
  outside <- which(order < 1 | order > n)
  if (length(outside)) {
    k <- outside[1L]
    sfac_abort(sprintf("%s[%d] = %s is outside [1, %s]", arg, k,
                       format(order[k], scientific = FALSE), format(n, scientific = FALSE)))
  }
  repeated <- which(duplicated(order))
  if (length(repeated)) {
    k <- repeated[1L]
    sfac_abort(sprintf("%s[%d] = %s repeats %s[%d]", arg, k, format(order[k]), arg,
                       match(order[k], order)))
  }
  as.integer(order - 1)
}
