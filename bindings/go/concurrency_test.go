package sparsefac_test

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

// Goroutines keep predicting while another closes the model: every call either succeeds with
// the right scores or reports the closed model; none touches freed memory (run with -race and
// under the library's checks to see it), and the model is freed once the last call is done.
func TestCloseWhileInUse(t *testing.T) {
	tr := trainPlanted(t)
	path := t.TempDir() + "/m.sfm"
	must(t, tr.model.Save(path))
	model, err := sparsefac.LoadModel(tr.ctx, path)
	must(t, err)
	users, items := []int32{0, 1, 2, 3}, []int32{4, 5, 6, 7}
	want, err := model.Predict(users, items)
	must(t, err)
	live := sparsefac.LiveObjects()

	var ok, closed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < 2000; i++ {
				got, err := model.Predict(users, items)
				var e *sparsefac.Error
				switch {
				case err == nil:
					for k := range want {
						if got[k] != want[k] {
							t.Errorf("score %d: %g, want %g", k, got[k], want[k])
							return
						}
					}
					ok.Add(1)
				case errors.As(err, &e) && e.Status == sparsefac.StatusInvalidHandle:
					closed.Add(1)
				default:
					t.Errorf("unexpected error: %v", err)
					return
				}
			}
		}()
	}
	close(start)
	// Close in the middle of the calls (or after a second, should they have stopped early).
	for deadline := time.Now().Add(time.Second); ok.Load() < 100 && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	must(t, model.Close())
	wg.Wait()
	t.Logf("%d calls before Close, %d after", ok.Load(), closed.Load())
	if closed.Load() == 0 {
		t.Fatal("no call saw the closed model")
	}
	if got := sparsefac.LiveObjects(); got != live-1 {
		t.Fatalf("live objects %d after Close, want %d", got, live-1)
	}
}
