package localdb

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Version is the dynoxide release the project pins (the crate dynoxide-rs on
// crates.io). The Makefile installs the same version; keep them in step.
const Version = "3.2.0"

// ReportedVersion is what `dynoxide --version` prints for Version: the
// binary reports its product version, which differs from the crate's.
const ReportedVersion = "dynoxide 1.5.0"

// EnvBinary names the variable that points at a dynoxide binary. The
// Makefile sets it to the one it installed.
const EnvBinary = "DYNOXIDE"

// toolPath is where `make dynoxide` installs the binary, relative to the
// repository root.
const toolPath = ".tools/dynoxide/bin/dynoxide"

// ErrNoBinary is returned by Binary when no dynoxide of the pinned version
// can be found.
var ErrNoBinary = errors.New("localdb: no dynoxide found that reports '" + ReportedVersion + "' (crate dynoxide-rs " + Version + "): run `make dynoxide` (needs Rust's cargo) or set " + EnvBinary + " to a dynoxide binary")

// Binary returns the dynoxide binary to run: the one $DYNOXIDE names, else
// the one `make dynoxide` installed in the repository that holds the
// working directory, else a dynoxide on PATH that reports the pinned
// version.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("localdb: %s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	if p, ok := RepoFile(toolPath); ok {
		return p, nil
	}
	if p, err := exec.LookPath("dynoxide"); err == nil {
		out, err := exec.Command(p, "--version").Output()
		if err == nil && strings.TrimSpace(string(bytes.TrimSpace(out))) == ReportedVersion {
			return p, nil
		}
	}
	return "", ErrNoBinary
}

// RepoFile returns the file at rel in the working directory or the nearest
// folder above it, up to the repository's root (the folder with go.mod).
func RepoFile(rel string) (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return "", false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
