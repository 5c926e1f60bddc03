// Package localkms runs Local KMS (github.com/nsmithuk/local-kms, pinned by
// go.mod's tool directive, so the go command alone builds it), a server of
// AWS KMS's API on this machine, for tests of what oncecall asks of KMS:
// Encrypt and Decrypt with an encryption context under a symmetric key.
// It keeps KMS's cryptography (AES-GCM with the encryption context bound
// to the ciphertext) but no IAM: every caller may use every key, so a key
// policy's effect is not tested through it.
package localkms

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/oncecall/oncecall/internal/dynamo"
)

// Pkg is the server's package, built by Build.
const Pkg = "github.com/nsmithuk/local-kms"

// The account, region and keys the server is seeded with. AuditKey plays
// the stack's audit key; OtherKey a key of the same account whose use
// proves nothing about the decision role.
const (
	Account  = "111122223333"
	Region   = "us-east-1"
	AuditKey = "arn:aws:kms:" + Region + ":" + Account + ":key/6f1c2a8e-0b3d-4e5f-8a9b-0c1d2e3f4a5b"
	OtherKey = "arn:aws:kms:" + Region + ":" + Account + ":key/0d9e8f7a-6b5c-4d3e-9f2a-1b0c9d8e7f6a"
)

// seed is the server's seeding file: the two keys, each with its own
// backing key.
const seed = `Keys:
  Symmetric:
    Aes:
      - Metadata:
          KeyId: 6f1c2a8e-0b3d-4e5f-8a9b-0c1d2e3f4a5b
          Description: oncecall audit key (test)
        BackingKeys:
          - 3b7e1f0a9c2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f
      - Metadata:
          KeyId: 0d9e8f7a-6b5c-4d3e-9f2a-1b0c9d8e7f6a
          Description: another key of the account (test)
        BackingKeys:
          - a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90
`

// Limits of a run. A first build, with the modules downloaded (CI's go mod
// download) but an empty build cache, took 35 s on two quiet cores (53 s
// of CPU), 5 min 23 s on two cores shared at a load average of 20;
// BuildTimeout stays under go test's default 10 minutes, so that a build
// that cannot finish fails the test naming the build, never skips it.
const (
	BuildTimeout = 8 * time.Minute
	StartTimeout = 20 * time.Second
)

// Build builds the server into dir and returns the binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "local-kms")
	cmd := exec.CommandContext(ctx, goCommand(), "build", "-o", bin, Pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("localkms: go build %s: %w\n%s", Pkg, err, out)
	}
	return bin, nil
}

// goCommand is the go command that runs the tests.
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go") //nolint:staticcheck // the toolchain that built the test binary
}

// Server is a running Local KMS.
type Server struct {
	// URL is its endpoint on loopback.
	URL  string
	cmd  *exec.Cmd
	dir  string
	done chan error
}

// started is the server's line once it listens.
var started = regexp.MustCompile(`Local KMS started on [0-9.]*:([0-9]+)`)

// Start runs the binary bin with a fresh data folder, seeded with AuditKey
// and OtherKey, on a port of the system's choosing, and returns once it
// listens. Close stops it; it also ends with the process that started it.
func Start(ctx context.Context, bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "oncecall-localkms-")
	if err != nil {
		return nil, err
	}
	seedPath := filepath.Join(dir, "seed.yaml")
	if err := os.WriteFile(seedPath, []byte(seed), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT=0", "KMS_ACCOUNT_ID="+Account, "KMS_REGION="+Region,
		"KMS_DATA_PATH="+filepath.Join(dir, "data"), "KMS_SEED_PATH="+seedPath)
	cmd.SysProcAttr = sysProcAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{cmd: cmd, dir: dir, done: make(chan error, 1)}
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		found := false
		for sc.Scan() {
			if m := started.FindStringSubmatch(sc.Text()); m != nil && !found {
				found = true
				port <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, out)
		s.done <- cmd.Wait()
	}()
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case p := <-port:
		s.URL = "http://127.0.0.1:" + p
		return s, nil
	case err := <-s.done:
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("localkms: the server ended before it listened: %v", err)
	case <-timer.C:
	case <-ctx.Done():
	}
	_ = s.Close()
	return nil, errors.New("localkms: the server did not listen within " + StartTimeout.String())
}

// Close stops the server and removes its data.
func (s *Server) Close() error {
	_ = s.cmd.Process.Signal(interrupt)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	return os.RemoveAll(s.dir)
}

// String names the server for messages.
func (s *Server) String() string { return "Local KMS at " + strings.TrimPrefix(s.URL, "http://") }

// ForTest builds and starts a server for the test t, stopped when it ends,
// and returns it with a KMS client of it.
func ForTest(t testing.TB) (*Server, *kms.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), BuildTimeout)
	defer cancel()
	bin, err := Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Start(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv, kms.NewFromConfig(dynamo.LocalConfig(Region), func(o *kms.Options) { o.BaseEndpoint = aws.String(srv.URL) })
}
