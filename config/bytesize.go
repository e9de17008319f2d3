package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Units of ByteSize: powers of 1000 (B, KB, MB, GB) and of 1024 (KiB, MiB,
// GiB).
const (
	B   ByteSize = 1
	KB  ByteSize = 1000 * B
	MB  ByteSize = 1000 * KB
	GB  ByteSize = 1000 * MB
	KiB ByteSize = 1024 * B
	MiB ByteSize = 1024 * KiB
	GiB ByteSize = 1024 * MiB
)

// byteUnits are the unit suffixes ParseByteSize accepts, in the order
// String tries them (largest first, binary before decimal).
var byteUnits = []struct {
	name string
	size ByteSize
}{
	{"GiB", GiB}, {"GB", GB},
	{"MiB", MiB}, {"MB", MB},
	{"KiB", KiB}, {"KB", KB},
	{"B", B},
}

const byteUnitList = "B, KB, MB, GB, KiB, MiB or GiB"

// ParseByteSize parses a size in bytes: a non-negative integer, optionally
// followed by a unit (B, KB, MB, GB, KiB, MiB or GiB; case is ignored and
// a space may separate number and unit), as in "67108864", "64MiB" or
// "1 GB".
func ParseByteSize(s string) (ByteSize, error) {
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
		return ByteSize(n), nil
	}
	for _, u := range byteUnits {
		if strings.EqualFold(unit, u.name) {
			if n > math.MaxInt64/int64(u.size) {
				return 0, fmt.Errorf("invalid size %q: too large", s)
			}
			return ByteSize(n) * u.size, nil
		}
	}
	return 0, fmt.Errorf("invalid size %q: unknown unit %q (want %s)", s, unit, byteUnitList)
}

// String formats b with the largest unit that divides it exactly, binary
// units first: 64MiB, 2GB, 1500B. ParseByteSize reads back every
// non-negative size it formats.
func (b ByteSize) String() string {
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
func (b ByteSize) MarshalText() ([]byte, error) {
	return []byte(b.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseByteSize.
func (b *ByteSize) UnmarshalText(text []byte) error {
	if b == nil {
		return errors.New("config: UnmarshalText on a nil *ByteSize")
	}
	v, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}
