package dynamotest

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// Conflicts is DynamoDB's transaction conflict rule, which no emulator
// models (they serialize requests in one process), as the Proxy applies it
// when its Conflicts field is set (../shared/docs/dynamodb-rules.md, from
// the DynamoDB developer guide's "Transaction conflict handling"):
//
//   - every item a TransactWriteItems includes (a ConditionCheck as much as
//     a Put) is held for Hold from the moment the transaction starts;
//   - a TransactWriteItems or TransactGetItems that includes an item held
//     by another transaction is cancelled, TransactionCanceledException
//     with the reason TransactionConflict at that item's position and None
//     elsewhere, and nothing of it applies;
//   - a PutItem, UpdateItem or DeleteItem of a held item is refused with
//     TransactionConflictException.
//
// Reads other than TransactGetItems are never refused. With LoseRate set,
// that share of the write requests that applied (every operation but the
// reads) has its answer replaced by a 500, as when an answer is lost after
// the write applied; the SDK or the caller then sends it again.
type Conflicts struct {
	// Hold is how long a transaction holds its items (15 ms is a typical
	// transactional write on DynamoDB).
	Hold time.Duration
	// Release, when not nil, replaces Hold: every transaction holds its
	// items until Release is closed, so that a test sees what other
	// requests meet meanwhile however slow the machine is (Holding says
	// when the hold has begun).
	Release <-chan struct{}
	// LoseRate is the share of applied writes whose answer is lost.
	LoseRate float64
	// Rand draws the losses (nil: math/rand/v2's global source); tests
	// give it suitetest.Rand so that a run replays.
	Rand *rand.Rand

	mu    sync.Mutex
	held  map[string]int // item -> transactions holding it
	stats ConflictStats
}

// ConflictStats counts what the rule did.
type ConflictStats struct {
	// Cancelled transactions, refused plain writes, lost answers.
	Cancelled, Refused, Lost int
}

// Stats returns the counts so far.
func (c *Conflicts) Stats() ConflictStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Holding returns how many items transactions hold now.
func (c *Conflicts) Holding() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held)
}

// itemRef is one item a request names: table and key, canonicalized.
type itemRef string

func ref(table string, key map[string]json.RawMessage) itemRef {
	b, _ := json.Marshal(key) // map keys are sorted: one spelling per key
	return itemRef(table + "\x00" + string(b))
}

// writes reports whether operation op writes.
func writes(op string) bool {
	switch op {
	case "TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem":
		return true
	}
	return false
}

// items returns the item each action of a request names, in request order
// ("" for an action it cannot read).
func items(op string, body []byte) (refs []itemRef) {
	type action struct {
		TableName string
		Key, Item map[string]json.RawMessage
	}
	keyOf := func(a *action) itemRef {
		if a == nil {
			return ""
		}
		k := a.Key
		if k == nil && a.Item != nil {
			k = map[string]json.RawMessage{"pk": a.Item["pk"]}
		}
		if k == nil {
			return ""
		}
		// oncecall's and the tests' tables are keyed by pk alone.
		return ref(a.TableName, map[string]json.RawMessage{"pk": k["pk"]})
	}
	switch op {
	case "TransactWriteItems":
		var req struct {
			TransactItems []struct{ Put, ConditionCheck, Update, Delete *action }
		}
		_ = json.Unmarshal(body, &req)
		for _, it := range req.TransactItems {
			r := keyOf(it.Put)
			for _, a := range []*action{it.ConditionCheck, it.Update, it.Delete} {
				if r == "" {
					r = keyOf(a)
				}
			}
			refs = append(refs, r)
		}
		return refs
	case "TransactGetItems":
		var req struct{ TransactItems []struct{ Get *action } }
		_ = json.Unmarshal(body, &req)
		for _, it := range req.TransactItems {
			refs = append(refs, keyOf(it.Get))
		}
		return refs
	case "PutItem", "UpdateItem", "DeleteItem":
		var a action
		_ = json.Unmarshal(body, &a)
		return []itemRef{keyOf(&a)}
	}
	return nil
}

// admit decides a request under the rule: nil when it may go on, with
// release to call once it has been answered; otherwise the fault to answer
// it with.
func (c *Conflicts) admit(op string, body []byte) (fault *Fault, release func()) {
	refs := items(op, body)
	if len(refs) == 0 {
		return nil, func() {}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		c.held = map[string]int{}
	}
	reasons := make([]string, len(refs))
	conflict := false
	for i, r := range refs {
		reasons[i] = "None"
		if r != "" && c.held[string(r)] > 0 {
			reasons[i], conflict = "TransactionConflict", true
		}
	}
	switch {
	case conflict && op == "TransactWriteItems", conflict && op == "TransactGetItems":
		c.stats.Cancelled++
		return &Fault{Error: "TransactionCanceledException", Reasons: reasons}, nil
	case conflict:
		c.stats.Refused++
		return &Fault{Error: "TransactionConflictException"}, nil
	case op != "TransactWriteItems":
		return nil, func() {}
	}
	for _, r := range refs {
		if r != "" {
			c.held[string(r)]++
		}
	}
	start := time.Now()
	return nil, func() {
		if c.Release != nil {
			<-c.Release
		} else if d := c.Hold - time.Since(start); d > 0 {
			time.Sleep(d)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, r := range refs {
			if r != "" {
				if c.held[string(r)]--; c.held[string(r)] <= 0 {
					delete(c.held, string(r))
				}
			}
		}
	}
}

// lose reports whether the answer to an applied request of op is to be
// lost.
func (c *Conflicts) lose(op string, status int) bool {
	if !writes(op) || c.LoseRate <= 0 || status != http.StatusOK {
		return false
	}
	c.mu.Lock()
	draw := rand.Float64 //nolint:gosec // a fault's odds, not a secret
	if c.Rand != nil {
		draw = c.Rand.Float64
	}
	if draw() >= c.LoseRate {
		c.mu.Unlock()
		return false
	}
	c.stats.Lost++
	c.mu.Unlock()
	return true
}
