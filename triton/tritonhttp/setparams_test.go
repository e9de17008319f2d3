package tritonhttp

import (
	"errors"
	"strconv"
	"testing"
)

// TestSetParameters: the parameters are set in the JSON header, replacing
// a member of the same key; everything else of the request reads back the
// same, binary data included.
func TestSetParameters(t *testing.T) {
	bin := []byte{1, 0, 0, 0, 2, 0, 0, 0}
	header := `{"id":"r<1>","parameters":{"react-preset":"old","keep":7},` +
		`"inputs":[{"name":"x","datatype":"INT32","shape":[2],"parameters":{"binary_data_size":8}}],` +
		`"outputs":[{"name":"y","parameters":{"binary_data":true}}]}`
	tests := []struct {
		name         string
		body         []byte
		headerLength string
	}{
		{"binary", append([]byte(header), bin...), strconv.Itoa(len(header))},
		{"json", []byte(`{"inputs":[{"name":"x","datatype":"INT32","shape":[2],"data":[1,2]}],"parameters":{"react-preset":"old","keep":7}}`), ""},
		{"json without parameters", []byte(`{"inputs":[{"name":"x","datatype":"INT32","shape":[2],"data":[1,2]}]}`), ""},
	}
	set := map[string]string{"react-preference": `a=1,"b"=2`, "react-preset": "new"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := ParseRequest(tt.body, tt.headerLength)
			if err != nil {
				t.Fatal(err)
			}
			body, hl, err := SetParameters(tt.body, Options{HeaderLength: tt.headerLength, HasHeaderLength: tt.headerLength != ""}, set)
			if err != nil {
				t.Fatal(err)
			}
			newLength := ""
			if tt.headerLength != "" {
				newLength = strconv.Itoa(hl)
			} else if hl != -1 {
				t.Errorf("header length %d for a JSON body, want -1", hl)
			}
			after, err := ParseRequest(body, newLength)
			if err != nil {
				t.Fatalf("%v:\n%s", err, body)
			}
			params := after.Proto.GetParameters()
			if params["react-preference"].GetStringParam() != `a=1,"b"=2` || params["react-preset"].GetStringParam() != "new" {
				t.Errorf("parameters %v", params)
			}
			if _, had := before.Proto.GetParameters()["keep"]; had && params["keep"].GetInt64Param() != 7 {
				t.Errorf("keep = %v, want 7 as it was", params["keep"])
			}
			delete(params, "react-preference")
			delete(params, "react-preset")
			for k := range before.Proto.GetParameters() {
				delete(before.Proto.GetParameters(), k)
			}
			after.Proto.Parameters, before.Proto.Parameters = nil, nil
			if after.Proto.String() != before.Proto.String() || after.BinaryDataOutput != before.BinaryDataOutput || len(after.BinaryData) != len(before.BinaryData) {
				t.Errorf("request changed:\n%v\nwas\n%v", after.Proto, before.Proto)
			}
		})
	}
	if _, _, err := SetParameters([]byte{1, 2, 3, 4}, Options{HeaderLength: "0", HasHeaderLength: true}, set); err == nil {
		t.Error("a raw binary request took parameters")
	}
	for _, bad := range []string{`[1]`, `{"parameters":[1],"inputs":[]}`} {
		var re *RequestError
		if _, _, err := SetParameters([]byte(bad), Options{}, set); !errors.As(err, &re) {
			t.Errorf("SetParameters(%s): %v, want a *RequestError", bad, err)
		}
	}
}
