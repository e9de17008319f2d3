package livestats_test

import (
	"fmt"
	"log"
	"os"

	"github.com/mergectl/react-triton/livestats"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/partialfile"
)

// A server samples the requests to a model, accumulates the features of
// each sample for its task, and writes the sums as a live file that
// calibrate merge adds with the other replicas'.
func Example() {
	dir, err := os.MkdirTemp("", "live")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s := livestats.DefaultSettings()
	s.Enabled, s.Fraction, s.Dir, s.Replica = true, 1, dir, "sidecar-0"
	s.Backbone = react.ModelRef{Name: "backbone", Output: "feature"}
	s.Tasks = []livestats.TaskSettings{{Name: "fashion", Expert: react.ModelRef{Name: "expert_fashion", Output: "feature"}}}
	s.Models = []livestats.ModelSettings{{Name: "fashion_classifier", Task: "fashion"}}
	const d = 2
	sampler, err := livestats.New(s, d)
	if err != nil {
		log.Fatal(err)
	}

	// On the request path: decide, and after the response, add the
	// backbone's and the expert's features of the request's inputs.
	for _, optOut := range []bool{false, true} {
		x, reason := sampler.Admit(livestats.Request{Model: "fashion_classifier", OptOut: optOut})
		if x == nil {
			fmt.Println("not sampled:", reason)
			continue
		}
		mtl := []float32{1, 0, 0, 1} // two rows of D = 2, from sampler.Backbone()
		ind := []float32{1, 1, 0, 2} // the same rows' features, from x.Expert()
		if err := x.Add(mtl, ind); err != nil {
			log.Fatal(err)
		}
		fmt.Println("sampled for task", x.Task())
	}

	// Beside it, sampler.Run(ctx, report) writes on a schedule; here once.
	if err := sampler.Flush(); err != nil {
		log.Fatal(err)
	}
	f, err := partialfile.Load(sampler.Path())
	if err != nil {
		log.Fatal(err)
	}
	yy, _ := f.Tasks[0].Acc.SumSquares()
	fmt.Printf("%s: task %s, N=%d, Σ‖z_ind‖²=%g\n", f.Replica, f.Tasks[0].Name, f.Tasks[0].Acc.N(), yy)
	// Output:
	// sampled for task fashion
	// not sampled: opt_out
	// sidecar-0: task fashion, N=2, Σ‖z_ind‖²=6
}
