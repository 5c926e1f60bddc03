package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/testing/samtest"
)

// bins are the bootstrap and the emulator, built once per test binary by
// TestMain.
var bins samtest.Binaries

// TestMain builds the binaries, runs the tests and fails the package when a
// goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(samtest.WithBinaries(m, &bins, "oncecall-bootstrap-"))
}
