package sparsefac_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

// seenItems is the set of each user's training items.
func seenItems(t *testing.T, m *sparsefac.SparseMatrix) map[int32]map[int32]float32 {
	r, c, v, err := m.ToCOO()
	must(t, err)
	seen := map[int32]map[int32]float32{}
	for i := range r {
		if seen[r[i]] == nil {
			seen[r[i]] = map[int32]float32{}
		}
		seen[r[i]][c[i]] = v[i]
	}
	return seen
}

// sameRanking compares a top-n list with the brute-force order; items may swap only where
// their scores tie within float32 rounding.
func sameRanking(t *testing.T, what string, got []sparsefac.ItemScore, want []sparsefac.ItemScore) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d items, want %d", what, len(got), len(want))
	}
	for j := range want {
		if math.Abs(float64(got[j].Score-want[j].Score)) > 1e-4*(1+math.Abs(float64(want[j].Score))) {
			t.Fatalf("%s: rank %d score %g, brute force %g", what, j, got[j].Score, want[j].Score)
		}
		if got[j].Item != want[j].Item && math.Abs(float64(want[j].Score-want[min(j+1, len(want)-1)].Score)) > 1e-4 &&
			(j == 0 || math.Abs(float64(want[j].Score-want[j-1].Score)) > 1e-4) {
			t.Fatalf("%s: rank %d is item %d, brute force says %d", what, j, got[j].Item, want[j].Item)
		}
	}
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func topN(scores map[int32]float64, n int) []sparsefac.ItemScore {
	all := make([]sparsefac.ItemScore, 0, len(scores))
	for it, s := range scores {
		all = append(all, sparsefac.ItemScore{Item: it, Score: float32(s)})
	}
	sort.Slice(all, func(a, b int) bool {
		if all[a].Score != all[b].Score {
			return all[a].Score > all[b].Score
		}
		return all[a].Item < all[b].Item
	})
	if len(all) > n {
		all = all[:n]
	}
	return all
}

func TestRecommendExcludesSeenAndMatchesBruteForce(t *testing.T) {
	tr := trainPlanted(t)
	users, items, rank, err := tr.model.Shape()
	must(t, err)
	u, err := tr.model.UserFactors()
	must(t, err)
	v, err := tr.model.ItemFactors()
	must(t, err)
	seen := seenItems(t, tr.train)
	query := []int32{0, 1, 17, int32(users - 1)}
	const n = 10
	recs, err := tr.model.Recommend(query, n, sparsefac.RecommendOptions{Exclude: tr.train})
	must(t, err)
	for qi, user := range query {
		scores := map[int32]float64{}
		for it := 0; it < items; it++ {
			if _, ok := seen[user][int32(it)]; !ok {
				scores[int32(it)] = dot(u, v, int(user), it, rank)
			}
		}
		for _, r := range recs[qi] {
			if _, ok := seen[user][r.Item]; ok {
				t.Fatalf("user %d: recommended item %d is a training item", user, r.Item)
			}
		}
		sameRanking(t, "recommend", recs[qi], topN(scores, n))
	}
	// Only allowed items, and fewer candidates than n: the padding is dropped.
	allowed := []int32{3, 9, 4}
	recs, err = tr.model.Recommend([]int32{2}, 5, sparsefac.RecommendOptions{Allowed: allowed})
	must(t, err)
	scores := map[int32]float64{}
	for _, it := range allowed {
		scores[it] = dot(u, v, 2, int(it), rank)
	}
	sameRanking(t, "recommend allowed", recs[0], topN(scores, 5))

	// Similar items: cosine of the item factors, the item itself excluded.
	sim, err := tr.model.SimilarItems([]int32{0, 42}, 5)
	must(t, err)
	for qi, item := range []int32{0, 42} {
		cos := map[int32]float64{}
		norm := func(i int) float64 { return math.Sqrt(dotItems(v, i, i, rank)) }
		for it := 0; it < items; it++ {
			if int32(it) != item {
				cos[int32(it)] = dotItems(v, int(item), it, rank) / (norm(int(item)) * norm(it))
			}
		}
		sameRanking(t, "similar items", sim[qi], topN(cos, 5))
	}
}

func dotItems(v []float32, a, b, rank int) float64 {
	d := 0.0
	for x := 0; x < rank; x++ {
		d += float64(v[a*rank+x]) * float64(v[b*rank+x])
	}
	return d
}

