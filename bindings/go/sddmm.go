package sparsefac

import (
	"fmt"
	"runtime"

	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// SDDMMMode is what SDDMM writes at every nonzero (i, j) of S, with d = dot(A[i,:], B[j,:]).
type SDDMMMode int

const (
	Scaled   SDDMMMode = 0 // P_ij = alpha * d * S_ij + beta * P_ij
	Pattern  SDDMMMode = 1 // P_ij = alpha * d + beta * P_ij
	Residual SDDMMMode = 2 // P_ij = alpha * (S_ij - d) + beta * P_ij
)

// SDDMMAlgorithm is the kernel an SDDMMPlan runs. A backend without the requested algorithm
// answers StatusUnsupported (the CPU backend has no SDDMMTiled or SDDMMCusparse).
type SDDMMAlgorithm int

const (
	SDDMMAuto     SDDMMAlgorithm = 0 // chosen from the pattern statistics
	SDDMMRowSplit SDDMMAlgorithm = 1 // work split by rows; A's row reused across the row
	SDDMMNNZSplit SDDMMAlgorithm = 2 // equal nonzero ranges; robust to skewed rows
	SDDMMTiled    SDDMMAlgorithm = 3 // row panels x column tiles with on-chip reuse (CUDA)
	SDDMMCusparse SDDMMAlgorithm = 4 // cusparseSDDMM for float32 factors (CUDA)
)

func (a SDDMMAlgorithm) String() string {
	switch a {
	case SDDMMAuto:
		return "SDDMMAuto"
	case SDDMMRowSplit:
		return "SDDMMRowSplit"
	case SDDMMNNZSplit:
		return "SDDMMNNZSplit"
	case SDDMMTiled:
		return "SDDMMTiled"
	case SDDMMCusparse:
		return "SDDMMCusparse"
	}
	return fmt.Sprintf("SDDMMAlgorithm(%d)", int(a))
}

// SDDMMPlan is the analysis of one sparsity pattern for one K, made once and reused by
// SDDMMWithPlan on any matrix that shares the pattern (the pattern matrix itself or matrices
// made from it with Like). It holds its own analysis: the pattern matrix may be closed first.
// Close it when done.
type SDDMMPlan struct {
	ref handle[capi.SwigcptrStruct_SS_sfac_sddmm_plan]
}

// NewSDDMMPlan analyses pattern for A and B with k columns, for algorithm alg (SDDMMAuto picks
// one; Algorithm tells which).
func NewSDDMMPlan(ctx *Context, pattern *SparseMatrix, k int, alg SDDMMAlgorithm) (*SDDMMPlan, error) {
	c, err := ctx.acquire()
	if err != nil {
		return nil, err
	}
	defer ctx.release()
	ph, err := pattern.acquire()
	if err != nil {
		return nil, err
	}
	defer pattern.release()
	var h uintptr
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_sddmm_plan_create(c, ph, int64(k), capi.Enum_SS_sfac_sddmm_algorithm(alg), &h)
	})
	if err != nil {
		return nil, err
	}
	p := &SDDMMPlan{}
	p.ref.init(capi.SwigcptrStruct_SS_sfac_sddmm_plan(h), func(h capi.SwigcptrStruct_SS_sfac_sddmm_plan) capi.Enum_SS_sfac_status {
		return capi.Sfac_sddmm_plan_destroy(h)
	})
	runtime.SetFinalizer(p, func(p *SDDMMPlan) { p.Close() })
	return p, nil
}

// Close releases the plan (once calls in flight on other goroutines are done); later calls
// are no-ops.
func (p *SDDMMPlan) Close() error {
	if p == nil {
		return nil
	}
	return p.ref.close()
}

func (p *SDDMMPlan) acquire() (capi.SwigcptrStruct_SS_sfac_sddmm_plan, error) {
	if p == nil {
		return 0, closedError("SDDMMPlan")
	}
	return p.ref.acquire("SDDMMPlan")
}

func (p *SDDMMPlan) release() {
	if p != nil {
		p.ref.release()
	}
}

// Algorithm is the algorithm the plan resolved to (never SDDMMAuto).
func (p *SDDMMPlan) Algorithm() (SDDMMAlgorithm, error) {
	h, err := p.acquire()
	if err != nil {
		return 0, err
	}
	defer p.release()
	out := []int32{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_sddmm_plan_get_algorithm(h, out) })
	return SDDMMAlgorithm(out[0]), err
}

// SDDMM computes P = f(A * B^T, S) at the nonzeros of S (A is M x K, B is N x K, S is M x N).
// P must share S's pattern (S itself or a matrix made with S.Like); with beta == 0 P's old
// values are not read. Each call analyses S's pattern; SDDMMWithPlan reuses an SDDMMPlan.
func SDDMM(ctx *Context, mode SDDMMMode, alpha float32, a, b *DenseMatrix, s *SparseMatrix, beta float32, p *SparseMatrix) error {
	return SDDMMWithPlan(ctx, nil, mode, alpha, a, b, s, beta, p)
}

// SDDMMWithPlan is SDDMM with a plan made by NewSDDMMPlan for S's pattern and A's K (a nil
// plan is plain SDDMM). A plan for another pattern or K is the library's error.
func SDDMMWithPlan(ctx *Context, plan *SDDMMPlan, mode SDDMMMode, alpha float32, a, b *DenseMatrix, s *SparseMatrix, beta float32, p *SparseMatrix) error {
	c, err := ctx.acquire()
	if err != nil {
		return err
	}
	defer ctx.release()
	var planH capi.SwigcptrStruct_SS_sfac_sddmm_plan
	if plan != nil {
		if planH, err = plan.acquire(); err != nil {
			return err
		}
		defer plan.release()
	}
	ah, err := a.acquire()
	if err != nil {
		return err
	}
	defer a.release()
	bh, err := b.acquire()
	if err != nil {
		return err
	}
	defer b.release()
	sh, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	ph, err := p.acquire()
	if err != nil {
		return err
	}
	defer p.release()
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_sddmm(c, capi.Enum_SS_sfac_sddmm_mode(mode), alpha, ah, bh, sh, beta, ph, planH)
	})
	return err
}
