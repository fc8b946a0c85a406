module github.com/sparsefac/sparsefac/bindings/go

go 1.19
