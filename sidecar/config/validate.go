package config

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mergectl/react-triton/config/layer"
	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/internal/filecheck"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/react"
)

// NamePattern is what the name of a components entry, an experiment, an
// arm and a preset must match (control.NamePattern, the rule for presets
// on every surface).
var NamePattern = control.NamePattern

// Validate checks the configuration and returns every problem it finds as
// an *Error, or nil. It reads the file system: the components files and
// the TLS files must exist and be readable, and relative paths are taken
// relative to the working directory (Load has made the file's absolute).
//
// The profiles (the components entries, the arms of the experiments, the
// W_p cache's bounds, limits.max_preference_length) are checked by the
// rules every surface shares, control.Settings.Check (see Settings): the
// preferences against the tasks of their components file, read from its
// header, so that an unknown task shows beside every other problem; a
// head's task is checked when the sidecar loads the file.
func (c *Config) Validate() error {
	var p problem.List
	settings := c.Settings()
	r := ruled(settings.Check(true).Rename(settingsPath))
	c.validateTriton(&p)
	c.validateForwardHeaders(&p)
	c.validateListen(&p)
	c.validateServer(&p)
	c.validateManagement(&p)
	c.validatePprof(&p)
	c.validateLimits(&p, &r)
	r.take(&p, "cache")
	c.validateAdmission(&p)
	c.validateLinAlg(&p)
	c.validateLog(&p)
	c.validateComponents(&p, &r)
	c.validateModels(&p)
	c.validateExperiments(&p, &r)
	c.validateFeedback(&p)
	c.validateSampling(&p)
	p = append(p, r...)
	return p.Err()
}

func (c *Config) validateTriton(p *problem.List) {
	t := &c.Triton
	for _, a := range []struct{ path, addr string }{{"triton.grpc", t.GRPC}, {"triton.http", t.HTTP}} {
		if a.addr == "" {
			p.Add(a.path, "required: the address of the upstream Triton, host:port")
			continue
		}
		if msg := layer.CheckAddr(a.addr, false); msg != "" {
			p.Add(a.path, "%s", msg)
		}
	}
	layer.NonNegative(p, "triton.timeout", t.Timeout)
	if t.StartupTimeout <= 0 {
		// Start-up and every reload build within it: 0 could never succeed.
		p.Add("triton.startup_timeout", "must be positive, got %v", t.StartupTimeout)
	}

	tls := &t.TLS
	files := []struct{ key, path string }{
		{"ca_file", tls.CAFile}, {"cert_file", tls.CertFile}, {"key_file", tls.KeyFile},
	}
	if !tls.Enabled {
		for _, f := range files {
			if f.path != "" {
				p.Add("triton.tls."+f.key, "set while TLS is off: set triton.tls.enabled: true to use it, or remove it")
			}
		}
		if tls.ServerName != "" {
			p.Add("triton.tls.server_name", "set while TLS is off: set triton.tls.enabled: true to use it, or remove it")
		}
		if tls.InsecureSkipVerify {
			p.Add("triton.tls.insecure_skip_verify", "set while TLS is off: set triton.tls.enabled: true to use it, or remove it")
		}
		return
	}
	switch {
	case tls.CertFile != "" && tls.KeyFile == "":
		p.Add("triton.tls.key_file", "required with cert_file: a client certificate needs both")
	case tls.CertFile == "" && tls.KeyFile != "":
		p.Add("triton.tls.cert_file", "required with key_file: a client certificate needs both")
	}
	for _, f := range files {
		if f.path != "" {
			if msg := filecheck.Regular(f.path); msg != "" {
				p.Add("triton.tls."+f.key, "%s", msg)
			}
		}
	}
}

