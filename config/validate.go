package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react"
)

// NamePattern is what the name of a components entry and the name of a
// preset must match.
var NamePattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// versionPattern is a model version: a positive decimal integer.
var versionPattern = regexp.MustCompile(`^[1-9][0-9]*$`)

// Validate checks the configuration and returns every problem it finds as
// an *Error, or nil. It reads the file system: the components files and
// the TLS files must exist and be readable, and relative paths are taken
// relative to the working directory (Load has made the file's absolute).
//
// The preferences (default_preference, presets, experiment arms) are
// checked against the tasks of their components file, read from its header,
// so that an unknown task shows beside every other problem; a head's task
// is checked when the sidecar loads the file.
func (c *Config) Validate() error {
	var p problems
	c.validateTriton(&p)
	c.validateForwardHeaders(&p)
	c.validateListen(&p)
	c.validateServer(&p)
	c.validateManagement(&p)
	c.validatePprof(&p)
	c.validateLimits(&p)
	c.validateCache(&p)
	c.validateAdmission(&p)
	c.validateLinAlg(&p)
	c.validateLog(&p)
	tasks := c.validateComponents(&p)
	c.validateModels(&p)
	c.validateExperiments(&p, tasks)
	return p.err()
}

// checkSpec adds a problem at path if spec is not a preference over tasks
// (or none); tasks nil, for a components file that could not be read,
// checks nothing: the file has its own problem.
func checkSpec(p *problems, path, spec string, tasks []string) {
	if tasks == nil || strings.TrimSpace(spec) == "" {
		return
	}
	if _, err := control.ParseSpec(spec, tasks); err != nil {
		p.add(path, "%v", err)
	}
}

func (c *Config) validateTriton(p *problems) {
	t := &c.Triton
	for _, a := range []struct{ path, addr string }{{"triton.grpc", t.GRPC}, {"triton.http", t.HTTP}} {
		if a.addr == "" {
			p.add(a.path, "required: the address of the upstream Triton, host:port")
			continue
		}
		if msg := checkAddr(a.addr, false); msg != "" {
			p.add(a.path, "%s", msg)
		}
	}
	nonNegative(p, "triton.timeout", t.Timeout)
	if t.StartupTimeout <= 0 {
		// Start-up and every reload build within it: 0 could never succeed.
		p.add("triton.startup_timeout", "must be positive, got %v", t.StartupTimeout)
	}

	tls := &t.TLS
	files := []struct{ key, path string }{
		{"ca_file", tls.CAFile}, {"cert_file", tls.CertFile}, {"key_file", tls.KeyFile},
	}
	if !tls.Enabled {
		for _, f := range files {
			if f.path != "" {
				p.add("triton.tls."+f.key, "set while TLS is off: set triton.tls.enabled: true to use it, or remove it")
			}
		}
		if tls.ServerName != "" {
			p.add("triton.tls.server_name", "set while TLS is off: set triton.tls.enabled: true to use it, or remove it")
		}
		if tls.InsecureSkipVerify {
			p.add("triton.tls.insecure_skip_verify", "set while TLS is off: set triton.tls.enabled: true to use it, or remove it")
		}
		return
	}
	switch {
	case tls.CertFile != "" && tls.KeyFile == "":
		p.add("triton.tls.key_file", "required with cert_file: a client certificate needs both")
	case tls.CertFile == "" && tls.KeyFile != "":
		p.add("triton.tls.cert_file", "required with key_file: a client certificate needs both")
	}
	for _, f := range files {
		if f.path != "" {
			if msg := checkFile(f.path); msg != "" {
				p.add("triton.tls."+f.key, "%s", msg)
			}
		}
	}
}

