package sparsefac

import (
	"runtime/cgo"
	"runtime/debug"
	"strconv"

	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// Algorithm of Train.
type Algorithm int

const (
	ALS  Algorithm = 0 // explicit-feedback ALS on the observed ratings
	IALS Algorithm = 1 // implicit-feedback ALS (Hu-Koren-Volinsky), confidence-weighted
	SGD  Algorithm = 2 // stochastic gradient descent on the observed ratings
)

// Regularization of ALS: Plain adds lambda*I, Weighted adds lambda*n_u*I (ALS-WR).
type Regularization int

const (
	Plain    Regularization = 0
	Weighted Regularization = 1
)

// Solver of ALS's normal equations.
type Solver int

const (
	Cholesky Solver = 0
	CG       Solver = 1 // warm-started conjugate gradient with CGSteps steps
)

// SGDSchedule is how SGD workers on a CUDA device share the items; each worker owns its users
// either way. Hogwild, the zero value and the default, updates items without locks, and two
// workers on one item at once lose one's update; Wavefront locks ranges of items so that no
// update is lost, at the cost of fewer workers and shorter runs per user.
type SGDSchedule int

const (
	Hogwild   SGDSchedule = 0
	Wavefront SGDSchedule = 1
)

// Reorder is how ALS and IALS number users and items while training; SGD ignores it.
// ReorderDegree trains on a copy of the ratings with users and items renumbered by rating
// count, most first (faster on a CUDA device; the copy lives as long as the training), and
// ReorderNone on the ratings as given. ReorderAuto, the zero value and the default, is
// ReorderDegree on a CUDA context and ReorderNone on the CPU. The model, loss and validation
// keep the caller's ids either way, and the factors differ only by the order of floating-point
// sums.
//
// The values are not the C API's sfac_reorder codes, whose zero is NONE: here the zero value
// has to be the default, as for the other fields whose zero means "library default".
type Reorder int

const (
	ReorderAuto   Reorder = 0
	ReorderNone   Reorder = 1
	ReorderDegree Reorder = 2
)

func (r Reorder) String() string {
	switch r {
	case ReorderAuto:
		return "ReorderAuto"
	case ReorderNone:
		return "ReorderNone"
	case ReorderDegree:
		return "ReorderDegree"
	}
	return "Reorder(" + strconv.Itoa(int(r)) + ")"
}

// EpochInfo is one epoch's progress. ValidationRMSE is NaN without a validation matrix.
type EpochInfo struct {
	Epoch          int // from 1
	TrainLoss      float64
	ValidationRMSE float64
	Seconds        float64
}

// TrainOptions are the settings of Train. Start from DefaultTrainOptions, which holds the
// library's defaults for the algorithm, and change what you need.
//
// The zero value is not usable, and zero fields do not mean "library default": for most fields
// zero is itself a valid setting that differs from the default, so it could not also stand for
// "unset". Iterations = 0 trains no epoch (default 15 or 20), LambdaUser/LambdaItem = 0 turn
// regularization off (default 0.05 or 0.01), Regularization's zero is Plain (ALS default
// Weighted), ScaleRatings = false and Decay = 0 change SGD (defaults true and 0.3),
// ImplicitAlpha = 0 gives every cell the same confidence (default 40), and Algorithm's zero is
// ALS. Only Rank, CGSteps, LearningRate and InitScale have zero outside their range. So
// TrainOptions{} is rejected (StatusInvalidArgument, "TrainOptions.Rank: ... = 0 ..."), and a
// rejected zero field names DefaultTrainOptions in the message; a literal that sets those four
// trains with zeros everywhere else, which is rarely what was meant. FactorDType, Workers,
// Schedule and Reorder are the fields whose zero is the library default (Float32, automatic,
// Hogwild and ReorderAuto).
type TrainOptions struct {
	Algorithm      Algorithm
	Rank           int
	Iterations     int
	LambdaUser     float64
	LambdaItem     float64
	UseBiases      bool // ALS, SGD: learn global mean and user/item biases
	InitScale      float64
	Deterministic  bool // bit-reproducible for a fixed seed and thread count
	Regularization Regularization
	Solver         Solver
	CGSteps        int
	ImplicitAlpha  float64 // IALS confidence c = 1 + alpha * r
	LearningRate   float64 // SGD
	Decay          float64 // SGD
	ScaleRatings   bool    // SGD
	// FactorDType is how the factors are stored while training, for every algorithm and
	// backend. With Float16 or BFloat16, ALS and IALS round each solved row to that type and
	// the next half-sweep reads the rounded values; SGD rounds every row it updates.
	// Arithmetic stays float32 (a CUDA trainer moves half the bytes, and ALS uses 16-bit
	// tensor cores). The model's factors are the stored values, except that SGD with
	// ScaleRatings reports them times sqrt(scale). The zero value, Float32, is the default.
	FactorDType DType
	// Workers is how many SGD workers update at the same time on a CUDA device (0 to 2^24).
	// More run faster but lose more updates to collisions on popular items. The zero value,
	// the default, is automatic: as many as fit the device, at most one per 4096 ratings.
	// The CPU backend ignores it and runs one worker per context thread.
	Workers int
	// Schedule is how SGD workers on a CUDA device share the items. Deterministic training
	// runs its own block grid and the CPU backend conflict-free blocks, whatever it says.
	Schedule SGDSchedule
	// Reorder is how ALS and IALS number users and items while training (see Reorder).
	Reorder Reorder
	// Validation ratings (the training matrix's shape) reported each epoch; may be nil.
	Validation *SparseMatrix
	// OnEpoch, when set, runs after every epoch. stop = true ends training successfully; an
	// error (or a panic) aborts it, and Train returns an *Error with StatusCallback whose Cause
	// is that error (a *PanicError for a panic).
	OnEpoch func(EpochInfo) (stop bool, err error)
}

type intOption struct {
	name string
	id   capi.Enum_SS_sfac_option
	ptr  func(*TrainOptions) *int
}

// enumCodes are the C values of the Go values 0, 1, ... of the fields whose zero has to be a
// C enum's default that is not its zero. A value outside them goes to the library as it is,
// which rejects it with the number the caller wrote.
var enumCodes = map[capi.Enum_SS_sfac_option][]int64{
	capi.SFAC_OPT_ALS_REORDER: {int64(capi.SFAC_REORDER_AUTO), int64(capi.SFAC_REORDER_NONE),
		int64(capi.SFAC_REORDER_DEGREE)},
}

func (o *intOption) toC(v int) int64 {
	if codes := enumCodes[o.id]; v >= 0 && v < len(codes) {
		return codes[v]
	}
	return int64(v)
}

func (o *intOption) fromC(c int64) int {
	for v, code := range enumCodes[o.id] {
		if code == c {
			return v
		}
	}
	return int(c)
}

type doubleOption struct {
	name string
	id   capi.Enum_SS_sfac_option
	ptr  func(*TrainOptions) *float64
}

type boolOption struct {
	name string
	id   capi.Enum_SS_sfac_option
	ptr  func(*TrainOptions) *bool
}

var intOptions = []intOption{
	{"Rank", capi.SFAC_OPT_RANK, func(o *TrainOptions) *int { return &o.Rank }},
	{"Iterations", capi.SFAC_OPT_ITERATIONS, func(o *TrainOptions) *int { return &o.Iterations }},
	{"CGSteps", capi.SFAC_OPT_ALS_CG_STEPS, func(o *TrainOptions) *int { return &o.CGSteps }},
	{"Regularization", capi.SFAC_OPT_ALS_REGULARIZATION, func(o *TrainOptions) *int { return (*int)(&o.Regularization) }},
	{"Solver", capi.SFAC_OPT_ALS_SOLVER, func(o *TrainOptions) *int { return (*int)(&o.Solver) }},
	{"FactorDType", capi.SFAC_OPT_FACTOR_DTYPE, func(o *TrainOptions) *int { return (*int)(&o.FactorDType) }},
	{"Workers", capi.SFAC_OPT_SGD_WORKERS, func(o *TrainOptions) *int { return &o.Workers }},
	{"Schedule", capi.SFAC_OPT_SGD_SCHEDULE, func(o *TrainOptions) *int { return (*int)(&o.Schedule) }},
	{"Reorder", capi.SFAC_OPT_ALS_REORDER, func(o *TrainOptions) *int { return (*int)(&o.Reorder) }},
}

var doubleOptions = []doubleOption{
	{"LambdaUser", capi.SFAC_OPT_LAMBDA_USER, func(o *TrainOptions) *float64 { return &o.LambdaUser }},
	{"LambdaItem", capi.SFAC_OPT_LAMBDA_ITEM, func(o *TrainOptions) *float64 { return &o.LambdaItem }},
	{"InitScale", capi.SFAC_OPT_INIT_SCALE, func(o *TrainOptions) *float64 { return &o.InitScale }},
	{"ImplicitAlpha", capi.SFAC_OPT_IMPLICIT_ALPHA, func(o *TrainOptions) *float64 { return &o.ImplicitAlpha }},
	{"LearningRate", capi.SFAC_OPT_SGD_LEARNING_RATE, func(o *TrainOptions) *float64 { return &o.LearningRate }},
	{"Decay", capi.SFAC_OPT_SGD_DECAY, func(o *TrainOptions) *float64 { return &o.Decay }},
}

var boolOptions = []boolOption{
	{"UseBiases", capi.SFAC_OPT_USE_BIASES, func(o *TrainOptions) *bool { return &o.UseBiases }},
	{"Deterministic", capi.SFAC_OPT_DETERMINISTIC, func(o *TrainOptions) *bool { return &o.Deterministic }},
	{"ScaleRatings", capi.SFAC_OPT_SGD_SCALE_RATINGS, func(o *TrainOptions) *bool { return &o.ScaleRatings }},
}

// cOptions owns a C options object for the duration of one Train call.
type cOptions struct {
	h capi.SwigcptrStruct_SS_sfac_train_options
}

func newCOptions(alg Algorithm) (*cOptions, error) {
	var h uintptr
	err := call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_train_options_create(capi.Enum_SS_sfac_algorithm(alg), &h)
	})
	if err != nil {
		return nil, err
	}
	return &cOptions{h: capi.SwigcptrStruct_SS_sfac_train_options(h)}, nil
}

