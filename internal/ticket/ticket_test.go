package ticket

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/canonjson"
)

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !ValidID(id) {
			t.Fatalf("NewID() = %q is not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("NewID repeated %s", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "x", "0F8E6C1A-3B2D-4C5E-9F70-1A2B3C4D5E6F", "0f8e6c1a-3b2d-1c5e-9f70-1a2b3c4d5e6f", "0f8e6c1a3b2d4c5e9f701a2b3c4d5e6f"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
}

func TestIDFor(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	a := IDFor(key, "user-a", "r-1")
	if !ValidID(a) {
		t.Fatalf("IDFor = %q is not in the form get_ticket accepts", a)
	}
	if again := IDFor(key, "user-a", "r-1"); again != a {
		t.Fatalf("IDFor is not a function of its inputs: %s, then %s", a, again)
	}
	// Each input counts, the key too, and the boundary between the two
	// strings is part of the hash: "user-a"+"r-1" is not "user-ar"+"-1".
	for _, other := range []struct {
		key           []byte
		user, request string
	}{
		{key, "user-b", "r-1"}, {key, "user-a", "r-2"}, {key, "user-ar", "-1"}, {key, "r-1", "user-a"}, {key, "", "user-ar-1"},
		{[]byte("another key of thirty-two bytes!"), "user-a", "r-1"},
	} {
		if id := IDFor(other.key, other.user, other.request); id == a || !ValidID(id) {
			t.Errorf("IDFor(%q, %q, %q) = %s; IDFor(key, user-a, r-1) = %s", other.key, other.user, other.request, id, a)
		}
	}
}

// TestCreatedIsCanonical checks the hand-built stored result against the
// general RFC 8785 encoder.
func TestCreatedIsCanonical(t *testing.T) {
	for _, id := range []string{NewID(), NewID(), `odd "id" \ with escapes` + "\n"} {
		want, err := canonjson.Marshal(map[string]any{"status": "created", "ticket_id": id})
		if err != nil {
			t.Fatal(err)
		}
		if got := Created(id); !bytes.Equal(got, want) {
			t.Errorf("Created(%q) = %s, want %s", id, got, want)
		}
	}
}

// normalized returns args as Create.Normalize makes them.
func normalized(t *testing.T, args map[string]any) map[string]any {
	t.Helper()
	n, v := Create.Normalize(args)
	if len(v) > 0 {
		t.Fatal(v)
	}
	return n
}

func TestFromArgumentsAndView(t *testing.T) {
	tk := FromArguments(normalized(t, map[string]any{"title": "T", "tags": []any{"b", "a"}, "description": nil}))
	if tk.Title != "T" || tk.Priority != DefaultPriority || len(tk.Tags) != 2 || tk.Tags[0] != "a" || tk.Description != "" {
		t.Fatalf("FromArguments = %+v", tk)
	}
	tk = FromArguments(normalized(t, map[string]any{"title": "T", "priority": "urgent", "description": "d"}))
	if tk.Priority != "urgent" || tk.Description != "d" {
		t.Fatalf("FromArguments = %+v", tk)
	}
	tk.ID, tk.Tenant, tk.OperationKey = "id", "secret-tenant", "op-key"
	tk.CreatedAt = time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	v := tk.View()
	if v.ID != "id" || v.CreatedAt != "2026-01-02T02:04:05Z" {
		t.Fatalf("View = %+v", v)
	}
}

func TestDefinitionsValidateTheirOwnExamples(t *testing.T) {
	if v := Create.Validate(map[string]any{"title": "Cannot sign in", "priority": "high", "tags": []any{"auth"}}); len(v) > 0 {
		t.Fatal(v)
	}
	if v := Get.Validate(map[string]any{"ticket_id": NewID()}); len(v) > 0 {
		t.Fatal(v)
	}
	if v := Get.Validate(map[string]any{"ticket_id": "nope"}); len(v) != 1 {
		t.Fatalf("malformed id accepted: %v", v)
	}
}

// TestCreateDeclaresItsDefaultAndItsSet: the priority's default is the one
// a ticket gets, and tags are a set.
func TestCreateDeclaresItsDefaultAndItsSet(t *testing.T) {
	for _, p := range Create.Params {
		switch p.Name {
		case "priority":
			if p.Default != DefaultPriority || !slices.Contains(Priorities, p.Default) {
				t.Errorf("priority's default is %q", p.Default)
			}
		case "tags":
			if !p.Set {
				t.Error("tags are not a set")
			}
		default:
			if p.Default != "" || p.Set {
				t.Errorf("%s has a default or is a set: %+v", p.Name, p)
			}
		}
	}
}
