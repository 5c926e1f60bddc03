package rt_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/local/rtlocal"
	"github.com/oncecall/oncecall/internal/testing/doctest"
)

// The rights destinations.md gives the user whose token oncecall uses: all
// the adapter needs, and none that lets a user make its own token.
var setupRights = []string{"SeeQueue", "CreateTicket", "ShowTicket", "SeeCustomField", "ModifyCustomField"}

// TestTokenStepIsAnAdministrators: destinations.md's RT set-up has an
// administrator make the auth token under Admin → Users → the user → Auth
// Tokens, never the user under Settings → Auth Tokens (a user with only the
// listed rights has no such menu, and creating it answers Permission
// Denied), and keeps the list of rights. With RT installed, RT's own code
// is read: both token pages are shown only with ManageAuthTokens, which
// the list does not grant, and a token for another user needs AdminUsers.
func TestTokenStepIsAnAdministrators(t *testing.T) {
	root, err := doctest.Root()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", "destinations.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := doctest.Section(string(raw), "## Request Tracker (`DESTINATION=rt`)")
	if !ok {
		t.Fatal("destinations.md has no Request Tracker section")
	}
	_, setup, ok := strings.Cut(section, "**Set up RT first.**")
	if !ok {
		t.Fatal("the Request Tracker section has no **Set up RT first.** paragraph")
	}
	setup, _, _ = strings.Cut(setup, "\n\n")
	setup = strings.Join(strings.Fields(setup), " ")

	for _, want := range []string{"administrator", "*Admin → Users*", "*Auth Tokens*", "Permission Denied"} {
		if !strings.Contains(setup, want) {
			t.Errorf("the RT set-up does not say %q: the token is made by an administrator under Admin → Users → the user → Auth Tokens", want)
		}
	}
	// A sentence that names Settings → Auth Tokens must say why the user
	// cannot use it, never send the user there.
	for _, s := range regexp.MustCompile(`[^.]*\.`).FindAllString(setup, -1) {
		if strings.Contains(s, "Settings → Auth") && !strings.Contains(s, "ManageAuthTokens") {
			t.Errorf("the RT set-up sends the user to Settings → Auth Tokens: %q", strings.TrimSpace(s))
		}
	}
	var rights []string
	for _, m := range regexp.MustCompile("`([A-Z][A-Za-z]+)`").FindAllStringSubmatch(setup, -1) {
		if !slices.Contains(rights, m[1]) {
			rights = append(rights, m[1])
		}
	}
	for _, r := range setupRights {
		if !slices.Contains(rights, r) {
			t.Errorf("the RT set-up no longer gives the right %s", r)
		}
	}

	rtlocal.Require(t)
	menu, err := os.ReadFile(filepath.Join(rtlocal.LibPath, "RT", "Interface", "Web", "MenuBuilder.pm"))
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"/Prefs/AuthTokens.html", "/Admin/Users/AuthTokens.html"} {
		i := strings.Index(string(menu), page)
		if i < 0 {
			t.Errorf("RT's menu has no %s", page)
			continue
		}
		// The right that gates it is checked within the lines above.
		before := string(menu[max(0, i-400):i])
		if !strings.Contains(before, "Right => 'ManageAuthTokens'") {
			t.Errorf("RT's menu shows %s without ManageAuthTokens; the page's token step may be out of date", page)
		}
	}
	// And RT's token code: Create refuses (Permission Denied) a user
	// without ManageAuthTokens, and makes a token for another user only
	// for one with AdminUsers: an administrator.
	code, err := os.ReadFile(filepath.Join(rtlocal.LibPath, "RT", "AuthToken.pm"))
	if err != nil {
		t.Fatal(err)
	}
	_, create, _ := strings.Cut(string(code), "sub Create {")
	create, _, _ = strings.Cut(create, "\n}\n")
	for _, want := range []string{
		`return (0, $self->loc("Permission Denied"))
        unless $self->CurrentUserHasRight('ManageAuthTokens');`,
		`unless $args{Owner} == $self->CurrentUser->Id
            || $self->CurrentUserHasRight('AdminUsers');`,
	} {
		if !strings.Contains(create, want) {
			t.Errorf("RT::AuthToken::Create no longer reads %q; the page's token step may be out of date", want)
		}
	}
}
