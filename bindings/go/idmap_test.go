package sparsefac_test

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

func TestIDMapLookup(t *testing.T) {
	ctx := cpuContext(t, 1)
	rng := rand.New(rand.NewSource(3))
	// Arbitrary ids: large (beyond int32) and sparse, in random order.
	userSet, itemSet := map[int64]bool{}, map[int64]bool{}
	var b strings.Builder
	type rating struct{ u, i int64 }
	var ratings []rating
	seen := map[rating]bool{}
	for len(ratings) < 200 {
		r := rating{int64(rng.Intn(60))*1_000_003 + 5, int64(rng.Intn(40))*7_777_777_777 + 11}
		if seen[r] {
			continue
		}
		seen[r] = true
		ratings = append(ratings, r)
		userSet[r.u], itemSet[r.i] = true, true
		fmt.Fprintf(&b, "%d %d %d\n", r.u, r.i, 1+rng.Intn(5))
	}
	path := filepath.Join(t.TempDir(), "ratings.txt")
	must(t, os.WriteFile(path, []byte(b.String()), 0o644))
	m, rowMap, colMap, err := sparsefac.ReadFileRemapped(ctx, path, sparsefac.FormatTriplets, 0)
	must(t, err)
	defer m.Close()
	defer rowMap.Close()
	defer colMap.Close()

	sortedKeys := func(set map[int64]bool) []int64 {
		out := make([]int64, 0, len(set))
		for k := range set {
			out = append(out, k)
		}
		sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
		return out
	}
	for side, c := range map[string]struct {
		m    *sparsefac.IDMap
		want []int64
	}{"rows": {rowMap, sortedKeys(userSet)}, "cols": {colMap, sortedKeys(itemSet)}} {
		n, err := c.m.Len()
		must(t, err)
		ids, err := c.m.IDs()
		must(t, err)
		if n != len(c.want) || !reflect.DeepEqual(ids, c.want) {
			t.Fatalf("%s: %d ids %v, want ascending %v", side, n, ids, c.want)
		}
		// Lookup inverts IDs: shuffled ids, repeats included.
		query := append([]int64(nil), ids...)
		query = append(query, ids[0], ids[len(ids)-1])
		rng.Shuffle(len(query), func(a, b int) { query[a], query[b] = query[b], query[a] })
		idx, err := c.m.Lookup(query)
		must(t, err)
		for q, id := range query {
			if idx[q] < 0 || int(idx[q]) >= n || ids[idx[q]] != id {
				t.Fatalf("%s: Lookup(%d) = %d", side, id, idx[q])
			}
		}
	}
	// Every rating of the file is at the looked-up (row, col) of the matrix.
	us, is := make([]int64, len(ratings)), make([]int64, len(ratings))
	for k, r := range ratings {
		us[k], is[k] = r.u, r.i
	}
	ri, err := rowMap.Lookup(us)
	must(t, err)
	ci, err := colMap.Lookup(is)
	must(t, err)
	gr, gc, _, err := m.ToCOO()
	must(t, err)
	stored := map[[2]int32]bool{}
	for k := range gr {
		stored[[2]int32{gr[k], gc[k]}] = true
	}
	for k := range ratings {
		if !stored[[2]int32{ri[k], ci[k]}] {
			t.Fatalf("rating %v looked up to (%d, %d), not a stored entry", ratings[k], ri[k], ci[k])
		}
	}
	if len(stored) != len(ratings) {
		t.Fatalf("%d stored entries for %d ratings", len(stored), len(ratings))
	}

	// Unknown ids: the library answers -1 for each (status OK), known ones still resolve.
	ids, err := rowMap.IDs()
	must(t, err)
	idx, err := rowMap.Lookup([]int64{ids[0] + 1, ids[2], -1 << 62, 1<<63 - 1})
	must(t, err)
	if fmt.Sprint(idx) != "[-1 2 -1 -1]" {
		t.Fatalf("Lookup with unknown ids = %v, want [-1 2 -1 -1]", idx)
	}
	// Empty and nil queries are empty answers.
	for _, q := range [][]int64{nil, {}} {
		idx, err := rowMap.Lookup(q)
		must(t, err)
		if len(idx) != 0 {
			t.Fatalf("Lookup(%v) = %v", q, idx)
		}
	}
	// A closed (or nil) map is the binding's StatusInvalidHandle.
	rowMap.Close()
	_, err = rowMap.Lookup([]int64{ids[0]})
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
	_, err = (*sparsefac.IDMap)(nil).Lookup([]int64{1})
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
	// The column map and the matrix are independent of the closed row map.
	if n, err := colMap.Len(); err != nil || n != len(itemSet) {
		t.Fatalf("colMap after closing rowMap: %d %v", n, err)
	}
}
