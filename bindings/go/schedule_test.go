package sparsefac_test

import (
	"math"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

// Schedule is a CUDA setting: its zero (Hogwild) is the default of every algorithm, the CPU
// backend trains with either schedule, and an unknown schedule is rejected by name.
func TestSchedule(t *testing.T) {
	for _, alg := range []sparsefac.Algorithm{sparsefac.ALS, sparsefac.IALS, sparsefac.SGD} {
		d, err := sparsefac.DefaultTrainOptions(alg)
		must(t, err)
		if d.Schedule != sparsefac.Hogwild {
			t.Fatalf("algorithm %d: default Schedule %d, want the zero value Hogwild", alg, d.Schedule)
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
	opts.Rank, opts.Iterations = 3, 3
	for _, schedule := range []sparsefac.SGDSchedule{sparsefac.Hogwild, sparsefac.Wavefront} {
		o := opts
		o.Schedule = schedule
		m, err := sparsefac.Train(ctx, ratings, o)
		must(t, err)
		rmse, _, err := m.Evaluate(ratings)
		m.Close()
		must(t, err)
		if math.IsNaN(rmse) || math.IsInf(rmse, 0) {
			t.Fatalf("Schedule = %d: training RMSE %g", schedule, rmse)
		}
		tr, err := sparsefac.NewTrainer(ctx, ratings, o)
		must(t, err)
		_, err = tr.Run(1)
		tr.Close()
		must(t, err)
	}

	for _, schedule := range []sparsefac.SGDSchedule{-1, 2} {
		bad := opts
		bad.Schedule = schedule
		m, err := sparsefac.Train(ctx, ratings, bad)
		if m != nil {
			m.Close()
			t.Fatalf("Schedule = %d trained a model", schedule)
		}
		e := wantStatus(t, err, sparsefac.StatusInvalidArgument)
		if !strings.Contains(e.Message, "TrainOptions.Schedule:") ||
			!strings.Contains(e.Message, "SFAC_OPT_SGD_SCHEDULE (option 204)") {
			t.Fatalf("Schedule = %d: message %q does not name the field and the option", schedule, e.Message)
		}
	}
}
