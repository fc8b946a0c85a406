package sparsefac_test

import (
	"errors"
	"math"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

func TestTrainerStepsMatchTrain(t *testing.T) {
	synth := sparsefac.Synthetic{Feedback: sparsefac.Explicit, Users: 200, Items: 150, NNZ: 6000, Rank: 4, Noise: 0.1}
	opts, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	must(t, err)
	opts.Rank, opts.Iterations, opts.Deterministic = 4, 5, true

	// Train 5 epochs at once ...
	ctx := cpuContext(t, 21)
	ratings, err := sparsefac.SynthesizeRatings(ctx, synth)
	must(t, err)
	defer ratings.Close()
	whole, err := sparsefac.Train(ctx, ratings, opts)
	must(t, err)
	defer whole.Close()

	// ... and 3 + 2 with a trainer on a context with the same seed.
	ctx2 := cpuContext(t, 21)
	ratings2, err := sparsefac.SynthesizeRatings(ctx2, synth)
	must(t, err)
	defer ratings2.Close()
	var seen []int
	opts.OnEpoch = func(e sparsefac.EpochInfo) (bool, error) { seen = append(seen, e.Epoch); return false, nil }
	tr, err := sparsefac.NewTrainer(ctx2, ratings2, opts)
	must(t, err)
	defer tr.Close()
	loss, err := tr.Loss()
	must(t, err)
	if !math.IsNaN(loss) {
		t.Fatalf("loss before the first epoch %g, want NaN", loss)
	}
	done, err := tr.Run(3)
	must(t, err)
	l3, err := tr.Loss()
	must(t, err)
	if done, err = tr.Run(2); err != nil || done != 5 {
		t.Fatalf("after 3 + 2 epochs: done %d, err %v", done, err)
	}
	l5, err := tr.Loss()
	must(t, err)
	if !(l5 <= l3) || len(seen) != 5 || seen[4] != 5 {
		t.Fatalf("loss %g after 3 epochs, %g after 5; callback saw %v", l3, l5, seen)
	}
	stepped, err := tr.Model()
	must(t, err)
	defer stepped.Close()
	a, err := whole.UserFactors()
	must(t, err)
	b, err := stepped.UserFactors()
	must(t, err)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("user factor %d: Train %g, Trainer 3+2 %g", i, a[i], b[i])
		}
	}

	// Errors from the callback come back from Run; a closed trainer answers InvalidHandle.
	boom := errors.New("boom")
	opts.OnEpoch = func(e sparsefac.EpochInfo) (bool, error) { return false, boom }
	tr2, err := sparsefac.NewTrainer(ctx2, ratings2, opts)
	must(t, err)
	_, err = tr2.Run(1)
	wantStatus(t, err, sparsefac.StatusCallback)
	if !errors.Is(err, boom) {
		t.Fatalf("Run error %v does not wrap the callback's", err)
	}
	must(t, tr2.Close())
	_, err = tr2.Run(1)
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
	_, err = tr2.Model()
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
}
