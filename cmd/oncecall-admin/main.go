// Command oncecall-admin manages oncecall's table and makes nonces.
//
//	oncecall-admin nonce [-key K] [-cost 9]
//	oncecall-admin user put -id ID -tenant T [-name N] [-functions create_ticket,get_ticket] [-disabled]
//	oncecall-admin user get -id ID
//	oncecall-admin ticket get -id ID
//	oncecall-admin table create
//
// Store commands use TABLE_NAME (default oncecall), DYNAMODB_ENDPOINT (empty
// for AWS) and the AWS credential chain and AWS_REGION, like the service.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/dev/localdb"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/schema"
	"github.com/oncecall/oncecall/internal/ticket"
)

const usage = `usage:
  oncecall-admin nonce [-key K] [-cost 9]        print a fresh X-Request-Nonce
  oncecall-admin user put -id ID -tenant T [-name N] [-functions create_ticket,get_ticket] [-disabled]
  oncecall-admin user get -id ID
  oncecall-admin ticket get -id ID
  oncecall-admin table create

Store commands read TABLE_NAME (default oncecall), DYNAMODB_ENDPOINT (unset: AWS)
and AWS_REGION plus the usual AWS credentials.`

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "oncecall-admin:", err)
		if errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("bad usage")

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	switch args[0] {
	case "nonce":
		return cmdNonce(args[1:], out)
	case "user", "ticket", "table":
		if len(args) < 2 {
			return errUsage
		}
		return storeCommand(args[0]+" "+args[1], args[2:], out)
	case "-h", "--help", "help":
		fmt.Fprintln(out, usage)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}

func cmdNonce(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("nonce", flag.ContinueOnError)
	key := fs.String("key", envOr(config.EnvHookKey, localdb.DemoHookKey), "hook key (default $HOOK_KEY or the local demo key)")
	cost := fs.Int("cost", 9, "BCrypt cost; AIVAX uses 9")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *cost < nonce.MinCost || *cost > nonce.HardMaxCost {
		return fmt.Errorf("cost must be from %d to %d", nonce.MinCost, nonce.HardMaxCost)
	}
	if len(*key) > nonce.MaxKeyBytes {
		return fmt.Errorf("the hook key is longer than %d bytes", nonce.MaxKeyBytes)
	}
	h, err := nonce.Generate(*key, *cost)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, h)
	return nil
}

func storeCommand(name string, args []string, out io.Writer) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	id := fs.String("id", "", "user id (externalUserId) or ticket id")
	tenant := fs.String("tenant", "", "tenant of the user")
	display := fs.String("name", "", "display name of the user")
	functions := fs.String("functions", ticket.CreateName+","+ticket.GetName, "functions the user may call, comma-separated")
	disabled := fs.Bool("disabled", false, "create the user disabled")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	base := config.Defaults
	base.HookKey = "unused-by-admin-commands"
	cfg, err := config.Load(os.Getenv, base)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	awsCfg, err := app.AWSConfig(ctx, cfg)
	if err != nil {
		return err
	}
	store := app.Store(awsCfg, cfg)
	switch name {
	case "table create":
		res, err := dynamo.EnsureTable(ctx, app.AdminClient(awsCfg, cfg), cfg.Table)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "table %s: created=%v indexes_added=%v ttl=%s\n", cfg.Table, res.Created, res.IndexesAdded, res.TTL)
		return nil
	case "user put":
		if *id == "" || *tenant == "" {
			return fmt.Errorf("%w: user put needs -id and -tenant", errUsage)
		}
		var fns []string
		for _, f := range strings.Split(*functions, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			if !slices.ContainsFunc(ticket.Functions, func(d *schema.Function) bool { return d.Name == f }) {
				return fmt.Errorf("unknown function %q", f)
			}
			fns = append(fns, f)
		}
		u := identity.User{ExternalID: *id, Tenant: *tenant, Name: *display, Active: !*disabled, Functions: fns}
		if err := store.PutUser(ctx, u); err != nil {
			return err
		}
		return printJSON(out, u)
	case "user get":
		if *id == "" {
			return fmt.Errorf("%w: user get needs -id", errUsage)
		}
		u, err := store.LoadUser(ctx, *id)
		if err != nil {
			return err
		}
		return printJSON(out, u)
	case "ticket get":
		if *id == "" {
			return fmt.Errorf("%w: ticket get needs -id", errUsage)
		}
		t, err := store.Ticket(ctx, *id)
		if err != nil {
			return err
		}
		if t == nil {
			return fmt.Errorf("no ticket %s", *id)
		}
		return printJSON(out, t)
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, name)
}

func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
