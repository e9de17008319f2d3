package tritonhttp

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// framed returns a body of JSON header h followed by the binary parts, and
// the header's length.
func framed(h string, parts ...[]byte) ([]byte, string) {
	return append([]byte(h), bytes.Join(parts, nil)...), strconv.Itoa(len(h))
}

func le32(v ...float32) []byte { return triton.NewFP32("", nil, v).Raw }

func TestParseRequestErrors(t *testing.T) {
	junk := bytes.Repeat([]byte{0x17}, 64<<10)
	fp32x4 := `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":16}}]}`
	bytesIn := func(shape string, size int) string {
		return `{"inputs":[{"name":"s","datatype":"BYTES","shape":` + shape + `,"parameters":{"binary_data_size":` + strconv.Itoa(size) + `}}]}`
	}
	in := func(fields string) string { return `{"inputs":[{"name":"x",` + fields + `}]}` }
	cases := []struct {
		name         string
		body         string
		headerLength string
		want         string
	}{
		// Framing.
		// Framing, as Triton reads it (its own message and status).
		{"header length negative", `{}`, "-1", `inference header size should be in range (0, 2), got: -1`},
		{"header length overflows", `{}`, "99999999999999999999999", `inference header size should be in range (0, 2), got: 99999999999999999999999`},
		{"header length beyond body", `{"inputs":[]}`, "14", "inference header size should be in range (0, 13), got: 14"},
		{"header length beyond body after digits", `{"inputs":[]}`, "14abc", "inference header size should be in range (0, 13), got: 14abc"},
		{"junk with short header length", string(junk), "20", "failed to parse the request JSON buffer: Invalid value. at 0"},
		{"junk after header", `{"inputs":[]}` + string(junk[:100]), "13", "binary_data_size add up to 0 bytes, but 100 bytes follow the JSON header"},

		// JSON structure.
		{"not an object", `[]`, "", "JSON header: want an object, got an array at offset 0"},
		{"trailing value", `{"inputs":[]} x`, "", "failed to parse the request JSON buffer: The document root must not be followed by other values. at 14"},
		{"trailing comma", `{"inputs":[],}`, "", "failed to parse the request JSON buffer: Missing a name for object member. at 13"},
		{"truncated", `{"inputs":[`, "", "failed to parse the request JSON buffer: Invalid value. at 11"},
		{"id not a string", `{"id":1,"inputs":[]}`, "", "id: want a string, got a number at offset 6"},
		{"no inputs", `{}`, "", `JSON header: no "inputs"`},
		{"inputs not an array", `{"inputs":{}}`, "", "inputs: want an array, got an object at offset 10"},
		{"duplicate key", `{"inputs":[],"inputs":[]}`, "", `JSON header: duplicate key "inputs"`},
		{"deep nesting", `{"x":` + strings.Repeat("[", 100000), "", "JSON header: JSON nested deeper than 64 levels at offset 68"},
		{"input not an object", `{"inputs":[1]}`, "", "input 0: want an object, got a number at offset 11"},
		{"invalid literal", `{"inputs":[],"x":tru}`, "", "failed to parse the request JSON buffer: Invalid value. at 20"},
		{"leading zero", `{"inputs":[],"x":01}`, "", "failed to parse the request JSON buffer: Missing a comma or '}' after an object member. at 18"},
		{"bad escape", `{"inputs":[],"x":"\q"}`, "", `failed to parse the request JSON buffer: Invalid escape character in string. at 18`},
		{"unterminated string", `{"inputs":[],"x":"abc`, "", "failed to parse the request JSON buffer: Missing a closing quotation mark in string. at 21"},
		{"syntax error after a semantic one", `{"x":1,"inputs":{},"y":[1 2]}`, "", "failed to parse the request JSON buffer: Missing a comma or ']' after an array element. at 26"},

		// Inputs.
		{"no name", `{"inputs":[{"datatype":"FP32","shape":[1],"data":[1]}]}`, "", `input 0: no "name"`},
		{"no datatype", in(`"shape":[1],"data":[1]`), "", `input "x": no "datatype"`},
		{"no shape", in(`"datatype":"FP32","data":[1]`), "", `input "x": no "shape"`},
		{"unknown datatype", in(`"datatype":"FP8","shape":[1],"data":[1]`), "", `input "x": unknown datatype "FP8"`},
		{"negative dimension", in(`"datatype":"FP32","shape":[-1],"data":[1]`), "", `input "x": shape: want a non-negative integer, got -1 at offset 50`},
		{"fractional dimension", in(`"datatype":"FP32","shape":[1.0],"data":[1]`), "", `input "x": shape: want a non-negative integer, got 1.0 at offset 50`},
		{"shape not an array", in(`"datatype":"FP32","shape":4,"data":[1]`), "", `input "x": shape: want an array, got a number at offset 49`},
		{"too many elements", in(`"datatype":"FP32","shape":[65536,65536],"data":[1]`), "", `input "x": shape [65536 65536] has more than 2147483647 elements`},
		{"dimension above MaxElements", in(`"datatype":"FP32","shape":[2147483648],"data":[1]`), "", `input "x": shape [2147483648] has a dimension above 2147483647`},
		{"dimension beyond int64", in(`"datatype":"FP32","shape":[9223372036854775808],"data":[1]`), "", `input "x": shape: dimension 9223372036854775808 is too large`},
		{"no data", in(`"datatype":"FP32","shape":[1]`), "", `input "x": no data: give one of "data", parameter binary_data_size or parameter shared_memory_region`},
		{"data and binary", in(`"datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4},"data":[1]`), "", `input "x": "data" and parameter binary_data_size: give only one`},
		{"binary and shared memory", in(`"datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4,"shared_memory_region":"r"}`), "", `input "x": parameter binary_data_size and parameter shared_memory_region: give only one`},
		{"duplicate input", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1]},{"name":"x","datatype":"FP32","shape":[1],"data":[2]}]}`, "", `input "x": given more than once`},
		{"duplicate input key", in(`"datatype":"FP32","shape":[1],"shape":[1],"data":[1]`), "", `input "x": duplicate key "shape"`},
		{"binary_data_size negative", in(`"datatype":"FP32","shape":[1],"parameters":{"binary_data_size":-1}`), "", `input "x": parameter "binary_data_size": want a non-negative integer, got -1 at offset 86`},
		{"binary_data_size twice", in(`"datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4,"binary_data_size":4}`), "", `input "x": parameters: duplicate key "binary_data_size"`},
		{"shared memory region not a string", in(`"datatype":"FP32","shape":[1],"parameters":{"shared_memory_region":1}`), "", `input "x": parameter "shared_memory_region": want a string, got a number at offset 90`},

		// JSON data.
		{"too few elements", in(`"datatype":"FP32","shape":[2,2],"data":[1,2,3]`), "", `input "x": data has 3 elements, but shape [2 2] needs 4`},
		{"too many elements nested", in(`"datatype":"FP32","shape":[2,2],"data":[[1,2],[3,4],[5]]`), "", `input "x": data has 5 elements, but shape [2 2] needs 4`},
		{"data before shape, too few", in(`"data":[1],"datatype":"FP32","shape":[2]`), "", `input "x": data has 1 elements, but shape [2] needs 2`},
		{"string for FP32", in(`"datatype":"FP32","shape":[2],"data":[1,"a"]`), "", `input "x": data element 1: want a number for FP32, got a string`},
		{"null for FP32", in(`"datatype":"FP32","shape":[1],"data":[null]`), "", `input "x": data element 0: want a number for FP32, got null`},
		{"missing element", in(`"datatype":"FP32","shape":[2],"data":[1,,2]`), "", `failed to parse the request JSON buffer: Invalid value. at 63`},
		{"fraction for INT32", in(`"datatype":"INT32","shape":[1],"data":[1.5]`), "", `input "x": data element 0: 1.5 is not an integer (INT32)`},
		{"exponent for INT64", in(`"datatype":"INT64","shape":[1],"data":[1e2]`), "", `input "x": data element 0: 1e2 is not an integer (INT64)`},
		{"NaN for INT16", in(`"datatype":"INT16","shape":[1],"data":[NaN]`), "", `input "x": data element 0: NaN is not an integer (INT16)`},
		{"UINT8 too large", in(`"datatype":"UINT8","shape":[1],"data":[256]`), "", `input "x": data element 0: 256 is out of range for UINT8 [0, 255]`},
		{"UINT8 negative", in(`"datatype":"UINT8","shape":[1],"data":[-1]`), "", `input "x": data element 0: -1 is out of range for UINT8 [0, 255]`},
		{"INT8 too small", in(`"datatype":"INT8","shape":[1],"data":[-129]`), "", `input "x": data element 0: -129 is out of range for INT8 [-128, 127]`},
		{"INT64 too large", in(`"datatype":"INT64","shape":[1],"data":[9223372036854775808]`), "", `input "x": data element 0: 9223372036854775808 is out of range for INT64 [-9223372036854775808, 9223372036854775807]`},
		{"UINT64 too large", in(`"datatype":"UINT64","shape":[1],"data":[18446744073709551616]`), "", `input "x": data element 0: 18446744073709551616 is out of range for UINT64 [0, 18446744073709551615]`},
		{"number for BOOL", in(`"datatype":"BOOL","shape":[1],"data":[1]`), "", `input "x": data element 0: want true or false for BOOL, got a number`},
		{"number for BYTES", in(`"datatype":"BYTES","shape":[1],"data":[1]`), "", `input "x": data element 0: want a string for BYTES, got a number`},
		{"FP16 as JSON", in(`"datatype":"FP16","shape":[1],"data":[1]`), "", `receiving FP16 data via JSON is not supported. Please use the binary data format for input x`},
		{"BF16 as JSON", in(`"datatype":"BF16","shape":[1],"data":[1]`), "", `receiving BF16 data via JSON is not supported. Please use the binary data format for input x`},
		{"FP16 as JSON, data first", in(`"data":[1],"datatype":"FP16","shape":[1]`), "", `receiving FP16 data via JSON is not supported. Please use the binary data format for input x`},
		{"data not an array", in(`"datatype":"FP32","shape":[1],"data":5`), "", `input "x": data: want an array, got a number at offset 60`},
		{"FP64 beyond range", in(`"datatype":"FP64","shape":[1],"data":[1e400]`), "", `failed to parse the request JSON buffer: Number too big to be stored in double. at 61`},
		{"control character in string", in(`"datatype":"BYTES","shape":[1],"data":["a` + "\x01" + `"]`), "", `failed to parse the request JSON buffer: Invalid escape character in string. at 64`},
		{"lone surrogate", in(`"datatype":"BYTES","shape":[1],"data":["\ud83d"]`), "", `failed to parse the request JSON buffer: The surrogate pair in string is invalid. at 63`},
		{"deep data", in(`"datatype":"FP32","shape":[1],"data":` + strings.Repeat("[", 70) + "1" + strings.Repeat("]", 70)), "", `input "x": data: JSON nested deeper than 64 levels at offset 121`},

		// Binary data (more below).
		{"binary size does not match shape", `{"inputs":[{"name":"image","datatype":"FP32","shape":[1,1,28,28],"parameters":{"binary_data_size":3135}}]}`, "", `input "image": binary_data_size 3135 does not match shape [1 1 28 28] of FP32 (3136 bytes)`},
		{"binary without header length", fp32x4, "", "binary_data_size given without an Inference-Header-Content-Length header"},

		// Parameters.
		{"triton_ key", `{"parameters":{"triton_x":1},"inputs":[]}`, "", `parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.`},
		{"null parameter", `{"parameters":{"n":null},"inputs":[]}`, "", `parameter "n": want a string, boolean or number, got null`},
		{"object parameter", `{"parameters":{"headers":{"a":"b"}},"inputs":[]}`, "", `parameter "headers": want a string, boolean or number, got an object`},
		{"binary_data_output not a bool", `{"parameters":{"binary_data_output":"yes"},"inputs":[]}`, "", `parameter "binary_data_output": want true or false, got a string at offset 36`},
		{"priority negative", `{"parameters":{"priority":-1},"inputs":[]}`, "", `parameter "priority": want a non-negative integer, got -1 at offset 26`},
		{"sequence_start not a bool", `{"parameters":{"sequence_start":1},"inputs":[]}`, "", `parameter "sequence_start": want true or false, got a number at offset 32`},
		{"duplicate parameter", `{"parameters":{"a":1,"a":2},"inputs":[]}`, "", `parameters: duplicate key "a"`},
		{"parameters not an object", `{"parameters":[],"inputs":[]}`, "", `parameters: want an object, got an array at offset 14`},

		// Outputs.
		{"output without name", `{"inputs":[],"outputs":[{}]}`, "", `output 0: no "name"`},
		{"output shm and classification", `{"inputs":[],"outputs":[{"name":"y","parameters":{"shared_memory_region":"r","classification":3}}]}`, "", `output "y": parameters shared_memory_region and classification: give only one`},
		{"output shm and binary", `{"inputs":[],"outputs":[{"name":"y","parameters":{"shared_memory_region":"r","binary_data":true}}]}`, "", `output "y": parameters shared_memory_region and binary_data true: give only one`},
		{"binary_data not a bool", `{"inputs":[],"outputs":[{"name":"y","parameters":{"binary_data":1}}]}`, "", `output "y": parameter "binary_data": want true or false, got a number at offset 64`},
		{"classification negative", `{"inputs":[],"outputs":[{"name":"y","parameters":{"classification":-2}}]}`, "", `output "y": parameter "classification": want a non-negative integer, got -2 at offset 67`},
		{"outputs not an array", `{"inputs":[],"outputs":{}}`, "", `outputs: want an array, got an object at offset 23`},
	}
	// Cases with binary data after the JSON header.
	type binaryCase struct {
		name         string
		body         []byte
		headerLength string
		want         string
	}
	var binaryCases []binaryCase
	add := func(name string, h string, want string, parts ...[]byte) {
		b, hl := framed(h, parts...)
		binaryCases = append(binaryCases, binaryCase{name, b, hl, want})
	}
	add("truncated binary", fp32x4, "binary_data_size add up to 16 bytes, but 10 bytes follow the JSON header", make([]byte, 10))
	add("extra binary", fp32x4, "binary_data_size add up to 16 bytes, but 18 bytes follow the JSON header", make([]byte, 18))
	add("BYTES element too long", bytesIn("[1]", 6), `input "s": binary data: BYTES element 0: length 5, but 2 bytes left`, []byte("\x05\x00\x00\x00ab"))
	add("BYTES count", bytesIn("[3]", 10), `input "s": binary data holds 2 BYTES elements, but shape [3] needs 3`, []byte("\x01\x00\x00\x00a\x01\x00\x00\x00b"))
	add("BYTES too many", bytesIn("[1]", 10), `input "s": binary data holds 2 BYTES elements, but shape [1] needs 1`, []byte("\x01\x00\x00\x00a\x01\x00\x00\x00b"))
	add("BYTES truncated length", bytesIn("[2]", 7), `input "s": binary data: BYTES element 1: 2 bytes left, need a 4-byte length`, []byte("\x01\x00\x00\x00a\x02\x00"))
	add("sizes overflow", `{"inputs":[{"name":"a","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":18446744073709551615}},{"name":"b","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":18446744073709551615}}]}`,
		"binary_data_size add up to more than 18446744073709551615 bytes, but 4 bytes follow the JSON header", make([]byte, 4))
	add("lying binary_data_size", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":12}}]}`,
		`input "x": binary_data_size 12 does not match shape [1 4] of FP32 (16 bytes)`, make([]byte, 16))

	check := func(t *testing.T, body []byte, headerLength, want string) {
		t.Helper()
		r, err := ParseRequest(body, headerLength)
		if err == nil {
			t.Fatalf("ParseRequest succeeded: %v", r.Proto)
		}
		// Triton's own answers for what it refuses itself; ours for the rest.
		var re *RequestError
		var te *TritonError
		switch {
		case strings.HasPrefix(want, "failed to parse the request JSON buffer: "):
			if !errors.As(err, &te) || te.Status != 500 {
				t.Errorf("error %T %v is not a *TritonError with status 500", err, err)
			}
		case strings.HasPrefix(want, "inference header size") || strings.HasPrefix(want, "parameter keys starting with 'triton_'") ||
			strings.Contains(want, "data via JSON is not supported"):
			if !errors.As(err, &te) || te.Status != 400 {
				t.Errorf("error %T %v is not a *TritonError with status 400", err, err)
			}
		case !errors.As(err, &re):
			t.Errorf("error %T is not a *RequestError", err)
		}
		if err.Error() != want {
			t.Errorf("error\n got %s\nwant %s", err, want)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, []byte(c.body), c.headerLength, c.want) })
	}
	for _, c := range binaryCases {
		t.Run(c.name, func(t *testing.T) { check(t, c.body, c.headerLength, c.want) })
	}
}

