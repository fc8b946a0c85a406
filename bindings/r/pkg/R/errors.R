# Library statuses become R conditions of class "sparsefac_error" carrying the status, so callers
# can tell a bad argument from an I/O failure with tryCatch(..., sparsefac_error = ).

# The status's enum name from the header, as SWIG defined it: SFAC_ERR_OUT_OF_RANGE ->
# class "sparsefac_out_of_range".
status_class <- function(status) {
  codes <- get(".__E___sfac_status")
  name <- names(codes)[match(status, codes)]
  if (is.na(name)) "sparsefac_unknown_status" else paste0("sparsefac_", tolower(sub("^SFAC_ERR_", "", name)))
}

sfac_condition <- function(message, status, call = NULL, parent = NULL) {
  name <- native_status_string(as.integer(status))
  structure(
    class = c(status_class(status), "sparsefac_error", "error", "condition"),
    list(message = message, call = call, status = as.integer(status), status_name = name,
         parent = parent))
}

# Raises the library's own message for a failed call.
sfac_fail <- function(status, what, parent = NULL) {
  msg <- native_last_error()
  if (!nzchar(msg)) msg <- native_status_string(as.integer(status))
  stop(sfac_condition(paste0(what, ": ", msg), status, call = sys.call(-2L), parent = parent))
}

# Argument errors found on the R side, before the library is called (status names the kind).
sfac_abort <- function(message, status = 1L) {
  stop(sfac_condition(message, status, call = sys.call(-1L)))
}

# A wrapper's result is list(status, outputs...): the outputs, or an error.
sfac_ok <- function(res, what) {
  if (res[[1L]] != 0L) sfac_fail(res[[1L]], what)
  res[-1L]
}
