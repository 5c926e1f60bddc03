package identity_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/dynamotest"
	"github.com/oncecall/oncecall/internal/identity"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(dynamotest.Main(m)) }

// TestCacheIsBounded caches more distinct users than MaxCached: the cache
// never holds more, so a container's memory does not grow with its callers.
func TestCacheIsBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := identity.NewDirectory(nil, time.Hour, func() time.Time { return now })
	for i := range identity.MaxCached + 500 {
		d.Remember(identity.User{ExternalID: "u" + strconv.Itoa(i), Tenant: "t", Active: true})
		if d.Len() > identity.MaxCached {
			t.Fatalf("after %d users the cache holds %d, more than %d", i+1, d.Len(), identity.MaxCached)
		}
	}
	if d.Len() != identity.MaxCached {
		t.Errorf("cache holds %d, want %d", d.Len(), identity.MaxCached)
	}
}

// TestCacheHitsExpiryAndUnknown counts the store's GetItem requests behind
// a Directory over the real store.
func TestCacheHitsExpiryAndUnknown(t *testing.T) {
	env := dynamotest.New(t)
	store := dynamo.New(env.Client, env.Table)
	if err := store.PutUser(context.Background(), identity.User{ExternalID: "a", Tenant: "t", Active: true, Functions: []string{"f"}}); err != nil {
		t.Fatal(err)
	}
	env.Requests.Reset()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := identity.NewDirectory(store, time.Minute, func() time.Time { return now })
	lookup := func(d *identity.Directory, id string) error {
		_, err := d.Lookup(context.Background(), id)
		return err
	}
	for range 3 {
		if err := lookup(d, "a"); err != nil {
			t.Fatal(err)
		}
	}
	if n := env.Requests.Load(); n != 1 {
		t.Fatalf("%d requests for three lookups within the TTL, want 1", n)
	}
	now = now.Add(time.Minute)
	if err := lookup(d, "a"); err != nil || env.Requests.Load() != 2 {
		t.Fatalf("lookup at the TTL: %v, %d requests; want a reload", err, env.Requests.Load())
	}
	for range 2 {
		if err := lookup(d, "nobody"); err != identity.ErrUnknown {
			t.Fatalf("unknown user: %v", err)
		}
	}
	if n := env.Requests.Load(); n != 4 {
		t.Errorf("%d requests, want 4: unknown users are not cached", n)
	}
	d.Forget("a")
	if err := lookup(d, "a"); err != nil || env.Requests.Load() != 5 {
		t.Errorf("lookup after Forget did not reload")
	}
	off := identity.NewDirectory(store, 0, nil)
	_ = lookup(off, "a")
	_ = lookup(off, "a")
	if n := env.Requests.Load(); n != 7 || off.Len() != 0 {
		t.Errorf("TTL 0 cached: %d requests, %d cached", n, off.Len())
	}
}
