package experiment

import (
	"testing"

	"github.com/twmb/murmur3"
)

// TestMurmur3Vectors checks the hash against published murmur3 x86_32
// vectors (SMHasher's verification set as collected with the reference
// implementation), so that the library cannot drift from the algorithm
// other languages implement.
func TestMurmur3Vectors(t *testing.T) {
	tests := []struct {
		data string
		seed uint32
		want uint32
	}{
		{"", 0, 0},
		{"", 1, 0x514E28B7},
		{"", 0xffffffff, 0x81F16F39},
		{"\x00\x00\x00\x00", 0, 0x2362F9DE},
		{"aaaa", 0x9747b28c, 0x5A97808A},
		{"aaa", 0x9747b28c, 0x283E0130},
		{"aa", 0x9747b28c, 0x5D211726},
		{"a", 0x9747b28c, 0x7FA09EA6},
		{"abcd", 0x9747b28c, 0xF0478627},
		{"abc", 0x9747b28c, 0xC84A62DD},
		{"ab", 0x9747b28c, 0x74875592},
		{"Hello, world!", 0x9747b28c, 0x24884CBA},
		{"The quick brown fox jumps over the lazy dog", 0x9747b28c, 0x2FA826CD},
		{"The quick brown fox jumps over the lazy dog", 0, 0x2E4FF723},
		{"test", 0, 0xBA6BD213},
	}
	for _, tt := range tests {
		if got := murmur3.SeedStringSum32(tt.seed, tt.data); got != tt.want {
			t.Errorf("murmur3_x86_32(%q, seed %#x) = %#08x, want %#08x", tt.data, tt.seed, got, tt.want)
		}
	}
}

// TestHashJoinsWithColon checks the hashed string: experiment + ":" + key.
func TestHashJoinsWithColon(t *testing.T) {
	if got, want := Hash("exp", "user-1", 0), murmur3.SeedStringSum32(0, "exp:user-1"); got != want {
		t.Errorf("Hash = %#x, want murmur3(\"exp:user-1\") = %#x", got, want)
	}
	if Hash("exp", "user-1", 0) == Hash("exp", "user-1", 1) {
		t.Error("the two seeds give the same hash")
	}
}

func TestBucket(t *testing.T) {
	tests := []struct {
		h     uint32
		total uint64
		want  uint64
	}{
		{0, 100, 0},
		{1<<32 - 1, 100, 99},
		{1 << 31, 100, 50},
		{1<<31 - 1, 100, 49},
		{1<<32 - 1, MaxArms * MaxWeight, MaxArms*MaxWeight - 1},
	}
	for _, tt := range tests {
		if got := Bucket(tt.h, tt.total); got != tt.want {
			t.Errorf("Bucket(%#x, %d) = %d, want %d", tt.h, tt.total, got, tt.want)
		}
	}
}
