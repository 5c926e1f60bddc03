package main

import (
	"context"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSAMBuildTarget runs the Makefile target `sam build` runs for
// CallbackFunction (template.yaml: BuildMethod makefile) and inspects what
// it produced: the bootstrap Lambda's provided.al2023 arm64 runtime loads.
func TestSAMBuildTarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed: `make test` and `sam build` both run it")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", "-C", "../..", "build-CallbackFunction", "ARTIFACTS_DIR="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build-CallbackFunction: %v\n%s", err, b)
	}
	path := filepath.Join(out, "bootstrap")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&0o111 == 0 {
		t.Error("bootstrap is not executable")
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("not an ELF binary: %v", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 || f.Class != elf.ELFCLASS64 {
		t.Errorf("machine %v %v, want 64-bit arm64", f.Machine, f.Class)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("dynamically linked: provided.al2023 needs no libc from it, build with CGO_ENABLED=0")
		}
	}
	for _, name := range []string{".symtab", ".debug_info"} {
		if f.Section(name) != nil {
			t.Errorf("section %s present: not stripped (-ldflags -s -w)", name)
		}
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"GOOS": "linux", "GOARCH": "arm64", "CGO_ENABLED": "0", "-tags": "lambda.norpc", "-trimpath": "true"} {
		if settings[k] != want {
			t.Errorf("build setting %s = %q, want %q", k, settings[k], want)
		}
	}
	// With -trimpath the go command does not record -ldflags; the absent
	// symbol and DWARF sections above are the evidence of -s -w.
	if bi.Path != "github.com/oncecall/oncecall/functions/callback" {
		t.Errorf("main package %q", bi.Path)
	}
	t.Logf("bootstrap for provided.al2023 arm64: %d bytes", st.Size())
}
