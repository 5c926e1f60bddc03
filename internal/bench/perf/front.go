package perf

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/dynamo"
)

// Front sits before the store. It counts every request per table and
// operation as the store receives it, and sums the capacity the store's
// answers report (ConsumedCapacity, table and index by index), so that
// oncecall and a peer are counted the same way. With AskCapacity set it
// also makes every request that can ask for capacity and does not ask for
// INDEXES ask for it, and counts those it changed (Added): a peer whose SDK
// does not ask is measured as well.
type Front struct {
	next http.Handler
	// AskCapacity, set before the first request, lets the front add
	// "ReturnConsumedCapacity":"INDEXES" to requests that lack it.
	AskCapacity bool

	mu     sync.Mutex
	counts map[Op]int64
	busy   map[Op]time.Duration
	units  map[Op]dynamo.Capacity
	added  map[Op]int64
}

// Op is one kind of store request: an operation on a table.
type Op struct {
	Table, Name string
}

// NewFront returns a Front before next.
func NewFront(next http.Handler) *Front {
	return &Front{next: next, counts: map[Op]int64{}, busy: map[Op]time.Duration{}, units: map[Op]dynamo.Capacity{}, added: map[Op]int64{}}
}

// Capacity returns a copy of the capacity the answers reported so far.
func (f *Front) Capacity() Capacities {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(Capacities, len(f.units))
	for k, v := range f.units {
		out[k] = v.Add(dynamo.Capacity{})
	}
	return out
}

// Added returns how many requests the front made ask for capacity, so far.
func (f *Front) Added() Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(Counts(f.added))
}

// Capacities is the capacity answers reported, per Op.
type Capacities map[Op]dynamo.Capacity

// Since returns c minus an earlier snapshot, for one table, per operation.
func (c Capacities) Since(before Capacities, table string) map[string]dynamo.Capacity {
	out := map[string]dynamo.Capacity{}
	for k, v := range c {
		if d := v.Sub(before[k]); k.Table == table && d.Requests != 0 {
			out[k.Name] = d
		}
	}
	return out
}

// Sum adds up a per-operation capacity.
func Sum(m map[string]dynamo.Capacity) dynamo.Capacity {
	var c dynamo.Capacity
	for _, v := range m {
		c = c.Add(v)
	}
	return c
}

// Counts returns a copy of the counts so far.
func (f *Front) Counts() Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(Counts, len(f.counts))
	for k, v := range f.counts {
		out[k] = v
	}
	return out
}

// Busy returns how long the store spent serving requests, per table, in
// all since it started.
func (f *Front) Busy() map[string]time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]time.Duration{}
	for k, v := range f.busy {
		out[k.Table] += v
	}
	return out
}

// Counts is a number of requests per Op.
type Counts map[Op]int64

// Since returns c minus an earlier snapshot, for one table.
func (c Counts) Since(before Counts, table string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range c {
		if k.Table == table && v-before[k] != 0 {
			out[k.Name] = v - before[k]
		}
	}
	return out
}

// Total adds up a per-operation count.
func Total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// Describe formats a per-operation count divided by calls, such as
// "1.00 (TransactWriteItems 1.00)".
func Describe(m map[string]int64, calls int) string {
	if calls == 0 {
		return "n/a"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + " " + ftoa(float64(m[k])/float64(calls), 2)
	}
	return ftoa(float64(Total(m))/float64(calls), 2) + " (" + strings.Join(parts, ", ") + ")"
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	op := Op{Table: tableOf(body), Name: target[strings.LastIndexByte(target, '.')+1:]}
	added := false
	if f.AskCapacity && dynamo.TakesCapacity(op.Name) {
		body, added = askIndexes(body)
		if added {
			// The store does not check the signature over the body; DynamoDB
			// would refuse a changed body.
			r.ContentLength = int64(len(body))
			r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	start := time.Now()
	f.next.ServeHTTP(rec, r)
	took := time.Since(start)
	out := rec.Body.Bytes()
	got := dynamo.Consumed(op.Name, consumed(out))
	f.mu.Lock()
	f.counts[op]++
	f.busy[op] += took
	f.units[op] = f.units[op].Add(got)
	if added {
		f.added[op]++
	}
	f.mu.Unlock()
	for k, vs := range rec.Header() {
		if !strings.EqualFold(k, "Content-Length") {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(out)
}

// askIndexes returns body asking for "ReturnConsumedCapacity":"INDEXES",
// and whether it had to change it to.
func askIndexes(body []byte) ([]byte, bool) {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body, false
	}
	const indexes = `"` + string(types.ReturnConsumedCapacityIndexes) + `"`
	if string(req["ReturnConsumedCapacity"]) == indexes {
		return body, false
	}
	req["ReturnConsumedCapacity"] = json.RawMessage(indexes)
	changed, err := json.Marshal(req)
	if err != nil {
		return body, false
	}
	return changed, true
}

// consumed reads the ConsumedCapacity of an answer body: one entry or a
// list of them, or none.
func consumed(answer []byte) []types.ConsumedCapacity {
	if !bytes.Contains(answer, []byte(`"ConsumedCapacity"`)) {
		return nil
	}
	var a struct{ ConsumedCapacity json.RawMessage }
	if json.Unmarshal(answer, &a) != nil || len(a.ConsumedCapacity) == 0 {
		return nil
	}
	var list []types.ConsumedCapacity
	if a.ConsumedCapacity[0] == '[' {
		if json.Unmarshal(a.ConsumedCapacity, &list) != nil {
			return nil
		}
		return list
	}
	var one types.ConsumedCapacity
	if json.Unmarshal(a.ConsumedCapacity, &one) != nil {
		return nil
	}
	return []types.ConsumedCapacity{one}
}

// tableOf finds the first table name in a request body: a TableName, or
// the first table of a batch's RequestItems.
func tableOf(body []byte) string {
	key := `"TableName":"`
	i := bytes.Index(body, []byte(key))
	if i < 0 {
		key = `"RequestItems":{"`
		i = bytes.Index(body, []byte(key))
	}
	if i < 0 {
		return ""
	}
	rest := body[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}
