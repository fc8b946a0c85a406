package sparsefac_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

type entry struct {
	r, c int32
	v    float32
}

// randomEntries draws nnz distinct cells of a rows x cols matrix, in random order.
func randomEntries(rng *rand.Rand, rows, cols, nnz int) []entry {
	seen := map[[2]int32]bool{}
	out := make([]entry, 0, nnz)
	for len(out) < nnz {
		r, c := int32(rng.Intn(rows)), int32(rng.Intn(cols))
		if seen[[2]int32{r, c}] {
			continue
		}
		seen[[2]int32{r, c}] = true
		out = append(out, entry{r, c, float32(rng.NormFloat64())})
	}
	return out
}

// referenceCSR and referenceCSC build the compressed arrays in Go, independently of the library.
func referenceCompressed(es []entry, major int, byCol bool) (offsets []int64, minor []int32, values []float32) {
	sorted := append([]entry(nil), es...)
	key := func(e entry) (int32, int32) {
		if byCol {
			return e.c, e.r
		}
		return e.r, e.c
	}
	sort.Slice(sorted, func(i, j int) bool {
		ai, bi := key(sorted[i])
		aj, bj := key(sorted[j])
		return ai < aj || (ai == aj && bi < bj)
	})
	offsets = make([]int64, major+1)
	for _, e := range sorted {
		m, n := key(e)
		offsets[m+1]++
		minor = append(minor, n)
		values = append(values, e.v)
	}
	for i := 0; i < major; i++ {
		offsets[i+1] += offsets[i]
	}
	return offsets, minor, values
}

func TestCompressedFormatsRoundTrip(t *testing.T) {
	ctx := cpuContext(t, 1)
	rng := rand.New(rand.NewSource(7))
	const rows, cols, nnz = 37, 23, 300
	es := randomEntries(rng, rows, cols, nnz)
	ri, ci, vs := make([]int32, nnz), make([]int32, nnz), make([]float32, nnz)
	for i, e := range es {
		ri[i], ci[i], vs[i] = e.r, e.c, e.v
	}
	coo, err := sparsefac.FromCOO(ctx, rows, cols, ri, ci, vs, 0)
	must(t, err)
	defer coo.Close()
	wantCOOr, wantCOOc, wantCOOv, err := coo.ToCOO()
	must(t, err)

	csrOff, csrCol, csrVal := referenceCompressed(es, rows, false)
	cscOff, cscRow, cscVal := referenceCompressed(es, cols, true)

	// Downloads of the COO-built matrix equal the Go reference.
	gotOff, gotIdx, gotVal, err := coo.ToCSR()
	must(t, err)
	if !reflect.DeepEqual(gotOff, csrOff) || !reflect.DeepEqual(gotIdx, csrCol) || !reflect.DeepEqual(gotVal, csrVal) {
		t.Fatalf("ToCSR differs from the reference CSR")
	}
	gotOff, gotIdx, gotVal, err = coo.ToCSC()
	must(t, err)
	if !reflect.DeepEqual(gotOff, cscOff) || !reflect.DeepEqual(gotIdx, cscRow) || !reflect.DeepEqual(gotVal, cscVal) {
		t.Fatalf("ToCSC differs from the reference CSC")
	}

	// FromCSC (and FromCSR) of the same entries give the COO-built matrix back.
	fromCSC, err := sparsefac.FromCSC(ctx, rows, cols, cscOff, cscRow, cscVal, 0)
	must(t, err)
	defer fromCSC.Close()
	fromCSR, err := sparsefac.FromCSR(ctx, rows, cols, csrOff, csrCol, csrVal, 0)
	must(t, err)
	defer fromCSR.Close()
	for name, m := range map[string]*sparsefac.SparseMatrix{"FromCSC": fromCSC, "FromCSR": fromCSR} {
		r, c, n, err := m.Shape()
		must(t, err)
		if r != rows || c != cols || n != nnz {
			t.Fatalf("%s: shape (%d, %d, %d)", name, r, c, n)
		}
		gr, gc, gv, err := m.ToCOO()
		must(t, err)
		if !reflect.DeepEqual(gr, wantCOOr) || !reflect.DeepEqual(gc, wantCOOc) || !reflect.DeepEqual(gv, wantCOOv) {
			t.Fatalf("%s: entries differ from FromCOO's", name)
		}
		o, i, v, err := m.ToCSC()
		must(t, err)
		if !reflect.DeepEqual(o, cscOff) || !reflect.DeepEqual(i, cscRow) || !reflect.DeepEqual(v, cscVal) {
			t.Fatalf("%s: ToCSC differs from the reference", name)
		}
	}

	// A pattern CSC (nil values) stores ones; rows unsorted within a column are accepted.
	pat, err := sparsefac.FromCSC(ctx, 3, 2, []int64{0, 2, 3}, []int32{2, 0, 1}, nil, 0)
	must(t, err)
	defer pat.Close()
	r, c, v, err := pat.ToCOO()
	must(t, err)
	if got := fmt.Sprint(r, c, v); got != "[0 1 2] [0 1 0] [1 1 1]" {
		t.Fatalf("pattern CSC entries %s", got)
	}
	o, i, v2, err := pat.ToCSR()
	must(t, err)
	if got := fmt.Sprint(o, i, v2); got != "[0 1 2 3] [0 1 0] [1 1 1]" {
		t.Fatalf("pattern CSR download %s", got)
	}

	// Empty matrix: offsets of zeros, empty (non-nil) arrays.
	empty, err := sparsefac.FromCSC(ctx, 4, 3, []int64{0, 0, 0, 0}, nil, nil, 0)
	must(t, err)
	defer empty.Close()
	o, i, v2, err = empty.ToCSR()
	must(t, err)
	if fmt.Sprint(o, len(i), len(v2)) != "[0 0 0 0 0] 0 0" {
		t.Fatalf("empty CSR %v %v %v", o, i, v2)
	}

	// Errors: wrong offsets length (checked in Go), a row out of range and a duplicate (the
	// library's statuses), duplicates summed with SumDuplicates.
	_, err = sparsefac.FromCSC(ctx, 3, 2, []int64{0, 1}, []int32{0}, nil, 0)
	wantStatus(t, err, sparsefac.StatusShapeMismatch)
	_, err = sparsefac.FromCSC(ctx, 3, 2, []int64{0, 1, 2}, []int32{0, 3}, nil, 0)
	wantStatus(t, err, sparsefac.StatusOutOfRange)
	_, err = sparsefac.FromCSC(ctx, 3, 2, []int64{0, 2, 2}, []int32{1, 1}, []float32{1, 2}, 0)
	wantStatus(t, err, sparsefac.StatusDuplicateEntry)
	sum, err := sparsefac.FromCSC(ctx, 3, 2, []int64{0, 2, 2}, []int32{1, 1}, []float32{1, 2}, sparsefac.SumDuplicates)
	must(t, err)
	defer sum.Close()
	if v, err := sum.Values(); err != nil || fmt.Sprint(v) != "[3]" {
		t.Fatalf("summed duplicates %v %v", v, err)
	}
	coo.Close()
	_, _, _, err = coo.ToCSC()
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
	_, _, _, err = coo.ToCSR()
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
}
