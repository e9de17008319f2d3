package pipeline

import (
	"errors"

	"github.com/mergectl/react-triton/sidecar/pipeline/shadowcmp"
)

// WaitShadows waits until the set has no shadow comparison in flight. No
// request may be served meanwhile (a comparison started during the wait
// would race with it).
func (s *Set) WaitShadows() {
	if s.shadow != nil {
		s.shadow.Wait()
	}
}

// DropArmMatrix leaves arm without a W_p in the shadow comparison of
// model, as an arm whose matrix could not be found: NewProfile pins every
// arm's, so no configuration builds one.
func (s *Set) DropArmMatrix(model, arm string) {
	arms := s.Models[model].shadow.arms
	for i := range arms {
		if arms[i].Name == arm {
			arms[i] = shadowcmp.Arm{Name: arm, Err: errors.New("no W_p")}
		}
	}
}
