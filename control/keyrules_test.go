package control

import (
	"strings"
	"testing"
	"time"
)

func TestCheckKeyHeader(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"x-user-id", ""},
		{"X-User-Id", ""},
		{"x user", "is not a header name"},
		{"", "is not a header name"},
		{"React-Key", "react-* keys are ReACT's own"},
		{"grpc-timeout", "gRPC reserves"},
		{"x-id-bin", "gRPC reserves"},
	} {
		got := CheckKeyHeader(tc.name)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("CheckKeyHeader(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCheckKeyParameter(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"user_id", ""},
		{"x-user-id", ""},
		{"react-key", "react-* keys are ReACT's own"},
		{"REACT-key", "react-* keys are ReACT's own"},
		{"priority", "a parameter Triton reserves"},
		{"triton_enable_empty_final_response", "a parameter Triton reserves"},
		{" user_id", "white space around it"},
	} {
		got := CheckKeyParameter(tc.name)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("CheckKeyParameter(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCheckWindow(t *testing.T) {
	a := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	b := a.Add(time.Hour)
	for _, tc := range []struct {
		start, end time.Time
		want       string
	}{
		{a, b, ""},
		{time.Time{}, b, ""},
		{a, time.Time{}, ""},
		{a, a, "2026-03-01T09:00:00Z is not after start 2026-03-01T09:00:00Z"},
		{b, a, "2026-03-01T09:00:00Z is not after start 2026-03-01T10:00:00Z"},
	} {
		err := CheckWindow(tc.start, tc.end)
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.want {
				t.Errorf("CheckWindow(%v, %v) = %q, want %q", tc.start, tc.end, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("CheckWindow(%v, %v) = nil, want %q", tc.start, tc.end, tc.want)
		}
	}
}