func (c *Config) validateListen(p *problem.List) {
	l := &c.Listen
	addrs := []struct{ path, addr string }{
		{"listen.grpc", l.GRPC}, {"listen.http", l.HTTP}, {"listen.metrics", l.Metrics},
	}
	var ok []int // indexes of the valid, non-empty addresses
	for i, a := range addrs {
		switch {
		case a.addr == "" && a.path == "listen.metrics":
			continue // disabled
		case a.addr == "":
			p.Add(a.path, "required: where the sidecar listens, [host]:port")
			continue
		}
		if msg := layer.CheckAddr(a.addr, true); msg != "" {
			p.Add(a.path, "%s", msg)
			continue
		}
		ok = append(ok, i)
	}
	upstream := []struct{ path, addr string }{{"triton.grpc", c.Triton.GRPC}, {"triton.http", c.Triton.HTTP}}
	for n, i := range ok {
		a := addrs[i]
		for _, j := range ok[:n] {
			if sameSocket(addrs[j].addr, a.addr) {
				p.Add(a.path, "%q is also listen.%s: the listeners need different ports", a.addr, strings.TrimPrefix(addrs[j].path, "listen."))
				break
			}
		}
		for _, u := range upstream {
			if layer.CheckAddr(u.addr, false) == "" && loopsBack(a.addr, u.addr) {
				p.Add(a.path, "%q is the port of %s (%q) on this host: the sidecar would call itself; move Triton or the sidecar to another port", a.addr, u.path, u.addr)
			}
		}
	}
	if l.ShutdownTimeout <= 0 {
		p.Add("listen.shutdown_timeout", "must be positive, got %v", l.ShutdownTimeout)
	}
}

func (c *Config) validateLimits(p *problem.List, r *ruled) {
	l := &c.Limits
	if l.MaxRequestBytes < 1 || l.MaxRequestBytes > MaxRequestBytesLimit {
		p.Add("limits.max_request_bytes", "must be between 1 and %d (2GiB-1), got %d", int64(MaxRequestBytesLimit), int64(l.MaxRequestBytes))
	}
	if l.MaxInflightBytes < 1 {
		p.Add("limits.max_inflight_bytes", "must be positive, got %d", int64(l.MaxInflightBytes))
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"max_inputs", l.MaxInputs}, {"max_outputs", l.MaxOutputs}, {"max_parameters", l.MaxParameters}} {
		if n.v < 1 {
			p.Add("limits."+n.key, "must be at least 1, got %d", n.v)
		}
	}
	if l.MaxBatchSize < 0 {
		p.Add("limits.max_batch_size", "must be 0 (the models' own limit) or positive, got %d", l.MaxBatchSize)
	}
	r.take(p, "limits.max_preference_length")
}

func (c *Config) validateLinAlg(p *problem.List) {
	if _, err := react.ParseBackend(c.LinAlg.Backend); err != nil {
		p.Add("linalg.backend", "%v", err)
	}
	if c.LinAlg.Threads < 1 {
		p.Add("linalg.threads", "must be at least 1, got %d", c.LinAlg.Threads)
	}
}

func (c *Config) validateLog(p *problem.List) {
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		p.Add("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		p.Add("log.format", "%q is not one of text, json", c.Log.Format)
	}
}

// validateComponents checks the components entries: their names here,
// the rest by the profile rules (r).
func (c *Config) validateComponents(p *problem.List, r *ruled) {
	names := newNames("components", "how models refer to this entry")
	for i, comp := range c.Components {
		path := problem.Index("components", i)
		names.check(p, path+".name", i, comp.Name)
		r.take(p, path)
	}
}

// names checks the names of one list's entries (the components entries,
// the experiments, an experiment's arms) by the rule they share: a name
// is required, matches NamePattern, and is not an earlier entry's.
type names struct {
	list  string         // the list as messages name it: components, arms
	why   string         // what the name is for, when it is missing
	first map[string]int // name → index of its first entry
}

// newNames returns the check of a list's names; why says what a name is
// for, in the problem of a missing one.
func newNames(list, why string) *names {
	return &names{list: list, why: why, first: map[string]int{}}
}

