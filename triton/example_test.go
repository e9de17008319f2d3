package triton_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/triton"
)

func ExampleNewFP16() {
	t := triton.NewFP16("INPUT0", []int64{1, 4}, []float32{1, 65504, 0x1p-24, 0.1})
	fmt.Printf("% x\n", t.Raw)
	v, _ := t.FP16()
	fmt.Println(v)
	// Output:
	// 00 3c ff 7b 01 00 66 2e
	// [1 65504 5.9604645e-08 0.099975586]
}

func ExampleNewBytes() {
	t := triton.NewStrings("NAME", []int64{2}, []string{"ab", ""})
	fmt.Printf("% x\n", t.Raw)
	// Output:
	// 02 00 00 00 61 62 00 00 00 00
}

func Example_validation() {
	c, err := triton.Dial(context.Background(), "localhost:8001")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Infer checks the request against the model's metadata first: a shape
	// the model does not take never reaches the server.
	_, err = c.Infer(context.Background(), &triton.InferRequest{
		Model:  "affine_fp32",
		Inputs: []triton.Tensor{triton.NewFP32("INPUT0", []int64{2, 5}, make([]float32, 10))},
	})
	if status.Code(err) == codes.InvalidArgument {
		fmt.Println(status.Convert(err).Message())
	}
}

func ExampleClient_Infer() {
	ctx := context.Background()
	c, err := triton.Dial(ctx, "localhost:8001", triton.WithTimeout(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Infer(ctx, &triton.InferRequest{
		Model:      "affine_fp16",
		Inputs:     []triton.Tensor{triton.NewFP16("INPUT0", []int64{1, 4}, []float32{0, 1, 2, 3})},
		Parameters: map[string]any{"react-preference": "a=1,b=1"},
	})
	if err != nil {
		log.Fatal(err) // carries a gRPC code: status.Code(err)
	}
	out, _ := resp.Output("OUTPUT0")
	y, err := out.AsFloat32() // FP32, FP16, BF16 or FP64
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(y)
}
