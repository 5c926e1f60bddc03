package rie

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limits of an emulator run.
const (
	// StartTimeout bounds the wait for the emulator to listen.
	StartTimeout = 10 * time.Second
	// ReportTimeout bounds the wait for an invocation's REPORT line once
	// its answer has arrived.
	ReportTimeout = 5 * time.Second
	// MaxOutputLines bounds the output kept in memory.
	MaxOutputLines = 100_000
	// MaxStarts bounds how many times Start runs the emulator on new ports
	// when one it was given is taken before it listens.
	MaxStarts = 5
)

// errAddrInUse: the emulator exited because one of its addresses was
// taken.
var errAddrInUse = errors.New("an address of the emulator was taken before it listened")

// testHookPicked, when set, is called with the addresses Start picked
// before it starts the emulator on them.
var testHookPicked func(api, addr string)

// Options describe one emulator run.
type Options struct {
	// Emulator is the path of the aws-lambda-rie binary.
	Emulator string
	// Bootstrap is the path of the function's bootstrap.
	Bootstrap string
	// Env is the function's whole environment ("NAME=value").
	Env []string
	// Echo, when set, receives a copy of everything the function and the
	// emulator print.
	Echo io.Writer
}

// Emulator is a running emulator with its function.
type Emulator struct {
	cmd    *exec.Cmd
	url    string
	client *http.Client
	exited chan struct{}
	stderr *lines

	invoke sync.Mutex
	out    *lines
}

// Invocation is the answer to one event.
type Invocation struct {
	// Status is the emulator's HTTP status: 200 when the function
	// answered, 502 when it failed to start or crashed.
	Status int
	// Body is the function's answer (or the emulator's error text).
	Body []byte
	// Output is what the function printed during the invocation,
	// without the emulator's START, END and REPORT lines.
	Output []string
}

// Start starts the emulator on free loopback ports. The function itself
// starts on the first invocation, as on Lambda. The ports are picked free
// and released before the emulator binds them, so another process may take
// one meanwhile: the emulator then exits saying so, and Start runs it again
// on new ports, up to MaxStarts times.
func Start(ctx context.Context, o Options) (*Emulator, error) {
	for _, p := range []string{o.Emulator, o.Bootstrap} {
		if _, err := os.Stat(p); err != nil {
			return nil, err
		}
	}
	bootstrap, err := filepath.Abs(o.Bootstrap)
	if err != nil {
		return nil, err
	}
	// Absolute, because the emulator runs in the bootstrap's folder.
	emulator, err := filepath.Abs(o.Emulator)
	if err != nil {
		return nil, err
	}
	for n := 1; ; n++ {
		e, err := start(ctx, o, emulator, bootstrap)
		if errors.Is(err, errAddrInUse) && n < MaxStarts {
			continue
		}
		return e, err
	}
}

