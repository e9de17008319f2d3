package experiment

import "github.com/twmb/murmur3"

// Seeds of the two hashes of a key: one picks the arm, the other decides
// whether the key takes part when an experiment takes a share of the
// traffic.
const (
	ArmSeed     uint32 = 0
	TrafficSeed uint32 = 1
)

// Hash is murmur3 x86_32 of experiment + ":" + key with seed.
func Hash(experiment, key string, seed uint32) uint32 {
	return murmur3.SeedStringSum32(seed, experiment+":"+key)
}

// Bucket maps a hash to one of total buckets: (h · total) >> 32. total must
// be below 2³² (Split's weights are bounded well below it).
func Bucket(h uint32, total uint64) uint64 {
	return uint64(h) * total >> 32
}

// Admits reports whether a hash of the traffic seed falls within the
// traffic share: h / 2³² < share. The comparison is exact in float64, as in
// any language with IEEE doubles.
func Admits(h uint32, share float64) bool {
	return float64(h) < share*(1<<32)
}
