package sparsefac_test

import (
	"reflect"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

// degreeMatrix has row counts 1, 3, 0, 3, 1 and column counts 2, 1, 2, 3; values 1..8 in
// row-major order.
func degreeMatrix(t *testing.T, ctx *sparsefac.Context) *sparsefac.SparseMatrix {
	t.Helper()
	m, err := sparsefac.FromCOO(ctx, 5, 4, []int32{0, 1, 1, 1, 3, 3, 3, 4}, []int32{3, 0, 2, 3, 0, 1, 2, 3},
		[]float32{1, 2, 3, 4, 5, 6, 7, 8}, 0)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// denseOf builds the matrix's dense array from its triplets.
func denseOf(t *testing.T, m *sparsefac.SparseMatrix) [][]float32 {
	t.Helper()
	rows, cols, _, err := m.Shape()
	must(t, err)
	r, c, v, err := m.ToCOO()
	must(t, err)
	out := make([][]float32, rows)
	for i := range out {
		out[i] = make([]float32, cols)
	}
	for e := range v {
		out[r[e]][c[e]] = v[e]
	}
	return out
}

func TestDegreeOrderByCountWithTiesInIndexOrder(t *testing.T) {
	ctx := cpuContext(t, 1)
	m := degreeMatrix(t, ctx)
	rows, err := m.DegreeOrder(sparsefac.AxisRows)
	must(t, err)
	if want := []int32{1, 3, 0, 4, 2}; !reflect.DeepEqual(rows, want) {
		t.Fatalf("row degree order %v, want %v", rows, want)
	}
	cols, err := m.DegreeOrder(sparsefac.AxisCols)
	must(t, err)
	if want := []int32{3, 0, 2, 1}; !reflect.DeepEqual(cols, want) {
		t.Fatalf("column degree order %v, want %v", cols, want)
	}
	_, err = m.DegreeOrder(sparsefac.Axis(2))
	if e := wantStatus(t, err, sparsefac.StatusInvalidArgument); !strings.Contains(e.Message, "axis") {
		t.Fatalf("message %q does not name the axis", e.Message)
	}

	empty, err := sparsefac.FromCOO(ctx, 0, 3, nil, nil, nil, 0)
	must(t, err)
	defer empty.Close()
	none, err := empty.DegreeOrder(sparsefac.AxisRows)
	must(t, err)
	if len(none) != 0 {
		t.Fatalf("degree order of no rows: %v", none)
	}
	three, err := empty.DegreeOrder(sparsefac.AxisCols)
	must(t, err)
	if want := []int32{0, 1, 2}; !reflect.DeepEqual(three, want) {
		t.Fatalf("columns without nonzeros: %v, want %v", three, want)
	}
}

func TestPermuteMovesEveryEntryWithItsValue(t *testing.T) {
	ctx := cpuContext(t, 1)
	m := degreeMatrix(t, ctx)
	before := denseOf(t, m)
	rowOrder, colOrder := []int32{2, 4, 0, 3, 1}, []int32{1, 3, 0, 2}
	p, err := m.Permute(rowOrder, colOrder)
	must(t, err)
	defer p.Close()
	rows, cols, nnz, err := p.Shape()
	must(t, err)
	if rows != 5 || cols != 4 || nnz != 8 {
		t.Fatalf("permuted shape %d x %d, nnz %d", rows, cols, nnz)
	}
	// Entry (rowOrder[r], colOrder[c]) is now (r, c), with its value: exactly these triplets.
	r, c, v, err := p.ToCOO()
	must(t, err)
	if !reflect.DeepEqual(r, []int32{1, 2, 3, 3, 3, 4, 4, 4}) ||
		!reflect.DeepEqual(c, []int32{1, 1, 0, 2, 3, 1, 2, 3}) ||
		!reflect.DeepEqual(v, []float32{8, 1, 6, 5, 7, 4, 2, 3}) {
		t.Fatalf("permuted triplets %v %v %v", r, c, v)
	}
	after := denseOf(t, p)
	for i := range after {
		for j := range after[i] {
			if after[i][j] != before[rowOrder[i]][colOrder[j]] {
				t.Fatalf("(%d, %d) = %v, want %v", i, j, after[i][j], before[rowOrder[i]][colOrder[j]])
			}
		}
	}

	// nil keeps a side.
	rowsOnly, err := m.Permute(rowOrder, nil)
	must(t, err)
	defer rowsOnly.Close()
	colsOnly, err := m.Permute(nil, colOrder)
	must(t, err)
	defer colsOnly.Close()
	ro, co := denseOf(t, rowsOnly), denseOf(t, colsOnly)
	for i := range before {
		for j := range before[i] {
			if ro[i][j] != before[rowOrder[i]][j] || co[i][j] != before[i][colOrder[j]] {
				t.Fatalf("one-sided permutation wrong at (%d, %d)", i, j)
			}
		}
	}

	// A degree order is a permutation; afterwards the degree order is the identity.
	dr, err := m.DegreeOrder(sparsefac.AxisRows)
	must(t, err)
	dc, err := m.DegreeOrder(sparsefac.AxisCols)
	must(t, err)
	byDegree, err := m.Permute(dr, dc)
	must(t, err)
	defer byDegree.Close()
	again, err := byDegree.DegreeOrder(sparsefac.AxisRows)
	must(t, err)
	if want := []int32{0, 1, 2, 3, 4}; !reflect.DeepEqual(again, want) {
		t.Fatalf("degree order after degree permutation %v, want %v", again, want)
	}
	if !reflect.DeepEqual(denseOf(t, m), before) {
		t.Fatal("Permute changed its source")
	}
}

func TestPermuteRowsAndBack(t *testing.T) {
	ctx := cpuContext(t, 1)
	data := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	d, err := sparsefac.NewDenseMatrix(ctx, 5, 2, data)
	must(t, err)
	defer d.Close()
	order := []int32{3, 0, 4, 2, 1}
	p, err := d.PermuteRows(order)
	must(t, err)
	defer p.Close()
	got, err := p.Data()
	must(t, err)
	if want := []float32{7, 8, 1, 2, 9, 10, 5, 6, 3, 4}; !reflect.DeepEqual(got, want) {
		t.Fatalf("permuted rows %v, want %v", got, want)
	}
	if dt, err := p.DType(); err != nil || dt != sparsefac.Float32 {
		t.Fatalf("dtype %v, %v", dt, err)
	}
	inverse := make([]int32, len(order))
	for r, o := range order {
		inverse[o] = int32(r)
	}
	back, err := p.PermuteRows(inverse)
	must(t, err)
	defer back.Close()
	got, err = back.Data()
	must(t, err)
	if !reflect.DeepEqual(got, data) {
		t.Fatalf("inverse permutation gave %v, want %v", got, data)
	}
}

func TestNonPermutationsAreRejected(t *testing.T) {
	ctx := cpuContext(t, 1)
	m, err := sparsefac.FromCOO(ctx, 3, 2, []int32{0, 1, 2}, []int32{0, 1, 1}, []float32{1, 2, 3}, 0)
	must(t, err)
	defer m.Close()
	_, err = m.Permute([]int32{0, 0, 1}, nil)
	e := wantStatus(t, err, sparsefac.StatusInvalidArgument)
	if !strings.Contains(e.Message, "row_order[1] = 0 repeats row_order[0]") {
		t.Fatalf("message %q", e.Message)
	}
	_, err = m.Permute(nil, []int32{1, 1})
	if e := wantStatus(t, err, sparsefac.StatusInvalidArgument); !strings.Contains(e.Message, "repeats") {
		t.Fatalf("message %q", e.Message)
	}
	_, err = m.Permute([]int32{0, 3, 1}, nil)
	if e := wantStatus(t, err, sparsefac.StatusInvalidArgument); !strings.Contains(e.Message, "is outside") {
		t.Fatalf("message %q", e.Message)
	}
	_, err = m.Permute([]int32{0, 1}, nil)
	wantStatus(t, err, sparsefac.StatusShapeMismatch)

	d, err := sparsefac.NewDenseMatrix(ctx, 3, 2, []float32{1, 2, 3, 4, 5, 6})
	must(t, err)
	defer d.Close()
	_, err = d.PermuteRows([]int32{0, 0, 1})
	if e := wantStatus(t, err, sparsefac.StatusInvalidArgument); !strings.Contains(e.Message, "order[1] = 0 repeats order[0]") {
		t.Fatalf("message %q", e.Message)
	}
	_, err = d.PermuteRows(nil)
	wantStatus(t, err, sparsefac.StatusShapeMismatch)

	m.Close()
	_, err = m.DegreeOrder(sparsefac.AxisRows)
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
	_, err = m.Permute(nil, nil)
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
}
