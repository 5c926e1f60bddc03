package loadtest_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testing/doctest"
)

// TestMakeRunInstallsRTOnlyForItsOwn: make run DESTINATION=rt installs
// Request Tracker only when it starts its own, without DESTINATION_URL; a
// DESTINATION_URL, on the command line or in the environment, points at
// another RT and installs nothing. make -n shows what make would run.
func TestMakeRunInstallsRTOnlyForItsOwn(t *testing.T) {
	root, err := doctest.Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args, env []string
		install   bool
	}{
		{[]string{"DESTINATION=rt"}, nil, true},
		{[]string{"DESTINATION=rt", "DESTINATION_URL=https://rt.example.com"}, nil, false},
		{[]string{"DESTINATION=rt"}, []string{"DESTINATION_URL=https://rt.example.com"}, false},
		{[]string{"DESTINATION=webhook"}, nil, false},
	} {
		cmd := exec.Command("make", append([]string{"-n", "run"}, c.args...)...)
		cmd.Dir = root
		cmd.Env = append(cmd.Environ(), c.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n run %v: %v\n%s", c.args, err, out)
		}
		if got := strings.Contains(string(out), "apt-get install"); got != c.install {
			t.Errorf("make run %v (environment %v): installs Request Tracker %v, want %v", c.args, c.env, got, c.install)
		}
	}
}
