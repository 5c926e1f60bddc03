package samtest

import (
	"debug/buildinfo"
	"debug/elf"
	"os"
	"testing"
)

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
