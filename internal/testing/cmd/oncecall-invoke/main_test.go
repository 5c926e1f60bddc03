package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/testing/eventset"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// root is the module root, where the Makefile and events/ are.
const root = "../../../.."

// eventFiles lists the event files of events/, without the manifest and the SAM
// environment file beside them.
func eventFiles(t *testing.T) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(root, "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range all {
		if b := filepath.Base(p); b != eventset.ManifestFile && b != eventset.SAMEnvFile {
			out = append(out, "events/"+b)
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d events in events/", len(out))
	}
	return out
}

// makeDry prints the commands `make invoke` would run with the given
// EVENT, and returns the oncecall-invoke command line's arguments after the
// flags.
func makeDry(t *testing.T, event string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "make", "-n", "-C", root, "invoke", "EVENT="+event).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n invoke EVENT=%q: %v\n%s", event, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, "./internal/testing/cmd/oncecall-invoke "); i >= 0 {
			var names []string
			for _, f := range strings.Fields(line[i:])[1:] {
				if strings.HasPrefix(f, "events/") {
					names = append(names, f)
				}
			}
			return names
		}
	}
	t.Fatalf("make -n invoke EVENT=%q runs no oncecall-invoke:\n%s", event, out)
	return nil
}

// TestInvokeTakesEventsSeparatedByAnyWhitespace: EVENT may separate its
// events with spaces, tabs or newlines (as "$(ls events/*.json)" does), and
// EVENT=all names every event.
func TestInvokeTakesEventsSeparatedByAnyWhitespace(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed: the README's commands run it")
	}
	want := []string{"events/created.json", "events/duplicate.json", "events/get_ticket.json"}
	for _, ev := range []string{
		strings.Join(want, " "),
		strings.Join(want, "\n"),
		"\n" + strings.Join(want, "\t\n  ") + "\n",
	} {
		if got := makeDry(t, ev); !slices.Equal(got, want) {
			t.Errorf("EVENT=%q passes %q, want %q", ev, got, want)
		}
	}
	got := makeDry(t, "all")
	for _, ev := range eventFiles(t) {
		if !slices.Contains(got, ev) {
			t.Errorf("EVENT=all does not pass %s: %q", ev, got)
		}
	}
}

// TestReadmeInvokeEveryEvent runs the README's command for every event,
// as a shell runs it, through the real bootstrap under the emulator: each
// event must match events/expected.json.
func TestReadmeInvokeEveryEvent(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `make -s invoke EVENT="$(ls events/*.json)" LOCAL_BOOT="$BOOT" RIE_BIN="$RIE"`)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BOOT="+filepath.Join(dir, "bootstrap"), "RIE="+filepath.Join(dir, "aws-lambda-rie"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make invoke EVENT=\"$(ls events/*.json)\": %v\n%s", err, out)
	}
	text := string(out)
	if strings.Contains(text, "does NOT match events/") || strings.Contains(text, "does not match events/") {
		t.Fatalf("an event did not match events/%s:\n%s", eventset.ManifestFile, text)
	}
	for _, ev := range eventFiles(t) {
		if !strings.Contains(text, "== "+ev+":") {
			t.Errorf("%s was not played", ev)
		}
	}
	if n, want := strings.Count(text, "matches events/"+eventset.ManifestFile), len(eventFiles(t)); n != want {
		t.Errorf("%d events matched, want %d:\n%s", n, want, text)
	}
}
