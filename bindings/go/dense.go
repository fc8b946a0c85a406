package sparsefac

import (
	"fmt"
	"runtime"

	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// DenseMatrix is a row-major rows x cols float32 matrix owned by the library.
type DenseMatrix struct {
	ref handle[capi.SwigcptrStruct_SS_sfac_dense]
}

// DType is the storage type of a DenseMatrix. Arithmetic is always float32; Float16 and
// BFloat16 halve the memory (and bandwidth) of backends that support them. The CPU backend
// stores float32 only and answers StatusUnsupported for the 16-bit types.
type DType int

const (
	Float32  DType = 0 // IEEE single precision (default)
	Float16  DType = 1 // IEEE half precision, storage only
	BFloat16 DType = 2 // bfloat16, storage only
)

func (d DType) String() string {
	switch d {
	case Float32:
		return "Float32"
	case Float16:
		return "Float16"
	case BFloat16:
		return "BFloat16"
	}
	return fmt.Sprintf("DType(%d)", int(d))
}

// DenseOption configures NewDenseMatrix.
type DenseOption func(*denseConfig)

type denseConfig struct{ dtype DType }

// WithDType stores the matrix as dtype (default Float32); data is converted on upload and
// converted back to float32 by Data.
func WithDType(dtype DType) DenseOption { return func(c *denseConfig) { c.dtype = dtype } }

// NewDenseMatrix creates a rows x cols matrix from row-major data (rows*cols finite values),
// or zeros when data is nil. Storage is float32 unless WithDType says otherwise.
func NewDenseMatrix(ctx *Context, rows, cols int, data []float32, opts ...DenseOption) (*DenseMatrix, error) {
	cfg := denseConfig{dtype: Float32}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := ctx.acquire()
	if err != nil {
		return nil, err
	}
	defer ctx.release()
	if data != nil && len(data) != rows*cols {
		return nil, errorf(StatusShapeMismatch, "NewDenseMatrix: %d x %d needs %d values, got %d", rows, cols, rows*cols, len(data))
	}
	var h uintptr
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_dense_create(c, int64(rows), int64(cols), capi.Enum_SS_sfac_dtype(cfg.dtype), data, &h)
	})
	if err != nil {
		return nil, err
	}
	return newDense(h), nil
}

func newDense(h uintptr) *DenseMatrix {
	m := &DenseMatrix{}
	m.ref.init(capi.SwigcptrStruct_SS_sfac_dense(h), func(h capi.SwigcptrStruct_SS_sfac_dense) capi.Enum_SS_sfac_status {
		return capi.Sfac_dense_destroy(h)
	})
	runtime.SetFinalizer(m, func(m *DenseMatrix) { m.Close() })
	return m
}

// DType is the matrix's storage type.
func (m *DenseMatrix) DType() (DType, error) {
	h, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	out := []int32{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_dense_get_dtype(h, out) })
	return DType(out[0]), err
}

// Close releases the matrix (once calls in flight on other goroutines are done); later calls
// are no-ops.
func (m *DenseMatrix) Close() error {
	if m == nil {
		return nil
	}
	return m.ref.close()
}

func (m *DenseMatrix) acquire() (capi.SwigcptrStruct_SS_sfac_dense, error) {
	if m == nil {
		return 0, closedError("DenseMatrix")
	}
	return m.ref.acquire("DenseMatrix")
}

func (m *DenseMatrix) release() { m.ref.release() }

func denseShape(h capi.SwigcptrStruct_SS_sfac_dense) (rows, cols int, err error) {
	r, c := []int64{0}, []int64{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_dense_get_shape(h, r, c) })
	return int(r[0]), int(c[0]), err
}

// Shape is (rows, cols).
func (m *DenseMatrix) Shape() (rows, cols int, err error) {
	h, err := m.acquire()
	if err != nil {
		return 0, 0, err
	}
	defer m.release()
	return denseShape(h)
}

// Data copies the contents out, row-major.
func (m *DenseMatrix) Data() ([]float32, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	rows, cols, err := denseShape(h)
	if err != nil {
		return nil, err
	}
	data := floats(rows * cols)
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_dense_download(h, data, int64(len(data))) })
	return data, err
}

// Upload replaces the contents with rows*cols finite values.
func (m *DenseMatrix) Upload(data []float32) error {
	h, err := m.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	rows, cols, err := denseShape(h)
	if err != nil {
		return err
	}
	if len(data) != rows*cols {
		return errorf(StatusShapeMismatch, "Upload: %d x %d needs %d values, got %d", rows, cols, rows*cols, len(data))
	}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_dense_upload(h, nonNilF(data)) })
	return err
}

// PermuteRows returns a new matrix of the same dtype whose row r is row order[r] of m; order
// must hold every row index exactly once (else StatusInvalidArgument, naming the first
// repeated or outside index). The inverse permutation (inverse[order[r]] = r) undoes it, e.g.
// to return factors trained on a permuted matrix to the original numbering.
func (m *DenseMatrix) PermuteRows(order []int32) (*DenseMatrix, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	rows, _, err := denseShape(h)
	if err != nil {
		return nil, err
	}
	if len(order) != rows {
		return nil, errorf(StatusShapeMismatch, "PermuteRows: matrix has %d rows, got %d row indices", rows, len(order))
	}
	var out uintptr
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_dense_permute_rows(h, nonNil(order), &out) })
	if err != nil {
		return nil, err
	}
	return newDense(out), nil
}
