package bytesize

import (
	"math"
	"strconv"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Size
		err  string
	}{
		{in: "0", want: 0},
		{in: "67108864", want: 64 * MiB},
		{in: "1B", want: 1},
		{in: "1KB", want: 1000},
		{in: "1MB", want: 1000 * 1000},
		{in: "2GB", want: 2 * 1000 * 1000 * 1000},
		{in: "1KiB", want: 1024},
		{in: "64MiB", want: 64 << 20},
		{in: "2GiB", want: 2 << 30},
		{in: " 64 MiB ", want: 64 << 20},
		{in: "64mib", want: 64 << 20},
		{in: "10kb", want: 10000},
		{in: "007KiB", want: 7 << 10},
		{in: strconv.FormatInt(math.MaxInt64, 10), want: math.MaxInt64},
		{in: "", err: `invalid size "": want a non-negative integer with an optional unit (B, KB, MB, GB, KiB, MiB or GiB), like "64MiB"`},
		{in: "MiB", err: `invalid size "MiB": want a non-negative integer with an optional unit (B, KB, MB, GB, KiB, MiB or GiB), like "64MiB"`},
		{in: "-1", err: `invalid size "-1": want a non-negative integer with an optional unit (B, KB, MB, GB, KiB, MiB or GiB), like "64MiB"`},
		{in: "+1", err: `invalid size "+1": want a non-negative integer with an optional unit (B, KB, MB, GB, KiB, MiB or GiB), like "64MiB"`},
		{in: "1.5MiB", err: `invalid size "1.5MiB": unknown unit ".5MiB" (want B, KB, MB, GB, KiB, MiB or GiB)`},
		{in: "1TB", err: `invalid size "1TB": unknown unit "TB" (want B, KB, MB, GB, KiB, MiB or GiB)`},
		{in: "1 M", err: `invalid size "1 M": unknown unit "M" (want B, KB, MB, GB, KiB, MiB or GiB)`},
		{in: "9223372036854775808", err: `invalid size "9223372036854775808": too large`},
		{in: "9000000000GiB", err: `invalid size "9000000000GiB": too large`},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err {
				t.Errorf("Parse(%q) = %d, %v; want error %q", tt.in, got, err, tt.err)
			}
		case err != nil || got != tt.want:
			t.Errorf("Parse(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestSizeString(t *testing.T) {
	tests := []struct {
		in   Size
		want string
	}{
		{0, "0B"},
		{1, "1B"},
		{1023, "1023B"},
		{1000, "1KB"},
		{1024, "1KiB"},
		{64 * MiB, "64MiB"},
		{1<<31 - 1, "2147483647B"},
		{2 * GB, "2GB"},
		{3 * GiB, "3GiB"},
		{2048000, "2000KiB"},
		{1500, "1500B"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("Size(%d).String() = %q, want %q", int64(tt.in), got, tt.want)
		}
		back, err := Parse(tt.want)
		if err != nil || back != tt.in {
			t.Errorf("Parse(%q) = %d, %v; want %d", tt.want, back, err, int64(tt.in))
		}
	}
}

func TestSizeText(t *testing.T) {
	var b Size
	if err := b.UnmarshalText([]byte("5KiB")); err != nil || b != 5*KiB {
		t.Errorf("UnmarshalText(5KiB): %d, %v", b, err)
	}
	if err := b.UnmarshalText([]byte("5 apples")); err == nil {
		t.Errorf("UnmarshalText(5 apples) = nil error, value %d", b)
	}
	if b != 5*KiB {
		t.Errorf("a failed UnmarshalText changed the value to %d", b)
	}
	if text, err := (3 * MB).MarshalText(); err != nil || string(text) != "3MB" {
		t.Errorf("MarshalText = %q, %v; want 3MB", text, err)
	}
}
