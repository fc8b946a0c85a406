package sparsefac_test

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

func TestBadInputIsAPreciseError(t *testing.T) {
	ctx := cpuContext(t, 1)

	_, err := sparsefac.FromCOO(ctx, 3, 3, []int32{0, 1}, []int32{0}, nil, 0)
	wantStatus(t, err, sparsefac.StatusShapeMismatch)
	_, err = sparsefac.FromCOO(ctx, 3, 3, []int32{0, 1}, []int32{0, 1}, []float32{1}, 0)
	wantStatus(t, err, sparsefac.StatusShapeMismatch)
	_, err = sparsefac.FromCSR(ctx, 3, 3, []int64{0, 1}, []int32{0}, nil, 0)
	wantStatus(t, err, sparsefac.StatusShapeMismatch)

	// The library's own checks come back with its message.
	_, err = sparsefac.FromCOO(ctx, 3, 3, []int32{0, 3}, []int32{0, 1}, nil, 0)
	e := wantStatus(t, err, sparsefac.StatusOutOfRange)
	t.Logf("out-of-range row: %v", e)
	_, err = sparsefac.FromCOO(ctx, 3, 3, []int32{0, 1}, []int32{0, -1}, nil, 0)
	wantStatus(t, err, sparsefac.StatusOutOfRange)
	_, err = sparsefac.FromCOO(ctx, 3, 3, []int32{0, 1}, []int32{0, 1}, []float32{1, float32(math.NaN())}, 0)
	e = wantStatus(t, err, sparsefac.StatusInvalidValue)
	t.Logf("NaN value: %v", e)
	_, err = sparsefac.FromCOO(ctx, 3, 3, []int32{1, 1}, []int32{2, 2}, nil, 0)
	wantStatus(t, err, sparsefac.StatusDuplicateEntry)
	_, err = sparsefac.FromCOO(ctx, -1, 3, nil, nil, nil, 0)
	wantStatus(t, err, sparsefac.StatusInvalidArgument)

	_, err = sparsefac.NewDenseMatrix(ctx, 2, 3, []float32{1, 2, 3})
	wantStatus(t, err, sparsefac.StatusShapeMismatch)
	_, err = sparsefac.NewDenseMatrix(ctx, 1, 2, []float32{1, float32(math.Inf(1))})
	wantStatus(t, err, sparsefac.StatusInvalidValue)

	_, err = sparsefac.ReadFile(ctx, filepath.Join(t.TempDir(), "missing.mtx"), sparsefac.FormatAuto, 0)
	e = wantStatus(t, err, sparsefac.StatusIO)
	if !strings.Contains(e.Message, "missing.mtx") {
		t.Fatalf("message does not name the file: %v", e)
	}
	_, err = sparsefac.LoadModel(ctx, t.TempDir())
	wantStatusOneOf(t, err, sparsefac.StatusIO, sparsefac.StatusParse)

	_, err = sparsefac.NewContext(sparsefac.Backend(7))
	wantStatus(t, err, sparsefac.StatusInvalidArgument)

	tr := trainPlanted(t)
	_, err = tr.model.Predict([]int32{0, 1}, []int32{0})
	wantStatus(t, err, sparsefac.StatusShapeMismatch)
	_, err = tr.model.Predict([]int32{400}, []int32{0})
	wantStatus(t, err, sparsefac.StatusOutOfRange)
	_, err = tr.model.Recommend([]int32{0}, 5, sparsefac.RecommendOptions{Allowed: []int32{250}})
	wantStatus(t, err, sparsefac.StatusOutOfRange)
	_, _, err = tr.model.RecalculateUser(-1, []int32{0, 1}, []float32{1})
	wantStatus(t, err, sparsefac.StatusShapeMismatch)
	_, _, err = tr.model.RecalculateUser(-1, []int32{0}, []float32{float32(math.NaN())})
	wantStatus(t, err, sparsefac.StatusInvalidValue)
	err = tr.model.SetUserFactors([]float32{1})
	wantStatus(t, err, sparsefac.StatusShapeMismatch)

	opts, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	must(t, err)
	opts.Rank = 0
	_, err = sparsefac.Train(ctx, tr.train, opts)
	wantStatus(t, err, sparsefac.StatusInvalidArgument)
	opts, _ = sparsefac.DefaultTrainOptions(sparsefac.ALS)
	opts.Validation = mustCOO(t, ctx, 5, 5)
	_, err = sparsefac.Train(ctx, tr.train, opts)
	wantStatus(t, err, sparsefac.StatusShapeMismatch)
}

