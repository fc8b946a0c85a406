package sparsefac_test

import (
	"math"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

// Workers is a CUDA setting: its zero (automatic) is the default of every algorithm, the CPU
// backend trains with any value in range, and values out of range are rejected by name.
func TestWorkers(t *testing.T) {
	for _, alg := range []sparsefac.Algorithm{sparsefac.ALS, sparsefac.IALS, sparsefac.SGD} {
		d, err := sparsefac.DefaultTrainOptions(alg)
		must(t, err)
		if d.Workers != 0 {
			t.Fatalf("algorithm %d: default Workers %d, want the zero value (automatic)", alg, d.Workers)
		}
	}

	ctx := cpuContext(t, 3)
	ratings, err := sparsefac.SynthesizeRatings(ctx, sparsefac.Synthetic{
		Feedback: sparsefac.Explicit, Users: 200, Items: 150, NNZ: 8000, Rank: 3, Noise: 0.1,
	})
	must(t, err)
	defer ratings.Close()
	opts, err := sparsefac.DefaultTrainOptions(sparsefac.SGD)
	must(t, err)
	opts.Rank, opts.Iterations, opts.Workers = 3, 3, 64
	m, err := sparsefac.Train(ctx, ratings, opts)
	must(t, err)
	rmse, _, err := m.Evaluate(ratings)
	m.Close()
	must(t, err)
	if math.IsNaN(rmse) || math.IsInf(rmse, 0) {
		t.Fatalf("Workers = 64: training RMSE %g", rmse)
	}

	for _, workers := range []int{-1, 1<<24 + 1} {
		bad := opts
		bad.Workers = workers
		m, err := sparsefac.Train(ctx, ratings, bad)
		if m != nil {
			m.Close()
			t.Fatalf("Workers = %d trained a model", workers)
		}
		e := wantStatus(t, err, sparsefac.StatusInvalidArgument)
		if !strings.Contains(e.Message, "TrainOptions.Workers:") ||
			!strings.Contains(e.Message, "SFAC_OPT_SGD_WORKERS (option 203)") {
			t.Fatalf("Workers = %d: message %q does not name the field and the option", workers, e.Message)
		}
		if strings.Contains(e.Message, "DefaultTrainOptions") {
			t.Fatalf("Workers = %d: message %q blames a zero field", workers, e.Message)
		}
	}
}