// TestParseRequestDataTypes converts the JSON data of every datatype that
// has a JSON form, flat and nested in several ways, and compares the raw
// contents with those of the triton package's constructors.
func TestParseRequestDataTypes(t *testing.T) {
	shape := []int64{2, 3}
	cases := []struct {
		dt     string
		leaves []string
		want   triton.Tensor
	}{
		{triton.BOOL, []string{"true", "false", "true", "false", "false", "true"},
			triton.NewBool("", shape, []bool{true, false, true, false, false, true})},
		{triton.UINT8, []string{"0", "255", "1", "2", "-0", "4"},
			triton.NewUint8("", shape, []uint8{0, 255, 1, 2, 0, 4})},
		{triton.UINT16, []string{"0", "65535", "1", "2", "3", "4"},
			triton.NewUint16("", shape, []uint16{0, 65535, 1, 2, 3, 4})},
		{triton.UINT32, []string{"0", "4294967295", "1", "2", "3", "4"},
			triton.NewUint32("", shape, []uint32{0, 4294967295, 1, 2, 3, 4})},
		{triton.UINT64, []string{"0", "18446744073709551615", "1", "2", "3", "4"},
			triton.NewUint64("", shape, []uint64{0, 18446744073709551615, 1, 2, 3, 4})},
		{triton.INT8, []string{"-128", "127", "-1", "0", "1", "2"},
			triton.NewInt8("", shape, []int8{-128, 127, -1, 0, 1, 2})},
		{triton.INT16, []string{"-32768", "32767", "-1", "0", "1", "2"},
			triton.NewInt16("", shape, []int16{-32768, 32767, -1, 0, 1, 2})},
		{triton.INT32, []string{"-2147483648", "2147483647", "-1", "0", "1", "2"},
			triton.NewInt32("", shape, []int32{-2147483648, 2147483647, -1, 0, 1, 2})},
		{triton.INT64, []string{"-9223372036854775808", "9223372036854775807", "-1", "0", "1", "2"},
			triton.NewInt64("", shape, []int64{-9223372036854775808, 9223372036854775807, -1, 0, 1, 2})},
		{triton.FP32, []string{"1.5", "-0.0", "1e-45", "3.4028235e38", "Infinity", "-Inf"},
			triton.NewFP32("", shape, []float32{1.5, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1))})},
		{triton.FP64, []string{"0.1", "1e308", "-5e-324", "2", "-Infinity", "1E+2"},
			triton.NewFP64("", shape, []float64{0.1, 1e308, -5e-324, 2, math.Inf(-1), 100})},
		{triton.BYTES, []string{`"a"`, `"\u00e9"`, `""`, `"\ud83d\ude00"`, `"tab\tq\"\\\/"`, "\"\xff raw\""},
			triton.NewBytes("", shape, [][]byte{[]byte("a"), []byte("é"), {}, []byte("😀"), []byte("tab\tq\"\\/"), []byte("\xff raw")})},
	}
	nestings := map[string]func(l []string) string{
		"flat": func(l []string) string { return "[" + strings.Join(l, ",") + "]" },
		"by shape": func(l []string) string {
			return "[[" + strings.Join(l[:3], ",") + "],[" + strings.Join(l[3:], ",") + "]]"
		},
		"irregular": func(l []string) string {
			return "[ [" + l[0] + ", [" + l[1] + "]], [[[" + l[2] + "]]], " + l[3] + " ,[], [" + l[4] + "," + l[5] + "] ]"
		},
	}
	for _, c := range cases {
		for nest, f := range nestings {
			data := f(c.leaves)
			for _, order := range []string{
				`{"name":"x","datatype":"` + c.dt + `","shape":[2,3],"data":` + data + `}`,
				`{"data":` + data + `,"shape":[2,3],"name":"x","datatype":"` + c.dt + `"}`,
			} {
				body := `{"inputs":[` + order + `]}`
				r, err := ParseRequest([]byte(body), "")
				if err != nil {
					t.Errorf("%s %s: %v\n%s", c.dt, nest, err, body)
					continue
				}
				raw := r.Proto.RawInputContents
				if len(raw) != 1 || !bytes.Equal(raw[0], c.want.Raw) {
					t.Errorf("%s %s: raw contents %x, want %x\n%s", c.dt, nest, raw, c.want.Raw, body)
				}
			}
		}
	}
}

