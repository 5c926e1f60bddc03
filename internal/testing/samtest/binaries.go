package samtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/local/rie"
)

// EmulatorPkg is the Runtime Interface Emulator, pinned by go.mod's tool
// directive, so the go command alone builds it.
const EmulatorPkg = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"

// Limits of the binaries' builds and runs.
const (
	// buildTimeout bounds a build: the bootstrap and the emulator in
	// WithBinaries, a Makefile target in CheckMakeTarget.
	buildTimeout = 5 * time.Minute
	// startTimeout bounds starting the emulator and the bootstrap under it.
	startTimeout = time.Minute
)

// Binaries are the real programs a function's tests run: its bootstrap and
// the Runtime Interface Emulator to run it under.
type Binaries struct {
	// Bootstrap is the function's bootstrap as the Makefile builds it, but
	// for this machine's architecture so that it runs here.
	Bootstrap string
	// Emulator is the aws-lambda-rie binary.
	Emulator string
}

// WithBinaries wraps a test binary's m so that running it first builds the
// bootstrap of the package under test (the tests' working directory) and
// the emulator into a temporary folder named from prefix, sets bins to
// their paths, then runs the tests and removes the folder. A failed build
// fails the package before any test runs. Use it under a leak check:
//
//	var bins samtest.Binaries
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(samtest.WithBinaries(m, &bins, "oncecall-deliver-"))
//	}
func WithBinaries(m interface{ Run() int }, bins *Binaries, prefix string) interface{ Run() int } {
	return withBinaries{m: m, bins: bins, prefix: prefix}
}

type withBinaries struct {
	m      interface{ Run() int }
	bins   *Binaries
	prefix string
}

func (w withBinaries) Run() int {
	dir, err := os.MkdirTemp("", w.prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	w.bins.Bootstrap = filepath.Join(dir, "bootstrap")
	w.bins.Emulator = filepath.Join(dir, "aws-lambda-rie")
	// The bootstrap as the Makefile builds it, for this machine's
	// architecture so that it runs here.
	if err := goBuild(ctx, "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", w.bins.Bootstrap, "."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := goBuild(ctx, "-o", w.bins.Emulator, EmulatorPkg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return w.m.Run()
}

// StartEmulator runs the bootstrap under the emulator, with env as the
// function's whole environment. The emulator stops when the test ends.
func (b Binaries) StartEmulator(t testing.TB, env map[string]string) *rie.Emulator {
	t.Helper()
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	e, err := rie.Start(ctx, rie.Options{Emulator: b.Emulator, Bootstrap: b.Bootstrap, Env: list})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
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

// goBuild runs `go build args...` with cgo off.
func goBuild(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, goCommand(), append([]string{"build"}, args...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build %v: %w\n%s", args, err, out)
	}
	return nil
}
