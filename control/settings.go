package control

import (
	"regexp"

	"github.com/mergectl/react-triton/internal/bytesize"
)

// NamePattern is what a preset's name must match, on every surface; the
// sidecar holds the names of its components entries, experiments and arms
// to it too. A preset's name travels in the react-preset header and in
// metrics, so it is a short token.
var NamePattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// NameRule says what NamePattern wants, for messages.
const NameRule = "want letters, digits, '_', '.' or '-', at most 64, not starting with '.' or '-'"

// Defaults of a profile's bounds, the same on every surface (the sidecar's
// cache.max_bytes, cache.size and limits.max_preference_length; the react
// backend's cache_max_bytes, cache_size and max_preference_length).
const (
	// DefaultCacheMaxBytes bounds the memory of the W_p of per-request
	// preferences kept for one components file (with its β and
	// normalisation): memory is what an operator budgets, and an entry's
	// size grows with D² (4·D² bytes formed: 2.25 MiB at D = 768, so
	// about 56 of them).
	DefaultCacheMaxBytes = 128 * bytesize.MiB
	// DefaultCacheSize is 0: no bound on the number of entries beyond
	// DefaultCacheMaxBytes.
	DefaultCacheSize = 0
	// DefaultMaxPreferenceLength bounds a request's preference or preset
	// value, in bytes: enough for a preference over 64 tasks with names of
	// 50 bytes, and parsed in microseconds.
	DefaultMaxPreferenceLength = 4096
)

// Settings is how the profiles of one server are configured, whatever the
// surface that says it: each profile's components file, β, normalisation,
// default preference and presets, the arms of the experiments over them,
// and the bounds of the W_p cache and of a request's preference, which
// every profile of the server shares. Settings.Check holds the rules; the
// sidecar's YAML (package config), the react backend's model parameters
// (package backend/model) and calibrate's flags are adapters that fill a
// Settings from their syntax and rename its problems' paths to their own.
type Settings struct {
	Profiles    []ProfileSettings
	Experiments []ExperimentSettings
	// CacheMaxBytes bounds the memory of each components file's W_p cache,
	// in bytes; at least 1.
	CacheMaxBytes int64
	// CacheSize, when positive, also bounds its number of entries; 0 does
	// not.
	CacheSize int
	// MaxPreferenceLength bounds a request's preference or preset value,
	// in bytes; at least 1.
	MaxPreferenceLength int
}

// ProfileSettings is one profile: a components file and how it is used.
type ProfileSettings struct {
	// Name names the profile in messages (the sidecar's components entry).
	Name string
	// Components is the components file, as the surface resolved it.
	// Required.
	Components string
	// Beta overrides the file's β; nil keeps it.
	Beta *float64
	// Normalize overrides the file's normalisation, sum or mean; "" keeps
	// it.
	Normalize string
	// DefaultPreference applies when a request names none: a preference
	// spec, or "none"; "" applies no correction.
	DefaultPreference string
	// Presets maps names (NamePattern) to preference specs (or "none").
	Presets map[string]string
}

// ExperimentSettings is what the rules of a profile see of an experiment:
// its arms, and the profiles of the models that take part in it, whose
// tasks and presets the arms must have.
type ExperimentSettings struct {
	Arms []ArmSettings
	Uses []Use
}

// ArmSettings is an arm's preference spec (or "none") or preset name: one
// of the two.
type ArmSettings struct {
	Preference string
	Preset     string
}

// Use is a model that takes part in an experiment, and the index in
// Settings.Profiles of the profile it uses (-1 when it names none that
// exists: the surface reports that).
type Use struct {
	Model   string
	Profile int
}

// DefaultSettings returns settings with no profile and the default
// bounds.
func DefaultSettings() Settings {
	return Settings{
		CacheMaxBytes:       int64(DefaultCacheMaxBytes),
		CacheSize:           DefaultCacheSize,
		MaxPreferenceLength: DefaultMaxPreferenceLength,
	}
}
