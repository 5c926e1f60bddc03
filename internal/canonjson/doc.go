// Package canonjson parses JSON strictly and writes it in the canonical form
// of RFC 8785, the JSON Canonicalization Scheme (JCS).
//
// Parse accepts only I-JSON (RFC 7493): valid UTF-8, no lone surrogates, no
// duplicate object member names, finite numbers, and integers that a binary64
// double holds exactly. Everything it accepts has exactly one canonical form,
// so two documents that differ only in member order or insignificant
// whitespace canonicalize to the same bytes. Parse enforces a nesting limit and
// per-string limits so that hostile input costs bounded memory and time.
//
// Append writes a parsed value in canonical form: members sorted by their
// UTF-16 code units, numbers in the ECMAScript Number.prototype.toString form,
// and strings with the minimal escaping that JCS prescribes.
//
// Kind and Clip phrase refusals of a parsed document: the type of a value,
// and a caller's string shortened before it is echoed.
package canonjson
