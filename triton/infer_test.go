package triton

import "testing"

func TestInferResponseRows(t *testing.T) {
	resp := &InferResponse{Outputs: []Tensor{NewFP32("y", []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})}}
	for _, tc := range []struct {
		name string
		rows int
		cols int
		err  string
	}{
		{"y", 2, 3, ""},
		{"y", 3, 2, ""},
		{"y", 4, 0, `output "y" has 6 values for 4 samples`},
		{"z", 2, 0, `the response has no output "z"`},
	} {
		_, cols, err := resp.Rows(tc.name, tc.rows)
		if cols != tc.cols || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("Rows(%q, %d): %d, %v; want %d, %q", tc.name, tc.rows, cols, err, tc.cols, tc.err)
		}
	}
}
