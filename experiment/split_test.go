package experiment

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

func mustSplit(t *testing.T, name, arms string, traffic float64) *Split {
	t.Helper()
	a, err := ParseArms(arms)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSplit(name, a, traffic)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "user-" + strconv.Itoa(i)
	}
	return out
}

// TestVectors checks the Go assignment against experiment/testdata/vectors.tsv,
// which experiment/assign.py (an independent Python implementation) wrote.
func TestVectors(t *testing.T) {
	f, err := os.Open("testdata/vectors.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 5 {
			t.Fatalf("bad line %q", line)
		}
		traffic, err := strconv.ParseFloat(fields[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		s := mustSplit(t, fields[0], fields[1], traffic)
		got := "-"
		if i := s.Assign(fields[3]); i >= 0 {
			got = s.Arms()[i].Name
		}
		if got != fields[4] {
			t.Errorf("%s %s traffic %s: key %q: arm %s, want %s", fields[0], fields[1], fields[2], fields[3], got, fields[4])
		}
		n++
	}
	if n < 50 {
		t.Fatalf("only %d vectors", n)
	}
}

// TestSplitFollowsWeights assigns 100,000 keys: each arm's share is within
// 1% (absolute) of its weight's, and a key's arm never changes.
func TestSplitFollowsWeights(t *testing.T) {
	tests := []struct {
		arms string
		want []float64
	}{
		{"A=50,B=30,C=20", []float64{0.5, 0.3, 0.2}},
		{"control=1,treatment=1", []float64{0.5, 0.5}},
		{"a=90,b=0,c=10", []float64{0.9, 0, 0.1}},
		{"a=1,b=2,c=3,d=4", []float64{0.1, 0.2, 0.3, 0.4}},
	}
	ks := keys(100_000)
	for _, tt := range tests {
		s := mustSplit(t, "exp", tt.arms, 1)
		counts := make([]int, len(tt.want))
		for _, k := range ks {
			i := s.Assign(k)
			counts[i]++
			if j := s.Assign(k); j != i {
				t.Fatalf("%s: key %q: arm %d, then %d", tt.arms, k, i, j)
			}
		}
		for i, c := range counts {
			got := float64(c) / float64(len(ks))
			if math.Abs(got-tt.want[i]) > 0.01 {
				t.Errorf("%s: arm %d has %.4f of the keys, want %.2f ± 0.01", tt.arms, i, got, tt.want[i])
			}
			t.Logf("%s: arm %s: %d keys (%.4f, weight %.2f)", tt.arms, s.Arms()[i].Name, c, got, tt.want[i])
		}
	}
}

// TestTrafficShare admits about the share of keys, admits more keys as the
// share grows and never reshuffles the arms of those already in.
func TestTrafficShare(t *testing.T) {
	ks := keys(100_000)
	quarter := mustSplit(t, "exp", "A=1,B=1", 0.25)
	half := mustSplit(t, "exp", "A=1,B=1", 0.5)
	all := mustSplit(t, "exp", "A=1,B=1", 1)
	in := 0
	for _, k := range ks {
		q, h, a := quarter.Assign(k), half.Assign(k), all.Assign(k)
		if q >= 0 {
			in++
			if h != q {
				t.Fatalf("key %q: in at 25%% (arm %d), arm %d at 50%%", k, q, h)
			}
		}
		if h >= 0 && h != a {
			t.Fatalf("key %q: arm %d at 50%%, %d at 100%%", k, h, a)
		}
	}
	if got := float64(in) / float64(len(ks)); math.Abs(got-0.25) > 0.01 {
		t.Errorf("%.4f of the keys take part at a share of 0.25", got)
	}
}

// frac is a point of [0, 1) as a fraction, for the documented intervals.
type frac struct{ num, den uint64 }

// below reports whether h / 2³² < f.
func (f frac) below(h uint32) bool { return uint64(h)*f.den < f.num<<32 }

// move is a documented move: the keys whose arm hash lies in [lo, hi) move
// from one arm to another.
type move struct {
	lo, hi   frac
	from, to string
}

// TestMoves changes weights, adds and removes arms, and checks over 100,000
// keys that exactly the keys docs/sidecar.md says move do move, each
// between the arms it says, and how many they are.
func TestMoves(t *testing.T) {
	tests := []struct {
		name          string
		before, after string
		moves         []move
		share         float64 // the documented share of the keys that move
	}{
		{
			name:   "weight between adjacent arms",
			before: "A=50,B=30,C=20", after: "A=40,B=40,C=20",
			moves: []move{{frac{40, 100}, frac{50, 100}, "A", "B"}},
			share: 0.10,
		},
		{
			name:   "weight between arms two apart",
			before: "A=50,B=30,C=20", after: "A=40,B=30,C=30",
			moves: []move{{frac{40, 100}, frac{50, 100}, "A", "B"}, {frac{70, 100}, frac{80, 100}, "B", "C"}},
			share: 0.20,
		},
		{
			name:   "arm added at the end, its weight taken from the last arm",
			before: "A=50,B=30,C=20", after: "A=50,B=30,C=10,D=10",
			moves: []move{{frac{90, 100}, frac{100, 100}, "C", "D"}},
			share: 0.10,
		},
		{
			name:   "arm added at the end with new weight (Σw grows)",
			before: "A=50,B=50", after: "A=50,B=50,C=10",
			moves: []move{{frac{50, 110}, frac{50, 100}, "A", "B"}, {frac{100, 110}, frac{100, 100}, "B", "C"}},
			share: 0.5 - 50.0/110 + 10.0/110,
		},
		{
			name:   "last arm removed, its weight given to the one before",
			before: "A=50,B=30,C=20", after: "A=50,B=50",
			moves: []move{{frac{80, 100}, frac{100, 100}, "C", "B"}},
			share: 0.20,
		},
		{
			name:   "middle arm removed, its weight given to the one before",
			before: "A=50,B=30,C=20", after: "A=80,C=20",
			moves: []move{{frac{50, 100}, frac{80, 100}, "B", "A"}},
			share: 0.30,
		},
		{
			name:   "weights scaled (Σw changes, shares do not)",
			before: "A=50,B=30,C=20", after: "A=5,B=3,C=2",
			share: 0,
		},
	}
	ks := keys(100_000)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := mustSplit(t, "exp", tt.before, 1), mustSplit(t, "exp", tt.after, 1)
			moved := 0
			for _, k := range ks {
				h := Hash("exp", k, ArmSeed)
				from, to := before.Arms()[before.Assign(k)].Name, after.Arms()[after.Assign(k)].Name
				var want *move
				for i, m := range tt.moves {
					if !m.lo.below(h) && m.hi.below(h) {
						want = &tt.moves[i]
					}
				}
				switch {
				case want == nil && from != to:
					t.Fatalf("key %q (h/2³² = %.6f) moved from %s to %s, outside the documented intervals", k, float64(h)/(1<<32), from, to)
				case want != nil && (from != want.from || to != want.to):
					t.Fatalf("key %q (h/2³² = %.6f): %s → %s, want %s → %s", k, float64(h)/(1<<32), from, to, want.from, want.to)
				}
				if from != to {
					moved++
				}
			}
			got := float64(moved) / float64(len(ks))
			t.Logf("%s → %s: %d of %d keys moved (%.4f, documented %.4f)", tt.before, tt.after, moved, len(ks), got, tt.share)
			if math.Abs(got-tt.share) > 0.01 {
				t.Errorf("%.4f of the keys moved, want %.4f ± 0.01", got, tt.share)
			}
		})
	}
}

