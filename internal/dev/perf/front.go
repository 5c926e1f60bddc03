package perf

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"
)

// Front sits before the store. It counts every request per table and
// operation as the store receives it, so that oncecall and a peer are
// counted the same way.
type Front struct {
	next http.Handler

	mu     sync.Mutex
	counts map[Op]int64
	busy   map[Op]time.Duration
}

// Op is one kind of store request: an operation on a table.
type Op struct {
	Table, Name string
}

// NewFront returns a Front before next.
func NewFront(next http.Handler) *Front {
	return &Front{next: next, counts: map[Op]int64{}, busy: map[Op]time.Duration{}}
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
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	start := time.Now()
	f.next.ServeHTTP(rec, r)
	took := time.Since(start)
	f.mu.Lock()
	f.counts[op]++
	f.busy[op] += took
	f.mu.Unlock()
	out := rec.Body.Bytes()
	for k, vs := range rec.Header() {
		if !strings.EqualFold(k, "Content-Length") {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(out)
}

// tableOf finds the first table name in a request body.
func tableOf(body []byte) string {
	const key = `"TableName":"`
	i := bytes.Index(body, []byte(key))
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
