package sparsefac

import (
	"runtime"

	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// SparseMatrix is a sparse matrix owned by the library, stored sorted by (row, column).
type SparseMatrix struct {
	ref handle[capi.SwigcptrStruct_SS_sfac_sparse]
}

func newSparse(h uintptr) *SparseMatrix {
	m := &SparseMatrix{}
	m.ref.init(capi.SwigcptrStruct_SS_sfac_sparse(h), func(h capi.SwigcptrStruct_SS_sfac_sparse) capi.Enum_SS_sfac_status {
		return capi.Sfac_sparse_destroy(h)
	})
	runtime.SetFinalizer(m, func(m *SparseMatrix) { m.Close() })
	return m
}

// Close releases the matrix (once calls in flight on other goroutines are done); later calls
// are no-ops.
func (m *SparseMatrix) Close() error {
	if m == nil {
		return nil
	}
	return m.ref.close()
}

func (m *SparseMatrix) acquire() (capi.SwigcptrStruct_SS_sfac_sparse, error) {
	if m == nil {
		return 0, closedError("SparseMatrix")
	}
	return m.ref.acquire("SparseMatrix")
}

// release is a no-op for nil, the "no matrix" of optional arguments.
func (m *SparseMatrix) release() {
	if m != nil {
		m.ref.release()
	}
}

// acquireOptional is NULL for a nil matrix (the C API's "may be NULL"), an error for a closed
// one. Pair it with release, which ignores nil.
func acquireOptional(m *SparseMatrix) (capi.SwigcptrStruct_SS_sfac_sparse, error) {
	if m == nil {
		return 0, nil
	}
	return m.acquire()
}

func sparseShape(h capi.SwigcptrStruct_SS_sfac_sparse) (rows, cols, nnz int, err error) {
	r, c, n := []int64{0}, []int64{0}, []int64{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_sparse_get_shape(h, r, c, n) })
	return int(r[0]), int(c[0]), int(n[0]), err
}

// SparseFlags control matrix creation and file reading.
type SparseFlags uint32

const (
	// SumDuplicates sums entries with the same (row, col) instead of rejecting them.
	SumDuplicates SparseFlags = 1 << 0
	// OneBased: ids in triplet, MovieLens and CSV files start at 1.
	OneBased SparseFlags = 1 << 9
)

// FromCOO creates a rows x cols matrix from triplets in any order. values may be nil: every
// stored value is then 1 (a pattern matrix). The library copies the data.
func FromCOO(ctx *Context, rows, cols int, rowIdx, colIdx []int32, values []float32, flags SparseFlags) (*SparseMatrix, error) {
	c, err := ctx.acquire()
	if err != nil {
		return nil, err
	}
	defer ctx.release()
	if len(rowIdx) != len(colIdx) {
		return nil, errorf(StatusShapeMismatch, "FromCOO: %d row indices but %d column indices", len(rowIdx), len(colIdx))
	}
	if values != nil && len(values) != len(rowIdx) {
		return nil, errorf(StatusShapeMismatch, "FromCOO: %d indices but %d values", len(rowIdx), len(values))
	}
	var h uintptr
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_sparse_create_coo(c, int64(rows), int64(cols), int64(len(rowIdx)),
			nonNil(rowIdx), nonNil(colIdx), values, uint(flags), &h)
	})
	if err != nil {
		return nil, err
	}
	return newSparse(h), nil
}

// FromCSR creates a matrix from CSR arrays: rowOffsets has rows + 1 entries starting at 0.
// values may be nil (pattern matrix).
func FromCSR(ctx *Context, rows, cols int, rowOffsets []int64, colIdx []int32, values []float32, flags SparseFlags) (*SparseMatrix, error) {
	return fromCompressed(ctx, compressedForm{"FromCSR", "rows", "row offsets", "column indices", rows},
		rowOffsets, colIdx, values,
		func(c capi.SwigcptrStruct_SS_sfac_context, h *uintptr) capi.Enum_SS_sfac_status {
			return capi.Sfac_sparse_create_csr(c, int64(rows), int64(cols), rowOffsets, nonNil(colIdx), values,
				int64(len(colIdx)), uint(flags), h)
		})
}

// FromCSC creates a matrix from CSC arrays: colOffsets has cols + 1 entries starting at 0.
// values may be nil (pattern matrix). The matrix is stored (and read back by ToCOO, Values,
// ...) in row-major order like every other matrix.
func FromCSC(ctx *Context, rows, cols int, colOffsets []int64, rowIdx []int32, values []float32, flags SparseFlags) (*SparseMatrix, error) {
	return fromCompressed(ctx, compressedForm{"FromCSC", "columns", "column offsets", "row indices", cols},
		colOffsets, rowIdx, values,
		func(c capi.SwigcptrStruct_SS_sfac_context, h *uintptr) capi.Enum_SS_sfac_status {
			return capi.Sfac_sparse_create_csc(c, int64(rows), int64(cols), colOffsets, nonNil(rowIdx), values,
				int64(len(rowIdx)), uint(flags), h)
		})
}

