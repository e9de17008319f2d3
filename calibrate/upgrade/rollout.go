package upgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Model control modes of a Triton server, as its --model-control-mode
// names them, for calibrate upgrade --rollout.
const (
	ControlExplicit = "explicit"
	ControlPoll     = "poll"
)

// Rollout brings a written upgrade into a running Triton over its HTTP
// endpoint, in the order that keeps it serving: the react model's new
// version first, then the ensemble that uses it.
type Rollout struct {
	base    string // http://host:port
	mode    string // ControlExplicit or ControlPoll
	timeout time.Duration
	client  *http.Client
	out     io.Writer
}

// Run loads (explicit) or waits for (poll) the react model's version, then
// the ensemble with its react step, each until ready.
func (r *Rollout) Run(ctx context.Context, react string, version int, ens string) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := r.ready(ctx, "/v2/health/ready"); err != nil {
		return fmt.Errorf("the server at %s is not ready before the rollout: %w", r.base, err)
	}
	steps := []struct {
		model, what string
		path        string
		done        func(context.Context) error
	}{
		{react, fmt.Sprintf("version %d", version), fmt.Sprintf("/v2/models/%s/versions/%d/ready", url.PathEscape(react), version), nil},
		{ens, "with its react step", fmt.Sprintf("/v2/models/%s/ready", url.PathEscape(ens)),
			func(ctx context.Context) error { return r.hasStep(ctx, ens, react) }},
	}
	for _, s := range steps {
		start := time.Now()
		if r.mode == ControlExplicit {
			if err := r.post(ctx, fmt.Sprintf("/v2/repository/models/%s/load", url.PathEscape(s.model))); err != nil {
				return fmt.Errorf("loading %s: %w", s.model, err)
			}
		}
		if err := r.wait(ctx, s.path, s.done); err != nil {
			return fmt.Errorf("%s %s: %w", s.model, s.what, err)
		}
		fmt.Fprintf(r.out, "rollout: %s %s ready after %s\n", s.model, s.what, time.Since(start).Round(time.Millisecond))
	}
	if err := r.ready(ctx, "/v2/health/ready"); err != nil {
		return fmt.Errorf("the server is not ready after the rollout: %w", err)
	}
	fmt.Fprintf(r.out, "rollout: the server at %s is ready\n", r.base)
	return nil
}

// wait polls path until it answers 200 and done (if any) agrees.
func (r *Rollout) wait(ctx context.Context, path string, done func(context.Context) error) error {
	for {
		err := r.ready(ctx, path)
		if err == nil && done != nil {
			err = done(ctx)
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready in %s: %w", r.timeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ready asks path (a readiness endpoint) and wants 200.
func (r *Rollout) ready(ctx context.Context, path string) error {
	resp, err := r.do(ctx, http.MethodGet, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return nil
}

// post posts an empty JSON body to path and wants 200.
func (r *Rollout) post(ctx context.Context, path string) error {
	resp, err := r.do(ctx, http.MethodPost, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// hasStep checks that the ensemble's served configuration has a step of
// model react.
func (r *Rollout) hasStep(ctx context.Context, ens, react string) error {
	resp, err := r.do(ctx, http.MethodGet, fmt.Sprintf("/v2/models/%s/config", url.PathEscape(ens)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var cfg struct {
		Ensemble struct {
			Step []struct {
				Model string `json:"model_name"`
			} `json:"step"`
		} `json:"ensemble_scheduling"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cfg); err != nil {
		return fmt.Errorf("reading %s's configuration: %w", ens, err)
	}
	for _, s := range cfg.Ensemble.Step {
		if s.Model == react {
			return nil
		}
	}
	return fmt.Errorf("%s is served without its step of %s (yet)", ens, react)
}

func (r *Rollout) do(ctx context.Context, method, path string) (*http.Response, error) {
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return r.client.Do(req)
}

// ParseRollout checks --rollout's address and --control's mode (the
// command's usage errors).
func ParseRollout(addr, mode string, timeout time.Duration, out io.Writer) (*Rollout, error) {
	if mode != ControlExplicit && mode != ControlPoll {
		return nil, fmt.Errorf("--control %q: want %s or %s, as Triton's --model-control-mode", mode, ControlExplicit, ControlPoll)
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("--rollout %q: want Triton's HTTP address, HOST:PORT or http://HOST:PORT", addr)
	}
	if _, err := strconv.Atoi(u.Port()); err != nil {
		return nil, fmt.Errorf("--rollout %q: want a port", addr)
	}
	return &Rollout{base: u.Scheme + "://" + u.Host, mode: mode, timeout: timeout, client: &http.Client{Timeout: 10 * time.Second}, out: out}, nil
}
