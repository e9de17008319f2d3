package config_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/problem"
)

// Load reads a YAML file, over the defaults; REACT_* environment variables
// and set flags override it.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "sidecar")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// The components file is written by calibrate fit; only its existence
	// is checked here.
	if err := os.WriteFile(filepath.Join(dir, "components.safetensors"), []byte("…"), 0o644); err != nil {
		log.Fatal(err)
	}
	file := filepath.Join(dir, "sidecar.yaml")
	if err := os.WriteFile(file, []byte(`
triton:
  grpc: 127.0.0.1:8101
  http: 127.0.0.1:8100
limits:
  max_request_bytes: 16MiB
components:
  - name: zoo
    path: components.safetensors   # relative to this file
    presets:
      fashion_first: fashion=0.8,mnist=0.2
models:
  - name: classifier               # components: zoo, the only entry
    backbone: {model: backbone_adamerging, output: feature}
    heads:
      - {task: fashion, model: head_fashion}
`), 0o644); err != nil {
		log.Fatal(err)
	}

	flags := pflag.NewFlagSet("sidecar", pflag.ContinueOnError)
	config.BindFlags(flags)
	if err := flags.Parse([]string{"--config", file, "--log-level", "debug"}); err != nil {
		log.Fatal(err)
	}
	cfg, err := config.Load("", flags) // "": the file named by --config
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("triton:", cfg.Triton.GRPC, cfg.Triton.HTTP, cfg.Triton.Timeout)
	fmt.Println("listen:", cfg.Listen.GRPC, cfg.Listen.HTTP, cfg.Listen.Metrics)
	fmt.Println("max request:", cfg.Limits.MaxRequestBytes)
	fmt.Println("log level:", cfg.Log.Level)
	fmt.Println("components file in the config's directory:", cfg.Components[0].Path == filepath.Join(dir, "components.safetensors"))
	m := cfg.Models[0]
	fmt.Println("model:", m.Name, "uses", m.Components, "->", m.Backbone.Model, "->", m.Heads[0].Model)
	// Output:
	// triton: 127.0.0.1:8101 127.0.0.1:8100 1m0s
	// listen: :8001 :8000 :8003
	// max request: 16MiB
	// log level: debug
	// components file in the config's directory: true
	// model: classifier uses zoo -> backbone_adamerging -> head_fashion
}

// Validate reports every problem, each with its path; errors.As gives the
// list.
func ExampleConfig_Validate() {
	cfg := config.Default()
	cfg.Triton.GRPC = "127.0.0.1:8001" // the port the sidecar listens on
	cfg.Cache.MaxBytes = 0
	cfg.Models = []config.Model{{Name: "classifier"}}

	err := cfg.Validate()
	var cerr problem.List
	if errors.As(err, &cerr) {
		for _, fe := range cerr {
			fmt.Println(fe.Path, "|", fe.Msg)
		}
	}
	// Output:
	// triton.http | required: the address of the upstream Triton, host:port
	// listen.grpc | ":8001" is the port of triton.grpc ("127.0.0.1:8001") on this host: the sidecar would call itself; move Triton or the sidecar to another port
	// cache.max_bytes | must be positive, got 0
	// models[0].components | required, and there is no components entry: add one under components
	// models[0].backbone.model | required: the merged backbone model in Triton
	// models[0].backbone.output | required: the backbone output holding the feature to correct
	// models[0].heads | at least one head required
}

func ExampleParseByteSize() {
	for _, s := range []string{"67108864", "64MiB", "1 GB"} {
		b, err := config.ParseByteSize(s)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(int64(b), b)
	}
	// Output:
	// 67108864 64MiB
	// 67108864 64MiB
	// 1000000000 1GB
}
