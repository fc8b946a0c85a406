package capi

// #include <stdint.h>
import "C"

import "runtime/cgo"

// EpochFunc receives one epoch's progress and returns the C callback's verdict: 0 to go on,
// > 0 to stop early, < 0 to abort. It must not panic (the dispatcher turns a panic into -1,
// but the caller then cannot know why).
type EpochFunc func(epoch int, trainLoss, validationRMSE, seconds float64) int

// NewEpochHandle registers f for Sfac_train_options_set_callback; Delete the handle once no
// options object or trainer can call it any more.
func NewEpochHandle(f EpochFunc) cgo.Handle { return cgo.NewHandle(f) }

//export sfacGoEpoch
func sfacGoEpoch(epoch C.int, trainLoss, validationRMSE, seconds C.double, handle C.uintptr_t) (verdict C.int) {
	// A panic must not unwind into the library's C++ frames: that would kill the process.
	defer func() {
		if recover() != nil {
			verdict = -1
		}
	}()
	f, ok := cgo.Handle(handle).Value().(EpochFunc)
	if !ok {
		return -1
	}
	return C.int(f(int(epoch), float64(trainLoss), float64(validationRMSE), float64(seconds)))
}
