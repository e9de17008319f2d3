// Package bytesize reads and writes sizes in bytes with units, as the
// configuration surfaces take them: "67108864", "64MiB", "1 GB".
package bytesize

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Size is a size in bytes. Written, it is an integer, or a number with a
// unit: B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
type Size int64

// Units of Size: powers of 1000 (B, KB, MB, GB) and of 1024 (KiB, MiB,
// GiB).
const (
	B   Size = 1
	KB  Size = 1000 * B
	MB  Size = 1000 * KB
	GB  Size = 1000 * MB
	KiB Size = 1024 * B
	MiB Size = 1024 * KiB
	GiB Size = 1024 * MiB
)

// byteUnits are the unit suffixes Parse accepts, in the order
// String tries them (largest first, binary before decimal).
var byteUnits = []struct {
	name string
	size Size
}{
	{"GiB", GiB}, {"GB", GB},
	{"MiB", MiB}, {"MB", MB},
	{"KiB", KiB}, {"KB", KB},
	{"B", B},
}

const byteUnitList = "B, KB, MB, GB, KiB, MiB or GiB"

// Parse parses a size in bytes: a non-negative integer, optionally
// followed by a unit (B, KB, MB, GB, KiB, MiB or GiB; case is ignored and
// a space may separate number and unit), as in "67108864", "64MiB" or
// "1 GB".
func Parse(s string) (Size, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("invalid size %q: want a non-negative integer with an optional unit (%s), like \"64MiB\"", s, byteUnitList)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	unit := strings.TrimSpace(t[i:])
	if unit == "" {
		return Size(n), nil
	}
	for _, u := range byteUnits {
		if strings.EqualFold(unit, u.name) {
			if n > math.MaxInt64/int64(u.size) {
				return 0, fmt.Errorf("invalid size %q: too large", s)
			}
			return Size(n) * u.size, nil
		}
	}
	return 0, fmt.Errorf("invalid size %q: unknown unit %q (want %s)", s, unit, byteUnitList)
}

// String formats b with the largest unit that divides it exactly, binary
// units first: 64MiB, 2GB, 1500B. Parse reads back every
// non-negative size it formats.
func (b Size) String() string {
	if b == 0 {
		return "0B"
	}
	for _, u := range byteUnits {
		if b%u.size == 0 {
			return strconv.FormatInt(int64(b/u.size), 10) + u.name
		}
	}
	panic("unreachable: every size is a multiple of 1B")
}

// MarshalText implements encoding.TextMarshaler with String's format.
func (b Size) MarshalText() ([]byte, error) {
	return []byte(b.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with Parse.
func (b *Size) UnmarshalText(text []byte) error {
	if b == nil {
		return errors.New("bytesize: UnmarshalText on a nil *Size")
	}
	v, err := Parse(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}
