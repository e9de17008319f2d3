// Package react implements ReACT, the closed-form, preference-controllable
// correction of a merged model's final representation.
//
// For each task t the calibration data give, over N_t unlabeled samples, the
// cross-covariance S_t = Σ z_ind z_mtlᵀ between the task expert's features and
// the merged backbone's features, and the Gram matrix G_t = Σ z_mtl z_mtlᵀ of
// the merged features. W_orth_t is the orthogonal Procrustes solution of S_t.
// With a regulariser β ≥ 0,
//
//	A_t = S_t + β W_orth_t,  C_t = G_t + β I,
//
// and for a preference p over the tasks (p_t ≥ 0, Σ p_t = 1) the corrected
// feature is ẑ = W_p z with
//
//	W_p = (Σ p_t A_t)(Σ p_t C_t)⁻¹,
//
// solved through a Cholesky factorisation of Σ p_t C_t, never an explicit
// inverse. With the "mean" normalisation S_t and G_t are divided by N_t before
// β is added, so that β is relative to per-sample second moments.
//
// The package holds no server code: it is the method, its statistics, the
// solver and the batch correction, and the aggregation baselines. Beside
// it, react/componentsfile reads and writes the components file, which
// this package never imports.
package react
