package identity_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/dev/dynamotest"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/identity"
)

// TestMain fails the package when a goroutine outlives its tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(dynamotest.Main(m)) }

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newStore(t *testing.T) (*dynamo.Store, *dynamotest.Env) {
	env := dynamotest.New(t)
	s := dynamo.New(env.Client, env.Table)
	if err := s.PutUser(context.Background(), identity.User{ExternalID: "u1", Tenant: "t1", Active: true, Functions: []string{"f"}}); err != nil {
		t.Fatal(err)
	}
	env.Requests.Reset()
	return s, env
}

func TestDirectoryCachesForTTL(t *testing.T) {
	s, env := newStore(t)
	c := &clock{now: time.Unix(1_000_000, 0)}
	d := identity.NewDirectory(s, 30*time.Second, c.Now)
	for range 3 {
		u, _, err := d.Lookup(context.Background(), "u1")
		if err != nil || u.Tenant != "t1" || !u.Allows("f") || u.Allows("g") {
			t.Fatalf("Lookup = %+v, %v", u, err)
		}
	}
	if n := env.Requests.Load(); n != 1 {
		t.Fatalf("3 lookups took %d store requests, want 1", n)
	}
	c.add(30 * time.Second)
	if _, _, err := d.Lookup(context.Background(), "u1"); err != nil {
		t.Fatal(err)
	}
	if n := env.Requests.Load(); n != 2 {
		t.Fatalf("an expired entry was not reloaded (%d requests)", n)
	}
	d.Forget("u1")
	if _, _, err := d.Lookup(context.Background(), "u1"); err != nil || env.Requests.Load() != 3 {
		t.Fatalf("Forget did not force a reload: %v, %d", err, env.Requests.Load())
	}
}

// TestLookupSaysWhereTheRecordCameFrom: from the store on the first
// lookup, after Forget and after the TTL; from the cache otherwise.
func TestLookupSaysWhereTheRecordCameFrom(t *testing.T) {
	s, _ := newStore(t)
	c := &clock{now: time.Unix(1_000_000, 0)}
	d := identity.NewDirectory(s, 30*time.Second, c.Now)
	lookup := func(want bool, when string) {
		t.Helper()
		if u, cached, err := d.Lookup(context.Background(), "u1"); err != nil || u.Tenant != "t1" || cached != want {
			t.Fatalf("%s: Lookup = %+v, cached %v, %v; want cached %v", when, u, cached, err, want)
		}
	}
	lookup(false, "first lookup")
	lookup(true, "second lookup")
	d.Forget("u1")
	lookup(false, "after Forget")
	c.add(30 * time.Second)
	lookup(false, "after the TTL")
	if _, err := d.Reload(context.Background(), "u1"); err != nil {
		t.Fatal(err)
	}
	lookup(true, "after Reload")
	if _, cached, err := identity.NewDirectory(s, 0, nil).Lookup(context.Background(), "u1"); err != nil || cached {
		t.Fatalf("TTL 0: cached %v, %v", cached, err)
	}
}

func TestDirectoryDoesNotCacheUnknownUsers(t *testing.T) {
	s, _ := newStore(t)
	d := identity.NewDirectory(s, time.Minute, nil)
	if _, _, err := d.Lookup(context.Background(), "nobody"); !errors.Is(err, identity.ErrUnknown) {
		t.Fatalf("Lookup(nobody) = %v", err)
	}
	if err := s.PutUser(context.Background(), identity.User{ExternalID: "nobody", Tenant: "t1", Active: true, Functions: []string{"f"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Lookup(context.Background(), "nobody"); err != nil {
		t.Fatalf("a new user stayed unknown: %v", err)
	}
}

func TestDirectoryWithoutCache(t *testing.T) {
	s, env := newStore(t)
	d := identity.NewDirectory(s, 0, nil)
	for range 2 {
		if _, _, err := d.Lookup(context.Background(), "u1"); err != nil {
			t.Fatal(err)
		}
	}
	if n := env.Requests.Load(); n != 2 || d.Len() != 0 {
		t.Fatalf("TTL 0 cached: %d requests, %d entries", n, d.Len())
	}
}

func TestDirectoryIsBounded(t *testing.T) {
	s, _ := newStore(t)
	d := identity.NewDirectory(s, time.Hour, nil)
	for i := range identity.MaxCached + 50 {
		d.Remember(identity.User{ExternalID: fmt.Sprint("u", i), Tenant: "t"})
	}
	if n := d.Len(); n > identity.MaxCached {
		t.Fatalf("%d entries cached, bound is %d", n, identity.MaxCached)
	}
}

func TestAllows(t *testing.T) {
	u := identity.User{Active: true, Functions: []string{"a"}}
	if !u.Allows("a") || u.Allows("b") {
		t.Fatal("grant check wrong")
	}
	u.Active = false
	if u.Allows("a") {
		t.Fatal("a disabled user is allowed")
	}
}
