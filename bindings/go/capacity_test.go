package sparsefac_test

import (
	"runtime"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// The idiomatic API sizes every output slice itself and passes its real length as the C API's
// capacity, so a short buffer can only reach the library through the internal capi layer (which
// this module's tests may import): there it is StatusBufferTooSmall, the message names the
// array, and nothing is written.
func TestShortOutputBufferIsBufferTooSmall(t *testing.T) {
	// The library keeps its last error per OS thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	var ch uintptr
	if st := capi.Sfac_context_create(capi.SFAC_BACKEND_CPU, 0, 1, 0, &ch); st != capi.SFAC_OK {
		t.Fatalf("context: %v: %s", sparsefac.Status(st), capi.Sfac_last_error())
	}
	ctx := capi.SwigcptrStruct_SS_sfac_context(ch)
	defer capi.Sfac_context_destroy(ctx)
	var mh uintptr
	st := capi.Sfac_sparse_create_coo(ctx, 3, 3, 3, []int32{0, 1, 2}, []int32{2, 0, 1},
		[]float32{1, 2, 3}, 0, &mh)
	if st != capi.SFAC_OK {
		t.Fatalf("matrix: %v: %s", sparsefac.Status(st), capi.Sfac_last_error())
	}
	m := capi.SwigcptrStruct_SS_sfac_sparse(mh)
	defer capi.Sfac_sparse_destroy(m)

	// nnz = 3 values into a buffer of 2 (the other arrays skipped: nil is NULL).
	values := []float32{-1, -1}
	st = capi.Sfac_sparse_download_coo(m, nil, nil, values, int64(len(values)))
	if sparsefac.Status(st) != sparsefac.StatusBufferTooSmall {
		t.Fatalf("want %v, got %v", sparsefac.StatusBufferTooSmall, sparsefac.Status(st))
	}
	if msg := capi.Sfac_last_error(); !strings.Contains(msg, "values") || !strings.Contains(msg, "3") {
		t.Fatalf("message does not name the array and its need: %q", msg)
	}
	if values[0] != -1 || values[1] != -1 {
		t.Fatalf("a short buffer was written: %v", values)
	}

	// rows + 1 = 4 row offsets into 3.
	offsets := []int64{-1, -1, -1}
	st = capi.Sfac_sparse_download_csr(m, offsets, int64(len(offsets)), nil, nil, 0)
	if sparsefac.Status(st) != sparsefac.StatusBufferTooSmall {
		t.Fatalf("want %v, got %v", sparsefac.StatusBufferTooSmall, sparsefac.Status(st))
	}
	if msg := capi.Sfac_last_error(); !strings.Contains(msg, "row_offsets") {
		t.Fatalf("message does not name row_offsets: %q", msg)
	}

	// Buffers of the right length work.
	values = make([]float32, 3)
	if st := capi.Sfac_sparse_download_coo(m, nil, nil, values, int64(len(values))); st != capi.SFAC_OK {
		t.Fatalf("download: %v: %s", sparsefac.Status(st), capi.Sfac_last_error())
	}
	if values[0] != 1 || values[1] != 2 || values[2] != 3 {
		t.Fatalf("values %v", values)
	}
}
