package loadtest_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/bench/loadtest"
	"github.com/oncecall/oncecall/internal/testing/doctest"
)

// The addresses the docs use, those of make run.
const (
	docCallback = "http://127.0.0.1:3210"
	docStore    = "http://127.0.0.1:8000"
	docHelpdesk = "http://127.0.0.1:8025"
	docControl  = "http://127.0.0.1:8026"
)

// blockEnd separates the outputs of the blocks one shell runs.
const blockEnd = "@@oncecall-doc-block-end@@"

// TestDocCommands runs every shell block the docs mark `run`, as written,
// with bash, in the repository's root: the blocks of a page in order in one
// shell (a variable one block sets, the next uses), against the server the
// latest `server` block of the page starts (make run with its settings; a
// page without one gets plain make run). The one departure: the server
// listens on free ports, and the docs' addresses of make run are replaced
// by its addresses in the commands, and back in what they print. Every
// block must exit 0, and where the docs show its output (a json or text
// block right after it) it must print that, line by line ("…" stands for
// anything).
func TestDocCommands(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed to run the docs' commands")
	}
	for _, tool := range []string{"curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run the docs' commands (README's prerequisites name it)", tool)
		}
	}
	root, pages, err := doctest.Load()
	if err != nil {
		t.Fatal(err)
	}
	// The docs' admin commands run the built tool (make tools), as a
	// reader's do.
	build := exec.Command("make", "-s", "tools")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make tools: %v\n%s", err, out)
	}
	ran := 0
	for _, p := range pages {
		// Split the page's blocks into runs: each server block starts one.
		type run struct {
			server string
			blocks []doctest.Block
		}
		var runs []run
		server := "make run"
		for _, b := range doctest.Blocks(p.Path, p.Text) {
			switch b.Mark {
			case doctest.MarkServer:
				server = strings.Join(strings.Fields(strings.ReplaceAll(strings.SplitN(b.Text, "#", 2)[0], "\\\n", " ")), " ")
				runs = append(runs, run{server: server})
			case doctest.MarkRun:
				if len(runs) == 0 {
					runs = append(runs, run{server: server})
				}
				runs[len(runs)-1].blocks = append(runs[len(runs)-1].blocks, b)
			}
		}
		for _, r := range runs {
			if len(r.blocks) == 0 {
				continue
			}
			t.Run(strings.ReplaceAll(p.Path, "/", "_")+"/"+strings.ReplaceAll(r.server, " ", "_"), func(t *testing.T) {
				ran += len(r.blocks)
				runBlocks(t, root, r.server, r.blocks)
			})
		}
	}
	if ran < 6 {
		t.Errorf("only %d blocks of the docs ran", ran)
	}
}

// runBlocks starts the server as the make run line says and runs blocks in
// one bash.
func runBlocks(t *testing.T, root, makeRun string, blocks []doctest.Block) {
	words := strings.Fields(makeRun)
	if len(words) < 2 || words[0] != "make" || words[1] != "run" {
		t.Fatalf("the server block %q is not a make run line", makeRun)
	}
	for _, w := range words[2:] {
		if !strings.Contains(w, "=") {
			t.Fatalf("the server block %q sets %q, which is not VAR=value", makeRun, w)
		}
	}
	s, err := loadtest.Start(serverBin, append([]string{"LOG_LEVEL=INFO"}, words[2:]...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	pairs := [][2]string{{docCallback, s.URL}, {docStore, s.Endpoint}}
	if s.Helpdesk != "" {
		pairs = append(pairs, [2]string{docHelpdesk, strings.TrimSuffix(s.Helpdesk, "/")}, [2]string{docControl, s.HelpdeskControl})
	}
	there := func(text string) string {
		for _, p := range pairs {
			text = strings.ReplaceAll(text, p[0], p[1])
		}
		return text
	}
	back := func(text string) string {
		for _, p := range pairs {
			text = strings.ReplaceAll(text, p[1], p[0])
		}
		return text
	}
	var script strings.Builder
	script.WriteString("set -eo pipefail\n")
	for _, b := range blocks {
		script.WriteString(there(b.Text) + "\nprintf '\\n" + blockEnd + "\\n'\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = root
	// The admin tool finds the server's store as it finds make run's.
	cmd.Env = append(os.Environ(), "DYNAMODB_ENDPOINT="+s.Endpoint, "TABLE_NAME="+s.Table, "HOOK_KEY=", "ONCECALL_OPERATOR=docs-test")
	out, err := cmd.Output()
	outputs := strings.Split(back(string(out)), "\n"+blockEnd+"\n")
	if err != nil {
		done := len(outputs) - 1
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		if done < len(blocks) {
			t.Fatalf("%s:%d failed (%v):\n%s\nit printed:\n%s\n%s\nserver log:\n%s", blocks[done].Page, blocks[done].Line, err, blocks[done].Text, outputs[done], stderr, s.Logs())
		}
		t.Fatalf("the blocks failed: %v\n%s", err, stderr)
	}
	for i, b := range blocks {
		if !b.HasOutput {
			continue
		}
		if i >= len(outputs) {
			t.Errorf("%s:%d printed nothing", b.Page, b.Line)
			continue
		}
		if err := matchOutput(b.Output, outputs[i]); err != "" {
			t.Errorf("%s:%d shows\n%s\nbut printed\n%s\n%s", b.Page, b.Line, b.Output, outputs[i], err)
		}
	}
}

// matchOutput compares what a block printed with what the docs show, line
// by line; "…" in a shown line matches anything.
func matchOutput(shown, printed string) string {
	want := strings.Split(strings.TrimSpace(shown), "\n")
	got := strings.Split(strings.TrimSpace(printed), "\n")
	if len(want) != len(got) {
		return "a different number of lines"
	}
	for i := range want {
		parts := strings.Split(strings.TrimSpace(want[i]), "…")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		if !regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(strings.TrimSpace(got[i])) {
			return "line " + strings.TrimSpace(want[i]) + " differs"
		}
	}
	return ""
}
