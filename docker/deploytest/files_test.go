package deploytest

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's root, two levels up from this package.
var root = func() string {
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return abs
}()

// repoPath joins path elements onto the repository root.
func repoPath(elem ...string) string { return filepath.Join(append([]string{root}, elem...)...) }

// dotEnv reads docker/.env: NAME=value lines, # comments and blank lines.
// Anything else fails the test, since make includes the file and compose
// reads it too.
func dotEnv(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(repoPath("docker", ".env"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	line := regexp.MustCompile(`^([A-Z][A-Z0-9_]*)=([A-Za-z0-9._-]+)$`)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		m := line.FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("docker/.env:%d: %q is not NAME=value (make includes this file)", n, text)
		}
		env[m[1]] = m[2]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return env
}

// readFile returns a repository file's content.
func readFile(t *testing.T, elem ...string) string {
	t.Helper()
	b, err := os.ReadFile(repoPath(elem...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goModVersion is go.mod's go line, major.minor.
func goModVersion(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readFile(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	return m[1]
}

// TestVersionsAgree: docker/.env is the one place the image versions are
// written; the copies that cannot read it (go.mod's go line, the
// kustomizations' image tags) agree with it.
func TestVersionsAgree(t *testing.T) {
	env := dotEnv(t)
	if env["TRITON_VERSION"] != "24.10" {
		// Triton 2.51.0, the server of nvidia-pytriton 0.7.0 the tests run
		// and backend API 1.19 the backend is written against.
		t.Errorf("TRITON_VERSION=%q: the project is built and tested against Triton 2.51, NGC release 24.10", env["TRITON_VERSION"])
	}
	if got, want := env["GO_VERSION"], goModVersion(t); got != want {
		t.Errorf("docker/.env GO_VERSION=%s, go.mod's go line %s", got, want)
	}
	for _, c := range []struct{ dir, image, want string }{
		{"docker/k8s/base", "nvcr.io/nvidia/tritonserver", env["TRITON_VERSION"] + "-py3"},
		{"docker/k8s/backend", "nvcr.io/nvidia/tritonserver", env["TRITON_VERSION"] + "-"},
	} {
		k := readKustomization(t, c.dir)
		found := false
		for _, img := range k.Images {
			if img.Name == c.image {
				found = true
				if !strings.HasPrefix(img.NewTag, c.want) {
					t.Errorf("%s: image %s has tag %q, want %q… (docker/.env TRITON_VERSION)", c.dir, c.image, img.NewTag, c.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no images entry for %s", c.dir, c.image)
		}
	}
}
