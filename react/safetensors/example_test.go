package safetensors_test

import (
	"fmt"
	"log"

	"github.com/mergectl/react-triton/react/safetensors"
)

func Example() {
	b, err := safetensors.Marshal([]safetensors.Tensor{
		safetensors.Float64Tensor("w", []int{2, 2}, []float64{1, 0, 0, 1}),
	}, map[string]string{"format": "demo"})
	if err != nil {
		log.Fatal(err)
	}
	f, err := safetensors.Parse(b)
	if err != nil {
		log.Fatal(err)
	}
	w, _ := f.Tensor("w")
	v, _ := w.Float64s()
	fmt.Println(f.Metadata["format"], w.DType, w.Shape, v)
	fmt.Println("header + padding is a multiple of 8:", (len(b)-len(f.Data))%8 == 0)
	// Output:
	// demo F64 [2 2] [1 0 0 1]
	// header + padding is a multiple of 8: true
}