// TestParseRequestFloatRounding checks that FP32 data are read as a double
// and then rounded to float32, as Triton does: for this number the two
// roundings give 0x3f800002, while rounding the decimal straight to
// float32 would give 0x3f800001.
func TestParseRequestFloatRounding(t *testing.T) {
	r, err := ParseRequest([]byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[2],"data":[1.00000017881393432617187499, -NaN]}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	raw := r.Proto.RawInputContents[0]
	if got := uint32(raw[0]) | uint32(raw[1])<<8 | uint32(raw[2])<<16 | uint32(raw[3])<<24; got != 0x3f800002 {
		t.Errorf("bits %08x, want 3f800002", got)
	}
	if f, _ := (triton.Tensor{Datatype: triton.FP32, Raw: raw}).FP32(); !math.IsNaN(float64(f[1])) {
		t.Errorf("-NaN read as %v", f[1])
	}
}

func TestParseRequestBinaryAliasesBody(t *testing.T) {
	a := le32(1, 2, 3, 4)
	s := triton.NewStrings("", nil, []string{"x", "", "yz"}).Raw
	h := `{"id":"7","inputs":[` +
		`{"name":"A","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":16}},` +
		`{"name":"J","datatype":"INT32","shape":[2],"data":[5,-6]},` +
		`{"name":"S","datatype":"BYTES","shape":[3],"parameters":{"binary_data_size":` + strconv.Itoa(len(s)) + `}},` +
		`{"name":"Z","datatype":"FP32","shape":[0,4],"parameters":{"binary_data_size":0}}]}`
	body, hl := framed(h, a, s)
	r, err := ParseRequest(body, hl)
	if err != nil {
		t.Fatal(err)
	}
	raw := r.Proto.RawInputContents
	want := [][]byte{a, triton.NewInt32("", nil, []int32{5, -6}).Raw, s, {}}
	if !equalRaw(raw, want) {
		t.Fatalf("raw contents %x, want %x", raw, want)
	}
	if &raw[0][0] != &body[len(h)] || &raw[2][0] != &body[len(h)+16] {
		t.Error("binary contents are copies, not parts of the body")
	}
	if cap(raw[0]) != len(raw[0]) {
		t.Errorf("binary contents have capacity %d beyond their length %d: appending would overwrite the body", cap(raw[0]), len(raw[0]))
	}
	wantProto := &tritonpb.ModelInferRequest{Id: "7", Inputs: []*tritonpb.ModelInferRequest_InferInputTensor{
		{Name: "A", Datatype: "FP32", Shape: []int64{1, 4}},
		{Name: "J", Datatype: "INT32", Shape: []int64{2}},
		{Name: "S", Datatype: "BYTES", Shape: []int64{3}},
		{Name: "Z", Datatype: "FP32", Shape: []int64{0, 4}},
	}, RawInputContents: want}
	if !proto.Equal(wantProto, r.Proto) {
		t.Errorf("proto\n%s\nwant\n%s", prototext.Format(r.Proto), prototext.Format(wantProto))
	}
}

