// Package testutil holds what the repository's tests share and nothing
// else imports: the one rule for a test that lacks what it needs (skip by
// hand, fail under REACT_E2E=1 as in CI), the one golden-file helper
// with its -update flag, an address nothing listens on (ClosedAddr), and
// whether the race detector is on (RaceEnabled).
// docs/testing.md describes the test layers.
package testutil
