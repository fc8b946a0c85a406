package sparsefac_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

// Reorder's zero (ReorderAuto) is the default of every algorithm; ALS and IALS trained with
// ReorderDegree agree with ReorderNone up to float rounding, ReorderAuto is ReorderNone on the
// CPU, and an unknown value is rejected by name.
func TestReorder(t *testing.T) {
	for _, alg := range []sparsefac.Algorithm{sparsefac.ALS, sparsefac.IALS, sparsefac.SGD} {
		d, err := sparsefac.DefaultTrainOptions(alg)
		must(t, err)
		if d.Reorder != sparsefac.ReorderAuto {
			t.Fatalf("algorithm %d: default Reorder %v, want the zero value ReorderAuto", alg, d.Reorder)
		}
	}

	ctx := cpuContext(t, 4)
	for _, alg := range []sparsefac.Algorithm{sparsefac.ALS, sparsefac.IALS} {
		feedback := sparsefac.Explicit
		if alg == sparsefac.IALS {
			feedback = sparsefac.Implicit
		}
		// Skewed degrees, so that the degree order is far from the identity.
		ratings, err := sparsefac.SynthesizeRatings(ctx, sparsefac.Synthetic{
			Feedback: feedback, Users: 120, Items: 80, NNZ: 2000, Rank: 3, Noise: 0.1, Skew: 0.5,
		})
		must(t, err)
		defer ratings.Close()
		opts, err := sparsefac.DefaultTrainOptions(alg)
		must(t, err)
		opts.Rank, opts.Iterations = 3, 6
		fit := func(reorder sparsefac.Reorder) (user, item []float32) {
			t.Helper()
			o := opts
			o.Reorder = reorder
			m, err := sparsefac.Train(ctx, ratings, o)
			must(t, err)
			defer m.Close()
			user, err = m.UserFactors()
			must(t, err)
			item, err = m.ItemFactors()
			must(t, err)
			return user, item
		}
		noneUser, noneItem := fit(sparsefac.ReorderNone)
		degreeUser, degreeItem := fit(sparsefac.ReorderDegree)
		agree := func(side string, want, got []float32) {
			t.Helper()
			scale := 0.0
			for _, x := range want {
				scale = math.Max(scale, math.Abs(float64(x)))
			}
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-4*scale) {
					t.Fatalf("algorithm %d: %s factor %d is %g with ReorderDegree, %g with ReorderNone",
						alg, side, i, got[i], want[i])
				}
			}
		}
		agree("user", noneUser, degreeUser)
		agree("item", noneItem, degreeItem)
		// The CPU's automatic choice is no renumbering: the very same sums.
		if autoUser, _ := fit(sparsefac.ReorderAuto); !reflect.DeepEqual(autoUser, noneUser) {
			t.Fatalf("algorithm %d: ReorderAuto differs from ReorderNone on the CPU", alg)
		}

		o := opts
		o.Reorder = sparsefac.ReorderDegree
		tr, err := sparsefac.NewTrainer(ctx, ratings, o)
		must(t, err)
		_, err = tr.Run(1)
		tr.Close()
		must(t, err)

		for _, reorder := range []sparsefac.Reorder{-1, 3} {
			bad := opts
			bad.Reorder = reorder
			m, err := sparsefac.Train(ctx, ratings, bad)
			if m != nil {
				m.Close()
				t.Fatalf("Reorder = %v trained a model", reorder)
			}
			e := wantStatus(t, err, sparsefac.StatusInvalidArgument)
			if !strings.Contains(e.Message, "TrainOptions.Reorder:") ||
				!strings.Contains(e.Message, "SFAC_OPT_ALS_REORDER (option 104)") ||
				strings.Contains(e.Message, "DefaultTrainOptions") {
				t.Fatalf("Reorder = %v: message %q does not name the field and the option", reorder, e.Message)
			}
		}
	}
}
