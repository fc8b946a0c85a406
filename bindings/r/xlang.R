# Cross-language model protocol (see bindings/CMakeLists.txt): `save` writes r.sfm and r.pred
# into $SFAC_XLANG_DIR, `load` checks every <lang>.sfm there against its <lang>.pred bit for bit.
# Users and items are 0..9 in the files (the library's indices); R's ids are those plus 1.
suppressPackageStartupMessages(library(sparsefac))

float_bits <- function(x) {
  bits <- readBin(writeBin(x, raw(), size = 4, endian = "little"), "integer", n = length(x),
                  size = 4, endian = "little")
  ifelse(bits < 0, bits + 2^32, bits)
}

pairs <- expand.grid(i = 0:9, u = 0:9)[, c("u", "i")]
dir <- Sys.getenv("SFAC_XLANG_DIR")
if (!nzchar(dir)) stop("SFAC_XLANG_DIR is not set")
mode <- commandArgs(trailingOnly = TRUE)[1]

if (identical(mode, "save")) {
  dir.create(dir, showWarnings = FALSE, recursive = TRUE)
  ctx <- sfac_context("cpu", threads = 1, seed = 7)
  ratings <- synthesize_ratings(300, 200, 6000, rank = 4, noise = 0.1, skew = 0, ctx = ctx)
  model <- als(ratings, rank = 4, iterations = 5, deterministic = TRUE, ctx = ctx)
  save_model(model, file.path(dir, "r.sfm"))
  scores <- predict(model, pairs$u + 1, pairs$i + 1)
  writeLines(sprintf("%d %d %s", pairs$u, pairs$i, format(float_bits(scores), scientific = FALSE,
                                                          trim = TRUE)),
             file.path(dir, "r.pred"))
  cat("saved", file.path(dir, "r.sfm"), "\n")
} else if (identical(mode, "load")) {
  models <- Sys.glob(file.path(dir, "*.sfm"))
  if (length(models) == 0) stop("no .sfm model in ", dir)
  ctx <- sfac_context("cpu", threads = 1, seed = 7)
  for (path in models) {
    expected <- read.table(sub("\\.sfm$", ".pred", path), col.names = c("u", "i", "bits"),
                           colClasses = c("integer", "integer", "numeric"))
    stopifnot(nrow(expected) == 100)
    model <- load_model(path, ctx = ctx)
    got <- float_bits(predict(model, expected$u + 1, expected$i + 1))
    bad <- which(got != expected$bits)
    if (length(bad) > 0) {
      stop(sprintf("%s: %d of 100 scores differ, first (%d, %d): %s != %s", basename(path),
                   length(bad), expected$u[bad[1]], expected$i[bad[1]],
                   format(got[bad[1]], scientific = FALSE),
                   format(expected$bits[bad[1]], scientific = FALSE)))
    }
    cat(basename(path), ": 100 scores bit-identical\n", sep = "")
  }
} else {
  stop("usage: xlang.R save|load")
}
