package tritonhttp

import (
	"encoding/json"
	"testing"
)

func TestErrorBody(t *testing.T) {
	got := ErrorBody("input \"x\": bad\n\xff")
	if want := `{"error":"input \"x\": bad\n\ufffd"}`; string(got) != want {
		t.Errorf("ErrorBody = %s, want %s", got, want)
	}
	var v struct{ Error string }
	if err := json.Unmarshal(got, &v); err != nil || v.Error != "input \"x\": bad\n\uFFFD" {
		t.Errorf("ErrorBody decodes to %q, %v", v.Error, err)
	}
}
