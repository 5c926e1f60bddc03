package suitetest

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"pgregory.net/rapid"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseSeed(t *testing.T) {
	for in, want := range map[string]uint64{"1": 1, "12345": 12345, "0x10": 16, "18446744073709551615": 1<<64 - 1} {
		if got, err := ParseSeed(in); err != nil || got != want {
			t.Errorf("ParseSeed(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-1", "x", "", "18446744073709551616", " 1"} {
		if got, err := ParseSeed(in); err == nil || !strings.Contains(err.Error(), EnvSeed) {
			t.Errorf("ParseSeed(%q) = %d, %v; want an error naming %s", in, got, err, EnvSeed)
		}
	}
}

// TestRandReplays: the same seed and test give the same stream; another
// test's stream differs.
func TestRandReplays(t *testing.T) {
	draw := func(t *testing.T) []uint64 {
		r := Rand(t)
		out := make([]uint64, 8)
		for i := range out {
			out[i] = r.Uint64()
		}
		return out
	}
	a, b := draw(t), draw(t)
	if !slices.Equal(a, b) {
		t.Fatalf("one seed, one test, two streams:\n%v\n%v", a, b)
	}
	var other []uint64
	t.Run("other", func(t *testing.T) { other = draw(t) })
	if slices.Equal(a, other) {
		t.Fatal("two tests drew the same stream")
	}
}

// TestCheckReplaysProperties runs one property twice: with rapid seeded
// from the run's seed, both runs draw the same values. Without it rapid
// draws a new seed for every Check and the runs differ.
func TestCheckReplaysProperties(t *testing.T) {
	run := func() []int {
		var drawn []int
		Check(t, func(rt *rapid.T) { drawn = append(drawn, rapid.IntRange(0, 1<<30).Draw(rt, "n")) })
		return drawn
	}
	a, b := run(), run()
	if len(a) == 0 || !slices.Equal(a, b) {
		t.Fatalf("two runs of one property drew differently:\n%v\n%v", a, b)
	}
	if own, _ := seedRapid(1); own == "" {
		t.Fatal("rapid's seed flag is still unset after Check")
	}
}

// TestSeedComesFromTheEnvironment runs this test binary again with
// ONCECALL_TEST_SEED set, and with it malformed.
func TestSeedComesFromTheEnvironment(t *testing.T) {
	if os.Getenv("SUITETEST_CHILD") != "" {
		t.Skip("run by the parent test only")
	}
	run := func(seed string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^(TestRandReplays|TestCheckReplaysProperties)$", "-test.v", "-test.count=1")
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "RAPID_SEED=") })
		cmd.Env = append(env, EnvSeed+"="+seed, "SUITETEST_CHILD=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	const seed = 987654321
	out, err := run(strconv.Itoa(seed))
	if err != nil {
		t.Fatalf("child run: %v\n%s", err, out)
	}
	if want := "seed 987654321 (from " + EnvSeed + "); replay with " + EnvSeed + "=987654321"; !strings.Contains(out, want) {
		t.Fatalf("the child did not log %q:\n%s", want, out)
	}
	out, err = run("zero")
	if err == nil || !strings.Contains(out, EnvSeed+`="zero"`) {
		t.Fatalf("a malformed seed did not fail the run with a message naming it: %v\n%s", err, out)
	}
}
