// Package sequential compares the arms of an A/B experiment on their
// outcomes with statistics that stay valid however often they are looked
// at: an operator may read the report every minute and stop the moment it
// decides, and the chance that it ever declares a winner between two arms
// that do not differ stays at most α.
//
// Outcomes are numbers in [0, 1]: 1 or 0 for a true label that the served
// prediction matched or missed, or a reward. An arm's Sample holds their
// count, sum and sum of squares, which is all a Prometheus counter can
// carry. Compare sets an arm beside the control arm with the normal-mixture
// sequential probability ratio test (mSPRT; Robbins 1970, as used for
// A/B tests by Johari, Koomen, Pekelis and Walsh, "Peeking at A/B tests",
// KDD 2017): the difference of the means Δ̂ is approximately normal with
// variance v = s_c²/n_c + s_t²/n_t, and for a normal prior of variance τ²
// on the true difference the mixture likelihood ratio against Δ = 0 is
//
//	Λ = √(v / (v + τ²)) · exp(τ² Δ̂² / (2 v (v + τ²))),
//
// a nonnegative martingale under the null hypothesis, so by Ville's
// inequality P(Λ ever reaches 1/α) ≤ α. Inverting it gives the
// confidence sequence
//
//	Δ̂ ± √(v (v + τ²) / τ² · (2 ln(1/α) + ln((v + τ²) / v))),
//
// which holds the true difference at every moment at once with
// probability at least 1 − α, and the always-valid p-value min(1, 1/Λ).
// The arm is declared better (or worse) when the sequence excludes 0.
// MeanInterval is the same sequence for one arm's mean. The
// guarantee is asymptotic, with v estimated from the samples (Waudby-Smith,
// Arbour, Sinha, Kennedy and Ramdas, "Time-uniform central limit theory and
// asymptotic confidence sequences", Annals of Statistics 2024), so no
// decision is made before MinOutcomes outcomes per arm.
// TestNullPeeking simulates the guarantee.
//
// SampleRatio checks the arms' counts against their configured weights
// with Pearson's χ² test (a sample-ratio mismatch, at a strict threshold,
// says the assignment or the logging is broken and the comparison is not
// to be trusted).
package sequential
