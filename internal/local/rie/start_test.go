package rie

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// emulatorPkg is the emulator go.mod pins (samtest.EmulatorPkg, which
// imports this package).
const emulatorPkg = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"

// buildEmulator builds the pinned emulator into the test's folder.
func buildEmulator(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go") //nolint:staticcheck // the toolchain that built the test
	}
	out := filepath.Join(t.TempDir(), "aws-lambda-rie")
	cmd := exec.Command(goCmd, "build", "-o", out, emulatorPkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", emulatorPkg, err, b)
	}
	return out
}

// TestStartTakesNewPortsWhenOneIsTaken: another process takes the
// emulator's invoke address after Start picked it, then, on the next
// start, its runtime API address: Start starts the emulator again on new
// ports each time, and the address it returns is the emulator's, not the
// other process's (which accepts connections too).
func TestStartTakesNewPortsWhenOneIsTaken(t *testing.T) {
	emulator := buildEmulator(t)
	var taken []net.Listener
	defer func() {
		for _, ln := range taken {
			_ = ln.Close()
		}
	}()
	picks := 0
	testHookPicked = func(api, addr string) {
		picks++
		take := map[int]string{1: addr, 2: api}[picks]
		if take == "" {
			return
		}
		ln, err := net.Listen("tcp", take)
		if err != nil {
			t.Errorf("take %s: %v", take, err)
			return
		}
		taken = append(taken, ln)
	}
	defer func() { testHookPicked = nil }()
	e, err := Start(context.Background(), Options{Emulator: emulator, Bootstrap: "/bin/true"})
	if err != nil {
		t.Fatalf("Start with its ports taken: %v", err)
	}
	defer func() { _ = e.Close() }()
	if picks != 3 {
		t.Errorf("Start picked ports %d times, want 3 (two taken, then free)", picks)
	}
	for _, ln := range taken {
		if strings.Contains(e.url, "//"+ln.Addr().String()+"/") {
			t.Errorf("Start returned %s, the address another process took", e.url)
		}
	}
}
