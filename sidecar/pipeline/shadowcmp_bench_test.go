//go:build unix

package pipeline_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/modelstats"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/sidecar/pipeline/shadowcmp"
)

// cpuTime returns the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkShadow serves the model "single" (backbone → W_p → head_a) of
// experiment ab (three arms: a request served with one is compared with
// the two others) through the in-process fake Triton, one request after
// another, a full batch of 8 rows each, with the shadow comparison off
// (fraction 0) and at fractions 0.1 and 1, max_concurrent 2 (the
// default), for the zoo's D=64 and a ViT-B's D=768. In mode overlap the
// comparisons run while the next requests are served, as in a server,
// and the loop waits for the last ones, so that the time per op counts
// every comparison started; in mode wait each op waits for its own
// comparison, so that none overlaps a request or finds the slots taken:
// the cost of a comparison, without the machine's contention. Reported:
// ns/op, the wall time per request, comparisons included; client-ns/op,
// the time of Infer alone, what the client waits for; cpu-ns/op, the
// CPU time of the whole process per request (the fake Triton's and gRPC's
// on both sides included: in production part of it is Triton's);
// compared/op and busy/op, the requests compared and those drawn but
// skipped for want of a free slot; head-calls/op.
func BenchmarkShadow(b *testing.B) {
	for _, d := range []int{64, 768} {
		sc := faketriton.NewScenario(7, d, tasks...)
		fake := faketriton.Start(b, scenarioModels(sc, "FP32", "FP32")...)
		comps := sc.WriteComponents(b, b.TempDir(), "components.safetensors")
		e := &env{sc: sc, fake: fake, comps: comps, up: upstream(b, fake.Addr), stats: &modelstats.Registry{}}
		var err error
		if e.cache, err = control.NewCache(16); err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		x := make([]float64, 3*faketriton.MaxBatch)
		for i := range x {
			x[i] = 4*rng.Float64() - 2
		}
		for _, c := range []struct {
			mode     string
			fraction float64
		}{{"overlap", 0}, {"overlap", 0.1}, {"overlap", 1}, {"wait", 0}, {"wait", 0.1}, {"wait", 1}} {
			fraction := c.fraction
			b.Run(fmt.Sprintf("D=%d/%s/fraction=%v", d, c.mode, fraction), func(b *testing.B) {
				sm := pipeline.NewShadowMetrics()
				set, err := pipeline.Build(context.Background(), e.shadowConfig(config.Shadow{Fraction: fraction}), e.up,
					pipeline.Options{Cache: e.cache, Stats: e.stats, Shadow: sm})
				if err != nil {
					b.Fatal(err)
				}
				defer set.Close()
				m := set.Models["single"]
				reqs := make([]pipeline.Request, 64)
				for i := range reqs {
					reqs[i] = pipeline.Request{Proto: inferRequest("single", x), Header: control.Values{Key: "user-" + strconv.Itoa(i), HasKey: true}}
				}
				calls0 := fake.Calls("head_a")
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime(b)
				var client time.Duration
				for i := range b.N {
					start := time.Now()
					if _, err := m.Infer(context.Background(), e.up, reqs[i%len(reqs)]); err != nil {
						b.Fatal(err)
					}
					client += time.Since(start)
					if c.mode == "wait" {
						set.WaitShadows()
					}
				}
				set.WaitShadows()
				cpu := cpuTime(b) - cpu0
				b.StopTimer()
				n := float64(b.N)
				var compared, busy float64
				for k, v := range gather(b, sm) {
					switch k {
					case expKey(shadowcmp.MetricDuration+"_count", "single"):
						compared = v
					case skipKey("single", "busy"):
						busy = v
					}
				}
				b.ReportMetric(float64(client.Nanoseconds())/n, "client-ns/op")
				b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/op")
				b.ReportMetric(compared/n, "compared/op")
				b.ReportMetric(busy/n, "busy/op")
				b.ReportMetric(float64(fake.Calls("head_a")-calls0)/n, "head-calls/op")
			})
		}
	}
}
