package passthrough

import "testing"

func TestRedact(t *testing.T) {
	r := NewRedactor("triton.internal:8101", "10.0.0.5:8100")
	for in, want := range map[string]string{
		`upstream Triton 10.0.0.5:8101: connection error: desc = "transport: Error while dialing: dial tcp 10.0.0.5:8101: connect: connection refused"`: `upstream Triton [triton]: connection error: desc = "transport: Error while dialing: dial tcp [triton]: connect: connection refused"`,
		"dial tcp: lookup triton.internal on 10.96.0.10:53: no such host":                                                                               "dial tcp: lookup [triton] on [triton]: no such host",
		"read tcp [::1]:40222->[::1]:8101: read: connection reset by peer":                                                                              "read tcp [triton]->[triton]: read: connection reset by peer",
		`Request for unknown model: 'head_greek' is not found`:                                                                                          `Request for unknown model: 'head_greek' is not found`,
		`model "triton.internal_head" version 1`:                                                                                                        `model "triton.internal_head" version 1`,
		"triton.internal:8101 refused":                                                                                                                  "[triton] refused",
	} {
		if got := r.Redact(in); got != want {
			t.Errorf("redact(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}