func TestSaveLoadIdentical(t *testing.T) {
	tr := trainPlanted(t)
	path := filepath.Join(t.TempDir(), "model.sfm")
	must(t, tr.model.Save(path))
	loaded, err := sparsefac.LoadModel(tr.ctx, path)
	must(t, err)
	defer loaded.Close()
	for _, get := range []func(*sparsefac.Model) ([]float32, error){(*sparsefac.Model).UserFactors, (*sparsefac.Model).ItemFactors} {
		a, err := get(tr.model)
		must(t, err)
		b, err := get(loaded)
		must(t, err)
		if len(a) != len(b) {
			t.Fatalf("factor lengths %d vs %d", len(a), len(b))
		}
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("factor %d: saved %g, loaded %g", i, a[i], b[i])
			}
		}
	}
	e1, _, err := tr.model.Evaluate(tr.test)
	must(t, err)
	e2, _, err := loaded.Evaluate(tr.test)
	must(t, err)
	if e1 != e2 {
		t.Fatalf("RMSE changed by save/load: %v vs %v", e1, e2)
	}

	// A truncated file is a parse error, never a crash.
	data, err := os.ReadFile(path)
	must(t, err)
	bad := filepath.Join(t.TempDir(), "truncated.sfm")
	must(t, os.WriteFile(bad, data[:len(data)/2], 0o644))
	_, err = sparsefac.LoadModel(tr.ctx, bad)
	e := wantStatusOneOf(t, err, sparsefac.StatusParse, sparsefac.StatusIO)
	t.Logf("truncated model: %v", e)
}

func wantStatusOneOf(t *testing.T, err error, statuses ...sparsefac.Status) error {
	t.Helper()
	e, ok := err.(*sparsefac.Error)
	if !ok {
		t.Fatalf("want *sparsefac.Error, got %v", err)
	}
	for _, s := range statuses {
		if e.Status == s {
			return err
		}
	}
	t.Fatalf("status %q not in %v: %v", e.Status, statuses, err)
	return nil
}

