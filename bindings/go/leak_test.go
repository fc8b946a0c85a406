package sparsefac_test

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

// drainFinalizers returns once the finalizers of everything unreachable now have run. The
// finalizer goroutine takes the whole queue at once and runs a batch in no particular order,
// so one sentinel can run before its batch-mates; a second sentinel, queued after the first
// ran, lands in a later batch, which starts only when the earlier one is done.
func drainFinalizers() {
	for i := 0; i < 2; i++ {
		runtime.GC()
		done := make(chan struct{})
		sentinel := new([16]byte)
		runtime.SetFinalizer(sentinel, func(*[16]byte) { close(done) })
		sentinel = nil
		runtime.GC()
		<-done
	}
}

// rssKiB reads VmRSS from /proc/self/status once no finalizer is pending.
func rssKiB(t *testing.T) int64 {
	drainFinalizers()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "VmRSS:") {
			kb, err := strconv.ParseInt(strings.Fields(s.Text())[1], 10, 64)
			must(t, err)
			return kb
		}
	}
	t.Fatal("no VmRSS line in /proc/self/status")
	return 0
}

// One create/close cycle of every object kind, including a training run and a trainer with
// a callback (a cgo.Handle each). With leave, the objects are left to the finalizers.
func leakCycle(t *testing.T, i int, leave bool, opts sparsefac.TrainOptions, rows, cols []int32, vals []float32, ratingsFile string) {
	ctx, err := sparsefac.NewContext(sparsefac.CPU, sparsefac.WithThreads(1), sparsefac.WithSeed(uint64(i)))
	must(t, err)
	m, err := sparsefac.FromCOO(ctx, 20, 20, rows, cols, vals, 0)
	must(t, err)
	d, err := sparsefac.NewDenseMatrix(ctx, 20, 2, nil)
	must(t, err)
	p, err := m.Like(nil)
	must(t, err)
	must(t, sparsefac.SDDMM(ctx, sparsefac.Pattern, 1, d, d, m, 0, p))
	plan, err := sparsefac.NewSDDMMPlan(ctx, m, 2, sparsefac.SDDMMAuto)
	must(t, err)
	must(t, sparsefac.SDDMMWithPlan(ctx, plan, sparsefac.Scaled, 1, d, d, m, 0, p))
	off, idx, _, err := p.ToCSC()
	must(t, err)
	csc, err := sparsefac.FromCSC(ctx, 20, 20, off, idx, nil, 0)
	must(t, err)
	file, userIDs, itemIDs, err := sparsefac.ReadFileRemapped(ctx, ratingsFile, sparsefac.FormatTriplets, 0)
	must(t, err)
	if _, err := userIDs.Lookup([]int64{7, 8}); err != nil {
		t.Fatal(err)
	}
	opts.OnEpoch = func(sparsefac.EpochInfo) (bool, error) { return false, nil }
	model, err := sparsefac.Train(ctx, m, opts)
	must(t, err)
	if _, err := model.Predict([]int32{1}, []int32{2}); err != nil {
		t.Fatal(err)
	}
	trainer, err := sparsefac.NewTrainer(ctx, m, opts)
	must(t, err)
	if _, err := trainer.Run(1); err != nil {
		t.Fatal(err)
	}
	snapshot, err := trainer.Model()
	must(t, err)
	if leave {
		return
	}
	for _, c := range []interface{ Close() error }{snapshot, trainer, model, itemIDs, userIDs, file, csc, plan, p, d, m, ctx} {
		must(t, c.Close())
	}
}

func leakData() (rows, cols []int32, vals []float32) {
	for r := int32(0); r < 20; r++ {
		for c := int32(0); c < 20; c += 3 {
			rows, cols, vals = append(rows, r), append(cols, (c+r)%20), append(vals, float32(r-c))
		}
	}
	return rows, cols, vals
}

// leakRatingsFile writes a small triplet file with arbitrary ids for ReadFileRemapped.
func leakRatingsFile(t *testing.T) string {
	path := t.TempDir() + "/ratings.txt"
	must(t, os.WriteFile(path, []byte("7 1001 1\n8 1001 2\n123456789 5 3\n"), 0o644))
	return path
}

func TestNoLeakOver10kCycles(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory makes RSS meaningless")
	}
	rows, cols, vals := leakData()
	file := leakRatingsFile(t)
	opts, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	must(t, err)
	opts.Rank, opts.Iterations = 2, 1
	for i := 0; i < 2000; i++ { // warm-up: allocator pools, Go heap, thread stacks
		leakCycle(t, i, false, opts, rows, cols, vals, file)
	}
	live := sparsefac.LiveObjects()
	// RSS settles by up to ~3 MiB in one round on a busy machine (Go heap, malloc arenas), in
	// either direction; a leak grows in every round. So the test fails only when all rounds
	// grow: the smallest growth is the leak's lower bound.
	const cycles, rounds = 10000, 3
	minGrowth := int64(1 << 62)
	for r := 0; r < rounds; r++ {
		before := rssKiB(t)
		for i := 0; i < cycles; i++ {
			leakCycle(t, i, false, opts, rows, cols, vals, file)
		}
		after := rssKiB(t)
		t.Logf("round %d: RSS before %d KiB, after %d cycles %d KiB (%+d KiB)", r, before, cycles, after, after-before)
		if after-before < minGrowth {
			minGrowth = after - before
		}
		if minGrowth <= 3072 && r >= 1 {
			break
		}
	}
	if sparsefac.LiveObjects() != live {
		t.Fatalf("%d objects not released after explicit Close", sparsefac.LiveObjects()-live)
	}
	// Measured growth without a leak: -2 to +3 MiB per round. Leaking one 140-nonzero matrix
	// per cycle alone would add more than 10 MiB to every round.
	if minGrowth > 3072 {
		t.Fatalf("RSS grew by at least %d KiB in each round of %d cycles", minGrowth, cycles)
	}
}

// Objects nobody closes are released by their finalizers. (The C memory behind them is
// invisible to Go's GC pacing and piles up between collections, which is why Close is the rule.)
func TestFinalizersReleaseUnclosedObjects(t *testing.T) {
	rows, cols, vals := leakData()
	file := leakRatingsFile(t)
	opts, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	must(t, err)
	opts.Rank, opts.Iterations = 2, 1
	drainFinalizers()
	before := sparsefac.LiveObjects()
	for i := 0; i < 2000; i++ {
		leakCycle(t, i, true, opts, rows, cols, vals, file)
	}
	left := sparsefac.LiveObjects()
	drainFinalizers()
	after := sparsefac.LiveObjects()
	t.Logf("live objects: %d before, %d after 2000 unclosed cycles, %d once finalizers ran", before, left, after)
	if left <= before || after != before {
		t.Fatalf("live objects %d -> %d -> %d: finalizers did not release the unclosed objects", before, left, after)
	}
}
