package control

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestSpecMemo: a profile's parse of a spec, remembered or not, is
// ParseSpec's; a spec that fails is not remembered; the memo stays within
// its bound whatever the requests send; concurrent parses agree (-race).
func TestSpecMemo(t *testing.T) {
	tasks := []string{"cars", "dtd", "svhn"}
	p := &Profile{tasks: tasks}
	for _, spec := range []string{"cars=0.6,dtd=0.4", "dtd=0.4,cars=0.6", " svhn = 1 ", "none", "cars=1,dtd=1,svhn=1"} {
		want, err := ParseSpec(spec, tasks)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 { // the parse, then the memo
			got, err := p.parseSpec(spec)
			if err != nil {
				t.Fatal(err)
			}
			if got.Key != want.Key || got.Preference.String() != want.Preference.String() || got.Corrects() != want.Corrects() {
				t.Errorf("%q, round %d: %+v, ParseSpec gives %+v", spec, round, got, want)
			}
		}
	}
	for _, bad := range []string{"cars=-1", "trucks=1", "cars=x"} {
		for range 2 {
			if _, err := p.parseSpec(bad); err == nil {
				t.Errorf("%q parsed", bad)
			}
		}
		if _, ok := p.specs.get(bad); ok {
			t.Errorf("%q, which fails, remembered", bad)
		}
	}
	long := "cars=1," + strings.Repeat(" ", specMemoMaxLen) + "dtd=1"
	if _, err := p.parseSpec(long); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.specs.get(long); ok {
		t.Errorf("a spec of %d bytes remembered", len(long))
	}

	// The bound: more distinct specs than it holds.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range specMemoSize {
				spec := fmt.Sprintf("cars=%d,dtd=%d", g+1, i+1)
				c, err := p.parseSpec(spec)
				if err != nil {
					t.Error(err)
					return
				}
				if want, _ := ParseSpec(spec, tasks); c.Key != want.Key {
					t.Errorf("%q: key %q, want %q", spec, c.Key, want.Key)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := p.specs.len(); n > specMemoSize+4 {
		t.Errorf("%d specs remembered, bound %d", n, specMemoSize)
	}
}