func (c *Config) validateListen(p *problems) {
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
			p.add(a.path, "required: where the sidecar listens, [host]:port")
			continue
		}
		if msg := checkAddr(a.addr, true); msg != "" {
			p.add(a.path, "%s", msg)
			continue
		}
		ok = append(ok, i)
	}
	upstream := []struct{ path, addr string }{{"triton.grpc", c.Triton.GRPC}, {"triton.http", c.Triton.HTTP}}
	for n, i := range ok {
		a := addrs[i]
		for _, j := range ok[:n] {
			if sameSocket(addrs[j].addr, a.addr) {
				p.add(a.path, "%q is also listen.%s: the listeners need different ports", a.addr, strings.TrimPrefix(addrs[j].path, "listen."))
				break
			}
		}
		for _, u := range upstream {
			if checkAddr(u.addr, false) == "" && loopsBack(a.addr, u.addr) {
				p.add(a.path, "%q is the port of %s (%q) on this host: the sidecar would call itself; move Triton or the sidecar to another port", a.addr, u.path, u.addr)
			}
		}
	}
	if l.ShutdownTimeout <= 0 {
		p.add("listen.shutdown_timeout", "must be positive, got %v", l.ShutdownTimeout)
	}
}

func (c *Config) validateLimits(p *problems) {
	l := &c.Limits
	if l.MaxRequestBytes < 1 || l.MaxRequestBytes > MaxRequestBytesLimit {
		p.add("limits.max_request_bytes", "must be between 1 and %d (2GiB-1), got %d", int64(MaxRequestBytesLimit), int64(l.MaxRequestBytes))
	}
	if l.MaxInflightBytes < 1 {
		p.add("limits.max_inflight_bytes", "must be positive, got %d", int64(l.MaxInflightBytes))
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"max_inputs", l.MaxInputs}, {"max_outputs", l.MaxOutputs}, {"max_parameters", l.MaxParameters}} {
		if n.v < 1 {
			p.add("limits."+n.key, "must be at least 1, got %d", n.v)
		}
	}
	if l.MaxBatchSize < 0 {
		p.add("limits.max_batch_size", "must be 0 (the models' own limit) or positive, got %d", l.MaxBatchSize)
	}
	if l.MaxPreferenceLength < 1 {
		p.add("limits.max_preference_length", "must be at least 1, got %d", l.MaxPreferenceLength)
	}
}

func (c *Config) validateCache(p *problems) {
	if c.Cache.MaxBytes < 1 {
		p.add("cache.max_bytes", "must be positive, got %d", int64(c.Cache.MaxBytes))
	}
	if c.Cache.Size < 0 {
		p.add("cache.size", "must be 0 (bounded by max_bytes only) or positive, got %d", c.Cache.Size)
	}
}

func (c *Config) validateLinAlg(p *problems) {
	if _, err := react.ParseBackend(c.LinAlg.Backend); err != nil {
		p.add("linalg.backend", "%v", err)
	}
	if c.LinAlg.Threads < 1 {
		p.add("linalg.threads", "must be at least 1, got %d", c.LinAlg.Threads)
	}
}

func (c *Config) validateLog(p *problems) {
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		p.add("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		p.add("log.format", "%q is not one of text, json", c.Log.Format)
	}
}

// validateComponents checks the components entries, and returns the tasks
// of each entry whose file's header reads, by entry name.
func (c *Config) validateComponents(p *problems) map[string][]string {
	tasks := map[string][]string{}
	first := map[string]int{} // name → index of its first entry
	for i, comp := range c.Components {
		path := indexPath("components", i)
		switch {
		case comp.Name == "":
			p.add(path+".name", "required: how models refer to this entry")
		case !NamePattern.MatchString(comp.Name):
			p.add(path+".name", "%q: want letters, digits, '_', '.' or '-', at most 64, not starting with '.' or '-'", comp.Name)
		default:
			if j, dup := first[comp.Name]; dup {
				p.add(path+".name", "%q is also the name of components[%d]", comp.Name, j)
			} else {
				first[comp.Name] = i
			}
		}
		var fileTasks []string
		if comp.Path == "" {
			p.add(path+".path", "required: the components file (safetensors) written by calibrate fit")
		} else if msg := checkFile(comp.Path); msg != "" {
			p.add(path+".path", "%s", msg)
		} else if info, err := react.ReadFileInfo(comp.Path); err == nil {
			// (A file that does not read is the sidecar's problem when it
			// loads it, with the file's whole check.)
			fileTasks = info.TaskNames()
			if _, dup := tasks[comp.Name]; !dup && comp.Name != "" {
				tasks[comp.Name] = fileTasks
			}
		}
		if comp.Beta != nil {
			if err := react.ValidateBeta(*comp.Beta); err != nil {
				p.add(path+".beta", "%v", err)
			}
		}
		if comp.Normalize != "" {
			if _, err := react.ParseNormalization(comp.Normalize); err != nil {
				p.add(path+".normalize", "%v", err)
			}
		}
		if comp.DefaultPreference != "" && strings.TrimSpace(comp.DefaultPreference) == "" {
			p.add(path+".default_preference", "blank: write a preference such as \"cars=0.6,dtd=0.4\", or leave the key out for no correction")
		}
		checkSpec(p, path+".default_preference", comp.DefaultPreference, fileTasks)
		names := make([]string, 0, len(comp.Presets))
		for name := range comp.Presets {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			pp := keyPath(path+".presets", name)
			if !NamePattern.MatchString(name) {
				p.add(pp, "preset name %q: want letters, digits, '_', '.' or '-', at most 64, not starting with '.' or '-'", name)
			}
			if strings.TrimSpace(comp.Presets[name]) == "" {
				p.add(pp, "empty preference: write one such as \"cars=0.6,dtd=0.4\"")
			}
			checkSpec(p, pp, comp.Presets[name], fileTasks)
		}
	}
	return tasks
}