func (o *cOptions) close() {
	call(func() capi.Enum_SS_sfac_status { return capi.Sfac_train_options_destroy(o.h) })
}

// DefaultTrainOptions are the library's defaults for alg.
func DefaultTrainOptions(alg Algorithm) (TrainOptions, error) {
	opts := TrainOptions{Algorithm: alg}
	c, err := newCOptions(alg)
	if err != nil {
		return opts, err
	}
	defer c.close()
	for _, o := range intOptions {
		v := []int64{0}
		if err := call(func() capi.Enum_SS_sfac_status { return capi.Sfac_train_options_get_int(c.h, o.id, v) }); err != nil {
			return opts, err
		}
		*o.ptr(&opts) = o.fromC(v[0])
	}
	for _, o := range boolOptions {
		v := []int64{0}
		if err := call(func() capi.Enum_SS_sfac_status { return capi.Sfac_train_options_get_int(c.h, o.id, v) }); err != nil {
			return opts, err
		}
		*o.ptr(&opts) = v[0] != 0
	}
	for _, o := range doubleOptions {
		v := []float64{0}
		if err := call(func() capi.Enum_SS_sfac_status { return capi.Sfac_train_options_get_double(c.h, o.id, v) }); err != nil {
			return opts, err
		}
		*o.ptr(&opts) = v[0]
	}
	return opts, nil
}