func mustCOO(t *testing.T, ctx *sparsefac.Context, rows, cols int) *sparsefac.SparseMatrix {
	m, err := sparsefac.FromCOO(ctx, rows, cols, []int32{0}, []int32{0}, []float32{1}, 0)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

func TestClosedObjectsReturnErrors(t *testing.T) {
	ctx, err := sparsefac.NewContext(sparsefac.CPU, sparsefac.WithThreads(1))
	must(t, err)
	m := mustCOO(t, ctx, 2, 2)
	d, err := sparsefac.NewDenseMatrix(ctx, 2, 1, nil)
	must(t, err)
	opts, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	must(t, err)
	opts.Rank, opts.Iterations = 1, 1
	model, err := sparsefac.Train(ctx, m, opts)
	must(t, err)

	// Objects outlive their context.
	must(t, ctx.Close())
	must(t, ctx.Close())
	if _, err := model.Predict([]int32{0}, []int32{0}); err != nil {
		t.Fatalf("model after its context closed: %v", err)
	}
	_, err = ctx.Backend()
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
	_, err = sparsefac.FromCOO(ctx, 1, 1, nil, nil, nil, 0)
	wantStatus(t, err, sparsefac.StatusInvalidHandle)

	must(t, model.Close())
	must(t, model.Close())
	_, err = model.Predict([]int32{0}, []int32{0})
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
	wantStatus(t, model.Save(filepath.Join(t.TempDir(), "x.sfm")), sparsefac.StatusInvalidHandle)
	_, _, err = model.Evaluate(m)
	wantStatus(t, err, sparsefac.StatusInvalidHandle)

	must(t, m.Close())
	_, _, _, err = m.ToCOO()
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
	must(t, d.Close())
	_, err = d.Data()
	wantStatus(t, err, sparsefac.StatusInvalidHandle)

	// nil receivers behave like closed objects.
	var nilModel *sparsefac.Model
	_, err = nilModel.Predict(nil, nil)
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
	must(t, nilModel.Close())
	var nilCtx *sparsefac.Context
	_, err = sparsefac.Train(nilCtx, nil, opts)
	wantStatus(t, err, sparsefac.StatusInvalidHandle)
}

var errEnough = errors.New("enough of this")

func TestCallbackStopErrorAndPanic(t *testing.T) {
	tr := trainPlanted(t)
	opts := tr.opts
	opts.Iterations = 6

	var epochs []int
	opts.OnEpoch = func(e sparsefac.EpochInfo) (bool, error) {
		epochs = append(epochs, e.Epoch)
		if math.IsNaN(e.TrainLoss) || e.TrainLoss <= 0 || !math.IsNaN(e.ValidationRMSE) {
			t.Errorf("epoch info %+v", e)
		}
		return e.Epoch == 2, nil
	}
	m, err := sparsefac.Train(tr.ctx, tr.train, opts)
	must(t, err)
	m.Close()
	if len(epochs) != 2 || epochs[0] != 1 || epochs[1] != 2 {
		t.Fatalf("stop after epoch 2: callback saw epochs %v", epochs)
	}

	calls := 0
	opts.OnEpoch = func(e sparsefac.EpochInfo) (bool, error) {
		calls++
		if e.Epoch == 3 {
			return false, errEnough
		}
		return false, nil
	}
	m, err = sparsefac.Train(tr.ctx, tr.train, opts)
	if m != nil {
		t.Fatal("a model came back from an aborted training")
	}
	e := wantStatus(t, err, sparsefac.StatusCallback)
	if !errors.Is(err, errEnough) || calls != 3 {
		t.Fatalf("want the callback's error after 3 calls, got %v after %d", e, calls)
	}
	t.Logf("callback error: %v", err)

	calls = 0
	opts.OnEpoch = func(e sparsefac.EpochInfo) (bool, error) {
		calls++
		panic("boom at epoch 1")
	}
	_, err = sparsefac.Train(tr.ctx, tr.train, opts)
	wantStatus(t, err, sparsefac.StatusCallback)
	var p *sparsefac.PanicError
	if !errors.As(err, &p) || p.Value != "boom at epoch 1" || calls != 1 || len(p.Stack) == 0 {
		t.Fatalf("want the panic value after 1 call, got %v after %d", err, calls)
	}
	t.Logf("callback panic: %v", err)

	// The binding still works after a panic went through it.
	opts.OnEpoch = nil
	m, err = sparsefac.Train(tr.ctx, tr.train, opts)
	must(t, err)
	m.Close()
}
