// Package linalg holds the dense kernels under react's solvers that need
// nothing of react: the weighted sums A_p = Σ w_t A_t and C_p = Σ w_t C_t
// of the tasks' matrices, with C_p's 1-norm (WeightedSums over Task), the
// right-hand Cholesky solve W UᵀU = B, blocked into
// GEMMs or not and parallel over rows (CholSolveRight, SolveRows), the
// 1-norm of a symmetric matrix from its upper triangle (OneNormUpper,
// AddColumnSums, MaxNorm), and Hager and Higham's estimate of a 1-norm
// from products alone (EstimateOneNorm), which the GPU solver uses for its
// condition estimate.
package linalg
