// Package suitetest holds what the randomized tests of the suite share: one
// seed per run, taken from ONCECALL_TEST_SEED when it is set and drawn
// afresh otherwise, and logged by every test that uses it, so that a
// failure seen once can be replayed.
//
// Seed returns the run's seed (for plans that take one, such as
// loadtest.Plan); Rand gives a test a math/rand/v2 generator from it; Check
// runs a rapid property with rapid seeded from it, unless rapid's own
// -rapid.seed flag or RAPID_SEED variable chose rapid's seed.
//
//	ONCECALL_TEST_SEED=12345 make test
package suitetest
