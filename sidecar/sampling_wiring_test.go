package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/mergectl/react-triton/internal/testutil"
	"github.com/mergectl/react-triton/react/partialfile"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// TestCommandSampling: the command wires live sampling: configured at
// start (relayed requests to the sampled model are sampled and counted on
// /metrics), kept by a reload that changes nothing (the same file), and
// the final checkpoint written at shutdown with every sampled row (the
// interval, 1h, never came).
func TestCommandSampling(t *testing.T) {
	sc := faketriton.NewScenario(7, 4, sidecartest.CtlTasks...)
	fake := faketriton.Start(t, append(sidecartest.CtlModels(sc),
		faketriton.Linear("expert_a", "x", "FP32", "feature", "FP32", [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}}, nil),
		faketriton.Linear("classify", "x", "FP32", "logits", "FP32", [][]float64{{1, 2, 3}}, nil))...)
	dir, live := t.TempDir(), t.TempDir()
	sc.WriteComponents(t, dir, "components.safetensors")
	c := sidecartest.CtlConfig{TritonGRPC: fake.Addr, TritonHTTP: testutil.ClosedAddr(t), Components: "components.safetensors",
		DefaultPreference: "a=1", MetricsListen: "127.0.0.1:0", LogFormat: "json",
		Sections: fmt.Sprintf(`sampling:
  enabled: true
  fraction: 1
  max_concurrent: 16
  replica: cmd-0
  opt_out_header: X-No-Sample
  checkpoint: {dir: %s, interval: 1h, window: 24h}
  backbone: {model: backbone, output: feature}
  models: [{name: classify, task: a}]
  tasks: [{name: a, expert: {model: expert_a}}]
`, live)}
	cfgPath := filepath.Join(dir, "config.yaml")
	sidecartest.WriteFile(t, cfgPath, c.YAML())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan os.Signal, 1)
	stderr := &sidecartest.SyncBuffer{}
	cmd := NewCommand(ctx, hup, stderr, stderr)
	cmd.SetArgs([]string{"--config", cfgPath})
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()

	var grpcAddr, metricsAddr string
	var files []string
	kept := 0
	logged := func() {
		grpcAddr, metricsAddr, files, kept = "", "", nil, 0
		s := bufio.NewScanner(strings.NewReader(stderr.String()))
		for s.Scan() {
			var line map[string]any
			if json.Unmarshal(s.Bytes(), &line) != nil {
				continue
			}
			switch line["msg"] {
			case "sidecar listening":
				grpcAddr, _ = line["grpc"].(string)
				metricsAddr, _ = line["metrics"].(string)
			case "sampling on":
				f, _ := line["file"].(string)
				files = append(files, f)
				if k, _ := line["kept"].(bool); k {
					kept++
				}
			}
		}
	}
	sidecartest.WaitFor(t, 10*time.Second, "sampling on in the log", func() bool { logged(); return len(files) == 1 && grpcAddr != "" })
	client := tritonpb.NewGRPCInferenceServiceClient(sidecartest.Dial(t, grpcAddr))
	rows := 0
	for i := range 6 {
		x := sidecartest.CtlBatch[:3*(1+i%4)]
		if _, err := client.ModelInfer(context.Background(), sidecartest.CtlRequest("classify", "", x)); err != nil {
			t.Fatal(err)
		}
		rows += 1 + i%4
	}
	sampled := func() float64 {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		v, _ := sidecartest.MetricValue(sidecartest.ParseMetrics(t, resp.Body), "react_sampling_requests_total", map[string]string{"model": "classify", "task": "a"})
		return v
	}
	sidecartest.WaitFor(t, 10*time.Second, "6 requests sampled on /metrics", func() bool { return sampled() == 6 })
	// The command gives the proxies the configuration's private keys: the
	// opt-out header stays with the sidecar.
	optOut := metadata.AppendToOutgoingContext(context.Background(), "x-no-sample", "1", "x-other", "kept")
	if _, err := client.ModelInfer(optOut, sidecartest.CtlRequest("classify", "", sidecartest.CtlBatch[:3])); err != nil {
		t.Fatal(err)
	}
	if md := fake.LastMetadata("classify"); len(md["x-no-sample"]) != 0 || len(md["x-other"]) != 1 {
		t.Errorf("metadata reaching Triton %v: want x-other, not the opt-out header", md)
	}

	hup <- syscall.SIGHUP
	sidecartest.WaitFor(t, 10*time.Second, "the reload keeping the sampler", func() bool { logged(); return kept == 1 })
	if files[1] != files[0] {
		t.Errorf("a reload that changes nothing moved the file: %s, then %s", files[0], files[1])
	}
	if _, err := os.Stat(files[0]); !os.IsNotExist(err) {
		t.Fatalf("a file before shutdown (interval 1h): %v", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Execute: %v\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not stop")
	}
	f, err := partialfile.Load(files[0])
	if err != nil {
		t.Fatalf("the final checkpoint: %v\n%s", err, stderr.String())
	}
	if len(f.Tasks) != 1 || f.Tasks[0].Name != "a" || f.Tasks[0].Acc.N() != int64(rows) || f.Replica != "cmd-0" {
		t.Fatalf("final checkpoint: replica %q, tasks %v; want cmd-0, task a with N=%d", f.Replica, f.Tasks, rows)
	}
}
