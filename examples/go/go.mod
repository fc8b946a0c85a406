module github.com/sparsefac/sparsefac/examples/go

go 1.19

require github.com/sparsefac/sparsefac/bindings/go v0.0.0

// The binding from this checkout; an application outside the repository points the replace
// at its own copy (there is no module proxy involved either way).
replace github.com/sparsefac/sparsefac/bindings/go => ../../bindings/go
