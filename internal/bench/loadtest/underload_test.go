package loadtest_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testing/doctest"
)

// TestTheHogIsBounded: make test-under-load, as docs/development.md
// describes it, starts HOG_PROCS busy loops, each stopped by timeout after
// HOG_LIMIT and all killed when the recipe exits, and runs make test's go
// test RUNS times.
func TestTheHogIsBounded(t *testing.T) {
	root, err := doctest.Root()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-n", "--no-print-directory", "test-under-load", "RUNS=2", "HOG_PROCS=3", "HOG_LIMIT=7m", "TEST_PKGS=./x/")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n test-under-load: %v", err)
	}
	recipe := string(out)
	for _, want := range []string{
		"trap 'kill $pids 2>/dev/null' EXIT INT TERM",
		"for i in $(seq 3); do timeout 7m sh -c 'while :; do :; done' &",
		"for r in $(seq 2); do",
		"go test -race -count=1 -p",
		"./x/ >$logs/run-$r.log",
		"--- FAIL: ",
	} {
		if !strings.Contains(recipe, want) {
			t.Errorf("make test-under-load's recipe has no %q:\n%s", want, recipe)
		}
	}
	if dev := readRoot(t, root, "docs/development.md"); !strings.Contains(dev, "`make test-under-load`") || !strings.Contains(dev, "`HOG_LIMIT`") {
		t.Error("docs/development.md does not describe make test-under-load and its HOG_LIMIT")
	}
}
