package sparsefac

import (
	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// SDDMMMode is what SDDMM writes at every nonzero (i, j) of S, with d = dot(A[i,:], B[j,:]).
type SDDMMMode int

const (
	Scaled   SDDMMMode = 0 // P_ij = alpha * d * S_ij + beta * P_ij
	Pattern  SDDMMMode = 1 // P_ij = alpha * d + beta * P_ij
	Residual SDDMMMode = 2 // P_ij = alpha * (S_ij - d) + beta * P_ij
)

// SDDMM computes P = f(A * B^T, S) at the nonzeros of S (A is M x K, B is N x K, S is M x N).
// P must share S's pattern (S itself or a matrix made with S.Like); with beta == 0 P's old
// values are not read.
func SDDMM(ctx *Context, mode SDDMMMode, alpha float32, a, b *DenseMatrix, s *SparseMatrix, beta float32, p *SparseMatrix) error {
	c, err := ctx.acquire()
	if err != nil {
		return err
	}
	defer ctx.release()
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
		return capi.Sfac_sddmm(c, capi.Enum_SS_sfac_sddmm_mode(mode), alpha, ah, bh, sh, beta, ph, capi.SwigcptrStruct_SS_sfac_sddmm_plan(0))
	})
	return err
}
