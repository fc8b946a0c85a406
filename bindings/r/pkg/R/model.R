# Trained models: queries, fold-in, persistence. Users and items are 1-based, as R indexes.

wrap_model <- function(ptr) {
  shape <- sfac_ok(native_model_get_shape(ptr, 1, 1, 1), "model")
  algorithm <- sfac_ok(native_model_get_algorithm(ptr, 1), "model")[[1L]]
  new_sfac_object(ptr, "sfac_model", users = shape[[1L]], items = shape[[2L]],
                  rank = shape[[3L]], algorithm = algorithm_names[algorithm + 1L])
}

model_ptr <- function(model) ptr_of(model, "sfac_model", "model")

print.sfac_model <- function(x, ...) {
  state <- if (is_open(x)) "" else " (closed)"
  cat(sprintf("<sparsefac model: %s, %s users x %s items, rank %s>%s\n", x$algorithm,
              format(x$users, scientific = FALSE), format(x$items, scientific = FALSE),
              x$rank, state))
  invisible(x)
}

summary.sfac_model <- function(object, ...) {
  ptr <- model_ptr(object)
  biases <- sfac_ok(native_model_get_biases(ptr, 1, 1, 0, 0), "summary")
  uf <- user_factors(object)
  vf <- item_factors(object)
  structure(class = "summary.sfac_model",
            list(algorithm = object$algorithm, users = object$users, items = object$items,
                 rank = object$rank, has_biases = biases[[1L]] == 1L,
                 global_mean = if (biases[[1L]] == 1L) biases[[2L]] else NA_real_,
                 user_norm = summary(sqrt(rowSums(uf^2))),
                 item_norm = summary(sqrt(rowSums(vf^2)))))
}

print.summary.sfac_model <- function(x, ...) {
  cat(sprintf("sparsefac %s model: %s users x %s items, rank %s\n", x$algorithm,
              format(x$users, scientific = FALSE), format(x$items, scientific = FALSE), x$rank))
  if (x$has_biases) cat(sprintf("biases: yes (global mean %.4g)\n", x$global_mean))
  else cat("biases: no\n")
  cat("user factor norms:\n")
  print(x$user_norm)
  cat("item factor norms:\n")
  print(x$item_norm)
  invisible(x)
}

user_factors <- function(model) {
  ptr <- model_ptr(model)
  v <- sfac_ok(native_model_get_user_factors(ptr, model$users * model$rank), "user_factors")[[1L]]
  matrix(v, nrow = model$users, ncol = model$rank, byrow = TRUE)
}

item_factors <- function(model) {
  ptr <- model_ptr(model)
  v <- sfac_ok(native_model_get_item_factors(ptr, model$items * model$rank), "item_factors")[[1L]]
  matrix(v, nrow = model$items, ncol = model$rank, byrow = TRUE)
}

# predict(model, users, items) or predict(model, data.frame(user, item, ...)).
predict.sfac_model <- function(object, users, items = NULL, ...) {
  ptr <- model_ptr(object)
  if (is.data.frame(users)) {
    df <- users
    if (!all(c("user", "item") %in% names(df))) df <- stats::setNames(df[1:2], c("user", "item"))
    users <- df$user
    items <- df$item
  }
  if (is.null(items)) sfac_abort("predict needs users and items (or a data.frame of them)")
  if (length(users) != length(items)) {
    sfac_abort(sprintf("users (%d) and items (%d) differ in length", length(users),
                       length(items)), 4L)
  }
  u <- ids_to_index(users, "user", object$users)
  i <- ids_to_index(items, "item", object$items)
  sfac_ok(native_model_predict(ptr, length(u), u, i, length(u)), "predict")[[1L]]
}

evaluate <- function(model, ratings, ctx = default_context()) {
  ptr <- model_ptr(model)
  rm <- as_sparse_arg(ratings, ctx, "ratings")
  on.exit(if (!is.null(rm$temp)) close(rm$temp))
  out <- sfac_ok(native_model_evaluate(ptr, rm$ptr, 1, 1), "evaluate")
  c(rmse = out[[1L]], mae = out[[2L]])
}

