package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/dev/samtest"
)

// TestSAMBuildTarget runs the Makefile target `sam build` runs for
// DeliverFunction (template.yaml: BuildMethod makefile) and inspects what
// it produced: the bootstrap Lambda's provided.al2023 arm64 runtime loads.
func TestSAMBuildTarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed: `make test` and `sam build` both run it")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", "-C", "../..", "build-DeliverFunction", "ARTIFACTS_DIR="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build-DeliverFunction: %v\n%s", err, b)
	}
	samtest.CheckBootstrap(t, filepath.Join(out, "bootstrap"), "github.com/oncecall/oncecall/functions/deliver")
}