func param(v any) *tritonpb.InferParameter {
	p, err := triton.ToParameters(map[string]any{"k": v})
	if err != nil {
		panic(err)
	}
	return p["k"]
}

func TestParseRequestParameters(t *testing.T) {
	body := `{"parameters":{"s":"str","b":true,"i":42,"neg":-7,"d":1.5,"d1":1.0,"e":1e2,"nan":NaN,` +
		`"big":9223372036854775808,"max":9223372036854775807,"min":-9223372036854775808,` +
		`"sequence_id":18446744073709551615,"sequence_start":true,"sequence_end":false,"priority":18446744073709551615,` +
		`"timeout":100,"headers":"h","binary_data_output":true,"esc\u0041":"\n"},` +
		`"inputs":[{"name":"x","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4,"custom":"c"}},` +
		`{"name":"y","datatype":"FP32","shape":[1],"parameters":{"shared_memory_region":"r","shared_memory_offset":8,"shared_memory_byte_size":4}}],` +
		`"outputs":[{"name":"a","parameters":{"binary_data":true,"classification":3}},{"name":"b","parameters":{"classification":0,"binary_data":false}},` +
		`{"name":"c","parameters":{"shared_memory_region":"r","shared_memory_offset":16,"shared_memory_byte_size":4,"binary_data":false}}]}`
	b, hl := framed(body, le32(1))
	r, err := ParseRequest(b, hl)
	if err != nil {
		t.Fatal(err)
	}
	want := &tritonpb.ModelInferRequest{
		Parameters: map[string]*tritonpb.InferParameter{
			"s": param("str"), "b": param(true), "i": param(42), "neg": param(-7),
			"d": param(1.5), "d1": param(1.0), "e": param(100.0), "nan": param(math.NaN()),
			"big": param(9223372036854775808.0), "max": param(int64(math.MaxInt64)), "min": param(int64(math.MinInt64)),
			// Triton's gRPC server reads sequence_id and timeout from
			// int64_param into uint64: the bits carry over.
			"sequence_id": param(int64(-1)), "sequence_start": param(true), "sequence_end": param(false),
			"priority": param(uint64(math.MaxUint64)), "timeout": param(100), "headers": param("h"), "escA": param("\n"),
		},
		Inputs: []*tritonpb.ModelInferRequest_InferInputTensor{
			{Name: "x", Datatype: "FP32", Shape: []int64{1}, Parameters: map[string]*tritonpb.InferParameter{"custom": param("c")}},
			{Name: "y", Datatype: "FP32", Shape: []int64{1}, Parameters: map[string]*tritonpb.InferParameter{
				"shared_memory_region": param("r"), "shared_memory_offset": param(8), "shared_memory_byte_size": param(4)}},
		},
		Outputs: []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{
			{Name: "a", Parameters: map[string]*tritonpb.InferParameter{"classification": param(3)}},
			{Name: "b"},
			{Name: "c", Parameters: map[string]*tritonpb.InferParameter{
				"shared_memory_region": param("r"), "shared_memory_offset": param(16), "shared_memory_byte_size": param(4)}},
		},
		RawInputContents: [][]byte{le32(1)},
	}
	if !proto.Equal(want, r.Proto) {
		t.Errorf("proto\n%s\nwant\n%s", prototext.Format(r.Proto), prototext.Format(want))
	}
	if !r.BinaryDataOutput || !slicesEqual(r.BinaryData, []bool{true, false, false}) {
		t.Errorf("BinaryDataOutput %v, BinaryData %v", r.BinaryDataOutput, r.BinaryData)
	}
	if d, ok := r.RawInput(0); !ok || !bytes.Equal(d, le32(1)) {
		t.Errorf("RawInput(0) = %x, %v", d, ok)
	}
	if d, ok := r.RawInput(1); ok {
		t.Errorf("RawInput(1) of a shared-memory input = %x, true", d)
	}
}

