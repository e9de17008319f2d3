package triton

// Canonical exposes canonical (wire_test.go) to the external tests.
var Canonical = canonical
