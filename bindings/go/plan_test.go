package sparsefac_test

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

func TestSDDMMPlanEqualsUnplanned(t *testing.T) {
	ctx := cpuContext(t, 1)
	rng := rand.New(rand.NewSource(9))
	const m, n, k = 120, 90, 16
	var ri, ci []int32
	var sv []float32
	for _, cell := range rng.Perm(m * n)[:m*n/6] {
		ri, ci = append(ri, int32(cell/n)), append(ci, int32(cell%n))
		sv = append(sv, float32(rng.NormFloat64()))
	}
	// One dense row (skew) so that both CPU algorithms have real work to split differently.
	for j := 0; j < n; j++ {
		if !containsCell(ri, ci, 7, int32(j)) {
			ri, ci, sv = append(ri, 7), append(ci, int32(j)), append(sv, float32(rng.NormFloat64()))
		}
	}
	S, err := sparsefac.FromCOO(ctx, m, n, ri, ci, sv, 0)
	must(t, err)
	defer S.Close()
	A, err := sparsefac.NewDenseMatrix(ctx, m, k, randomFloats(rng, m*k))
	must(t, err)
	defer A.Close()
	B, err := sparsefac.NewDenseMatrix(ctx, n, k, randomFloats(rng, n*k))
	must(t, err)
	defer B.Close()
	_, _, nnz, err := S.Shape()
	must(t, err)
	old := randomFloats(rng, nnz)

	run := func(plan *sparsefac.SDDMMPlan, mode sparsefac.SDDMMMode) []float32 {
		t.Helper()
		P, err := S.Like(old)
		must(t, err)
		defer P.Close()
		if plan == nil {
			must(t, sparsefac.SDDMM(ctx, mode, 1.5, A, B, S, 0.25, P))
		} else {
			must(t, sparsefac.SDDMMWithPlan(ctx, plan, mode, 1.5, A, B, S, 0.25, P))
		}
		v, err := P.Values()
		must(t, err)
		return v
	}
	for _, alg := range []sparsefac.SDDMMAlgorithm{sparsefac.SDDMMAuto, sparsefac.SDDMMRowSplit, sparsefac.SDDMMNNZSplit} {
		plan, err := sparsefac.NewSDDMMPlan(ctx, S, k, alg)
		must(t, err)
		got, err := plan.Algorithm()
		must(t, err)
		if got == sparsefac.SDDMMAuto || (alg != sparsefac.SDDMMAuto && got != alg) {
			t.Fatalf("plan for %v resolved to %v", alg, got)
		}
		for _, mode := range []sparsefac.SDDMMMode{sparsefac.Scaled, sparsefac.Pattern, sparsefac.Residual} {
			want := run(nil, mode)
			planned := run(plan, mode)
			// Each nonzero is one dot product in either algorithm: the results are identical.
			if !reflect.DeepEqual(planned, want) {
				t.Fatalf("%v (%v), mode %d: planned result differs from unplanned", alg, got, mode)
			}
			if mode == sparsefac.Scaled && reflect.DeepEqual(want, old) {
				t.Fatal("SDDMM left P unchanged")
			}
		}
		// The plan also serves a matrix made from S with Like, as the output and the input.
		L, err := S.Like(sv[:nnz])
		must(t, err)
		must(t, sparsefac.SDDMMWithPlan(ctx, plan, sparsefac.Pattern, 1, A, B, L, 0, L))
		L.Close()
		must(t, plan.Close())
		must(t, plan.Close()) // idempotent
		P, err := S.Like(nil)
		must(t, err)
		wantStatus(t, sparsefac.SDDMMWithPlan(ctx, plan, sparsefac.Pattern, 1, A, B, S, 0, P), sparsefac.StatusInvalidHandle)
		_, err = plan.Algorithm()
		wantStatus(t, err, sparsefac.StatusInvalidHandle)
		P.Close()
	}

	// The plan outlives its pattern matrix (it keeps its own analysis).
	S2, err := S.Like(nil)
	must(t, err)
	plan, err := sparsefac.NewSDDMMPlan(ctx, S2, k, sparsefac.SDDMMAuto)
	must(t, err)
	defer plan.Close()
	S2.Close()
	P, err := S.Like(old)
	must(t, err)
	defer P.Close()
	must(t, sparsefac.SDDMMWithPlan(ctx, plan, sparsefac.Residual, 1.5, A, B, S, 0.25, P))
	v, err := P.Values()
	must(t, err)
	if !reflect.DeepEqual(v, run(nil, sparsefac.Residual)) {
		t.Fatal("plan of a closed pattern matrix: result differs from unplanned")
	}

	// Library errors: TILED and CUSPARSE are not on the CPU, a plan for another K or another pattern.
	_, err = sparsefac.NewSDDMMPlan(ctx, S, k, sparsefac.SDDMMTiled)
	e := wantStatus(t, err, sparsefac.StatusUnsupported)
	if !strings.Contains(e.Message, "TILED") {
		t.Fatalf("message %q", e.Message)
	}
	_, err = sparsefac.NewSDDMMPlan(ctx, S, k, sparsefac.SDDMMCusparse)
	e = wantStatus(t, err, sparsefac.StatusUnsupported)
	if !strings.Contains(e.Message, "CUSPARSE") {
		t.Fatalf("message %q", e.Message)
	}
	wrongK, err := sparsefac.NewSDDMMPlan(ctx, S, k+1, sparsefac.SDDMMAuto)
	must(t, err)
	defer wrongK.Close()
	wantStatus(t, sparsefac.SDDMMWithPlan(ctx, wrongK, sparsefac.Pattern, 1, A, B, S, 0, P), sparsefac.StatusShapeMismatch)
	other, err := sparsefac.FromCOO(ctx, m, n, []int32{0}, []int32{0}, []float32{1}, 0)
	must(t, err)
	defer other.Close()
	otherPlan, err := sparsefac.NewSDDMMPlan(ctx, other, k, sparsefac.SDDMMAuto)
	must(t, err)
	defer otherPlan.Close()
	wantStatus(t, sparsefac.SDDMMWithPlan(ctx, otherPlan, sparsefac.Pattern, 1, A, B, S, 0, P), sparsefac.StatusInvalidArgument)
	if sparsefac.SDDMMNNZSplit.String() != "SDDMMNNZSplit" {
		t.Fatalf("String: %v", sparsefac.SDDMMNNZSplit)
	}
}

func containsCell(ri, ci []int32, r, c int32) bool {
	for i := range ri {
		if ri[i] == r && ci[i] == c {
			return true
		}
	}
	return false
}
