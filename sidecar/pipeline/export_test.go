package pipeline

// WaitShadows waits until the set has no shadow comparison in flight. No
// request may be served meanwhile (a comparison started during the wait
// would race with it).
func (s *Set) WaitShadows() {
	if s.shadow != nil {
		s.shadow.Wait()
	}
}