// check checks the name of entry i, at path (the entry's path and
// ".name").
func (n *names) check(p *problem.List, path string, i int, name string) {
	switch {
	case name == "":
		p.Add(path, "required: %s", n.why)
	case !NamePattern.MatchString(name):
		p.Add(path, "%q: %s", name, control.NameRule)
	default:
		if j, dup := n.first[name]; dup {
			p.Add(path, "%q is also the name of %s[%d]", name, n.list, j)
		} else {
			n.first[name] = i
		}
	}
}

func (c *Config) validateModels(p *problem.List) {
	// called: model name → the path of its first use as a backbone or head.
	called := map[string]string{}
	for i, m := range c.Models {
		path := problem.Index("models", i)
		if m.Backbone.Model != "" {
			if _, ok := called[m.Backbone.Model]; !ok {
				called[m.Backbone.Model] = path + ".backbone.model"
			}
		}
		for j, h := range m.Heads {
			if h.Model != "" {
				if _, ok := called[h.Model]; !ok {
					called[h.Model] = problem.Index(path+".heads", j) + ".model"
				}
			}
		}
	}

	first := map[string]int{}
	for i, m := range c.Models {
		path := problem.Index("models", i)
		switch {
		case m.Name == "":
			p.Add(path+".name", "required: the model name clients call")
		case strings.Contains(m.Name, "/") || strings.IndexFunc(m.Name, unicode.IsSpace) >= 0:
			p.Add(path+".name", "%q: must not contain '/' or white space", m.Name)
		default:
			if j, dup := first[m.Name]; dup {
				p.Add(path+".name", "%q is also the name of models[%d]", m.Name, j)
			} else {
				first[m.Name] = i
			}
			if use, ok := called[m.Name]; ok {
				p.Add(path+".name", "%q is also %s: it would shadow a model the sidecar itself calls", m.Name, use)
			}
		}
		c.validateModelComponents(p, path, m.Components)
		switch m.Signature {
		case "", SignatureMatch, SignatureDiffers:
		default:
			p.Add(path+".signature", "%q is not one of %s (the default: the signature of the Triton model of the same name is checked), %s (the difference is intended)",
				m.Signature, SignatureMatch, SignatureDiffers)
		}
		if m.VariantOf != "" && strings.TrimSpace(m.VariantOf) != m.VariantOf {
			p.Add(path+".variant_of", "%q: white space around a model name", m.VariantOf)
		}
		if m.Graph() {
			validateGraphModel(p, path, &m)
		} else {
			validateExplicitModel(p, path, &m)
		}
	}
}

// validateGraphModel checks a model of the graph form: it names an
// ensemble and one of its tensors, and nothing of the explicit form.
func validateGraphModel(p *problem.List, path string, m *Model) {
	if strings.TrimSpace(m.Correct) != m.Correct {
		p.Add(path+".correct", "%q: white space around a tensor name", m.Correct)
	}
	const why = "not with correct: a model either names the ensemble's tensor to correct (correct) or its backbone and heads, not both"
	b := m.Backbone
	if b.Model != "" || b.Version != "" || b.Output != "" {
		p.Add(path+".backbone", why)
	}
	if len(m.Heads) > 0 {
		p.Add(path+".heads", why)
	}
	if len(m.Inputs) > 0 {
		p.Add(path+".inputs", "not with correct: the graph form serves the ensemble's own input names")
	}
}

