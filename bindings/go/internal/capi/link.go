// Package capi is the SWIG-generated low-level layer of the Go binding (from capi.swig) plus
// the epoch-callback dispatcher. It is internal: package sparsefac is the public API.
package capi

// The library and its header are found through pkg-config: the installed sparsefac.pc, or the
// uninstalled one CMake writes into <build>/bindings/go/pkgconfig (see bindings/go/README.md).

// #cgo pkg-config: sparsefac
import "C"
