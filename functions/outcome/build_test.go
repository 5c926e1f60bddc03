package main

import (
	"testing"

	"github.com/oncecall/oncecall/internal/testing/samtest"
)

// TestSAMBuildTarget runs the Makefile target `sam build` runs for
// OutcomeFunction and inspects what it produced.
func TestSAMBuildTarget(t *testing.T) {
	samtest.CheckMakeTarget(t, "build-OutcomeFunction", "github.com/oncecall/oncecall/functions/outcome")
}
