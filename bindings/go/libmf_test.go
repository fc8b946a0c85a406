package sparsefac_test

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

// parseLIBMF reads LIBMF's text model: header values by key, factor rows by "p<i>"/"q<i>".
func parseLIBMF(t *testing.T, path string) (header map[string]string, p, q [][]float64) {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	header = map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		key := fields[0]
		if len(key) > 1 && (key[0] == 'p' || key[0] == 'q') {
			idx, err := strconv.Atoi(key[1:])
			must(t, err)
			if len(fields) < 2 || fields[1] != "T" {
				t.Fatalf("row %q not marked valid: %q", key, sc.Text())
			}
			row := make([]float64, 0, len(fields)-2)
			for _, s := range fields[2:] {
				v, err := strconv.ParseFloat(s, 64)
				must(t, err)
				row = append(row, v)
			}
			dst := &p
			if key[0] == 'q' {
				dst = &q
			}
			if idx != len(*dst) {
				t.Fatalf("row %q out of order (want index %d)", key, len(*dst))
			}
			*dst = append(*dst, row)
			continue
		}
		if len(fields) != 2 {
			t.Fatalf("header line %q", sc.Text())
		}
		header[key] = fields[1]
	}
	must(t, sc.Err())
	return header, p, q
}

func compareFactors(t *testing.T, side string, got [][]float64, want []float32, rows, rank int) {
	t.Helper()
	if len(got) != rows {
		t.Fatalf("%s: %d rows in the file, model has %d", side, len(got), rows)
	}
	for r := 0; r < rows; r++ {
		if len(got[r]) < rank {
			t.Fatalf("%s%d: %d values, want >= %d", side, r, len(got[r]), rank)
		}
		for c := 0; c < rank; c++ {
			w := float64(want[r*rank+c])
			if math.Abs(got[r][c]-w) > 1e-6*math.Max(1, math.Abs(w)) {
				t.Fatalf("%s%d[%d] = %v in the file, model has %v", side, r, c, got[r][c], w)
			}
		}
	}
}

func TestExportLIBMF(t *testing.T) {
	tr := trainPlanted(t)
	path := filepath.Join(t.TempDir(), "model.libmf")
	must(t, tr.model.ExportLIBMF(path))
	users, items, rank, err := tr.model.Shape()
	must(t, err)
	header, p, q := parseLIBMF(t, path)
	if header["m"] != strconv.Itoa(users) || header["n"] != strconv.Itoa(items) ||
		header["k"] != strconv.Itoa(rank) || header["b"] != "0" {
		t.Fatalf("header %v, want m %d n %d k %d b 0", header, users, items, rank)
	}
	uf, err := tr.model.UserFactors()
	must(t, err)
	itf, err := tr.model.ItemFactors()
	must(t, err)
	compareFactors(t, "p", p, uf, users, rank)
	compareFactors(t, "q", q, itf, items, rank)
	// The file predicts what the model predicts: dot(p_u, q_i).
	scores, err := tr.model.Predict([]int32{0, 17, 399}, []int32{5, 0, 249})
	must(t, err)
	for n, ui := range [][2]int{{0, 5}, {17, 0}, {399, 249}} {
		dot := 0.0
		for c := 0; c < rank; c++ {
			dot += p[ui[0]][c] * q[ui[1]][c]
		}
		if math.Abs(dot-float64(scores[n])) > 1e-4 {
			t.Fatalf("file predicts %v for %v, model %v", dot, ui, scores[n])
		}
	}
}

func TestExportLIBMFWithBiases(t *testing.T) {
	ctx := cpuContext(t, 5)
	ratings, err := sparsefac.SynthesizeRatings(ctx, sparsefac.Synthetic{
		Feedback: sparsefac.Explicit, Users: 60, Items: 40, NNZ: 1500, Rank: 3, Noise: 0.1,
	})
	must(t, err)
	defer ratings.Close()
	opts, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	must(t, err)
	opts.Rank, opts.Iterations, opts.UseBiases = 3, 3, true
	model, err := sparsefac.Train(ctx, ratings, opts)
	must(t, err)
	defer model.Close()
	path := filepath.Join(t.TempDir(), "biased.libmf")
	must(t, model.ExportLIBMF(path))
	header, p, q := parseLIBMF(t, path)
	if header["k"] != "5" {
		t.Fatalf("k = %s with biases, want rank + 2 = 5", header["k"])
	}
	b, ok, err := model.Biases()
	must(t, err)
	if !ok {
		t.Fatal("model trained with UseBiases has no biases")
	}
	uf, err := model.UserFactors()
	must(t, err)
	itf, err := model.ItemFactors()
	must(t, err)
	compareFactors(t, "p", p, uf, 60, 3)
	compareFactors(t, "q", q, itf, 40, 3)
	gm, err := strconv.ParseFloat(header["b"], 64)
	must(t, err)
	if math.Abs(gm-float64(b.GlobalMean)) > 1e-6 {
		t.Fatalf("b = %v, global mean %v", gm, b.GlobalMean)
	}
	for u := range p {
		if math.Abs(p[u][3]-float64(b.GlobalMean+b.User[u])) > 1e-5 || p[u][4] != 1 {
			t.Fatalf("p%d bias columns %v, want [%v 1]", u, p[u][3:], b.GlobalMean+b.User[u])
		}
	}
	for i := range q {
		if q[i][3] != 1 || math.Abs(q[i][4]-float64(b.Item[i])) > 1e-6 {
			t.Fatalf("q%d bias columns %v, want [1 %v]", i, q[i][3:], b.Item[i])
		}
	}
	// A closed model and an unwritable path come back as library errors.
	err = model.ExportLIBMF(filepath.Join(t.TempDir(), "no", "such", "dir", "m.txt"))
	wantStatus(t, err, sparsefac.StatusIO)
	model.Close()
	wantStatus(t, model.ExportLIBMF(path), sparsefac.StatusInvalidHandle)
}
