package sparsefac_test

import (
	"reflect"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

func TestDenseDType(t *testing.T) {
	ctx := cpuContext(t, 1)
	data := []float32{1, -2.5, 3.25, 0.1, 1e-3, -7}

	// Default and explicit Float32 store the values exactly.
	for _, opts := range [][]sparsefac.DenseOption{nil, {sparsefac.WithDType(sparsefac.Float32)}} {
		d, err := sparsefac.NewDenseMatrix(ctx, 2, 3, data, opts...)
		must(t, err)
		dt, err := d.DType()
		must(t, err)
		if dt != sparsefac.Float32 {
			t.Fatalf("dtype %v, want Float32", dt)
		}
		got, err := d.Data()
		must(t, err)
		if !reflect.DeepEqual(got, data) {
			t.Fatalf("Float32 data %v, want %v", got, data)
		}
		d.Close()
		_, err = d.DType()
		wantStatus(t, err, sparsefac.StatusInvalidHandle)
	}

	// The CPU backend stores float32 only: 16-bit storage is the library's UNSUPPORTED, with
	// its message, for data and for zeros alike.
	for _, dt := range []sparsefac.DType{sparsefac.Float16, sparsefac.BFloat16} {
		for _, in := range [][]float32{data, nil} {
			d, err := sparsefac.NewDenseMatrix(ctx, 2, 3, in, sparsefac.WithDType(dt))
			if d != nil {
				t.Fatalf("%v: got a matrix on the CPU backend", dt)
			}
			e := wantStatus(t, err, sparsefac.StatusUnsupported)
			if !strings.Contains(e.Message, "float32 only") {
				t.Fatalf("%v: message %q does not say why", dt, e.Message)
			}
		}
	}
	// An unknown dtype is rejected as an invalid argument, not as unsupported.
	_, err := sparsefac.NewDenseMatrix(ctx, 2, 3, data, sparsefac.WithDType(sparsefac.DType(7)))
	e := wantStatus(t, err, sparsefac.StatusInvalidArgument)
	if !strings.Contains(e.Message, "dtype") {
		t.Fatalf("message %q does not name the dtype", e.Message)
	}
	if sparsefac.BFloat16.String() != "BFloat16" || sparsefac.DType(7).String() != "DType(7)" {
		t.Fatalf("DType.String: %v %v", sparsefac.BFloat16, sparsefac.DType(7))
	}
}
