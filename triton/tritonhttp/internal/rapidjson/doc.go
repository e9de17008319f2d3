// Package rapidjson reproduces the syntax check of rapidjson's reader, the
// parser of Triton's HTTP server, with NaN and Inf allowed: Check says
// whether a document parses and, when not, rapidjson's own message and
// offset. It follows the reader rule for rule: the input ends at its
// length or at a NUL byte, whichever comes first (rapidjson's memory
// stream reads NUL at the end, and stops there); a NUL inside a string is
// a missing closing quotation mark; each error is reported at the offset
// rapidjson reports. It is iterative, so a deeply nested document costs no
// stack.
package rapidjson
