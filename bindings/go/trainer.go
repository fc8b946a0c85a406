package sparsefac

import (
	"runtime"

	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// Trainer trains epoch by epoch for loops the caller owns: early stopping on its own metric,
// checkpoints, cancellation between epochs. Its methods modify it: use one goroutine at a time.
// Close it: with an OnEpoch that refers to the trainer, the callback registry keeps it
// reachable and its finalizer cannot run.
type Trainer struct {
	ref handle[capi.SwigcptrStruct_SS_sfac_trainer]
	cb  *epochCallback
}

// NewTrainer prepares training of ratings with opts (opts.Iterations is not used: Run says
// how many epochs). The trainer copies the options and keeps the ratings alive.
func NewTrainer(ctx *Context, ratings *SparseMatrix, opts TrainOptions) (*Trainer, error) {
	var t *Trainer
	err := withTraining(ctx, ratings, &opts, func(p *preparedTraining) error {
		var raw uintptr
		err := call(func() capi.Enum_SS_sfac_status {
			return capi.Sfac_trainer_create(p.ctx, p.ratings, p.options.h, &raw)
		})
		if err != nil {
			if p.cb != nil {
				p.handle.Delete()
			}
			return err
		}
		cb, cbHandle := p.cb, p.handle
		t = &Trainer{cb: cb}
		// The trainer's copy of the options names the callback handle: it lives as long as the
		// trainer and goes with it.
		t.ref.init(capi.SwigcptrStruct_SS_sfac_trainer(raw), func(h capi.SwigcptrStruct_SS_sfac_trainer) capi.Enum_SS_sfac_status {
			status := capi.Sfac_trainer_destroy(h)
			if cb != nil {
				cbHandle.Delete()
			}
			return status
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	runtime.SetFinalizer(t, func(t *Trainer) { t.Close() })
	return t, nil
}

// Close releases the trainer; later calls are no-ops.
func (t *Trainer) Close() error {
	if t == nil {
		return nil
	}
	return t.ref.close()
}

func (t *Trainer) acquire() (capi.SwigcptrStruct_SS_sfac_trainer, error) {
	if t == nil {
		return 0, closedError("Trainer")
	}
	return t.ref.acquire("Trainer")
}

// Run runs up to epochs more epochs (OnEpoch may stop earlier) and returns the total number
// of epochs run so far. An OnEpoch error or panic comes back as in Train.
func (t *Trainer) Run(epochs int) (done int, err error) {
	h, err := t.acquire()
	if err != nil {
		return 0, err
	}
	defer t.ref.release()
	out := []int32{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_trainer_run(h, epochs, out) })
	if err != nil {
		return int(out[0]), withCause(err, t.cb)
	}
	return int(out[0]), nil
}

// Loss is the training objective after the last epoch (NaN before the first).
func (t *Trainer) Loss() (float64, error) {
	h, err := t.acquire()
	if err != nil {
		return 0, err
	}
	defer t.ref.release()
	out := []float64{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_trainer_get_loss(h, out) })
	return out[0], err
}

// Model is a snapshot of the current factors, independent of the trainer.
func (t *Trainer) Model() (*Model, error) {
	h, err := t.acquire()
	if err != nil {
		return nil, err
	}
	defer t.ref.release()
	var raw uintptr
	if err := call(func() capi.Enum_SS_sfac_status { return capi.Sfac_trainer_get_model(h, &raw) }); err != nil {
		return nil, err
	}
	return newModel(raw), nil
}
