# Contexts choose the backend, thread count and seed. Functions default to one shared CPU
# context, created on first use.

backend_codes <- c(auto = 0L, cpu = 1L, cuda = 2L)

sfac_context <- function(backend = c("auto", "cpu", "cuda"), device = 0L, threads = 0L,
                         seed = 0) {
  backend <- match.arg(backend)
  check_count(seed, "seed")
  out <- sfac_ok(native_context_create(backend_codes[[backend]], as.integer(device),
                                     as.integer(threads), as.double(seed)),
                 "sfac_context")
  ptr <- out[[1L]]
  resolved <- sfac_ok(native_context_get_backend(ptr, 1), "sfac_context")[[1L]]
  new_sfac_object(ptr, "sfac_context",
                  backend = names(backend_codes)[match(resolved, backend_codes)],
                  device_name = sfac_ok(native_context_get_device_name(ptr), "sfac_context")[[1L]],
                  threads = sfac_ok(native_context_get_num_threads(ptr, 1), "sfac_context")[[1L]],
                  seed = as.double(seed))
}

print.sfac_context <- function(x, ...) {
  state <- if (is_open(x)) "" else " (closed)"
  cat(sprintf("<sparsefac context: %s, %s, seed %s>%s\n", x$backend, x$device_name,
              format(x$seed, scientific = FALSE), state))
  invisible(x)
}

package_state <- new.env(parent = emptyenv())

default_context <- function() {
  ctx <- package_state$context
  if (is.null(ctx) || !is_open(ctx)) {
    ctx <- sfac_context("cpu")
    package_state$context <- ctx
  }
  ctx
}

sfac_version <- function() {
  native_version_string()
}

# Whole numbers for int64 arguments: counts, sizes, seeds.
check_count <- function(x, name, min = 0) {
  if (!is.numeric(x) || length(x) != 1L || is.na(x) || x != floor(x) || x < min ||
      x > 2^53) {
    sfac_abort(sprintf("'%s' must be a single whole number >= %s", name, min))
  }
  invisible(x)
}
