package config

import "github.com/mergectl/react-triton/internal/bytesize"

// Units of ByteSize: powers of 1000 (B, KB, MB, GB) and of 1024 (KiB, MiB,
// GiB).
const (
	B   = bytesize.B
	KB  = bytesize.KB
	MB  = bytesize.MB
	GB  = bytesize.GB
	KiB = bytesize.KiB
	MiB = bytesize.MiB
	GiB = bytesize.GiB
)

// ParseByteSize parses a size in bytes: a non-negative integer, optionally
// followed by a unit (B, KB, MB, GB, KiB, MiB or GiB; case is ignored and
// a space may separate number and unit), as in "67108864", "64MiB" or
// "1 GB".
func ParseByteSize(s string) (ByteSize, error) { return bytesize.Parse(s) }
