package config

import (
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/internal/bytesize"
	"github.com/mergectl/react-triton/problem"
)

// Names of the flags BindProfileFlags registers: a react model's profile,
// as calibrate upgrade writes it into the model's parameters.
const (
	FlagComponents          = "components"
	FlagBeta                = "beta"
	FlagNormalize           = "normalize"
	FlagDefaultPreference   = "default-preference"
	FlagPreset              = "preset"
	FlagCacheMaxBytes       = "cache-max-bytes"
	FlagCacheSize           = "cache-size"
	FlagMaxPreferenceLength = "max-preference-length"
)

// BindProfileFlags registers on fs the flags of one profile, each the
// react backend's model parameter of the same name: --components,
// --beta, --normalize, --default-preference, --preset NAME=SPEC
// (repeatable), --cache-max-bytes, --cache-size and
// --max-preference-length. ProfileFlags reads them.
func BindProfileFlags(fs *pflag.FlagSet) {
	fs.String(FlagComponents, "", "the components `FILE` written by calibrate fit (required)")
	fs.Float64(FlagBeta, 0, "override the file's regulariser β = `B` ≥ 0 (default: the file's)")
	fs.String(FlagNormalize, "", "override the file's normalisation, `sum|mean` (default: the file's)")
	fs.String(FlagDefaultPreference, "", "the default preference `SPEC`, or none (default: none, no correction)")
	fs.StringArray(FlagPreset, nil, "a preset `NAME=SPEC` (repeatable)")
	fs.String(FlagCacheMaxBytes, control.DefaultCacheMaxBytes.String(), "most memory of the W_p kept for per-request preferences, `SIZE` (an integer or with a unit: 64MiB)")
	fs.Int(FlagCacheSize, control.DefaultCacheSize, "when positive, most `N` of them kept")
	fs.Int(FlagMaxPreferenceLength, control.DefaultMaxPreferenceLength, "longest preference or preset name a request may send, in `BYTES`")
}

// WithProfile returns c with the keys of BindProfileFlags' flags: the
// bounds under the sidecar's keys (--cache-max-bytes is cache.max_bytes,
// --cache-size cache.size, --max-preference-length
// limits.max_preference_length), so that a file's key or a variable such
// as $REACT_CACHE_MAX_BYTES means one thing to both; --components a path;
// --beta and --normalize, left out, the file's (null in --print-config).
func (c CommandFlags) WithProfile() CommandFlags {
	keys := map[string]string{
		FlagCacheMaxBytes:       "cache.max_bytes",
		FlagCacheSize:           "cache.size",
		FlagMaxPreferenceLength: "limits.max_preference_length",
	}
	maps.Copy(keys, c.Keys)
	c.Keys = keys
	c.Paths = append(slices.Clone(c.Paths), FlagComponents)
	c.Unset = append(slices.Clone(c.Unset), FlagBeta, FlagNormalize)
	return c
}

// ProfileFlags reads the flags of BindProfileFlags into the settings of
// one profile, with the components file made absolute, and checks them
// by the rules every surface shares (control.Settings.Check, the file
// read). Every problem is returned at once, named by its flag: "--beta",
// "--preset NAME".
func ProfileFlags(fs *pflag.FlagSet) (control.Settings, problem.List) {
	s := control.DefaultSettings()
	var p control.ProfileSettings
	var l problem.List
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	if c := get(FlagComponents); c != "" {
		abs, err := filepath.Abs(c)
		if err != nil {
			l.Add("--"+FlagComponents, "%v", err)
		}
		p.Components = abs
	}
	if fs.Changed(FlagBeta) {
		b, _ := fs.GetFloat64(FlagBeta)
		p.Beta = &b
	}
	p.Normalize = get(FlagNormalize)
	p.DefaultPreference = get(FlagDefaultPreference)
	presets, _ := fs.GetStringArray(FlagPreset)
	if len(presets) > 0 {
		p.Presets = map[string]string{}
	}
	for _, v := range presets {
		name, spec, ok := strings.Cut(v, "=")
		switch _, dup := p.Presets[name]; {
		case !ok || name == "":
			l.Add("--"+FlagPreset, "%q: want NAME=SPEC", v)
		case dup:
			l.Add("--"+FlagPreset+" "+name, "given twice")
		default:
			p.Presets[name] = spec
		}
	}
	if n, err := bytesize.Parse(get(FlagCacheMaxBytes)); err != nil {
		l.Add("--"+FlagCacheMaxBytes, "%v", err)
	} else {
		s.CacheMaxBytes = int64(n)
	}
	s.CacheSize, _ = fs.GetInt(FlagCacheSize)
	s.MaxPreferenceLength, _ = fs.GetInt(FlagMaxPreferenceLength)
	s.Profiles = []control.ProfileSettings{p}
	l = append(l, s.Check(true).Rename(flagPath)...)
	return s, l
}

// flagPath renames a path of control.Settings.Check to the flag that sets
// the value: profiles[0].presets.NAME is "--preset NAME" (a name that is
// not a preset name quoted, as a shell would take it), cache.max_bytes
// "--cache-max-bytes".
func flagPath(path string) string {
	const profile = "profiles[0]"
	if name, _, ok := problem.CutKey(path, profile+".presets"); ok {
		if !control.NamePattern.MatchString(name) {
			name = strconv.Quote(name)
		}
		return "--" + FlagPreset + " " + name
	}
	path = strings.TrimPrefix(path, profile+".")
	if path == "cache.size" || path == "cache.max_bytes" {
		path = strings.Replace(path, ".", "_", 1)
	}
	return "--" + strings.ReplaceAll(path, "_", "-")
}