// optionError names the Go field: the library's message only knows the option's number. A
// rejected zero is most likely a field left unset, so the message says where defaults come from.
func optionError(field string, zero bool, err error) error {
	if e, ok := err.(*Error); ok {
		e.Message = "TrainOptions." + field + ": " + e.Message
		if zero {
			e.Message += " (a zero field is not the library default: start from DefaultTrainOptions)"
		}
	}
	return err
}

// apply copies every field into the C options; the library validates the values.
func (c *cOptions) apply(opts *TrainOptions) error {
	for _, o := range intOptions {
		g := *o.ptr(opts)
		v := o.toC(g)
		if err := call(func() capi.Enum_SS_sfac_status { return capi.Sfac_train_options_set_int(c.h, o.id, v) }); err != nil {
			return optionError(o.name, g == 0, err)
		}
	}
	for _, o := range boolOptions {
		v := int64(0)
		if *o.ptr(opts) {
			v = 1
		}
		if err := call(func() capi.Enum_SS_sfac_status { return capi.Sfac_train_options_set_int(c.h, o.id, v) }); err != nil {
			return optionError(o.name, false, err)
		}
	}
	for _, o := range doubleOptions {
		v := *o.ptr(opts)
		if err := call(func() capi.Enum_SS_sfac_status { return capi.Sfac_train_options_set_double(c.h, o.id, v) }); err != nil {
			return optionError(o.name, v == 0, err)
		}
	}
	if opts.Validation != nil {
		// The options keep the matrix alive on the C side, so it need not stay pinned.
		vh, err := opts.Validation.acquire()
		if err != nil {
			return err
		}
		err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_train_options_set_validation(c.h, vh) })
		opts.Validation.release()
		if err != nil {
			return err
		}
	}
	return nil
}