func TestNewSplitErrors(t *testing.T) {
	tests := []struct {
		arms    []Arm
		traffic float64
		want    string
	}{
		{nil, 1, "no arms"},
		{[]Arm{{"a", 1}}, 0, "traffic share 0: want a number in (0, 1]"},
		{[]Arm{{"a", 1}}, 1.5, "traffic share 1.5: want a number in (0, 1]"},
		{[]Arm{{"a", 1}}, math.NaN(), "traffic share NaN: want a number in (0, 1]"},
		{[]Arm{{"", 1}}, 1, "arm 1 has no name"},
		{[]Arm{{"a", 1}, {"a", 2}}, 1, `arm "a" given twice`},
		{[]Arm{{"a", -1}}, 1, `arm "a": weight -1: want an integer from 0 to 1000000`},
		{[]Arm{{"a", MaxWeight + 1}}, 1, `arm "a": weight 1000001: want an integer from 0 to 1000000`},
		{[]Arm{{"a", 0}, {"b", 0}}, 1, "the weights sum to 0"},
		{make([]Arm, MaxArms+1), 1, "65 arms: at most 64"},
	}
	for _, tt := range tests {
		_, err := NewSplit("exp", tt.arms, tt.traffic)
		if err == nil || err.Error() != tt.want {
			t.Errorf("NewSplit(%v, %v) = %v, want %q", tt.arms, tt.traffic, err, tt.want)
		}
	}
}

func TestParseArms(t *testing.T) {
	got, err := ParseArms(" A=50, B = 30,C=20")
	if err != nil || len(got) != 3 || got[1] != (Arm{"B", 30}) {
		t.Errorf("ParseArms = %v, %v", got, err)
	}
	for spec, want := range map[string]string{
		"A":       `arms "A": entry "A": want name=weight`,
		"=3":      `arms "=3": entry "=3": want name=weight`,
		"A=x":     `arms "A=x": arm "A": weight "x" is not an integer`,
		"A=1,,B=": `arms "A=1,,B=": entry "": want name=weight`,
	} {
		if _, err := ParseArms(spec); err == nil || err.Error() != want {
			t.Errorf("ParseArms(%q) = %v, want %q", spec, err, want)
		}
	}
}

// TestCheckTraffic: the share's rule alone is NewSplit's.
func TestCheckTraffic(t *testing.T) {
	for _, share := range []float64{-1, 0, 1e-9, 0.5, 1, 1.0000001, 2, math.NaN(), math.Inf(1)} {
		_, splitErr := NewSplit("e", []Arm{{"a", 1}}, share)
		err := CheckTraffic(share)
		if (err == nil) != (splitErr == nil) || (err != nil && err.Error() != splitErr.Error()) {
			t.Errorf("share %v: CheckTraffic %v, NewSplit %v", share, err, splitErr)
		}
	}
}
