// Package jsontext reads and writes JSON text the way Triton's HTTP
// endpoint does, for package tritonhttp: Scanner reads one document value
// by value without building a tree, accepting what Triton's parser
// (rapidjson, NaN and Inf allowed) accepts, with Triton's number rules
// (ParseInt, ParseFloat: the nearest float64, or out of range) and a
// tensor's JSON data read straight into its raw little-endian contents
// (ReadData); AppendString and AppendFloat write strings and numbers as
// Triton writes them.
package jsontext
