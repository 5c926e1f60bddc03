package suitetest

import (
	crand "crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// EnvSeed names the variable that fixes the seed of every randomized test.
const EnvSeed = "ONCECALL_TEST_SEED"

// rapidSeedFlag is the flag pgregory.net/rapid reads its seed from; 0
// there means "draw one".
const rapidSeedFlag = "rapid.seed"

var (
	seedOnce sync.Once
	seed     uint64
	seedEnv  bool
	seedErr  error

	rapidOnce sync.Once
	rapidOwn  string // rapid's seed when chosen by rapid's own flag or variable
	rapidErr  error
)

// ParseSeed reads a seed as ONCECALL_TEST_SEED gives it: a non-zero
// unsigned 64-bit integer, in decimal or with a 0x prefix. Zero is refused
// because rapid reads a zero seed as "draw one".
func ParseSeed(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%s=%q: want a non-zero unsigned 64-bit integer", EnvSeed, s)
	}
	return n, nil
}

// runSeed returns the seed of this test binary's run and whether it came
// from the environment.
func runSeed() (uint64, bool, error) {
	seedOnce.Do(func() {
		if v := os.Getenv(EnvSeed); v != "" {
			seed, seedErr = ParseSeed(v)
			seedEnv = true
			return
		}
		for seed == 0 {
			var b [8]byte
			_, _ = crand.Read(b[:]) // crypto/rand.Read never fails
			seed = binary.LittleEndian.Uint64(b[:])
		}
	})
	return seed, seedEnv, seedErr
}

// Seed returns the run's seed and logs it, with the command line that
// replays it.
func Seed(t testing.TB) uint64 {
	t.Helper()
	s, fromEnv, err := runSeed()
	if err != nil {
		t.Fatal(err)
	}
	how := "drawn for this run"
	if fromEnv {
		how = "from " + EnvSeed
	}
	t.Logf("seed %d (%s); replay with %s=%d", s, how, EnvSeed, s)
	return s
}

// Rand returns a generator for t from the run's seed and t's name: tests
// of one run draw different streams, and a replayed seed gives every test
// its stream again.
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	s := Seed(t)
	h := fnv.New64a()
	_, _ = h.Write([]byte(t.Name()))
	return rand.New(rand.NewPCG(s, h.Sum64()))
}

// Check runs prop as rapid.Check does, with rapid's seed set to the run's
// seed, so that ONCECALL_TEST_SEED replays properties too. A seed given to
// rapid itself (-rapid.seed or RAPID_SEED) wins, and is logged.
func Check(t *testing.T, prop func(*rapid.T)) {
	t.Helper()
	s := Seed(t)
	rapidOnce.Do(func() { rapidOwn, rapidErr = seedRapid(s) })
	if rapidErr != nil {
		t.Fatal(rapidErr)
	}
	if rapidOwn != "" {
		t.Logf("rapid seed %s, set by -rapid.seed or RAPID_SEED instead of %s", rapidOwn, EnvSeed)
	}
	rapid.Check(t, prop)
}

// seedRapid sets rapid's seed flag to s unless it is set already; it
// returns the flag's value when it was.
func seedRapid(s uint64) (string, error) {
	f := flag.Lookup(rapidSeedFlag)
	if f == nil {
		return "", fmt.Errorf("suitetest: pgregory.net/rapid has no -%s flag any more", rapidSeedFlag)
	}
	if v := f.Value.String(); v != "0" {
		return v, nil
	}
	return "", f.Value.Set(strconv.FormatUint(s, 10))
}
