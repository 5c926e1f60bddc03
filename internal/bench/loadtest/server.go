package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is a running oncecall server process.
type Server struct {
	// URL is the base URL, http://127.0.0.1:port; the callback is
	// URL+"/callback".
	URL string
	// Endpoint is the store the server uses: its embedded one or
	// DYNAMODB_ENDPOINT.
	Endpoint string
	// Table is the table it serves.
	Table string
	// Helpdesk is the local helpdesk's base URL, when the server started
	// one, and HelpdeskControl the address its control API keeps through
	// a refuse fault.
	Helpdesk, HelpdeskControl string
	// RT is the local Request Tracker's base URL, when the server started
	// one (DESTINATION=rt without DESTINATION_URL).
	RT string

	cmd  *exec.Cmd
	done chan struct{}

	mu   sync.Mutex
	logs strings.Builder
}

// StartTimeout bounds how long a server may take to start serving.
const StartTimeout = time.Minute

// maxLogBytes bounds the server log kept in memory.
const maxLogBytes = 16 << 20

// configVars are the settings a started server must not inherit from the
// caller's environment unless given explicitly.
var configVars = []string{"TABLE_NAME", "DYNAMODB_ENDPOINT", "HOOK_KEY", "HOOK_KEY_PREVIOUS", "HOOK_KEY_SECRET_ARN",
	"NONCE_MAX_COST", "RETENTION", "KEY_POLICY", "LOG_LEVEL", "PUBLIC_URL",
	"DESTINATION", "DESTINATION_URL", "ZENDESK_SUBDOMAIN", "DESTINATION_TOKEN", "DESTINATION_SECRET_ARN",
	"DESTINATION_DEDUP_WINDOW", "DESTINATION_LOOKUP", "DESTINATION_SETTLE_DELAY", "DESTINATION_REQUEST_HORIZON", "DESTINATION_TIMEOUT",
	"DESTINATION_MAX_ATTEMPTS", "DESTINATION_MAX_AGE", "DELIVERY_INLINE_TIMEOUT", "DELIVERY_SWEEP_INTERVAL", "RT_QUEUE"}

// Start runs the oncecall binary at bin on free loopback ports with the
// settings in env (NAME=value) and returns once it serves. Without
// DYNAMODB_ENDPOINT in env it starts its own embedded store.
func Start(bin string, env ...string) (*Server, error) {
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-db-addr", "127.0.0.1:0", "-helpdesk-addr", "127.0.0.1:0", "-rt-addr", "127.0.0.1:0")
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(configVars, name) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("loadtest: start %s: %w", bin, err)
	}
	s := &Server{cmd: cmd, done: make(chan struct{})}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "DYNAMODB_ENDPOINT="); ok {
			s.Endpoint = v
		}
	}
	ready := make(chan error, 1)
	go s.read(stderr, ready)
	go func() { _ = cmd.Wait(); close(s.done) }()
	select {
	case err := <-ready:
		if err != nil {
			s.Kill()
			return nil, fmt.Errorf("loadtest: %s did not start: %w\n%s", bin, err, s.Logs())
		}
	case <-time.After(StartTimeout):
		s.Kill()
		return nil, fmt.Errorf("loadtest: %s did not serve within %v\n%s", bin, StartTimeout, s.Logs())
	}
	return s, nil
}

// read keeps the server's log and reports when it serves.
func (s *Server) read(r io.Reader, ready chan<- error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	signalled := false
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		if s.logs.Len() < maxLogBytes {
			s.logs.WriteString(line + "\n")
		}
		s.mu.Unlock()
		if signalled {
			continue
		}
		var e struct {
			Msg, Endpoint, Callback, Table, URL string
			Control                             string `json:"control_during_refuse"`
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		switch {
		case strings.HasPrefix(e.Msg, "local store (dynoxide"):
			s.Endpoint = e.Endpoint
		case e.Msg == "local Request Tracker":
			s.RT = e.URL
		case e.Msg == "local helpdesk":
			s.Helpdesk = e.URL
			s.HelpdeskControl = strings.TrimSuffix(strings.TrimSuffix(e.Control, "/"), "/_helpdesk")
		case e.Msg == "serving":
			s.URL, s.Table = strings.TrimSuffix(e.Callback, "/callback"), e.Table
			signalled = true
			ready <- nil
		}
	}
	if !signalled {
		ready <- errors.New("its log ended before it served")
	}
}

// Logs returns what the server has logged so far.
func (s *Server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// Stop asks the server to shut down and waits for it; it kills the process
// if it has not stopped within ten seconds.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.Kill()
	}
}

// Kill ends the process at once, as a crash would, and waits for it.
func (s *Server) Kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Build compiles the module's programs, named by their folder from the
// module root (such as "cmd/oncecall"), into dir and returns the binaries'
// paths, in order. It runs the go command found on PATH or in GOROOT from
// the module root that contains the working directory.
func Build(ctx context.Context, dir string, programs ...string) ([]string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	out, err := exec.CommandContext(ctx, gobin, "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		return nil, fmt.Errorf("loadtest: no module root: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	paths := make([]string, len(programs))
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for i, p := range programs {
		paths[i] = filepath.Join(dir, filepath.Base(p))
		args = append(args, "./"+p)
	}
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("loadtest: go build: %w\n%s", err, out)
	}
	return paths, nil
}
