package sparsefac

import (
	"sync"

	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// handle owns one library object for a wrapper (Context, SparseMatrix, ...). Calls acquire it
// for their duration; Close marks it closed and the object is destroyed once the last call in
// flight has released it. So a Close racing with calls from other goroutines never frees
// memory under them, and a call that starts after Close gets StatusInvalidHandle. Acquiring is
// reentrant (one call may hold the same object twice, e.g. SDDMM with P == S).
//
// Its size (and the pointer in destroy) also keeps every wrapper out of Go's tiny allocator,
// which packs small pointer-free objects into shared 16-byte blocks: a finalizer there may
// never run while a neighbour in the block stays reachable (measured: thousands of leaked
// objects in TestFinalizersReleaseUnclosedObjects with an 8-byte wrapper).
type handle[H ~uintptr] struct {
	mu      sync.Mutex
	h       H
	users   int
	closed  bool
	destroy func(H) capi.Enum_SS_sfac_status
}

func (o *handle[H]) init(h H, destroy func(H) capi.Enum_SS_sfac_status) {
	o.h, o.destroy = h, destroy
	liveObjects.Add(1)
}

// acquire returns the C handle and pins it until release.
func (o *handle[H]) acquire(what string) (H, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.h == 0 {
		return 0, closedError(what)
	}
	o.users++
	return o.h, nil
}

func (o *handle[H]) release() {
	o.mu.Lock()
	o.users--
	if o.users > 0 || !o.closed || o.h == 0 {
		o.mu.Unlock()
		return
	}
	h := o.h
	o.h = 0
	o.mu.Unlock()
	o.free(h)
}

// close is idempotent; it reports the library's error when it destroys the object itself.
func (o *handle[H]) close() error {
	o.mu.Lock()
	if o.closed || o.h == 0 {
		o.closed = true
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	if o.users > 0 {
		o.mu.Unlock()
		return nil
	}
	h := o.h
	o.h = 0
	o.mu.Unlock()
	return o.free(h)
}

func (o *handle[H]) free(h H) error {
	liveObjects.Add(-1)
	return call(func() capi.Enum_SS_sfac_status { return o.destroy(h) })
}
