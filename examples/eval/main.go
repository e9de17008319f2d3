// Command eval measures, on held-out embeddings, how well a correction W
// maps the merged backbone's features onto each task expert's: the mean
// squared error (1/N) Σ ‖W z_mtl − z_ind‖² per task, next to the error of
// the uncorrected features, (1/N) Σ ‖z_mtl − z_ind‖².
//
//	go run ./examples/eval -heldout examples/heldout -w W.npy
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/mergectl/react-triton/calibrate/embeddings"
	"github.com/mergectl/react-triton/internal/npyfile"
)

func main() {
	heldout := flag.String("heldout", "examples/heldout", "directory of held-out <task>.merged.npy and <task>.expert.npy")
	wPath := flag.String("w", "W.npy", "D×D correction, ẑ = W @ z")
	label := flag.String("label", "", "label printed above the table")
	flag.Parse()
	log.SetFlags(0)

	rows, cols, w, err := npyfile.ReadFile(*wPath)
	if err != nil {
		log.Fatal(err)
	}
	if rows != cols {
		log.Fatalf("%s: W is %d×%d, want square", *wPath, rows, cols)
	}
	d := rows
	tasks, err := embeddings.DiscoverTasks(*heldout)
	if err != nil {
		log.Fatal(err)
	}
	if *label != "" {
		fmt.Println(*label)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "task\tN\tMSE uncorrected\tMSE corrected\tchange\t")
	for _, task := range tasks {
		n, dm, mtl, err := npyfile.ReadFile(filepath.Join(*heldout, task+embeddings.MergedSuffix))
		if err != nil {
			log.Fatal(err)
		}
		n2, di, ind, err := npyfile.ReadFile(filepath.Join(*heldout, task+embeddings.ExpertSuffix))
		if err != nil {
			log.Fatal(err)
		}
		if n != n2 || dm != d || di != d {
			log.Fatalf("task %s: shapes %d×%d and %d×%d, want N×%d", task, n, dm, n2, di, d)
		}
		var before, after float64
		for r := 0; r < n; r++ {
			z := mtl[r*d : (r+1)*d]
			y := ind[r*d : (r+1)*d]
			for i := 0; i < d; i++ {
				var wz float64
				for j := 0; j < d; j++ {
					wz += w[i*d+j] * z[j]
				}
				before += (z[i] - y[i]) * (z[i] - y[i])
				after += (wz - y[i]) * (wz - y[i])
			}
		}
		before /= float64(n)
		after /= float64(n)
		fmt.Fprintf(tw, "%s\t%d\t%.4f\t%.4f\t%+.1f%%\t\n", task, n, before, after, 100*(after-before)/before)
	}
	tw.Flush()
	fmt.Println(strings.Repeat("-", 60))
}
