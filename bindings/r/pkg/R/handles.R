# Native objects live behind external pointers held in environments, so close() is seen by every
# copy of the R object. The pointer's C finalizer frees the object at garbage collection;
# close() frees it at once and leaves a handle that every call rejects.

new_sfac_object <- function(ptr, class, ...) {
  obj <- new.env(parent = emptyenv())
  obj$ptr <- ptr
  fields <- list(...)
  for (name in names(fields)) assign(name, fields[[name]], envir = obj)
  class(obj) <- c(class, "sfac_object")
  obj
}

is_open <- function(x) {
  inherits(x, "sfac_object") && isTRUE(native_r_is_open(x$ptr))
}

close.sfac_object <- function(con, ...) {
  native_r_close(con$ptr)
  invisible(NULL)
}

# The pointer of a live object of the expected class.
ptr_of <- function(x, class, arg = deparse(substitute(x))) {
  if (!inherits(x, class)) {
    sfac_abort(sprintf("'%s' must be a %s object, not %s", arg, class, class(x)[1L]))
  }
  if (!isTRUE(native_r_is_open(x$ptr))) {
    sfac_abort(sprintf("'%s' (%s) is closed", arg, class), status = 2L)
  }
  x$ptr
}