// start runs the emulator once, on ports picked now.
func start(ctx context.Context, o Options, emulator, bootstrap string) (*Emulator, error) {
	api, err := freeAddr()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if testHookPicked != nil {
		testHookPicked(api, addr)
	}
	cmd := exec.Command(emulator,
		"--log-level", "error",
		"--runtime-api-address", api,
		"--runtime-interface-emulator-address", addr,
		bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = o.Env
	// Its own process group, so Close stops the function too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	e := &Emulator{
		cmd: cmd, url: "http://" + addr + "/2015-03-31/functions/function/invocations",
		client: &http.Client{}, exited: make(chan struct{}),
		out: newLines(), stderr: newLines(),
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var copying sync.WaitGroup
	copying.Add(2)
	go func() { defer copying.Done(); e.out.read(stdout, o.Echo) }()
	go func() { defer copying.Done(); e.stderr.read(stderr, o.Echo) }()
	go func() {
		copying.Wait()
		_ = cmd.Wait()
		close(e.exited)
	}()
	if err := e.waitListening(ctx, api, addr); err != nil {
		_ = e.Close()
		return nil, err
	}
	return e, nil
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String(), nil
}

// waitListening waits until the emulator's own process listens on both
// its addresses: a connection that succeeds is not enough, as whoever took
// a port would answer it too.
func (e *Emulator) waitListening(ctx context.Context, addrs ...string) error {
	deadline := time.Now().Add(StartTimeout)
	for {
		if held, err := listening(e.cmd.Process.Pid, addrs...); err != nil {
			return err
		} else if held {
			return nil
		}
		select {
		case <-e.exited:
			out := strings.Join(e.stderr.all(), "\n")
			if strings.Contains(out, syscall.EADDRINUSE.Error()) {
				return fmt.Errorf("%w: %s", errAddrInUse, firstLine(out, syscall.EADDRINUSE.Error()))
			}
			return fmt.Errorf("the emulator exited before listening: %s", out)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the emulator is not listening on %s after %s", strings.Join(addrs, " and "), StartTimeout)
		}
	}
}

// firstLine returns the first line of out that contains s.
func firstLine(out, s string) string {
	for l := range strings.Lines(out) {
		if strings.Contains(l, s) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// Invoke sends one event and waits for the answer. id is the request id
// (it marks the invocation's lines); invocations run one at a time.
func (e *Emulator) Invoke(ctx context.Context, id string, event []byte) (Invocation, error) {
	e.invoke.Lock()
	defer e.invoke.Unlock()
	from := e.out.len()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(event))
	if err != nil {
		return Invocation{}, err
	}
	req.Header.Set("X-Amzn-RequestId", id)
	resp, err := e.client.Do(req)
	if err != nil {
		return Invocation{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Invocation{}, err
	}
	inv := Invocation{Status: resp.StatusCode, Body: body}
	if resp.StatusCode == http.StatusOK {
		// The emulator prints REPORT before it answers, and the function
		// wrote its lines before answering, on the same pipe: once REPORT
		// is read, every line of the invocation is.
		if err := e.out.wait(ctx, "REPORT RequestId: "+id, ReportTimeout); err != nil {
			return inv, err
		}
	}
	inv.Output = invocationLines(e.out.since(from), id)
	return inv, nil
}

// invocationLines keeps the lines between START and END of id.
func invocationLines(all []string, id string) []string {
	var out []string
	in := false
	for _, l := range all {
		switch {
		case strings.HasPrefix(l, "START RequestId: "+id+" "):
			in = true
		case strings.HasPrefix(l, "END RequestId: "+id), strings.HasPrefix(l, "REPORT RequestId: "+id):
			in = false
		case in:
			out = append(out, l)
		}
	}
	return out
}

// Output returns every line printed on standard output so far: the
// function's (including its start-up) and the emulator's.
func (e *Emulator) Output() []string { return e.out.all() }

// WaitOutput waits until a line containing s is printed.
func (e *Emulator) WaitOutput(ctx context.Context, s string, timeout time.Duration) error {
	return e.out.wait(ctx, s, timeout)
}

// Close stops the emulator and the function and waits for them.
func (e *Emulator) Close() error {
	if e.cmd.Process == nil {
		return nil
	}
	// The emulator starts the function in a process group of its own, so
	// the function is found as the emulator's child and stopped by its
	// group; the emulator by the group Start created.
	pid := e.cmd.Process.Pid
	kids := children(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, k := range kids {
		_ = syscall.Kill(-k, syscall.SIGKILL)
		_ = syscall.Kill(k, syscall.SIGKILL)
	}
	select {
	case <-e.exited:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("the emulator did not exit")
	}
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			var k int
			if _, err := fmt.Sscan(f, &k); err == nil && k > 0 {
				out = append(out, k)
			}
		}
	}
	return out
}

// lines collects a stream's lines.
type lines struct {
	mu      sync.Mutex
	changed *sync.Cond
	buf     []string
}

func newLines() *lines {
	l := &lines{}
	l.changed = sync.NewCond(&l.mu)
	return l
}

func (l *lines) read(r io.Reader, echo io.Writer) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 4<<20)
	for s.Scan() {
		if echo != nil {
			fmt.Fprintln(echo, s.Text())
		}
		l.mu.Lock()
		if len(l.buf) < MaxOutputLines {
			l.buf = append(l.buf, s.Text())
		}
		l.changed.Broadcast()
		l.mu.Unlock()
	}
	// Drain whatever a too-long line left, so the writer never blocks.
	_, _ = io.Copy(io.Discard, r)
}

func (l *lines) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buf)
}

func (l *lines) all() []string { return l.since(0) }

func (l *lines) since(i int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.buf[i:]...)
}

// wait blocks until a line contains s, ctx ends or timeout passes.
func (l *lines) wait(ctx context.Context, s string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.changed.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for checked := 0; ; {
		for ; checked < len(l.buf); checked++ {
			if strings.Contains(l.buf[checked], s) {
				return nil
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("no output line with %q after %s", s, timeout)
		}
		l.changed.Wait()
	}
}
