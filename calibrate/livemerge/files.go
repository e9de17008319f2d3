package livemerge

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mergectl/react-triton/react/partialfile"
)

// Dir returns the live files directly in dir (*.live.safetensors), in
// name order, last written within since of now (all when since is 0), and
// how many older ones it left out: calibrate merge --live-dir.
func Dir(dir string, since time.Duration, now time.Time) (found []string, old int, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("--live-dir: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), partialfile.LiveSuffix) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, 0, fmt.Errorf("--live-dir: %w", err)
		}
		if since > 0 && now.Sub(info.ModTime()) > since {
			old++
			continue
		}
		found = append(found, filepath.Join(dir, e.Name()))
	}
	return found, old, nil
}

// IsLive reads the headers of the partial-statistics files at paths and
// reports whether they are the sidecars' live files (all of them) or a
// fit's shards or checkpoints (none of them); a mix is an error.
func IsLive(paths []string) (bool, error) {
	var live, other []string
	for _, p := range paths {
		replica, err := partialfile.ReadReplica(p)
		if err != nil {
			return false, err
		}
		if replica != "" {
			live = append(live, p)
		} else {
			other = append(other, p)
		}
	}
	if len(live) > 0 && len(other) > 0 {
		return false, fmt.Errorf("%s is a live file but %s is not (a fit's shard or checkpoint): merge them apart", live[0], other[0])
	}
	return len(live) > 0, nil
}

// Print says what Merge did with each task, and the β selection's
// candidates with the one chosen: base names the --base file, minSamples
// is Options.MinSamples.
func (r *Result) Print(w io.Writer, base string, minSamples int64) {
	for _, t := range r.Tasks {
		switch t.Source {
		case Live:
			fmt.Fprintf(w, "task %s: N=%d from %d live files (%d held out)\n", t.Name, t.Live, t.Files, t.Held)
		case Base:
			if t.Files == 0 {
				fmt.Fprintf(w, "task %s: kept from %s (no live samples)\n", t.Name, base)
			} else {
				fmt.Fprintf(w, "task %s: kept from %s (%d live samples < --min-samples %d)\n", t.Name, base, t.Live, minSamples)
			}
		default:
			fmt.Fprintf(w, "task %s: left out (%d live samples < --min-samples %d, and no --base)\n", t.Name, t.Live, minSamples)
		}
	}
	if len(r.Candidates) == 0 {
		return
	}
	fmt.Fprintln(w, "beta auto: held-out relative reconstruction error of the live tasks, one-hot + equal:")
	for k, c := range r.Candidates {
		mark := ""
		if k == r.Chosen {
			mark = "  ← chosen"
		}
		fmt.Fprintf(w, "  %-4s β=%-7s %.5f + %.5f = %.5f%s\n", c.Normalization, strconv.FormatFloat(c.Beta, 'g', -1, 64), c.OneHot, c.Equal, c.Score, mark)
	}
}