// validateExplicitModel checks a model of the explicit form: a backbone,
// heads, and how inputs and outputs are renamed.
func validateExplicitModel(p *problem.List, path string, m *Model) {
	b := path + ".backbone"
	if m.Backbone.Model == "" {
		p.Add(b+".model", "required: the merged backbone model in Triton")
	}
	layer.CheckVersion(p, b+".version", m.Backbone.Version)
	if m.Backbone.Output == "" {
		p.Add(b+".output", "required: the backbone output holding the feature to correct")
	}
	inputs := renames{tensor: "input", of: "backbone", clients: "send", used: map[string]string{}}
	inputs.check(p, path+".inputs", m.Inputs)

	if len(m.Heads) == 0 {
		p.Add(path+".heads", "at least one head required")
	}
	outputs := renames{tensor: "output", of: "head", clients: "see", used: map[string]string{}}
	for j, h := range m.Heads {
		hp := problem.Index(path+".heads", j)
		if h.Task == "" {
			p.Add(hp+".task", "required: the task of the components file this head serves")
		}
		if h.Model == "" {
			p.Add(hp+".model", "required: the head model in Triton")
		}
		layer.CheckVersion(p, hp+".version", h.Version)
		outputs.check(p, hp+".outputs", h.Outputs)
	}
}

// renames checks how one model renames a kind of tensor for its clients
// (its backbone's inputs, its heads' outputs): each key is a tensor's
// name, each value the name clients use, and no two tensors of the model
// share one.
type renames struct {
	tensor  string            // input or output
	of      string            // the model whose tensors are renamed: backbone, head
	clients string            // what clients do with the name: send, see
	used    map[string]string // name clients use → the path of its first use
}

// check checks the renamings m at path, in the order of their keys.
func (r *renames) check(p *problem.List, path string, m map[string]string) {
	for _, key := range slices.Sorted(maps.Keys(m)) {
		kp := problem.Key(path, key)
		name := m[key]
		switch {
		case key == "":
			p.Add(kp, "empty %s %s name", r.of, r.tensor)
		case name == "":
			p.Add(kp, "empty name: give the name clients %s this %s under", r.clients, r.tensor)
		default:
			if use, dup := r.used[name]; dup {
				p.Add(kp, "%q is also the name of %s: %ss of one model need different names", name, use, r.tensor)
			} else {
				r.used[name] = kp
			}
		}
	}
}

// validateModelComponents checks a model's reference to a components entry.
func (c *Config) validateModelComponents(p *problem.List, path, name string) {
	path += ".components"
	var names []string
	for _, comp := range c.Components {
		if !slices.Contains(names, comp.Name) {
			names = append(names, comp.Name)
		}
	}
	switch {
	case name == "" && len(c.Components) == 1:
		// Load fills in the only entry.
	case name == "" && len(c.Components) == 0:
		p.Add(path, "required, and there is no components entry: add one under components")
	case name == "":
		p.Add(path, "required when there are several components entries (%s)", strings.Join(names, ", "))
	case len(c.Components) == 0:
		p.Add(path, "%q is not the name of a components entry: there is none; add one under components", name)
	case !slices.Contains(names, name):
		p.Add(path, "%q is not the name of a components entry (have: %s)", name, strings.Join(names, ", "))
	}
}

// sameSocket reports whether two valid listening addresses would claim the
// same socket: the same non-zero port, and the same host or a wildcard.
func sameSocket(a, b string) bool {
	ha, pa, _ := net.SplitHostPort(a)
	hb, pb, _ := net.SplitHostPort(b)
	if portNumber(pa) == 0 || portNumber(pa) != portNumber(pb) {
		return false
	}
	return ha == hb || isWildcard(ha) || isWildcard(hb)
}

// loopsBack reports whether the listening address listen would receive the
// sidecar's own calls to the upstream address up: the same port on this
// host.
func loopsBack(listen, up string) bool {
	hl, pl, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	hu, pu, err := net.SplitHostPort(up)
	if err != nil || portNumber(pl) == 0 || portNumber(pl) != portNumber(pu) {
		return false
	}
	return (isWildcard(hl) || isLoopback(hl)) && (isWildcard(hu) || isLoopback(hu))
}

// portNumber returns the port as a number, 0 when it is not one.
func portNumber(port string) int {
	n, err := strconv.Atoi(port)
	if err != nil {
		return 0
	}
	return n
}

// isWildcard reports whether host listens on every interface.
func isWildcard(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// isLoopback reports whether host is this host's loopback.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