// equalRaw compares raw contents, an empty entry equal to a nil one.
func equalRaw(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestParseRequestSharedMemoryMix checks the representation of a request
// that mixes inputs in shared memory with inputs that carry data: one raw
// contents entry per input with data, in order, as Triton's gRPC server
// reads them.
func TestParseRequestSharedMemoryMix(t *testing.T) {
	h := `{"inputs":[` +
		`{"name":"A","datatype":"FP32","shape":[1],"parameters":{"shared_memory_region":"r","shared_memory_byte_size":4}},` +
		`{"name":"B","datatype":"FP32","shape":[1],"data":[2]},` +
		`{"name":"C","datatype":"FP32","shape":[1],"parameters":{"shared_memory_region":"r","shared_memory_offset":4}},` +
		`{"name":"D","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}]}`
	body, hl := framed(h, le32(4))
	r, err := ParseRequest(body, hl)
	if err != nil {
		t.Fatal(err)
	}
	if want := ([][]byte{le32(2), le32(4)}); !equalRaw(r.Proto.RawInputContents, want) {
		t.Errorf("raw contents %x, want %x", r.Proto.RawInputContents, want)
	}
	for i, want := range [][]byte{nil, le32(2), nil, le32(4)} {
		got, ok := r.RawInput(i)
		if ok != (want != nil) || !bytes.Equal(got, want) {
			t.Errorf("RawInput(%d) = %x, %v; want %x", i, got, ok, want)
		}
	}
	if _, ok := r.RawInput(4); ok {
		t.Error("RawInput(4) of 4 inputs succeeded")
	}
}

func TestWantsBinary(t *testing.T) {
	for _, c := range []struct {
		header string
		want   map[string]bool
	}{
		{`{"inputs":[]}`, map[string]bool{"A": false}},
		{`{"inputs":[],"parameters":{"binary_data_output":true}}`, map[string]bool{"A": true}},
		{`{"inputs":[],"parameters":{"binary_data_output":false}}`, map[string]bool{"A": false}},
		{`{"inputs":[],"outputs":[{"name":"A","parameters":{"binary_data":true}}]}`, map[string]bool{"A": true, "B": false}},
		// Seen from Triton: a listed output without binary_data is JSON even
		// with binary_data_output true.
		{`{"inputs":[],"outputs":[{"name":"A"}],"parameters":{"binary_data_output":true}}`, map[string]bool{"A": false, "B": true}},
		{`{"inputs":[],"outputs":[{"name":"A","parameters":{"binary_data":false}}],"parameters":{"binary_data_output":true}}`, map[string]bool{"A": false}},
		{`{"inputs":[],"outputs":[{"name":"A","parameters":{"binary_data":true}}],"parameters":{"binary_data_output":false}}`, map[string]bool{"A": true}},
		{`{"inputs":[],"outputs":[{"name":"A","parameters":{"binary_data":true}},{"name":"B"}]}`, map[string]bool{"A": true, "B": false}},
	} {
		r, err := ParseRequest([]byte(c.header), "")
		if err != nil {
			t.Fatalf("%s: %v", c.header, err)
		}
		for name, want := range c.want {
			if got := r.WantsBinary(name); got != want {
				t.Errorf("%s: WantsBinary(%q) = %v, want %v", c.header, name, got, want)
			}
		}
	}
}

func TestParseRequestIgnoresUnknownFields(t *testing.T) {
	r, err := ParseRequest([]byte(` {"x":{"y":[1,{"z":null}]},"inputs":[{"extra":[true],"name":"a\"b","datatype":"BOOL","shape":[],"data":[false]}],"outputs":[{"name":"o","x":1}]} `), "")
	if err != nil {
		t.Fatal(err)
	}
	want := &tritonpb.ModelInferRequest{
		Inputs:           []*tritonpb.ModelInferRequest_InferInputTensor{{Name: `a"b`, Datatype: "BOOL", Shape: []int64{}}},
		Outputs:          []*tritonpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "o"}},
		RawInputContents: [][]byte{{0}},
	}
	if !proto.Equal(want, r.Proto) {
		t.Errorf("got %v, want %v", r.Proto, want)
	}
}