// compressedForm names the parts of a CSR or CSC input for error messages; major is the number
// of rows (CSR) or columns (CSC).
type compressedForm struct {
	function, majors, offsets, indices string
	major                              int
}

// fromCompressed checks the lengths of CSR/CSC arrays against each other (the library cannot
// see a Go slice's length; create passes it len(indices) as nnz, which it checks against the
// offsets) and then creates the matrix with create.
func fromCompressed(ctx *Context, f compressedForm, offsets []int64, indices []int32, values []float32,
	create func(capi.SwigcptrStruct_SS_sfac_context, *uintptr) capi.Enum_SS_sfac_status) (*SparseMatrix, error) {
	c, err := ctx.acquire()
	if err != nil {
		return nil, err
	}
	defer ctx.release()
	if f.major < 0 || len(offsets) != f.major+1 {
		return nil, errorf(StatusShapeMismatch, "%s: %d %s need %d %s, got %d", f.function, f.major, f.majors, f.major+1, f.offsets, len(offsets))
	}
	nnz := offsets[f.major]
	if int64(len(indices)) != nnz {
		return nil, errorf(StatusShapeMismatch, "%s: %s end at %d but %d %s", f.function, f.offsets, nnz, len(indices), f.indices)
	}
	if values != nil && int64(len(values)) != nnz {
		return nil, errorf(StatusShapeMismatch, "%s: %d nonzeros but %d values", f.function, nnz, len(values))
	}
	var h uintptr
	if err := call(func() capi.Enum_SS_sfac_status { return create(c, &h) }); err != nil {
		return nil, err
	}
	return newSparse(h), nil
}

// FileFormat of ReadFile.
type FileFormat int

const (
	FormatAuto         FileFormat = 0 // by extension and content
	FormatMatrixMarket FileFormat = 1
	FormatTriplets     FileFormat = 2 // "row col value" (LIBMF) or MovieLens u.data
	FormatMovieLensDat FileFormat = 3 // user::item::rating::timestamp
	FormatCSV          FileFormat = 4 // header line, then user,item,rating[,...]
)

// ReadFile reads a sparse matrix; ids are used as indices (0-based unless flags has OneBased).
// Parse errors name the file and line.
func ReadFile(ctx *Context, path string, format FileFormat, flags SparseFlags) (*SparseMatrix, error) {
	c, err := ctx.acquire()
	if err != nil {
		return nil, err
	}
	defer ctx.release()
	var h uintptr
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_read_sparse(c, path, capi.Enum_SS_sfac_file_format(format), uint(flags), &h, nil, nil)
	})
	if err != nil {
		return nil, err
	}
	return newSparse(h), nil
}

// ReadFileRemapped reads a ratings file whose ids are arbitrary (MovieLens user and movie ids,
// say): each side's distinct ids become indices 0..n-1 in ascending id order. rowIDs maps
// row indices to the file's user ids and back, colIDs the same for columns; close them (and
// the matrix) when done.
func ReadFileRemapped(ctx *Context, path string, format FileFormat, flags SparseFlags) (m *SparseMatrix, rowIDs, colIDs *IDMap, err error) {
	c, err := ctx.acquire()
	if err != nil {
		return nil, nil, nil, err
	}
	defer ctx.release()
	const remapIDs = 1 << 8 // SFAC_READ_REMAP_IDS
	var h, rmap, cmap uintptr
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_read_sparse(c, path, capi.Enum_SS_sfac_file_format(format), uint(flags)|remapIDs, &h, &rmap, &cmap)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return newSparse(h), newIDMap(rmap), newIDMap(cmap), nil
}

// IDMap maps the dense indices 0..n-1 of one side of a matrix read by ReadFileRemapped to
// the file's original ids, and back.
type IDMap struct {
	ref handle[capi.SwigcptrStruct_SS_sfac_idmap]
}

func newIDMap(h uintptr) *IDMap {
	m := &IDMap{}
	m.ref.init(capi.SwigcptrStruct_SS_sfac_idmap(h), func(h capi.SwigcptrStruct_SS_sfac_idmap) capi.Enum_SS_sfac_status {
		return capi.Sfac_idmap_destroy(h)
	})
	runtime.SetFinalizer(m, func(m *IDMap) { m.Close() })
	return m
}

// Close releases the map (once calls in flight on other goroutines are done); later calls
// are no-ops.
func (m *IDMap) Close() error {
	if m == nil {
		return nil
	}
	return m.ref.close()
}

