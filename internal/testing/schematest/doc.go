// Package schematest generates JSON instances from a JSON Schema at the
// boundaries of every keyword the schema declares, for tests that compare
// validators: lengths one below, at and one above each bound (counted in
// Unicode characters, with one-, two-, three- and four-byte characters),
// enumeration members and near misses, strings that match a pattern and
// strings that just miss it (generated from the pattern itself), array
// sizes, repeated items, wrong types, null, missing required and unknown
// members.
//
// It knows the subset of JSON Schema that oncecall publishes and refuses a
// schema using any other keyword, so that a schema growing a keyword
// cannot go untested. Each instance says whether the schema's keywords
// accept it, by their definitions; a test compares that with the verdicts
// of the validators it checks.
package schematest
