package sparsefac_test

// The cross-language model protocol of issue 5 (every binding implements both halves): SAVE
// trains a fixed model and writes <dir>/go.sfm plus the float32 bit patterns of its
// predictions for users 0..9 x items 0..9 in <dir>/go.pred; LOAD reloads every *.sfm in the
// directory (whichever language wrote it) and requires bit-identical predictions.
// The directory comes from SFAC_XLANG_DIR (ctest sets it); without it both tests skip.

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

func xlangDir(t *testing.T) string {
	dir := os.Getenv("SFAC_XLANG_DIR")
	if dir == "" {
		t.Skip("SFAC_XLANG_DIR not set")
	}
	return dir
}

func xlangPairs() (users, items []int32) {
	for u := int32(0); u < 10; u++ {
		for i := int32(0); i < 10; i++ {
			users, items = append(users, u), append(items, i)
		}
	}
	return users, items
}

func TestXlangSave(t *testing.T) {
	dir := xlangDir(t)
	must(t, os.MkdirAll(dir, 0o755))
	ctx := cpuContext(t, 7)
	ratings, err := sparsefac.SynthesizeRatings(ctx, sparsefac.Synthetic{
		Feedback: sparsefac.Explicit, Users: 300, Items: 200, NNZ: 6000, Rank: 4, Noise: 0.1, Skew: 0,
	})
	must(t, err)
	defer ratings.Close()
	opts, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	must(t, err)
	opts.Rank, opts.Iterations, opts.Deterministic = 4, 5, true
	model, err := sparsefac.Train(ctx, ratings, opts)
	must(t, err)
	defer model.Close()
	must(t, model.Save(filepath.Join(dir, "go.sfm")))
	users, items := xlangPairs()
	scores, err := model.Predict(users, items)
	must(t, err)
	var b strings.Builder
	for k := range users {
		fmt.Fprintf(&b, "%d %d %d\n", users[k], items[k], math.Float32bits(scores[k]))
	}
	must(t, os.WriteFile(filepath.Join(dir, "go.pred"), []byte(b.String()), 0o644))
}

func TestXlangLoad(t *testing.T) {
	dir := xlangDir(t)
	models, err := filepath.Glob(filepath.Join(dir, "*.sfm"))
	must(t, err)
	if len(models) == 0 {
		t.Fatalf("no *.sfm in %s: the xlang_save_* tests did not run", dir)
	}
	ctx := cpuContext(t, 1)
	users, items := xlangPairs()
	for _, path := range models {
		want := readPred(t, strings.TrimSuffix(path, ".sfm")+".pred")
		model, err := sparsefac.LoadModel(ctx, path)
		must(t, err)
		scores, err := model.Predict(users, items)
		model.Close()
		must(t, err)
		for k := range users {
			key := [2]int32{users[k], items[k]}
			w, ok := want[key]
			if !ok {
				t.Fatalf("%s: no prediction for (%d, %d) in the .pred file", path, users[k], items[k])
			}
			if got := math.Float32bits(scores[k]); got != w {
				t.Fatalf("%s: (%d, %d) predicts bits %d (%g), the writer saw %d (%g)", path,
					users[k], items[k], got, scores[k], w, math.Float32frombits(w))
			}
		}
		t.Logf("%s: 100 predictions bit-identical", filepath.Base(path))
	}
}

func readPred(t *testing.T, path string) map[[2]int32]uint32 {
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	out := map[[2]int32]uint32{}
	s := bufio.NewScanner(f)
	for line := 1; s.Scan(); line++ {
		var u, i int32
		var bits uint32
		if _, err := fmt.Sscanf(s.Text(), "%d %d %d", &u, &i, &bits); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		out[[2]int32{u, i}] = bits
	}
	must(t, s.Err())
	if len(out) != 100 {
		t.Fatalf("%s: %d pairs, want 100", path, len(out))
	}
	return out
}
