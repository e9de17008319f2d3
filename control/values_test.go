package control_test

import (
	"net/http"
	"testing"

	"github.com/mergectl/react-triton/control"
)

// TestValuesFrom: the first value of each of ReACT's keys, present even
// when empty, absent when the source has none; Key never set.
func TestValuesFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Header
		want control.Values
	}{
		{"none", http.Header{"X-Other": {"1"}}, control.Values{}},
		{"preference", http.Header{"React-Preference": {"a=1", "b=1"}}, control.Values{Preference: "a=1", HasPreference: true}},
		{"empty preset", http.Header{"React-Preset": {""}}, control.Values{HasPreset: true}},
		{"both", http.Header{"React-Preference": {"a=1"}, "React-Preset": {"uniform"}},
			control.Values{Preference: "a=1", HasPreference: true, Preset: "uniform", HasPreset: true}},
		{"key header ignored", http.Header{"X-User": {"u"}}, control.Values{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := control.ValuesFrom(tc.h.Values); got != tc.want {
				t.Errorf("ValuesFrom(%v) = %+v, want %+v", tc.h, got, tc.want)
			}
		})
	}
}
