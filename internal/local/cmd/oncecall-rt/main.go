// Command oncecall-rt serves a fresh Request Tracker 5 on loopback until
// interrupted: Debian's RT (`make rt-install` installs it), started from a
// prepared database with oncecall's custom fields on the queue and an API
// token for root (internal/local/rtlocal). It prints what to point oncecall
// at and how to look at the tickets in a browser; `make rt` runs it.
// Each run starts empty: nothing is kept after it stops.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/oncecall/oncecall/internal/delivery/rt"
	"github.com/oncecall/oncecall/internal/local/rtlocal"
)

func main() {
	addr := flag.String("addr", rtlocal.DefaultAddr, "address to serve Request Tracker on")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "oncecall-rt:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	in, err := rtlocal.Start(addr)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	fmt.Printf("Request Tracker %s serving %s (queue %s, fields %v)\n", rtlocal.Version, in.URL, in.Queue, rt.Fields())
	fmt.Printf("  deliver to it:  DESTINATION=rt DESTINATION_URL=%s DESTINATION_TOKEN=%s RT_QUEUE=%s\n", in.URL, in.Token, in.Queue)
	fmt.Printf("  look at it:     %s (user root, password %s)\n", in.URL, rtlocal.RootPassword)
	fmt.Println("Ctrl-C stops it (its process group) and removes its database.")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	return nil
}
