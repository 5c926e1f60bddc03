// Command oncecall-admin is the operator's tool: a tenant's users and
// one-field changes to them, an operation and its ticket's delivery found
// by its ticket, its key or its tenant and request id, the deliveries that
// need a person and the decisions that settle them, the table, and nonces.
//
// It works on the local store of `make run` unless told otherwise
// (-endpoint URL or DYNAMODB_ENDPOINT for another store, -aws for AWS),
// prints aligned tables (-json for scripts), logs every change as one JSON
// line on standard error with who made it, and exits with a code scripts
// can rely on (see usage). `oncecall-admin -h` lists the commands; `-h`
// after any command prints its usage with an example.
package main

import (
	"os"
	"time"

	"github.com/oncecall/oncecall/internal/config"
)

func main() {
	t := &tool{
		stdout:        os.Stdout,
		stderr:        os.Stderr,
		getenv:        os.Getenv,
		localEndpoint: "http://" + config.LocalStoreAddr,
		now:           time.Now,
	}
	os.Exit(t.run(os.Args[1:]))
}
