// Package schema describes the parameters of a Protocol Function once and
// derives from that one description the argument validator, the
// normalization that says which arguments mean the same (defaults, absent
// members, sets), and the JSON Schema that AIVAX is given, so they can
// never disagree.
//
// It supports what oncecall's functions need: strings with length bounds,
// an optional pattern or enumeration and an optional default, and lists of
// such strings, which may be sets. Objects allow no parameters beyond those
// declared.
package schema
