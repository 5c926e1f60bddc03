// Package protocol is the AIVAX Protocol Function contract as oncecall
// serves it: the callback body it accepts, the limits it enforces while
// reading it, and the JSON answers it returns.
//
// Decode reads a callback body strictly. Problems with the envelope, which
// only the application or AIVAX can fix, are reported as *Problem values with
// HTTP status 400; problems inside function.content, which the model wrote and
// can correct, are reported with status 200 so that the model sees them.
package protocol
