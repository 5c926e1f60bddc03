package main

import (
	"testing"

	"github.com/oncecall/oncecall/internal/testing/samtest"
)

// TestSAMBuildTarget runs the Makefile target `sam build` runs for
// CallbackFunction (template.yaml: BuildMethod makefile) and inspects what
// it produced: the bootstrap Lambda's provided.al2023 arm64 runtime loads.
func TestSAMBuildTarget(t *testing.T) {
	samtest.CheckMakeTarget(t, "build-CallbackFunction", "github.com/oncecall/oncecall/functions/callback")
}