func (m *IDMap) acquire() (capi.SwigcptrStruct_SS_sfac_idmap, error) {
	if m == nil {
		return 0, closedError("IDMap")
	}
	return m.ref.acquire("IDMap")
}

func (m *IDMap) release() { m.ref.release() }

func idmapSize(h capi.SwigcptrStruct_SS_sfac_idmap) (int, error) {
	n := []int64{0}
	err := call(func() capi.Enum_SS_sfac_status { return capi.Sfac_idmap_get_size(h, n) })
	return int(n[0]), err
}

// Len is the number of distinct ids (the matrix's rows or columns).
func (m *IDMap) Len() (int, error) {
	h, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	return idmapSize(h)
}

// IDs copies the map out: IDs()[i] is the file's id of index i (ascending).
func (m *IDMap) IDs() ([]int64, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	n, err := idmapSize(h)
	if err != nil {
		return nil, err
	}
	ids := int64s(n)
	if err := call(func() capi.Enum_SS_sfac_status { return capi.Sfac_idmap_get_ids(h, ids, int64(len(ids))) }); err != nil {
		return nil, err
	}
	return ids, nil
}

// Lookup translates file ids into indices: out[i] is the index of ids[i], or -1 when that id
// did not occur in the file (the library's answer for unknown ids; it is not an error).
func (m *IDMap) Lookup(ids []int64) ([]int32, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	out := int32s(len(ids))
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_idmap_lookup(h, int64(len(ids)), ids, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// WriteMatrixMarket writes the matrix as a 1-based "coordinate real general" file.
func (m *SparseMatrix) WriteMatrixMarket(path string) error {
	h, err := m.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_write_matrix_market(h, path) })
	return err
}

// Shape is (rows, cols, nnz).
func (m *SparseMatrix) Shape() (rows, cols, nnz int, err error) {
	h, err := m.acquire()
	if err != nil {
		return 0, 0, 0, err
	}
	defer m.release()
	return sparseShape(h)
}

// ToCOO copies the entries out, sorted by (row, col).
func (m *SparseMatrix) ToCOO() (rowIdx, colIdx []int32, values []float32, err error) {
	h, err := m.acquire()
	if err != nil {
		return nil, nil, nil, err
	}
	defer m.release()
	_, _, nnz, err := sparseShape(h)
	if err != nil {
		return nil, nil, nil, err
	}
	rowIdx, colIdx, values = int32s(nnz), int32s(nnz), floats(nnz)
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_sparse_download_coo(h, rowIdx, colIdx, values, sharedCapacity(len(rowIdx), len(colIdx), len(values)))
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return rowIdx, colIdx, values, nil
}

// ToCSR copies the matrix out as CSR: rowOffsets has rows + 1 entries, columns ascend within
// each row.
func (m *SparseMatrix) ToCSR() (rowOffsets []int64, colIdx []int32, values []float32, err error) {
	h, err := m.acquire()
	if err != nil {
		return nil, nil, nil, err
	}
	defer m.release()
	rows, _, nnz, err := sparseShape(h)
	if err != nil {
		return nil, nil, nil, err
	}
	rowOffsets, colIdx, values = int64s(rows+1), int32s(nnz), floats(nnz)
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_sparse_download_csr(h, rowOffsets, int64(len(rowOffsets)), colIdx, values, sharedCapacity(len(colIdx), len(values)))
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return rowOffsets, colIdx, values, nil
}

// ToCSC copies the matrix out as CSC: colOffsets has cols + 1 entries, entries sorted by
// (col, row).
func (m *SparseMatrix) ToCSC() (colOffsets []int64, rowIdx []int32, values []float32, err error) {
	h, err := m.acquire()
	if err != nil {
		return nil, nil, nil, err
	}
	defer m.release()
	_, cols, nnz, err := sparseShape(h)
	if err != nil {
		return nil, nil, nil, err
	}
	colOffsets, rowIdx, values = int64s(cols+1), int32s(nnz), floats(nnz)
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_sparse_download_csc(h, colOffsets, int64(len(colOffsets)), rowIdx, values, sharedCapacity(len(rowIdx), len(values)))
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return colOffsets, rowIdx, values, nil
}

// Values copies the nnz values out in row-major order.
func (m *SparseMatrix) Values() ([]float32, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	_, _, nnz, err := sparseShape(h)
	if err != nil {
		return nil, err
	}
	values := floats(nnz)
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_sparse_download_coo(h, nil, nil, values, int64(len(values)))
	})
	return values, err
}