func (c *Config) validateModels(p *problems) {
	// called: model name → the path of its first use as a backbone or head.
	called := map[string]string{}
	for i, m := range c.Models {
		path := indexPath("models", i)
		if m.Backbone.Model != "" {
			if _, ok := called[m.Backbone.Model]; !ok {
				called[m.Backbone.Model] = path + ".backbone.model"
			}
		}
		for j, h := range m.Heads {
			if h.Model != "" {
				if _, ok := called[h.Model]; !ok {
					called[h.Model] = indexPath(path+".heads", j) + ".model"
				}
			}
		}
	}

	first := map[string]int{}
	for i, m := range c.Models {
		path := indexPath("models", i)
		switch {
		case m.Name == "":
			p.add(path+".name", "required: the model name clients call")
		case strings.Contains(m.Name, "/") || strings.IndexFunc(m.Name, unicode.IsSpace) >= 0:
			p.add(path+".name", "%q: must not contain '/' or white space", m.Name)
		default:
			if j, dup := first[m.Name]; dup {
				p.add(path+".name", "%q is also the name of models[%d]", m.Name, j)
			} else {
				first[m.Name] = i
			}
			if use, ok := called[m.Name]; ok {
				p.add(path+".name", "%q is also %s: it would shadow a model the sidecar itself calls", m.Name, use)
			}
		}
		c.validateModelComponents(p, path, m.Components)
		switch m.Signature {
		case "", SignatureMatch, SignatureDiffers:
		default:
			p.add(path+".signature", "%q is not one of %s (the default: the signature of the Triton model of the same name is checked), %s (the difference is intended)",
				m.Signature, SignatureMatch, SignatureDiffers)
		}
		if m.VariantOf != "" && strings.TrimSpace(m.VariantOf) != m.VariantOf {
			p.add(path+".variant_of", "%q: white space around a model name", m.VariantOf)
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
func validateGraphModel(p *problems, path string, m *Model) {
	if strings.TrimSpace(m.Correct) != m.Correct {
		p.add(path+".correct", "%q: white space around a tensor name", m.Correct)
	}
	const why = "not with correct: a model either names the ensemble's tensor to correct (correct) or its backbone and heads, not both"
	b := m.Backbone
	if b.Model != "" || b.Version != "" || b.Output != "" {
		p.add(path+".backbone", why)
	}
	if len(m.Heads) > 0 {
		p.add(path+".heads", why)
	}
	if len(m.Inputs) > 0 {
		p.add(path+".inputs", "not with correct: the graph form serves the ensemble's own input names")
	}
}

// validateExplicitModel checks a model of the explicit form: a backbone,
// heads, and how inputs and outputs are renamed.
func validateExplicitModel(p *problems, path string, m *Model) {
	b := path + ".backbone"
	if m.Backbone.Model == "" {
		p.add(b+".model", "required: the merged backbone model in Triton")
	}
	checkVersion(p, b+".version", m.Backbone.Version)
	if m.Backbone.Output == "" {
		p.add(b+".output", "required: the backbone output holding the feature to correct")
	}
	served := map[string]string{} // input name clients send → path of its first use
	for _, in := range sortedKeys(m.Inputs) {
		ip := keyPath(path+".inputs", in)
		name := m.Inputs[in]
		switch {
		case in == "":
			p.add(ip, "empty backbone input name")
		case name == "":
			p.add(ip, "empty name: give the name clients send this input under")
		default:
			if use, dup := served[name]; dup {
				p.add(ip, "%q is also the name of %s: inputs of one model need different names", name, use)
			} else {
				served[name] = ip
			}
		}
	}

	if len(m.Heads) == 0 {
		p.add(path+".heads", "at least one head required")
	}
	exposed := map[string]string{} // exposed output name → path of its first use
	for j, h := range m.Heads {
		hp := indexPath(path+".heads", j)
		if h.Task == "" {
			p.add(hp+".task", "required: the task of the components file this head serves")
		}
		if h.Model == "" {
			p.add(hp+".model", "required: the head model in Triton")
		}
		checkVersion(p, hp+".version", h.Version)
		for _, out := range sortedKeys(h.Outputs) {
			op := keyPath(hp+".outputs", out)
			name := h.Outputs[out]
			switch {
			case out == "":
				p.add(op, "empty head output name")
			case name == "":
				p.add(op, "empty name: give the name clients see this output under")
			default:
				if use, dup := exposed[name]; dup {
					p.add(op, "%q is also the name of %s: outputs of one model need different names", name, use)
				} else {
					exposed[name] = op
				}
			}
		}
	}
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// validateModelComponents checks a model's reference to a components entry.
func (c *Config) validateModelComponents(p *problems, path, name string) {
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
		p.add(path, "required, and there is no components entry: add one under components")
	case name == "":
		p.add(path, "required when there are several components entries (%s)", strings.Join(names, ", "))
	case len(c.Components) == 0:
		p.add(path, "%q is not the name of a components entry: there is none; add one under components", name)
	case !slices.Contains(names, name):
		p.add(path, "%q is not the name of a components entry (have: %s)", name, strings.Join(names, ", "))
	}
}

// checkVersion checks a model version: "" or a positive integer.
func checkVersion(p *problems, path, v string) {
	if v == "" {
		return
	}
	if !versionPattern.MatchString(v) {
		p.add(path, "%q: want a positive integer, or leave it out for Triton's choice", v)
		return
	}
	if _, err := strconv.ParseInt(v, 10, 64); err != nil {
		p.add(path, "%q: too large", v)
	}
}

// nonNegative checks a duration that may be 0 but not negative.
func nonNegative(p *problems, path string, d time.Duration) {
	if d < 0 {
		p.add(path, "must not be negative, got %v", d)
	}
}

// checkAddr checks a host:port address and returns what is wrong with it,
// or "". A listening address may leave the host out and use port 0; an
// upstream one must have both.
func checkAddr(addr string, listen bool) string {
	if strings.Contains(addr, "://") {
		return fmt.Sprintf("%q: want host:port without a scheme", addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		reason := err.Error()
		var aerr *net.AddrError
		if errors.As(err, &aerr) {
			reason = aerr.Err
		}
		return fmt.Sprintf("%q: want host:port (%s)", addr, reason)
	}
	if !listen && host == "" {
		return fmt.Sprintf("%q: want host:port with a host, such as 127.0.0.1%s", addr, addr)
	}
	n, err := strconv.Atoi(port)
	low := 1
	if listen {
		low = 0
	}
	if err != nil || n < low || n > 65535 || port[0] == '+' || port[0] == '-' {
		return fmt.Sprintf("%q: port %q is not a number from %d to 65535", addr, port, low)
	}
	return ""
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

// checkFile returns what keeps path from being read as a regular file, or
// "".
func checkFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Sprintf("cannot read %s: %v", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("cannot read %s: %v", path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Sprintf("%s is not a regular file", path)
	}
	return ""
}
