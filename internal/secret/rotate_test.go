package secret

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/nonce"
)

const (
	keyA = "rotation-test-key-A-0123456789abcdef"
	keyB = "rotation-test-key-B-0123456789abcdef"
	keyC = "rotation-test-key-C-0123456789abcdef"
)

// fakeSecret is Secrets Manager as a Rotating sees it, on a fake clock.
type fakeSecret struct {
	mu    sync.Mutex
	now   time.Time
	keys  Keys
	err   error
	reads int
}

func (f *fakeSecret) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeSecret) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

func (f *fakeSecret) set(k Keys, err error) {
	f.mu.Lock()
	f.keys, f.err = k, err
	f.mu.Unlock()
}

func (f *fakeSecret) read(context.Context) (Keys, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.keys, f.err
}

func (f *fakeSecret) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func hash(t testing.TB, key string) string {
	t.Helper()
	h, err := nonce.Generate(key, nonce.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func newRotating(t *testing.T, f *fakeSecret, errs *[]string) *Rotating {
	t.Helper()
	r, err := NewRotating(f.keys, f.read, nonce.DefaultMaxCost, f.clock, func(err error) { *errs = append(*errs, err.Error()) })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func accepts(t *testing.T, r *Rotating, key string, want bool, when string) {
	t.Helper()
	err := r.Verify(hash(t, key))
	if (err == nil) != want {
		t.Errorf("%s: Verify(nonce of %s) = %v, want accepted %v", when, strings.Split(key, "-")[3], err, want)
	}
}

// TestRotatingFollowsTheSecret: a warm verifier picks up a rotation and a
// revocation within RefreshInterval, reading the secret no more often.
func TestRotatingFollowsTheSecret(t *testing.T) {
	f := &fakeSecret{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), keys: Keys{Current: keyA}}
	var errs []string
	r := newRotating(t, f, &errs)
	accepts(t, r, keyA, true, "at cold start")
	accepts(t, r, keyB, false, "at cold start")

	// The operator rotates: B current, A previous.
	f.set(Keys{Current: keyB, Previous: keyA}, nil)
	f.advance(RefreshInterval - time.Second)
	accepts(t, r, keyB, false, "before the interval")
	if n := f.readCount(); n != 0 {
		t.Fatalf("%d reads before the interval, want 0", n)
	}
	f.advance(time.Second)
	accepts(t, r, keyB, true, "once the interval has passed")
	accepts(t, r, keyA, true, "the previous key during the rotation")
	if n := f.readCount(); n != 1 {
		t.Fatalf("%d reads, want 1", n)
	}

	// The operator revokes A (say, it leaked).
	f.set(Keys{Current: keyB}, nil)
	f.advance(RefreshInterval)
	accepts(t, r, keyA, false, "a revoked key, one interval later")
	accepts(t, r, keyB, true, "the current key after the revocation")
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
}

// TestRotatingKeepsTheLastGoodKeys: a failed read, or a secret whose keys
// are unfit, leaves the last good keys in force, and is tried again after
// RetryInterval, not on every call.
func TestRotatingKeepsTheLastGoodKeys(t *testing.T) {
	f := &fakeSecret{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), keys: Keys{Current: keyA}}
	var errs []string
	r := newRotating(t, f, &errs)
	for _, c := range []struct {
		name string
		keys Keys
		err  error
	}{
		{"Secrets Manager unreachable", Keys{}, errors.New("read hook key secret: dial tcp: i/o timeout")},
		{"a short key", Keys{Current: "short-" + keyB[:10]}, nil},
		{"the demo key", Keys{Current: nonce.DemoKey}, nil},
		{"a blank previous key", Keys{Current: keyB, Previous: "   "}, nil},
	} {
		f.set(c.keys, c.err)
		f.advance(RefreshInterval)
		before := f.readCount()
		accepts(t, r, keyA, true, c.name+": the last good key")
		accepts(t, r, keyA, true, c.name+": again, without a read")
		if n := f.readCount() - before; n != 1 {
			t.Errorf("%s: %d reads, want 1 (then none until the retry)", c.name, n)
		}
		f.advance(RetryInterval)
		accepts(t, r, keyA, true, c.name+": after the retry")
		if n := f.readCount() - before; n != 2 {
			t.Errorf("%s: %d reads after the retry interval, want 2", c.name, n)
		}
	}
	if len(errs) != 8 {
		t.Fatalf("%d errors reported, want 8: %v", len(errs), errs)
	}
	for _, e := range errs {
		if strings.Contains(e, keyB[:10]) || strings.Contains(e, nonce.DemoKey) || !strings.Contains(e, "last good keys stay in use") {
			t.Errorf("error %q quotes a key or does not say the last keys stay", e)
		}
	}
	// Once the secret is good again, its keys apply.
	f.set(Keys{Current: keyC}, nil)
	f.advance(RetryInterval)
	accepts(t, r, keyC, true, "after a good read")
	accepts(t, r, keyA, false, "the old key after a good read")
}

// TestPreviousKeyEnds: a previous key carrying an end is refused from then
// on, with no read of the secret needed.
func TestPreviousKeyEnds(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeSecret{now: start, keys: Keys{Current: keyB, Previous: keyA, PreviousUntil: start.Add(time.Minute)}}
	var errs []string
	r := newRotating(t, f, &errs)
	accepts(t, r, keyA, true, "before its end")
	f.advance(time.Minute - time.Nanosecond)
	accepts(t, r, keyA, true, "just before its end")
	f.advance(time.Nanosecond)
	accepts(t, r, keyA, false, "at its end")
	accepts(t, r, keyB, true, "the current key at the previous one's end")
	if n := f.readCount(); n != 0 {
		t.Fatalf("%d reads, want 0", n)
	}
}

// TestRotatingUnderConcurrentCalls: calls during a read use the keys in
// force; one read runs at a time (run with -race).
func TestRotatingUnderConcurrentCalls(t *testing.T) {
	f := &fakeSecret{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), keys: Keys{Current: keyA}}
	var errs []string
	r := newRotating(t, f, &errs)
	f.advance(RefreshInterval)
	h := hash(t, keyA)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := r.Verify(h); err != nil {
				t.Errorf("Verify = %v", err)
			}
		})
	}
	wg.Wait()
	if n := f.readCount(); n != 1 {
		t.Fatalf("%d reads, want 1", n)
	}
}

