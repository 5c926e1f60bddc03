package perf

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
)

// ThroughputResult is created calls per second with concurrent clients,
// against the rate BCrypt alone allows on this machine.
type ThroughputResult struct {
	Clients int
	Cores   int
	Calls   int64
	Elapsed time.Duration
	// Bcrypt is the median time of one verification at cost 9, on one
	// goroutine, measured before and after the run.
	Bcrypt Durations
	// BcryptOnly is verifications per second with Clients goroutines doing
	// nothing else, in windows taking turns with the calls' windows: what
	// the machine gave BCrypt while it was shared.
	BcryptOnly float64
	Requests   map[string]int64
}

// Rate is calls per second.
func (r ThroughputResult) Rate() float64 { return float64(r.Calls) / r.Elapsed.Seconds() }

// Ceiling is cores ÷ one verification time, the target base.
func (r ThroughputResult) Ceiling() float64 {
	return float64(r.Cores) / r.Bcrypt.P50().Seconds()
}

// Throughput runs clients concurrent clients sending created calls for d.
func Throughput(ctx context.Context, st *Store, clients int, d time.Duration) (ThroughputResult, error) {
	r := ThroughputResult{Clients: clients, Cores: runtime.NumCPU()}
	svc, err := StartService(ctx, st.URL, "oncecall-throughput")
	if err != nil {
		return r, err
	}
	defer func() { _ = svc.Close() }()
	hash, err := nonce.Generate(localdb.DemoHookKey, AIVAXCost)
	if err != nil {
		return r, err
	}
	v, err := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		return r, err
	}
	single := func() error {
		for range 10 {
			t := time.Now()
			if err := v.Verify(hash); err != nil {
				return err
			}
			r.Bcrypt = append(r.Bcrypt, time.Since(t))
		}
		return nil
	}
	if err := single(); err != nil {
		return r, err
	}
	client := NewClient(hash)
	defer client.Close()
	for i := range clients { // warm: connections
		if _, err := client.Expect(svc.URL, CreateBody("user-a", "tp-warm-"+strconv.Itoa(i)), "created"); err != nil {
			return r, err
		}
	}

	// Calls and BCrypt alone take turns in short windows, so that both see
	// the same machine even when other work comes and goes.
	const rounds = 4
	window := d / rounds
	before := st.Front.Counts()
	var calls, verified atomic.Int64
	var callTime, bcryptTime time.Duration
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	next := 0
	for range rounds {
		// Between windows: keep the table small (see Store.Prune).
		if err := st.Prune(ctx, svc.Table); err != nil {
			return r, err
		}
		start := time.Now()
		deadline := start.Add(window)
		for c := range clients {
			wg.Add(1)
			base := next + c*1_000_000
			go func() {
				defer wg.Done()
				for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
					rid := "tp-" + strconv.Itoa(base+i)
					if _, err := client.Expect(svc.URL, CreateBody("user-a", rid), "created"); err != nil {
						once.Do(func() { firstErr = err })
						return
					}
					calls.Add(1)
				}
			}()
		}
		wg.Wait()
		// Every call that started is counted, over the time until the last
		// one ended, so no call is cut in half.
		callTime += time.Since(start)
		next += 100_000
		if firstErr != nil {
			return r, firstErr
		}

		bstart := time.Now()
		bdeadline := bstart.Add(window)
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(bdeadline) {
					if v.Verify(hash) == nil {
						verified.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		bcryptTime += time.Since(bstart)
	}
	r.Elapsed = callTime
	r.Calls = calls.Load()
	r.Requests = st.Front.Counts().Since(before, svc.Table)
	r.BcryptOnly = float64(verified.Load()) / bcryptTime.Seconds()
	return r, single()
}