// solve is Gaussian elimination with partial pivoting on a small dense system.
func solve(a [][]float64, b []float64) []float64 {
	n := len(b)
	for c := 0; c < n; c++ {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		a[c], a[p] = a[p], a[c]
		b[c], b[p] = b[p], b[c]
		for r := c + 1; r < n; r++ {
			f := a[r][c] / a[c][c]
			for k := c; k < n; k++ {
				a[r][k] -= f * a[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < n; k++ {
			s -= a[r][k] * x[k]
		}
		x[r] = s / a[r][r]
	}
	return x
}

func TestFoldInReproducesTrainingUser(t *testing.T) {
	tr := trainPlanted(t)
	_, _, rank, err := tr.model.Shape()
	must(t, err)
	v, err := tr.model.ItemFactors()
	must(t, err)
	u, err := tr.model.UserFactors()
	must(t, err)
	seen := seenItems(t, tr.train)
	const user = 3
	var items []int32
	var ratings []float32
	for it, r := range seen[user] {
		items = append(items, it)
		ratings = append(ratings, r)
	}
	factors, _, err := tr.model.RecalculateUser(-1, items, ratings)
	must(t, err)

	// Reference: the explicit ALS normal equations of this user against the fixed item
	// factors, (V_I^T V_I + lambda n_u I) x = V_I^T r (weighted regularization, the default).
	if tr.opts.Regularization != sparsefac.Weighted {
		t.Fatalf("test assumes weighted regularization, options say %v", tr.opts.Regularization)
	}
	a := make([][]float64, rank)
	b := make([]float64, rank)
	for i := range a {
		a[i] = make([]float64, rank)
		a[i][i] = tr.opts.LambdaUser * float64(len(items))
	}
	for j, it := range items {
		for x := 0; x < rank; x++ {
			b[x] += float64(v[int(it)*rank+x]) * float64(ratings[j])
			for y := 0; y < rank; y++ {
				a[x][y] += float64(v[int(it)*rank+x]) * float64(v[int(it)*rank+y])
			}
		}
	}
	want := solve(a, b)
	for x := 0; x < rank; x++ {
		if math.Abs(float64(factors[x])-want[x]) > 1e-3*(1+math.Abs(want[x])) {
			t.Fatalf("fold-in factor %d: %g, normal equations give %g", x, factors[x], want[x])
		}
		// ALS has converged: one more user half-step barely moves the trained row.
		if d := math.Abs(float64(factors[x] - u[user*rank+x])); d > 0.02*(1+math.Abs(float64(u[user*rank+x]))) {
			t.Fatalf("fold-in factor %d: %g, trained user has %g", x, factors[x], u[user*rank+x])
		}
	}
	// user >= 0 also replaces the model's row.
	_, _, err = tr.model.RecalculateUser(user, items, ratings)
	must(t, err)
	u2, err := tr.model.UserFactors()
	must(t, err)
	for x := 0; x < rank; x++ {
		if u2[user*rank+x] != factors[x] {
			t.Fatalf("row %d not replaced: %g vs %g", user, u2[user*rank+x], factors[x])
		}
	}
}

func TestBiasesAndFactorsRoundTrip(t *testing.T) {
	ctx := cpuContext(t, 5)
	ratings, err := sparsefac.SynthesizeRatings(ctx, sparsefac.Synthetic{
		Feedback: sparsefac.Explicit, Users: 100, Items: 80, NNZ: 3000, Rank: 3, Noise: 0.1,
	})
	must(t, err)
	defer ratings.Close()
	// Shift every rating by 3: a biased model must find the offset in its global mean.
	v, err := ratings.Values()
	must(t, err)
	for i := range v {
		v[i] += 3
	}
	must(t, ratings.SetValues(v))
	opts, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	must(t, err)
	opts.Rank, opts.Iterations, opts.UseBiases = 3, 10, true
	model, err := sparsefac.Train(ctx, ratings, opts)
	must(t, err)
	defer model.Close()
	b, ok, err := model.Biases()
	must(t, err)
	if !ok || len(b.User) != 100 || len(b.Item) != 80 {
		t.Fatalf("biases: ok %v, %d users, %d items", ok, len(b.User), len(b.Item))
	}
	if math.Abs(float64(b.GlobalMean)-3) > 0.3 {
		t.Fatalf("global mean %g, ratings were shifted by 3", b.GlobalMean)
	}
	u, err := model.UserFactors()
	must(t, err)
	it, err := model.ItemFactors()
	must(t, err)
	scores, err := model.Predict([]int32{7, 99}, []int32{0, 79})
	must(t, err)
	for k, pair := range [][2]int{{7, 0}, {99, 79}} {
		want := float64(b.GlobalMean) + float64(b.User[pair[0]]) + float64(b.Item[pair[1]]) + dot(u, it, pair[0], pair[1], 3)
		if math.Abs(float64(scores[k])-want) > 1e-4 {
			t.Fatalf("Predict%v = %g, mean + biases + dot = %g", pair, scores[k], want)
		}
	}

	// Factors set from Go are the ones predictions use.
	for i := range u {
		u[i] = float32(i%5) * 0.1
	}
	must(t, model.SetUserFactors(u))
	back, err := model.UserFactors()
	must(t, err)
	for i := range u {
		if back[i] != u[i] {
			t.Fatalf("user factor %d: set %g, read %g", i, u[i], back[i])
		}
	}
	scores, err = model.Predict([]int32{7}, []int32{0})
	must(t, err)
	if want := float64(b.GlobalMean) + float64(b.User[7]) + float64(b.Item[0]) + dot(u, it, 7, 0, 3); math.Abs(float64(scores[0])-want) > 1e-4 {
		t.Fatalf("after SetUserFactors: %g, want %g", scores[0], want)
	}
	u[0] = float32(math.Inf(1))
	wantStatus(t, model.SetUserFactors(u), sparsefac.StatusInvalidValue)

	// Dense matrices round-trip their contents.
	d, err := sparsefac.NewDenseMatrix(ctx, 2, 3, []float32{1, 2, 3, 4, 5, 6})
	must(t, err)
	defer d.Close()
	must(t, d.Upload([]float32{6, 5, 4, 3, 2, 1}))
	data, err := d.Data()
	must(t, err)
	if fmt.Sprint(data) != "[6 5 4 3 2 1]" {
		t.Fatalf("dense data %v", data)
	}
	wantStatus(t, d.Upload([]float32{1}), sparsefac.StatusShapeMismatch)
}
