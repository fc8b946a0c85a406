package sparsefac

import (
	"runtime"

	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// Backend selects where a Context computes.
type Backend int

const (
	// Auto is CUDA when the library was built with it and a device is present, else CPU.
	Auto Backend = 0
	CPU  Backend = 1
	CUDA Backend = 2
)

func (b Backend) String() string {
	switch b {
	case Auto:
		return "auto"
	case CPU:
		return "cpu"
	case CUDA:
		return "cuda"
	}
	return "unknown"
}

// ContextOption configures NewContext.
type ContextOption func(*contextConfig)

type contextConfig struct {
	device  int
	threads int
	seed    uint64
}

// WithDevice picks the CUDA device ordinal (default 0); the CPU backend ignores it.
func WithDevice(device int) ContextOption { return func(c *contextConfig) { c.device = device } }

// WithThreads sets the host threads for CPU work (default 0: all cores).
func WithThreads(n int) ContextOption { return func(c *contextConfig) { c.threads = n } }

// WithSeed seeds every random choice of the context (initialization, shuffles, synthetic data).
func WithSeed(seed uint64) ContextOption { return func(c *contextConfig) { c.seed = seed } }

// Context is a backend (CPU or CUDA device) with its threads and seed. Matrices and models
// keep their context's backend alive, so a Context may be closed before them.
type Context struct {
	ref handle[capi.SwigcptrStruct_SS_sfac_context]
}

// NewContext creates a context on the given backend.
func NewContext(backend Backend, opts ...ContextOption) (*Context, error) {
	cfg := contextConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	var h uintptr
	err := call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_context_create(capi.Enum_SS_sfac_backend(backend), cfg.device,
			cfg.threads, cfg.seed, &h)
	})
	if err != nil {
		return nil, err
	}
	c := &Context{}
	c.ref.init(capi.SwigcptrStruct_SS_sfac_context(h), func(h capi.SwigcptrStruct_SS_sfac_context) capi.Enum_SS_sfac_status {
		return capi.Sfac_context_destroy(h)
	})
	runtime.SetFinalizer(c, func(c *Context) { c.Close() })
	return c, nil
}

// Close releases the context (once calls in flight on other goroutines are done); later
// calls are no-ops.
func (c *Context) Close() error {
	if c == nil {
		return nil
	}
	return c.ref.close()
}

func (c *Context) acquire() (capi.SwigcptrStruct_SS_sfac_context, error) {
	if c == nil {
		return 0, closedError("Context")
	}
	return c.ref.acquire("Context")
}

func (c *Context) release() { c.ref.release() }

// Backend is the backend the context resolved to (never Auto).
func (c *Context) Backend() (Backend, error) {
	h, err := c.acquire()
	if err != nil {
		return 0, err
	}
	defer c.release()
	out := []int32{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_context_get_backend(h, out) })
	return Backend(out[0]), err
}

// DeviceName is e.g. "CPU (8 threads)" or the GPU's name.
func (c *Context) DeviceName() (string, error) {
	h, err := c.acquire()
	if err != nil {
		return "", err
	}
	defer c.release()
	var name string
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_context_get_device_name(h, &name) })
	return name, err
}

// NumThreads is the number of host threads the context uses.
func (c *Context) NumThreads() (int, error) {
	h, err := c.acquire()
	if err != nil {
		return 0, err
	}
	defer c.release()
	out := []int32{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_context_get_num_threads(h, out) })
	return int(out[0]), err
}

// Seed is the context's seed.
func (c *Context) Seed() (uint64, error) {
	h, err := c.acquire()
	if err != nil {
		return 0, err
	}
	defer c.release()
	out := []uint64{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_context_get_seed(h, out) })
	return out[0], err
}

// SetStream queues a CUDA context's device work (SDDMM and the like) on stream, a
// cudaStream_t of the context's device passed as its address (the uintptr Go's CUDA bindings
// hand out), so that it is ordered with the caller's own work on that stream; 0 makes it the
// context's own stream again, the default. Work the context queued on the previous stream runs
// before anything it queues on the new one; uploads, downloads, plan creation and closing
// objects stay ordered with the current stream (their memory belongs to the context's own
// stream). The stream must stay valid until it is replaced or the context and its objects are
// closed. Not safe against concurrent calls on the same context. CPU contexts accept only 0
// (StatusUnsupported otherwise).
func (c *Context) SetStream(stream uintptr) error {
	h, err := c.acquire()
	if err != nil {
		return err
	}
	defer c.release()
	return call(func() capi.Enum_SS_sfac_status { return capi.Sfac_context_set_stream(h, stream) })
}

// Stream is the stream the context's device work is queued on, as the address of its
// cudaStream_t: its own stream unless SetStream chose another; 0 for CPU contexts. Recording an
// event on it after a call marks the call's completion.
func (c *Context) Stream() (uintptr, error) {
	h, err := c.acquire()
	if err != nil {
		return 0, err
	}
	defer c.release()
	var stream uintptr
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_context_get_stream(h, &stream) })
	return stream, err
}

// Version is the version string of the loaded library.
func Version() string { return capi.Sfac_version_string() }
