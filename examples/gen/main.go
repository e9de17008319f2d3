// Command gen writes the bundled example's synthetic embeddings: for each of
// three tasks, paired N×D float32 features of a task expert and of a merged
// backbone, where the merged features are a task-specific distortion of the
// expert's (a rotation, an anisotropic shrink and noise). Each task is
// distorted differently, so one linear correction cannot undo all of them,
// and a preference decides the trade-off.
//
// It is deterministic: the same flags write the same bytes.
//
//	go run ./examples/gen -calib examples/embeddings -heldout examples/heldout
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/mat"

	"github.com/mergectl/react-triton/internal/npyfile"
)

// task describes how one task's features are generated.
type task struct {
	name   string
	calib  int     // calibration rows
	angle  float64 // size of the rotation that distorts the merged features
	shrink float64 // how much the merged features lose along some directions
}

var tasks = []task{
	{name: "cars", calib: 400, angle: 0.5, shrink: 0.5},
	{name: "dtd", calib: 300, angle: 0.8, shrink: 0.3},
	{name: "svhn", calib: 200, angle: 0.3, shrink: 0.6},
}

func main() {
	calibDir := flag.String("calib", "examples/embeddings", "directory for the calibration embeddings")
	heldoutDir := flag.String("heldout", "examples/heldout", "directory for the held-out embeddings")
	d := flag.Int("d", 16, "feature dimension")
	heldout := flag.Int("n-heldout", 200, "held-out rows per task")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	log.SetFlags(0)
	if err := generate(*calibDir, *heldoutDir, *d, *heldout, *seed); err != nil {
		log.Fatal(err)
	}
}

// generate writes every task's calibration and held-out files.
func generate(calibDir, heldoutDir string, d, heldout int, seed uint64) error {
	for _, dir := range []string{calibDir, heldoutDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	for i, t := range tasks {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		mix, distort := model(rng, d, t)
		for _, out := range []struct {
			dir string
			n   int
		}{{calibDir, t.calib}, {heldoutDir, heldout}} {
			ind, mtl := sample(rng, out.n, d, mix, distort)
			if err := write(out.dir, t.name, out.n, d, ind, mtl); err != nil {
				return err
			}
		}
	}
	return nil
}

// model returns a task's mixing matrix, which shapes the expert features'
// covariance, and the distortion that maps expert features to merged ones.
func model(rng *rand.Rand, d int, t task) (mix, distort *mat.Dense) {
	mix = mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			mix.Set(i, j, rng.NormFloat64()/math.Sqrt(float64(d)))
		}
		mix.Set(i, i, mix.At(i, i)+1)
	}
	// A rotation exp(angle·K) for a random skew-symmetric K, by a truncated
	// series followed by re-orthogonalisation through the polar factor.
	k := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := i + 1; j < d; j++ {
			v := rng.NormFloat64() * t.angle / math.Sqrt(float64(d))
			k.Set(i, j, v)
			k.Set(j, i, -v)
		}
	}
	rot := mat.NewDense(d, d, nil)
	term := identity(d)
	rot.Copy(term)
	for n := 1; n < 12; n++ {
		var next mat.Dense
		next.Mul(term, k)
		next.Scale(1/float64(n), &next)
		term = &next
		rot.Add(rot, term)
	}
	var svd mat.SVD
	svd.Factorize(rot, mat.SVDFull)
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	rot.Mul(&u, v.T())
	// Shrink half of the directions.
	distort = mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		s := 1.0
		if i%2 == 1 {
			s = 1 - t.shrink
		}
		for j := 0; j < d; j++ {
			distort.Set(i, j, s*rot.At(i, j))
		}
	}
	return mix, distort
}

func identity(d int) *mat.Dense {
	m := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		m.Set(i, i, 1)
	}
	return m
}

// sample draws n paired rows: z_ind = mix·x and z_mtl = distort·z_ind + noise.
func sample(rng *rand.Rand, n, d int, mix, distort *mat.Dense) (ind, mtl []float32) {
	x := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, rng.NormFloat64())
		}
	}
	var zi, zm mat.Dense
	zi.Mul(x, mix.T())
	zm.Mul(&zi, distort.T())
	ind = make([]float32, n*d)
	mtl = make([]float32, n*d)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			ind[i*d+j] = float32(zi.At(i, j))
			mtl[i*d+j] = float32(zm.At(i, j) + 0.05*rng.NormFloat64())
		}
	}
	return ind, mtl
}

func write(dir, name string, n, d int, ind, mtl []float32) error {
	for _, f := range []struct {
		suffix string
		data   []float32
	}{{".expert.npy", ind}, {".merged.npy", mtl}} {
		path := filepath.Join(dir, name+f.suffix)
		if err := npyfile.WriteFileFloat32(path, n, d, f.data); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}