// epochCallback runs OnEpoch for the C trampoline and keeps what went wrong: the library
// only learns "abort" (-1), the error itself must reach the caller through Go.
type epochCallback struct {
	onEpoch func(EpochInfo) (bool, error)
	err     error
}

func (e *epochCallback) dispatch(epoch int, loss, rmse, seconds float64) (verdict int) {
	defer func() {
		if r := recover(); r != nil {
			e.err = &PanicError{Value: r, Stack: debug.Stack()}
			verdict = -1
		}
	}()
	stop, err := e.onEpoch(EpochInfo{Epoch: epoch, TrainLoss: loss, ValidationRMSE: rmse, Seconds: seconds})
	if err != nil {
		e.err = err
		return -1
	}
	if stop {
		return 1
	}
	return 0
}

// install registers the callback on the options when opts has one; the returned handle
// must be deleted once nothing can call the trampoline any more.
func (c *cOptions) install(opts *TrainOptions) (*epochCallback, cgo.Handle, error) {
	if opts.OnEpoch == nil {
		return nil, 0, nil
	}
	cb := &epochCallback{onEpoch: opts.OnEpoch}
	h := capi.NewEpochHandle(cb.dispatch)
	if err := call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_train_options_set_callback(c.h, uintptr(h))
	}); err != nil {
		h.Delete()
		return nil, 0, err
	}
	return cb, h, nil
}

// withCause attaches the callback's own error to the library's StatusCallback error.
func withCause(err error, cb *epochCallback) error {
	if e, ok := err.(*Error); ok && cb != nil && cb.err != nil {
		e.Cause = cb.err
		cb.err = nil
	}
	return err
}

// preparedTraining is what Train and NewTrainer share: the context and the ratings held for
// the call, the C options built from the Go ones, and the installed epoch callback (nil
// without OnEpoch; handle then unused).
type preparedTraining struct {
	ctx     capi.SwigcptrStruct_SS_sfac_context
	ratings capi.SwigcptrStruct_SS_sfac_sparse
	options *cOptions
	cb      *epochCallback
	handle  cgo.Handle
}

// withTraining prepares a training call and runs fn with it; the context, the ratings and the
// C options are released when fn returns.
func withTraining(ctx *Context, ratings *SparseMatrix, opts *TrainOptions,
	fn func(*preparedTraining) error) error {
	ch, err := ctx.acquire()
	if err != nil {
		return err
	}
	defer ctx.release()
	rh, err := ratings.acquire()
	if err != nil {
		return err
	}
	defer ratings.release()
	c, err := newCOptions(opts.Algorithm)
	if err != nil {
		return err
	}
	defer c.close()
	if err := c.apply(opts); err != nil {
		return err
	}
	cb, h, err := c.install(opts)
	if err != nil {
		return err
	}
	return fn(&preparedTraining{ctx: ch, ratings: rh, options: c, cb: cb, handle: h})
}

// Train fits a model to ratings (users x items) with opts, running opts.Iterations epochs
// unless OnEpoch stops earlier. The context's seed drives initialization and shuffling.
func Train(ctx *Context, ratings *SparseMatrix, opts TrainOptions) (*Model, error) {
	var model *Model
	err := withTraining(ctx, ratings, &opts, func(p *preparedTraining) error {
		if p.cb != nil {
			// Only sfac_train calls the trampoline, and it has returned by the time this runs;
			// the options object that still names the handle is destroyed right after, unused.
			defer p.handle.Delete()
		}
		var out uintptr
		err := call(func() capi.Enum_SS_sfac_status {
			return capi.Sfac_train(p.ctx, p.ratings, p.options.h, &out)
		})
		if err != nil {
			return withCause(err, p.cb)
		}
		model = newModel(out)
		return nil
	})
	return model, err
}
