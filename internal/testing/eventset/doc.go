// Package eventset reads the sample API Gateway HTTP API events of events/
// and the outcomes expected of them (events/expected.json), and plays them
// in order against one store: an event that needs an earlier one's state
// (a duplicate, a get_ticket of the created ticket) names it, and the
// created ticket's id is carried into the events that read it.
//
// `make invoke` (internal/testing/cmd/oncecall-invoke) and the tests in functions/callback
// both use it, so the files that people try by hand are the files the tests
// assert.
package eventset
