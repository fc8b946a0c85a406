library(testthat)
library(sparsefac)

test_check("sparsefac")
