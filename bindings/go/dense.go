package sparsefac

import (
	"runtime"

	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// DenseMatrix is a row-major rows x cols float32 matrix owned by the library.
type DenseMatrix struct {
	h capi.SwigcptrStruct_SS_sfac_dense
	_ notTiny
}

// NewDenseMatrix creates a rows x cols matrix from row-major data (rows*cols finite values),
// or zeros when data is nil.
func NewDenseMatrix(ctx *Context, rows, cols int, data []float32) (*DenseMatrix, error) {
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	if data != nil && len(data) != rows*cols {
		return nil, errorf(StatusShapeMismatch, "NewDenseMatrix: %d x %d needs %d values, got %d", rows, cols, rows*cols, len(data))
	}
	var h uintptr
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_dense_create(c, int64(rows), int64(cols), capi.SFAC_DTYPE_FLOAT32, data, &h)
	})
	runtime.KeepAlive(ctx)
	if err != nil {
		return nil, err
	}
	m := &DenseMatrix{h: capi.SwigcptrStruct_SS_sfac_dense(h)}
	liveObjects.Add(1)
	runtime.SetFinalizer(m, func(m *DenseMatrix) { m.Close() })
	return m, nil
}

// Close releases the matrix; later calls are no-ops.
func (m *DenseMatrix) Close() error {
	if m == nil || m.h == 0 {
		return nil
	}
	h := m.h
	m.h = 0
	runtime.SetFinalizer(m, nil)
	liveObjects.Add(-1)
	return call(func() capi.Enum_SS_sfac_status { return capi.Sfac_dense_destroy(h) })
}

func (m *DenseMatrix) handle() (capi.SwigcptrStruct_SS_sfac_dense, error) {
	if m == nil || m.h == 0 {
		return 0, closedError("DenseMatrix")
	}
	return m.h, nil
}

// Shape is (rows, cols).
func (m *DenseMatrix) Shape() (rows, cols int, err error) {
	h, err := m.handle()
	if err != nil {
		return 0, 0, err
	}
	r, c := []int64{0}, []int64{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_dense_get_shape(h, r, c) })
	runtime.KeepAlive(m)
	return int(r[0]), int(c[0]), err
}

// Data copies the contents out, row-major.
func (m *DenseMatrix) Data() ([]float32, error) {
	rows, cols, err := m.Shape()
	if err != nil {
		return nil, err
	}
	data := make([]float32, rows*cols, rows*cols+1)
	h := m.h
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_dense_download(h, data) })
	runtime.KeepAlive(m)
	return data, err
}

// Upload replaces the contents with rows*cols finite values.
func (m *DenseMatrix) Upload(data []float32) error {
	rows, cols, err := m.Shape()
	if err != nil {
		return err
	}
	if len(data) != rows*cols {
		return errorf(StatusShapeMismatch, "Upload: %d x %d needs %d values, got %d", rows, cols, rows*cols, len(data))
	}
	h := m.h
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_dense_upload(h, nonNilF(data)) })
	runtime.KeepAlive(m)
	return err
}
