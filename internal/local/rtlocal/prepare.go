package rtlocal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oncecall/oncecall/internal/delivery/rt"
)

// setupScript adds to a new RT database what oncecall needs: the ticket
// custom fields named in its arguments, applied to the queue named first,
// and an API token of root, which it prints.
const setupScript = `use strict; use warnings;
use lib '` + LibPath + `';
use RT; RT::LoadConfig(); RT::Init();
my ($queue_name, @fields) = @ARGV;
my $queue = RT::Queue->new(RT->SystemUser);
$queue->Load($queue_name) or die "no queue $queue_name\n";
for my $name (@fields) {
    my $cf = RT::CustomField->new(RT->SystemUser);
    my ($ok, $msg) = $cf->Create(Name => $name, Type => 'FreeformSingle',
        LookupType => RT::Ticket->CustomFieldLookupType, Description => "oncecall: $name");
    die "custom field $name: $msg\n" unless $ok;
    ($ok, $msg) = $cf->AddToObject($queue);
    die "custom field $name on $queue_name: $msg\n" unless $ok;
}
my $root = RT::User->new(RT->SystemUser);
$root->Load('root') or die "no root user\n";
my $token = RT::AuthToken->new(RT->SystemUser);
my ($ok, $msg, $value) = $token->Create(Owner => $root->Id, Description => 'oncecall local RT');
die "token: $msg\n" unless $ok;
print "TOKEN $value\n";
`

// SetupTimeout bounds building the prepared database.
const SetupTimeout = 3 * time.Minute

// preparedDB is the database every instance starts from, and root's token in
// it.
type preparedDB struct{ db, token string }

var prepMu sync.Mutex

// prepared returns the machine's prepared database, building it on first
// use: in the user's cache folder, under a name that changes with
// everything that goes into it, built aside and renamed into place under a
// file lock, so that test binaries starting RT at once build it once.
func prepared() (preparedDB, error) {
	prepMu.Lock()
	defer prepMu.Unlock()
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	sum := sha256.Sum256([]byte(strings.Join(append([]string{Version, setupScript, Queue, strconv.Itoa(BcryptCost)}, rt.Fields()...), "\x00")))
	parent := filepath.Join(root, "oncecall")
	dir := filepath.Join(parent, "rt-"+hex.EncodeToString(sum[:6]))
	if p, ok := readPrepared(dir); ok {
		return p, nil
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return preparedDB{}, err
	}
	lock, err := os.OpenFile(filepath.Join(parent, "rt.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return preparedDB{}, err
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return preparedDB{}, err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if p, ok := readPrepared(dir); ok {
		return p, nil
	}
	build, err := os.MkdirTemp(parent, "rt-build-")
	if err != nil {
		return preparedDB{}, err
	}
	defer func() { _ = os.RemoveAll(build) }()
	if err := buildDatabase(build); err != nil {
		return preparedDB{}, err
	}
	if err := os.Rename(build, dir); err != nil {
		return preparedDB{}, err
	}
	p, ok := readPrepared(dir)
	if !ok {
		return preparedDB{}, fmt.Errorf("rtlocal: the prepared database in %s is incomplete", dir)
	}
	return p, nil
}

func readPrepared(dir string) (preparedDB, bool) {
	token, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil || len(strings.TrimSpace(string(token))) == 0 {
		return preparedDB{}, false
	}
	db := filepath.Join(dir, "rt.db")
	if _, err := os.Stat(db); err != nil {
		return preparedDB{}, false
	}
	return preparedDB{db: db, token: strings.TrimSpace(string(token))}, true
}

// buildDatabase builds RT's database in dir: RT's own schema and initial
// data (rt-setup-database), then the queue's fields and root's token.
func buildDatabase(dir string) error {
	for _, sub := range []string{"empty", "var", "mason", "sessions"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "site.pm"), []byte(siteConfig(dir, "http://127.0.0.1", "80")), 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), SetupTimeout)
	defer cancel()
	setup := exec.CommandContext(ctx, SetupPath, "--action", "init", "--skip-create")
	setup.Env, setup.Dir = env(dir), dir
	if out, err := setup.CombinedOutput(); err != nil {
		return fmt.Errorf("rtlocal: %s --action init: %w: %s", SetupPath, err, lastLines(out))
	}
	perl := exec.CommandContext(ctx, "perl", append([]string{"-", Queue}, rt.Fields()...)...)
	perl.Env, perl.Dir = env(dir), dir
	perl.Stdin = strings.NewReader(setupScript)
	out, err := perl.CombinedOutput()
	if err != nil {
		return fmt.Errorf("rtlocal: adding oncecall's fields and token: %w: %s", err, lastLines(out))
	}
	var token string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "TOKEN "); ok {
			token = strings.TrimSpace(v)
		}
	}
	if token == "" {
		return errors.New("rtlocal: RT made no token: " + lastLines(out))
	}
	// Only the database and the token are kept.
	for _, sub := range []string{"empty", "var", "mason", "sessions", "site.pm"} {
		_ = os.RemoveAll(filepath.Join(dir, sub))
	}
	return os.WriteFile(filepath.Join(dir, "token"), []byte(token+"\n"), 0o600)
}

// lastLines is the end of a program's output, for an error message.
func lastLines(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return strings.Join(lines, "\n")
}