ranking_metrics <- function(model, test, exclude = NULL, k = 10L, ctx = default_context()) {
  ptr <- model_ptr(model)
  tm <- as_sparse_arg(test, ctx, "test")
  on.exit(if (!is.null(tm$temp)) close(tm$temp))
  em <- as_sparse_arg(exclude, ctx, "exclude")
  on.exit(if (!is.null(em$temp)) close(em$temp), add = TRUE)
  out <- sfac_ok(native_model_ranking_metrics(ptr, em$ptr, tm$ptr, as.integer(k), 1, 1, 1, 1),
                 "ranking_metrics")
  c(precision = out[[1L]], recall = out[[2L]], ndcg = out[[3L]], map = out[[4L]])
}

# Top-n items per user as a long data.frame (user, rank, item, score), best first; users with
# fewer than n candidates get fewer rows.
recommend <- function(model, users, n = 10L, exclude = NULL, items = NULL,
                      ctx = default_context()) {
  ptr <- model_ptr(model)
  check_count(n, "n", min = 1)
  u <- ids_to_index(users, "user", model$users)
  em <- as_sparse_arg(exclude, ctx, "exclude")
  on.exit(if (!is.null(em$temp)) close(em$temp))
  allowed <- if (is.null(items)) NULL else ids_to_index(items, "item", model$items)
  total <- length(u) * n
  out <- sfac_ok(native_model_recommend(ptr, length(u), u, as.integer(n), em$ptr,
                                      length(allowed), allowed, total, total), "recommend")
  ranked_frame("user", users, n, out[[1L]], out[[2L]])
}

similar_items <- function(model, items, n = 10L) {
  ptr <- model_ptr(model)
  check_count(n, "n", min = 1)
  i <- ids_to_index(items, "item", model$items)
  total <- length(i) * n
  out <- sfac_ok(native_model_similar_items(ptr, length(i), i, as.integer(n), total, total),
                 "similar_items")
  df <- ranked_frame("item", items, n, out[[1L]], out[[2L]])
  names(df)[3L] <- "similar"
  df
}

ranked_frame <- function(key, keys, n, found, scores) {
  df <- data.frame(rep(as.integer(keys), each = n), rep(seq_len(n), length(keys)),
                   found + 1L, scores)
  names(df) <- c(key, "rank", "item", "score")
  df <- df[found >= 0L, , drop = FALSE]
  rownames(df) <- NULL
  df
}

# Fold-in: the factors a user with these ratings gets against the fixed item factors. With
# `user` the model's row for that user is replaced as well.
recalculate_user <- function(model, items, ratings, user = NULL) {
  ptr <- model_ptr(model)
  if (length(items) != length(ratings)) {
    sfac_abort(sprintf("items (%d) and ratings (%d) differ in length", length(items),
                       length(ratings)), 4L)
  }
  i <- ids_to_index(items, "item", model$items)
  if (!is.numeric(ratings)) sfac_abort("ratings must be numeric")
  u <- if (is.null(user)) -1L else ids_to_index(user, "user", model$users)
  if (length(u) != 1L) sfac_abort("'user' must be a single id or NULL")
  out <- sfac_ok(native_model_recalculate_user(ptr, u, length(i), i, as.double(ratings),
                                             model$rank, 1), "recalculate_user")
  factors <- out[[1L]]
  has_biases <- sfac_ok(native_model_get_biases(ptr, 1, 0, 0, 0), "recalculate_user")[[1L]]
  if (has_biases == 1L) attr(factors, "bias") <- out[[2L]]
  factors
}

save_model <- function(model, path) {
  ptr <- model_ptr(model)
  if (!is.character(path) || length(path) != 1L || is.na(path)) {
    sfac_abort("'path' must be a single file name")
  }
  sfac_ok(native_model_save(ptr, path.expand(path)), "save_model")
  invisible(path)
}

export_libmf <- function(model, path) {
  ptr <- model_ptr(model)
  check_path(path)
  sfac_ok(native_model_export_libmf(ptr, path.expand(path)), "export_libmf")
  invisible(path)
}

load_model <- function(path, ctx = default_context()) {
  if (!is.character(path) || length(path) != 1L || is.na(path)) {
    sfac_abort("'path' must be a single file name")
  }
  out <- sfac_ok(native_model_load(ptr_of(ctx, "sfac_context", "ctx"), path.expand(path)),
                 "load_model")
  wrap_model(out[[1L]])
}
