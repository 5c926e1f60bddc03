package samtest

import (
	"context"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CheckMakeTarget runs the Makefile target `sam build` runs for a function
// built with BuildMethod makefile (target, such as "build-DeliverFunction")
// into a temporary ARTIFACTS_DIR, from the module's root (where go.mod and
// the Makefile are), and checks the bootstrap it produced with
// CheckBootstrap.
func CheckMakeTarget(t testing.TB, target, mainPkg string) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed: `make test` and `sam build` both run it")
	}
	root := moduleRoot(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", "-C", root, target, "ARTIFACTS_DIR="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", target, err, b)
	}
	CheckBootstrap(t, filepath.Join(out, "bootstrap"), mainPkg)
}

// moduleRoot is the folder of the main module's go.mod, as the go command
// finds it from the tests' working directory.
func moduleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command(goCommand(), "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		t.Fatalf("go env GOMOD: %q %v: the tests run outside the module", gomod, err)
	}
	return filepath.Dir(gomod)
}

// CheckBootstrap inspects the bootstrap at path as `sam build` makes it for
// provided.al2023 on arm64: an executable, static, stripped arm64 ELF
// binary of main package mainPkg, built with CGO_ENABLED=0, -tags
// lambda.norpc and -trimpath.
func CheckBootstrap(t testing.TB, path, mainPkg string) {
	t.Helper()
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
	defer func() { _ = f.Close() }()
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
	if bi.Path != mainPkg {
		t.Errorf("main package %q, want %q", bi.Path, mainPkg)
	}
	t.Logf("bootstrap of %s for provided.al2023 arm64: %d bytes", mainPkg, st.Size())
}
