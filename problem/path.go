package problem

import (
	"regexp"
	"strconv"
	"strings"
)

// plainKey matches the map keys that paths write after a dot.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Key returns the path of key key under path: "triton.grpc",
// "components[0].presets.balanced", or with the key quoted in brackets when
// it is not a plain word: `models[0].heads[0].outputs["scores:0"]`.
func Key(path, key string) string {
	if !plainKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index returns the path of the i-th element of the list at path.
func Index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// CutKey splits a path written by Key(path, key) that starts with prefix
// into the key and what follows it, and reports whether it does:
// CutKey(`presets["a b"].x`, "presets") is "a b", ".x", true.
func CutKey(path, prefix string) (key, rest string, ok bool) {
	rest, ok = strings.CutPrefix(path, prefix)
	if !ok || rest == "" {
		return "", "", false
	}
	if prefix == "" && rest[0] != '[' {
		rest = "." + rest // a top-level key has no dot before it
	}
	switch rest[0] {
	case '.':
		rest = rest[1:]
		i := strings.IndexAny(rest, ".[")
		if i < 0 {
			return rest, "", true
		}
		return rest[:i], rest[i:], true
	case '[':
		if len(rest) < 2 || rest[1] != '"' {
			return "", "", false
		}
		q, err := strconv.QuotedPrefix(rest[1:])
		if err != nil || !strings.HasPrefix(rest[1+len(q):], "]") {
			return "", "", false
		}
		key, _ = strconv.Unquote(q)
		return key, rest[1+len(q)+1:], true
	}
	return "", "", false
}

// Parents returns path and its enclosing paths, innermost first:
// "models[0].backbone.output", "models[0].backbone", "models[0]", "models".
func Parents(path string) []string {
	out := []string{path}
	for i := len(path) - 1; i > 0; i-- {
		if path[i] == '.' || path[i] == '[' {
			out = append(out, path[:i])
		}
	}
	return out
}

// Under reports whether path is root or a key or element below it.
func Under(path, root string) bool {
	rest, ok := strings.CutPrefix(path, root)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}
