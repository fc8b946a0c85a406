package sparsefac_test

import (
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

func TestCPUContextsHaveNoStream(t *testing.T) {
	ctx := cpuContext(t, 1)
	stream, err := ctx.Stream()
	must(t, err)
	if stream != 0 {
		t.Fatalf("CPU context stream = %#x, want 0", stream)
	}
	must(t, ctx.SetStream(0))
	e := wantStatus(t, ctx.SetStream(0x1234), sparsefac.StatusUnsupported)
	if !strings.Contains(e.Message, "no device streams") {
		t.Fatalf("unexpected message: %v", e)
	}
	stream, err = ctx.Stream()
	must(t, err)
	if stream != 0 {
		t.Fatalf("CPU context stream after a refused SetStream = %#x, want 0", stream)
	}

	must(t, ctx.Close())
	_, err = ctx.Stream()
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
	wantStatus(t, ctx.SetStream(0), sparsefac.StatusInvalidHandle)
}

// On a CUDA build with a device; skipped elsewhere.
func TestCUDAContextStream(t *testing.T) {
	ctx := cudaContext(t)
	own, err := ctx.Stream()
	must(t, err)
	if own == 0 {
		t.Fatal("a CUDA context has a stream of its own")
	}
	must(t, ctx.SetStream(own)) // its own stream, by handle
	must(t, ctx.SetStream(0))
	stream, err := ctx.Stream()
	must(t, err)
	if stream != own {
		t.Fatalf("stream after SetStream(0) = %#x, want the context's own %#x", stream, own)
	}
}
