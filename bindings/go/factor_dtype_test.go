package sparsefac_test

import (
	"math"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

// isFloat16 reports whether x is exactly a value of IEEE half precision: at most 11
// significant bits above the smallest subnormal 2^-24, and at most 65504 in magnitude.
func isFloat16(x float32) bool {
	if math.Abs(float64(x)) > 65504 {
		return false
	}
	_, e := math.Frexp(float64(x)) // |x| = f * 2^e with 0.5 <= f < 1
	if e-1 < -14 {
		e = -13
	}
	s := math.Ldexp(float64(x), 11-e) // 10 bits after the leading one
	return s == math.Trunc(s)
}

// FactorDType = Float16 trains ALS on the CPU backend about as well as float32 storage, and
// every factor of the model is a float16 value; an unknown DType is rejected.
func TestFactorDTypeFloat16Storage(t *testing.T) {
	ctx := cpuContext(t, 6)
	ratings, err := sparsefac.SynthesizeRatings(ctx, sparsefac.Synthetic{
		Feedback: sparsefac.Explicit, Users: 300, Items: 200, NNZ: 20000, Rank: 4, Noise: 0.1,
	})
	must(t, err)
	defer ratings.Close()
	train, test, err := ratings.SplitRandom(0.2, 5)
	must(t, err)
	defer train.Close()
	defer test.Close()

	def, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	must(t, err)
	if def.FactorDType != sparsefac.Float32 {
		t.Fatalf("default FactorDType %v, want Float32", def.FactorDType)
	}
	fit := func(dtype sparsefac.DType) (rmse float64, user []float32) {
		t.Helper()
		opts := def
		opts.Rank, opts.Iterations, opts.FactorDType = 4, 8, dtype
		m, err := sparsefac.Train(ctx, train, opts)
		must(t, err)
		defer m.Close()
		rmse, _, err = m.Evaluate(test)
		must(t, err)
		user, err = m.UserFactors()
		must(t, err)
		return rmse, user
	}
	full, fullUser := fit(sparsefac.Float32)
	half, halfUser := fit(sparsefac.Float16)
	t.Logf("held-out RMSE: float32 storage %.5f, float16 storage %.5f", full, half)
	if half > 1.02*full {
		t.Fatalf("float16 storage RMSE %.5f, float32 %.5f", half, full)
	}
	for i, x := range halfUser {
		if !isFloat16(x) {
			t.Fatalf("user factor %d = %g is not a float16 value", i, x)
		}
	}
	rounded := 0
	for _, x := range fullUser {
		if !isFloat16(x) {
			rounded++
		}
	}
	if rounded == 0 {
		t.Fatal("float32 storage gave float16 values only: the check above proves nothing")
	}

	bad := def
	bad.FactorDType = sparsefac.DType(7)
	m, err := sparsefac.Train(ctx, train, bad)
	if m != nil {
		m.Close()
	}
	if e := wantStatus(t, err, sparsefac.StatusInvalidArgument); !strings.Contains(e.Message, "TrainOptions.FactorDType:") {
		t.Fatalf("message %q does not name TrainOptions.FactorDType", e.Message)
	}
}

// SGD trains with FactorDType = Float16 on the CPU backend about as well as with float32
// storage. Without rating scaling the model's factors are the stored values, so every one of
// them is a float16 value.
func TestFactorDTypeFloat16StorageSGD(t *testing.T) {
	ctx := cpuContext(t, 6)
	ratings, err := sparsefac.SynthesizeRatings(ctx, sparsefac.Synthetic{
		Feedback: sparsefac.Explicit, Users: 300, Items: 200, NNZ: 20000, Rank: 4, Noise: 0.1,
	})
	must(t, err)
	defer ratings.Close()
	train, test, err := ratings.SplitRandom(0.2, 5)
	must(t, err)
	defer train.Close()
	defer test.Close()

	def, err := sparsefac.DefaultTrainOptions(sparsefac.SGD)
	must(t, err)
	fit := func(dtype sparsefac.DType) (rmse float64, factors []float32) {
		t.Helper()
		opts := def
		opts.Rank, opts.Iterations, opts.LambdaUser, opts.LambdaItem = 4, 20, 0.02, 0.02
		opts.ScaleRatings, opts.FactorDType = false, dtype
		m, err := sparsefac.Train(ctx, train, opts)
		must(t, err)
		defer m.Close()
		rmse, _, err = m.Evaluate(test)
		must(t, err)
		user, err := m.UserFactors()
		must(t, err)
		item, err := m.ItemFactors()
		must(t, err)
		return rmse, append(user, item...)
	}
	full, _ := fit(sparsefac.Float32)
	half, halfFactors := fit(sparsefac.Float16)
	t.Logf("SGD held-out RMSE: float32 storage %.5f, float16 storage %.5f", full, half)
	if half > 1.05*full {
		t.Fatalf("float16 storage RMSE %.5f, float32 %.5f", half, full)
	}
	for i, x := range halfFactors {
		if !isFloat16(x) {
			t.Fatalf("factor %d = %g is not a float16 value", i, x)
		}
	}
}
