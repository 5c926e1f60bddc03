// Command oncecall-bench runs oncecall's benchmarks and writes BENCHMARKS.md:
// the Go benchmarks, the floor-ratio runs, the throughput run, the heap run,
// the cold-start comparison under the Runtime Interface Emulator and the
// side-by-side run against Powertools for AWS Lambda (TypeScript), the
// delivery run against the local helpdesk, and the capacity run, which
// reports the read and write units the store's answers say each kind of
// call consumed. `make bench` runs it; `-only capacity` runs the capacity
// run alone. Every run is bounded and talks to loopback only.
//
// `oncecall-bench store` serves a local store (dynoxide) on a loopback port and
// prints its URL; the heap run uses it to keep the store's memory out of
// the measured process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oncecall/oncecall/internal/bench/perf"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "store" {
		serveStore()
		return
	}
	var o perf.Options
	flag.StringVar(&o.Out, "out", "BENCHMARKS.md", "report to write")
	flag.StringVar(&o.Command, "command", "make bench", "the command to name in the report")
	flag.StringVar(&o.Only, "only", "", "comma-separated parts to run (gobench,floor,outcome,throughput,heap,coldstart,peer,delivery,rt,capacity,doors,contention,flood,backstop); all when empty")
	flag.BoolVar(&o.Update, "update", false, "with -only: replace those parts' sections in the report at -out and keep the rest")
	flag.IntVar(&o.FloorSamples, "floor-samples", 100, "samples per kind in the floor runs")
	flag.DurationVar(&o.FloorBudget, "floor-budget", 25*time.Second, "time limit of each floor run")
	flag.IntVar(&o.Clients, "clients", 4, "concurrent clients of the throughput and peer runs")
	flag.DurationVar(&o.Duration, "duration", 10*time.Second, "length of the throughput runs")
	flag.IntVar(&o.HeapFirst, "heap-first", 1000, "calls before the first heap reading")
	flag.IntVar(&o.HeapSecond, "heap-second", 20000, "calls before the second heap reading")
	flag.IntVar(&o.ColdStarts, "cold-starts", 20, "cold starts of each bootstrap")
	flag.IntVar(&o.PeerSamples, "peer-samples", 300, "single-client calls per kind in the peer run")
	flag.StringVar(&o.PeerDir, "peer-dir", "internal/bench/peers", "directory of the Powertools peer (npm ci done)")
	flag.IntVar(&o.DeliverySamples, "delivery-samples", 200, "tickets created and delivered one after another in the delivery run")
	flag.IntVar(&o.RTSamples, "rt-samples", 60, "tickets delivered one after another to Request Tracker in the rt run (RT makes about 3 a second)")
	flag.IntVar(&o.RTLostSamples, "rt-lost-samples", 10, "tickets of the rt run whose first create's answer is lost")
	flag.DurationVar(&o.ContentionDuration, "contention-duration", 3*time.Second, "length of each load run of the contention part")
	flag.IntVar(&o.Bursts, "bursts", 100, "how many times the contention part sends the seed's burst")
	flag.IntVar(&o.DoorSamples, "door-samples", 200, "created calls through each door (/callback, /mcp) in the doors run")
	flag.IntVar(&o.CapacitySamples, "capacity-samples", 20, "calls of each kind in the capacity run (the admin commands run once)")
	flag.IntVar(&o.FloodSamples, "flood-samples", 100, "legitimate calls of each scenario of the flood run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := perf.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "oncecall-bench:", err)
		os.Exit(1)
	}
}

// serveStore serves a local store until stdin closes or a signal.
func serveStore() {
	st, err := perf.StartStore()
	if err != nil {
		fmt.Fprintln(os.Stderr, "oncecall-bench store:", err)
		os.Exit(1)
	}
	defer func() { _ = st.Close() }()
	fmt.Println(st.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