func TestNewRotatingRefusesUnfitKeys(t *testing.T) {
	for _, k := range []Keys{{Current: "short"}, {Current: nonce.DemoKey}, {Current: keyA, Previous: " "}} {
		if _, err := NewRotating(k, nil, 0, nil, nil); err == nil {
			t.Errorf("NewRotating(%+v) accepted", k)
		}
	}
}

// TestUnfitKeysChainToNonce: a refused key's error names the secret's
// member and matches the nonce package's sentinel with errors.Is.
func TestUnfitKeysChainToNonce(t *testing.T) {
	for _, c := range []struct {
		keys   Keys
		member string
		want   error
	}{
		{Keys{Current: "short"}, `"current"`, nonce.ErrKeyShort},
		{Keys{Current: nonce.DemoKey}, `"current"`, nonce.ErrKeyDemo},
		{Keys{Current: keyA, Previous: " "}, `"previous"`, nonce.ErrKeyBlank},
		{Keys{Current: strings.Repeat("k", nonce.MaxKeyBytes+1)}, `"current"`, nonce.ErrKeyLong},
	} {
		_, err := NewRotating(c.keys, nil, 0, nil, nil)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.member) {
			t.Errorf("NewRotating(%d-byte current, %d-byte previous) = %v, want %v naming the %s key", len(c.keys.Current), len(c.keys.Previous), err, c.want, c.member)
		}
	}
}
