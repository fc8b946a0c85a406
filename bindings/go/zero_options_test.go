package sparsefac_test

import (
	"reflect"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

// TrainOptions{} is not usable (zero fields are settings, not "default"): the library rejects
// the zero Rank, and the message points at DefaultTrainOptions.
func TestZeroTrainOptionsRejected(t *testing.T) {
	ctx := cpuContext(t, 3)
	ratings, err := sparsefac.SynthesizeRatings(ctx, sparsefac.Synthetic{
		Feedback: sparsefac.Explicit, Users: 50, Items: 30, NNZ: 600, Rank: 3, Noise: 0.1,
	})
	must(t, err)
	defer ratings.Close()

	wantHint := func(err error, field string) {
		t.Helper()
		e := wantStatus(t, err, sparsefac.StatusInvalidArgument)
		if !strings.Contains(e.Message, "TrainOptions."+field+":") || !strings.Contains(e.Message, "DefaultTrainOptions") {
			t.Fatalf("message %q does not name TrainOptions.%s and DefaultTrainOptions", e.Message, field)
		}
	}
	m, err := sparsefac.Train(ctx, ratings, sparsefac.TrainOptions{})
	if m != nil {
		t.Fatal("TrainOptions{} trained a model")
	}
	wantHint(err, "Rank")
	tr, err := sparsefac.NewTrainer(ctx, ratings, sparsefac.TrainOptions{})
	if tr != nil {
		t.Fatal("TrainOptions{} made a trainer")
	}
	wantHint(err, "Rank")

	// Every field whose zero is out of range gets the hint when left zero ...
	for _, alg := range []sparsefac.Algorithm{sparsefac.ALS, sparsefac.IALS, sparsefac.SGD} {
		for field, zero := range map[string]func(*sparsefac.TrainOptions){
			"Rank":         func(o *sparsefac.TrainOptions) { o.Rank = 0 },
			"CGSteps":      func(o *sparsefac.TrainOptions) { o.CGSteps = 0 },
			"LearningRate": func(o *sparsefac.TrainOptions) { o.LearningRate = 0 },
			"InitScale":    func(o *sparsefac.TrainOptions) { o.InitScale = 0 },
		} {
			opts, err := sparsefac.DefaultTrainOptions(alg)
			must(t, err)
			zero(&opts)
			_, err = sparsefac.Train(ctx, ratings, opts)
			wantHint(err, field)
		}
	}
	// ... but not a nonzero value out of range.
	opts, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	must(t, err)
	opts.Rank = -2
	_, err = sparsefac.Train(ctx, ratings, opts)
	e := wantStatus(t, err, sparsefac.StatusInvalidArgument)
	if !strings.Contains(e.Message, "TrainOptions.Rank:") || strings.Contains(e.Message, "DefaultTrainOptions") {
		t.Fatalf("message for Rank = -2: %q", e.Message)
	}
}

// Zero fields that are in range are honoured as zero, not replaced by the defaults: this is
// why the zero value cannot mean "library default".
func TestZeroFieldsAreSettings(t *testing.T) {
	ctx := cpuContext(t, 3)
	ratings, err := sparsefac.SynthesizeRatings(ctx, sparsefac.Synthetic{
		Feedback: sparsefac.Explicit, Users: 50, Items: 30, NNZ: 600, Rank: 3, Noise: 0.1,
	})
	must(t, err)
	defer ratings.Close()
	train := func(opts sparsefac.TrainOptions) (epochs int, user []float32) {
		t.Helper()
		opts.Deterministic = true
		opts.OnEpoch = func(sparsefac.EpochInfo) (bool, error) { epochs++; return false, nil }
		m, err := sparsefac.Train(ctx, ratings, opts)
		must(t, err)
		defer m.Close()
		user, err = m.UserFactors()
		must(t, err)
		return epochs, user
	}
	def, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	must(t, err)
	if def.Iterations == 0 || def.LambdaUser == 0 || def.Regularization != sparsefac.Weighted {
		t.Fatalf("unexpected ALS defaults %+v", def)
	}
	// FactorDType is the exception: its zero, Float32, is the default of every algorithm.
	for _, alg := range []sparsefac.Algorithm{sparsefac.ALS, sparsefac.IALS, sparsefac.SGD} {
		d, err := sparsefac.DefaultTrainOptions(alg)
		must(t, err)
		if d.FactorDType != sparsefac.Float32 {
			t.Fatalf("algorithm %d: default FactorDType %v, want the zero value Float32", alg, d.FactorDType)
		}
	}
	defEpochs, defUser := train(def)
	if defEpochs != def.Iterations {
		t.Fatalf("default run: %d epochs, want %d", defEpochs, def.Iterations)
	}

	// Iterations = 0 runs no epoch.
	o := def
	o.Iterations = 0
	if n, _ := train(o); n != 0 {
		t.Fatalf("Iterations = 0 ran %d epochs", n)
	}
	// No regularization is a different fit from the default lambda.
	o = def
	o.LambdaUser, o.LambdaItem = 0, 0
	if n, u := train(o); n != def.Iterations || reflect.DeepEqual(u, defUser) {
		t.Fatalf("lambda = 0: %d epochs, factors equal to the default run: %v", n, reflect.DeepEqual(u, defUser))
	}
	// Identical options reproduce the default run exactly (so the differences above are real).
	if n, u := train(def); n != def.Iterations || !reflect.DeepEqual(u, defUser) {
		t.Fatal("the default run is not reproducible")
	}

	// A literal with only the out-of-range-at-zero fields set trains, with zeros elsewhere:
	// no epoch at all, since Iterations is 0.
	n, _ := train(sparsefac.TrainOptions{Rank: 3, CGSteps: 3, LearningRate: 0.1, InitScale: 0.1})
	if n != 0 {
		t.Fatalf("literal without Iterations ran %d epochs", n)
	}
}
