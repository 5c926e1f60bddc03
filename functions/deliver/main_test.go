package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The real binaries, built once per test binary by TestMain.
var (
	bootstrapPath string
	emulatorPath  string
)

// emulatorPkg is the Runtime Interface Emulator, pinned by go.mod's tool
// directive, so the go command alone builds it.
const emulatorPkg = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"

// TestMain builds the binaries, runs the tests and fails the package when a
// goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(withBinaries{m}) }

// withBinaries builds the worker's bootstrap and the emulator into a
// temporary folder before the tests and removes it after them.
type withBinaries struct{ m *testing.M }

func (w withBinaries) Run() int {
	dir, err := os.MkdirTemp("", "oncecall-deliver-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bootstrapPath = filepath.Join(dir, "bootstrap")
	emulatorPath = filepath.Join(dir, "aws-lambda-rie")
	// The bootstrap as the Makefile builds it, for this machine's
	// architecture so that it runs here.
	if err := goBuild(ctx, "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", bootstrapPath, "."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := goBuild(ctx, "-o", emulatorPath, emulatorPkg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return w.m.Run()
}

// goCommand is the go command that runs the tests.
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	// The test binary was built here by this very toolchain, so its GOROOT
	// is the one to use.
	return filepath.Join(runtime.GOROOT(), "bin", "go") //nolint:staticcheck // see above
}

func goBuild(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, goCommand(), append([]string{"build"}, args...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build %v: %w\n%s", args, err, out)
	}
	return nil
}
