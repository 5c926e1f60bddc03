// Package schema describes the parameters of a Protocol Function once and
// derives both the argument validator and the JSON Schema that AIVAX is given,
// so the two can never disagree.
//
// It supports what oncecall's functions need: strings with length bounds and
// an optional pattern or enumeration, and lists of such strings. Objects allow
// no parameters beyond those declared.
package schema