// SetValues replaces the nnz values (row-major order); they must be finite.
func (m *SparseMatrix) SetValues(values []float32) error {
	h, err := m.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	_, _, nnz, err := sparseShape(h)
	if err != nil {
		return err
	}
	if len(values) != nnz {
		return errorf(StatusShapeMismatch, "SetValues: matrix has %d nonzeros, got %d values", nnz, len(values))
	}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_sparse_set_values(h, nonNilF(values)) })
	return err
}

// Like creates a matrix with this matrix's pattern and the given values (nil = zeros), the
// natural output of SDDMM.
func (m *SparseMatrix) Like(values []float32) (*SparseMatrix, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	_, _, nnz, err := sparseShape(h)
	if err != nil {
		return nil, err
	}
	if values != nil && len(values) != nnz {
		return nil, errorf(StatusShapeMismatch, "Like: matrix has %d nonzeros, got %d values", nnz, len(values))
	}
	var out uintptr
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_sparse_create_like(h, values, &out) })
	if err != nil {
		return nil, err
	}
	return newSparse(out), nil
}

// Axis is a side of a sparse matrix, for DegreeOrder.
type Axis int

const (
	AxisRows Axis = 0 // the rows
	AxisCols Axis = 1 // the columns
)

// DegreeOrder returns the rows (AxisRows: rows entries) or columns (AxisCols: cols entries)
// ordered by nonzero count, most first; equal counts keep index order, so the order is
// deterministic and the same on every backend. Computed where the matrix lives. The result is
// a permutation for Permute.
func (m *SparseMatrix) DegreeOrder(axis Axis) ([]int32, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	rows, cols, _, err := sparseShape(h)
	if err != nil {
		return nil, err
	}
	n := rows
	if axis == AxisCols {
		n = cols
	}
	order := int32s(n)
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_sparse_degree_order(h, capi.Enum_SS_sfac_axis(axis), order, int64(len(order)))
	})
	if err != nil {
		return nil, err
	}
	return order, nil
}

// Permute returns a new matrix with renumbered rows and columns: its row r is row rowOrder[r]
// of m and its column c is column colOrder[c], i.e. entry (rowOrder[r], colOrder[c]) moves to
// (r, c) with its value. Each order must hold every index of its side exactly once (else
// StatusInvalidArgument, naming the first repeated or outside index); nil keeps that side's
// numbering. Permute the factors to match with DenseMatrix.PermuteRows (A by rowOrder, B by
// colOrder): SDDMM on the permuted operands gives the permuted product.
func (m *SparseMatrix) Permute(rowOrder, colOrder []int32) (*SparseMatrix, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	rows, cols, _, err := sparseShape(h)
	if err != nil {
		return nil, err
	}
	if rowOrder != nil && len(rowOrder) != rows {
		return nil, errorf(StatusShapeMismatch, "Permute: matrix has %d rows, got %d row indices", rows, len(rowOrder))
	}
	if colOrder != nil && len(colOrder) != cols {
		return nil, errorf(StatusShapeMismatch, "Permute: matrix has %d columns, got %d column indices", cols, len(colOrder))
	}
	var out uintptr
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_sparse_permute(h, rowOrder, colOrder, &out) })
	if err != nil {
		return nil, err
	}
	return newSparse(out), nil
}

// SplitRandom sends each nonzero to test with probability testFraction.
func (m *SparseMatrix) SplitRandom(testFraction float64, seed uint64) (train, test *SparseMatrix, err error) {
	h, err := m.acquire()
	if err != nil {
		return nil, nil, err
	}
	defer m.release()
	var tr, te uintptr
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_split_random(h, testFraction, seed, &tr, &te) })
	if err != nil {
		return nil, nil, err
	}
	return newSparse(tr), newSparse(te), nil
}

// Feedback kind of synthetic data.
type Feedback int

const (
	Explicit Feedback = 0 // ratings = planted dot + N(0, noise^2)
	Implicit Feedback = 1 // counts where the planted affinity is high
)

// Synthetic describes planted low-rank data for SynthesizeRatings.
type Synthetic struct {
	Feedback          Feedback
	Users, Items, NNZ int
	Rank              int
	Noise, Skew       float64
}

// SynthesizeRatings draws data with a known answer, seeded by the context's seed: for
// Explicit feedback the planted model's RMSE is Noise.
func SynthesizeRatings(ctx *Context, spec Synthetic) (*SparseMatrix, error) {
	c, err := ctx.acquire()
	if err != nil {
		return nil, err
	}
	defer ctx.release()
	var h uintptr
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_synthesize_ratings(c, capi.Enum_SS_sfac_feedback(spec.Feedback), int64(spec.Users),
			int64(spec.Items), int64(spec.NNZ), int64(spec.Rank), spec.Noise, spec.Skew, &h, nil, nil)
	})
	if err != nil {
		return nil, err
	}
	return newSparse(h), nil
}
