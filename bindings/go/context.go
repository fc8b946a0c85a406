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
	h capi.SwigcptrStruct_SS_sfac_context
	_ notTiny
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
	c := &Context{h: capi.SwigcptrStruct_SS_sfac_context(h)}
	liveObjects.Add(1)
	runtime.SetFinalizer(c, func(c *Context) { c.Close() })
	return c, nil
}

// Close releases the context; later calls are no-ops.
func (c *Context) Close() error {
	if c == nil || c.h == 0 {
		return nil
	}
	h := c.h
	c.h = 0
	runtime.SetFinalizer(c, nil)
	liveObjects.Add(-1)
	return call(func() capi.Enum_SS_sfac_status { return capi.Sfac_context_destroy(h) })
}

func (c *Context) handle() (capi.SwigcptrStruct_SS_sfac_context, error) {
	if c == nil || c.h == 0 {
		return 0, closedError("Context")
	}
	return c.h, nil
}

// Backend is the backend the context resolved to (never Auto).
func (c *Context) Backend() (Backend, error) {
	h, err := c.handle()
	if err != nil {
		return 0, err
	}
	out := []int32{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_context_get_backend(h, out) })
	runtime.KeepAlive(c)
	return Backend(out[0]), err
}

// DeviceName is e.g. "CPU (8 threads)" or the GPU's name.
func (c *Context) DeviceName() (string, error) {
	h, err := c.handle()
	if err != nil {
		return "", err
	}
	var name string
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_context_get_device_name(h, &name) })
	runtime.KeepAlive(c)
	return name, err
}

// NumThreads is the number of host threads the context uses.
func (c *Context) NumThreads() (int, error) {
	h, err := c.handle()
	if err != nil {
		return 0, err
	}
	out := []int32{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_context_get_num_threads(h, out) })
	runtime.KeepAlive(c)
	return int(out[0]), err
}

// Seed is the context's seed.
func (c *Context) Seed() (uint64, error) {
	h, err := c.handle()
	if err != nil {
		return 0, err
	}
	out := []uint64{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_context_get_seed(h, out) })
	runtime.KeepAlive(c)
	return out[0], err
}

// Version is the version string of the loaded library.
func Version() string { return capi.Sfac_version_string() }
