package deploytest

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// images are the Dockerfiles, the make target each builds its binaries
// with, and the make target that builds the image.
var images = []struct{ file, build, image string }{
	{"sidecar.Dockerfile", "build-go", "image"},
	{"sidecar-cuda.Dockerfile", "build-cuda", "image-cuda"},
	{"triton.Dockerfile", "build-cuda", "image-triton"},
}

// goCompile matches a command that compiles Go itself instead of asking
// make: go build, go install, go run.
var goCompile = regexp.MustCompile(`\bgo\s+(build|install|run)\b`)

// makeCommand matches a make command in a shell line (not a package of
// that name on an apt-get line): its arguments.
var makeCommand = regexp.MustCompile(`(?:^|&&|;|\|\|)\s*make\s+([^&;|]*)`)

// parseDockerfile parses a Dockerfile of docker/ with BuildKit's parser
// into its stages.
func parseDockerfile(t *testing.T, name string) ([]instructions.Stage, []instructions.ArgCommand) {
	t.Helper()
	f, err := os.Open(repoPath("docker", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("docker/%s: %v", name, err)
	}
	stages, args, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("docker/%s: %v", name, err)
	}
	return stages, args
}

// makeRecipe returns the recipe lines of a Makefile target ("" if none).
func makeRecipe(makefile, target string) (string, bool) {
	var b strings.Builder
	in, found := false, false
	for _, line := range strings.Split(makefile, "\n") {
		switch {
		case strings.HasPrefix(line, target+":"):
			in, found = true, true
		case in && strings.HasPrefix(line, "\t"):
			b.WriteString(line + "\n")
		case in && strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#"):
			in = false
		}
	}
	return b.String(), found
}

// TestDockerfilesBuildWithMake: every Dockerfile parses; the only command
// of a Dockerfile that builds our code is `make <target>`, the target CI's
// Makefile has; every file it copies out of the build stage is one that
// target writes; the build arguments its FROM lines use are passed by the
// Makefile's image target, from docker/.env.
func TestDockerfilesBuildWithMake(t *testing.T) {
	makefile := readFile(t, "Makefile")
	env := dotEnv(t)
	for _, img := range images {
		t.Run(img.file, func(t *testing.T) {
			stages, metaArgs := parseDockerfile(t, img.file)
			recipe, ok := makeRecipe(makefile, img.build)
			if !ok {
				t.Fatalf("the Makefile has no target %s", img.build)
			}
			var makes []string
			built := map[string]bool{} // stages that ran make
			for _, st := range stages {
				for _, cmd := range st.Commands {
					run, ok := cmd.(*instructions.RunCommand)
					if !ok {
						continue
					}
					line := strings.Join(run.CmdLine, " ")
					if goCompile.MatchString(line) || strings.Contains(line, "-buildmode") {
						t.Errorf("stage %s compiles Go itself (%q): call make instead", st.Name, line)
					}
					for _, m := range makeCommand.FindAllStringSubmatch(line, -1) {
						makes = append(makes, strings.TrimSpace(m[1]))
						built[st.Name] = true
					}
				}
			}
			if !slices.Equal(makes, []string{img.build}) {
				t.Fatalf("the Dockerfile runs make %q, want exactly make %s", makes, img.build)
			}
			// What the image copies from the build stage is what the target
			// writes (make's -o $(BIN)/..., the build stage's /src/bin/...).
			copied := 0
			for _, st := range stages {
				for _, cmd := range st.Commands {
					cp, ok := cmd.(*instructions.CopyCommand)
					if !ok || !built[cp.From] {
						continue
					}
					for _, src := range cp.SourcePaths {
						rel, ok := strings.CutPrefix(src, "/src/bin/")
						if !ok || !strings.Contains(recipe, "-o $(BIN)/"+rel+" ") {
							t.Errorf("COPY --from=%s %s: not an output of make %s", cp.From, src, img.build)
						}
						copied++
					}
				}
			}
			if copied == 0 {
				t.Error("the image copies nothing out of the build stage")
			}
			// The Makefile builds this image, passing every argument the
			// FROM lines use, from docker/.env.
			imageRecipe, ok := makeRecipe(makefile, img.image)
			if !ok || !strings.Contains(imageRecipe, "-f docker/"+img.file+" ") {
				t.Fatalf("make %s does not build docker/%s", img.image, img.file)
			}
			for _, a := range metaArgs {
				for _, kv := range a.Args {
					if kv.Value != nil {
						t.Errorf("ARG %s has a default: versions come from docker/.env only", kv.Key)
					}
					if env[kv.Key] == "" || !strings.Contains(imageRecipe, "--build-arg "+kv.Key+"=$("+kv.Key+")") {
						t.Errorf("ARG %s: make %s must pass --build-arg %s=$(%s), defined in docker/.env", kv.Key, img.image, kv.Key, kv.Key)
					}
				}
			}
			// The last stage runs as a non-root user.
			last := stages[len(stages)-1]
			var user string
			for _, s := range stages {
				if s.Name == last.BaseName {
					user = stageUser(s)
				}
			}
			if u := stageUser(last); u != "" {
				user = u
			}
			if user == "" || user == "root" || strings.HasPrefix(user, "0") {
				t.Errorf("the image runs as user %q: want a non-root uid", user)
			}
		})
	}
}

// stageUser returns the stage's last USER, "" if none.
func stageUser(st instructions.Stage) string {
	var user string
	for _, cmd := range st.Commands {
		if u, ok := cmd.(*instructions.UserCommand); ok {
			user = u.User
		}
	}
	return user
}
