package identity_test

import (
	"testing"

	"github.com/oncecall/oncecall/internal/identity"
)

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
