package rie

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestInvocationLinesKeepsOnlyThatInvocation(t *testing.T) {
	all := []string{
		"init line",
		"START RequestId: a Version: $LATEST",
		`{"outcome":"created"}`,
		"END RequestId: a",
		"REPORT RequestId: a\tDuration: 1 ms",
		"START RequestId: ab Version: $LATEST",
		`{"outcome":"deduplicated"}`,
		"END RequestId: ab",
	}
	if got := invocationLines(all, "a"); !slices.Equal(got, []string{`{"outcome":"created"}`}) {
		t.Errorf("a: %q", got)
	}
	if got := invocationLines(all, "ab"); !slices.Equal(got, []string{`{"outcome":"deduplicated"}`}) {
		t.Errorf("ab: %q", got)
	}
	if got := invocationLines(all, "zz"); len(got) != 0 {
		t.Errorf("zz: %q", got)
	}
}

func TestLinesWait(t *testing.T) {
	l := newLines()
	go l.read(strings.NewReader("one\ntwo\nREPORT RequestId: x\n"), nil)
	if err := l.wait(context.Background(), "REPORT RequestId: x", time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := l.wait(context.Background(), "never", 50*time.Millisecond); err == nil {
		t.Error("waiting for a line never printed succeeded")
	}
	if time.Since(start) > 5*time.Second {
		t.Error("wait did not stop at its timeout")
	}
}

func TestStartNeedsTheBinaries(t *testing.T) {
	_, err := Start(context.Background(), Options{Emulator: "/nonexistent/aws-lambda-rie", Bootstrap: "/nonexistent/bootstrap"})
	if err == nil {
		t.Fatal("started without binaries")
	}
}
