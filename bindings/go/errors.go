package sparsefac

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// Status is the library's status code (the values of sfac_status, pinned by the C ABI).
type Status int

// The statuses of the C API; see include/sparsefac/sparsefac.h.
const (
	StatusOK              Status = 0
	StatusInvalidArgument Status = 1
	StatusInvalidHandle   Status = 2
	StatusOutOfRange      Status = 3
	StatusShapeMismatch   Status = 4
	StatusInvalidValue    Status = 5
	StatusDuplicateEntry  Status = 6
	StatusOutOfMemory     Status = 7
	StatusDevice          Status = 8
	StatusIO              Status = 9
	StatusParse           Status = 10
	StatusUnsupported     Status = 11
	StatusNotConverged    Status = 12
	StatusBufferTooSmall  Status = 13
	StatusCallback        Status = 14
	StatusInternal        Status = 15
)

// String is the library's name of the status, e.g. "out of range".
func (s Status) String() string {
	return capi.Sfac_status_string(capi.Enum_SS_sfac_status(s))
}

// Error is every error of this package: the library's status and message (or, for checks done
// in Go before calling the library, the status the library would have answered). Cause is the
// error or panic of an OnEpoch callback when Status is StatusCallback.
type Error struct {
	Status  Status
	Message string
	Cause   error
}

func (e *Error) Error() string {
	msg := "sparsefac: " + e.Status.String()
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap gives errors.Is/As access to the callback's own error.
func (e *Error) Unwrap() error { return e.Cause }

// PanicError is the Cause of a training error when the OnEpoch callback panicked.
type PanicError struct {
	Value any
	Stack []byte // of the panicking goroutine
}

func (p *PanicError) Error() string { return fmt.Sprintf("OnEpoch panicked: %v", p.Value) }

func errorf(status Status, format string, args ...any) error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

func closedError(what string) error {
	return errorf(StatusInvalidHandle, "%s is closed", what)
}

// call runs one C API call and converts a failure into *Error. The library keeps its error
// message per OS thread, so the goroutine must not migrate between the call and reading it.
func call(f func() capi.Enum_SS_sfac_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	status := f()
	if status == capi.SFAC_OK {
		return nil
	}
	return &Error{Status: Status(status), Message: capi.Sfac_last_error()}
}

// liveObjects counts the library objects this package created and has not released yet
// (closed explicitly or by a finalizer); tests read it to prove the finalizers run.
var liveObjects atomic.Int64
