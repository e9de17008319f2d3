package experiment

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Bounds of a split: arm names are metric labels, so their number is
// bounded, and Σw stays far below 2³² so that h · Σw fits in 64 bits.
const (
	MaxArms   = 64
	MaxWeight = 1_000_000
)

// Arm is one arm of a split: its name and integer weight (0 takes no keys).
type Arm struct {
	Name   string
	Weight int
}

// Split is how an experiment assigns keys: its name (part of the hashed
// string), its arms in order, and the share of keys that take part.
type Split struct {
	name    string
	arms    []Arm
	traffic float64
	total   uint64
	upper   []uint64 // upper[i] = C_i, the sum of the first i+1 weights
}

// NewSplit checks and returns a split. There must be at least one arm and at
// most MaxArms, with distinct non-empty names, weights from 0 to MaxWeight
// and a positive sum; traffic is the share of keys that take part, in
// (0, 1].
func NewSplit(name string, arms []Arm, traffic float64) (*Split, error) {
	if len(arms) == 0 {
		return nil, errors.New("no arms")
	}
	if len(arms) > MaxArms {
		return nil, fmt.Errorf("%d arms: at most %d", len(arms), MaxArms)
	}
	if err := CheckTraffic(traffic); err != nil {
		return nil, err
	}
	s := &Split{name: name, arms: append([]Arm(nil), arms...), traffic: traffic, upper: make([]uint64, len(arms))}
	seen := make(map[string]bool, len(arms))
	for i, a := range arms {
		switch {
		case a.Name == "":
			return nil, fmt.Errorf("arm %d has no name", i+1)
		case seen[a.Name]:
			return nil, fmt.Errorf("arm %q given twice", a.Name)
		case a.Weight < 0 || a.Weight > MaxWeight:
			return nil, fmt.Errorf("arm %q: weight %d: want an integer from 0 to %d", a.Name, a.Weight, MaxWeight)
		}
		seen[a.Name] = true
		s.total += uint64(a.Weight)
		s.upper[i] = s.total
	}
	if s.total == 0 {
		return nil, errors.New("the weights sum to 0")
	}
	return s, nil
}

// CheckTraffic returns what is wrong with a traffic share (the share of
// keys that take part), nil when it is in (0, 1]: NewSplit's rule, for a
// surface that reports the share apart from the arms.
func CheckTraffic(share float64) error {
	if !(share > 0 && share <= 1) {
		return fmt.Errorf("traffic share %v: want a number in (0, 1]", share)
	}
	return nil
}

// Name returns the experiment's name.
func (s *Split) Name() string { return s.name }

// Arms returns the arms, in order.
func (s *Split) Arms() []Arm { return append([]Arm(nil), s.arms...) }

// Traffic returns the share of keys that take part.
func (s *Split) Traffic() float64 { return s.traffic }

// Total returns Σw.
func (s *Split) Total() uint64 { return s.total }

// Assign returns the index of the arm of key, or -1 when the key is outside
// the experiment's traffic share. The same key always gets the same arm.
func (s *Split) Assign(key string) int {
	if s.traffic < 1 && !Admits(Hash(s.name, key, TrafficSeed), s.traffic) {
		return -1
	}
	return s.Arm(Hash(s.name, key, ArmSeed))
}

// Pick is Assign for given hashes: -1 when trafficHash is outside the
// traffic share, else the arm of armHash. A request without a key is
// assigned with random hashes, and so with the arms' weights.
func (s *Split) Pick(armHash, trafficHash uint32) int {
	if s.traffic < 1 && !Admits(trafficHash, s.traffic) {
		return -1
	}
	return s.Arm(armHash)
}

// Arm returns the index of the arm of an arm hash: the first i with
// Bucket(h, Σw) < C_i.
func (s *Split) Arm(h uint32) int {
	b := Bucket(h, s.total)
	for i, u := range s.upper {
		if b < u {
			return i
		}
	}
	panic("experiment: bucket beyond the weights") // b < Σw = upper[last]
}

// ParseArms parses arms written as "name=weight,name=weight,…" (for
// example "A=50,B=30,C=20"), in order.
func ParseArms(spec string) ([]Arm, error) {
	var arms []Arm
	for _, entry := range strings.Split(spec, ",") {
		name, weight, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("arms %q: entry %q: want name=weight", spec, entry)
		}
		w, err := strconv.Atoi(strings.TrimSpace(weight))
		if err != nil {
			return nil, fmt.Errorf("arms %q: arm %q: weight %q is not an integer", spec, name, weight)
		}
		arms = append(arms, Arm{Name: name, Weight: w})
	}
	return arms, nil
}
