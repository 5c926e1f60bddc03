package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuiltToolExitCodes: `make tools` builds bin/oncecall-admin, and that
// binary, run as a process, ends with the exit codes its usage documents
// (go run would end every failure with 1): 2 for a usage error, 3 for a
// user that does not exist, 4 for a change the record refuses.
func TestBuiltToolExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tools with make")
	}
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make on PATH")
	}
	dir := t.TempDir()
	build := exec.Command(makeBin, "--no-print-directory", "-C", filepath.Join("..", ".."), "tools", "TOOLS_DIR="+dir)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make tools: %v\n%s", err, out)
	}
	for _, name := range []string{"oncecall-admin", "oncecall-helpdesk"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("make tools made no executable %s: %v", name, err)
		}
	}
	r := newRig(t)
	for _, tc := range []struct {
		code int
		args []string
		says string
	}{
		{exitUsage, nil, "usage: oncecall-admin"},
		{exitUsage, []string{"user", "get"}, "-id is required"},
		{exitNotFound, []string{"user", "get", "-id", "user-nobody"}, "no user user-nobody"},
		{exitConflict, []string{"user", "add", "-id", "user-a", "-tenant", "tenant-a", "-functions", "get_ticket", "-operator", "tester"}, "already exists"},
		{exitOK, []string{"user", "get", "-id", "user-a"}, ""},
	} {
		cmd := exec.Command(filepath.Join(dir, "oncecall-admin"), tc.args...)
		cmd.Env = append(os.Environ(), "DYNAMODB_ENDPOINT="+r.env.Endpoint, "TABLE_NAME="+r.env.Table, "ONCECALL_OPERATOR=")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.Contains(stderr.String(), tc.says) {
			t.Errorf("bin/oncecall-admin %s: exit %d, want %d; stderr %q should say %q", strings.Join(tc.args, " "), code, tc.code, stderr.String(), tc.says)
		}
	}
}
