package localdb

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"unicode"
)

// removeFix is the handler in front of minidyn that makes a top-level
// REMOVE in an update expression remove the attribute, as DynamoDB does.
// minidyn (v0.8.2) parses the clause and then keeps the attribute, so an
// item never leaves a sparse index (oncecall's attention index) the way it
// does on DynamoDB.
//
// An update that names top-level attributes in a REMOVE clause is
// forwarded, and if it succeeds the item is read back and written again
// without those attributes. Those updates take the lock alone; every other
// request shares it, so nothing observes the item between the update and
// the fix. minidyn serializes every operation anyway, so the lock costs no
// concurrency it had.
type removeFix struct {
	next http.Handler
	mu   sync.RWMutex
}

// removal is one item whose top-level attributes an update removed.
type removal struct {
	table string
	key   map[string]json.RawMessage
	attrs []string
	// returnsNew is true when the answer shows the item as updated.
	returnsNew bool
}

func (f *removeFix) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	var removals []removal
	var body []byte
	if op == "UpdateItem" || op == "TransactWriteItems" {
		body = readAll(r)
		removals = removalsOf(op, body)
		r.Body = readCloser{bytes.NewReader(body)}
	}
	if len(removals) == 0 {
		f.mu.RLock()
		defer f.mu.RUnlock()
		f.next.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := httptest.NewRecorder()
	f.next.ServeHTTP(rec, r)
	out := rec.Body.Bytes()
	if rec.Code == http.StatusOK {
		for _, rm := range removals {
			f.apply(r, rm)
		}
		if op == "UpdateItem" && removals[0].returnsNew {
			out = stripReturned(out, removals[0].attrs)
		}
	}
	for k, vs := range rec.Header() {
		if !strings.EqualFold(k, "Content-Length") {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(out)
}

// apply rewrites the item rm names without rm's attributes.
func (f *removeFix) apply(orig *http.Request, rm removal) {
	get, _ := json.Marshal(map[string]any{"TableName": rm.table, "Key": rm.key, "ConsistentRead": true})
	res := f.call(orig, "GetItem", get)
	var got struct{ Item map[string]json.RawMessage }
	if json.Unmarshal(res, &got) != nil || len(got.Item) == 0 {
		return
	}
	changed := false
	for _, a := range rm.attrs {
		if _, ok := got.Item[a]; ok {
			delete(got.Item, a)
			changed = true
		}
	}
	if !changed {
		return
	}
	put, _ := json.Marshal(map[string]any{"TableName": rm.table, "Item": got.Item})
	f.call(orig, "PutItem", put)
}

func (f *removeFix) call(orig *http.Request, op string, body []byte) []byte {
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)).WithContext(orig.Context())
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Authorization", orig.Header.Get("Authorization"))
	rec := httptest.NewRecorder()
	f.next.ServeHTTP(rec, req)
	return rec.Body.Bytes()
}

// update is the part of an UpdateItem request, or of a TransactWriteItems
// Update action, that a removal needs.
type update struct {
	TableName                string
	Key                      map[string]json.RawMessage
	UpdateExpression         string
	ExpressionAttributeNames map[string]string
	ReturnValues             string
}

func (u *update) removal() (removal, bool) {
	attrs := topLevelRemovals(u.UpdateExpression, u.ExpressionAttributeNames)
	if len(attrs) == 0 {
		return removal{}, false
	}
	return removal{table: u.TableName, key: u.Key, attrs: attrs,
		returnsNew: u.ReturnValues == "ALL_NEW" || u.ReturnValues == "UPDATED_NEW"}, true
}

func removalsOf(op string, body []byte) []removal {
	var out []removal
	switch op {
	case "UpdateItem":
		var u update
		if json.Unmarshal(body, &u) == nil {
			if rm, ok := u.removal(); ok {
				out = append(out, rm)
			}
		}
	case "TransactWriteItems":
		var req struct{ TransactItems []struct{ Update *update } }
		if json.Unmarshal(body, &req) == nil {
			for _, it := range req.TransactItems {
				if it.Update == nil {
					continue
				}
				if rm, ok := it.Update.removal(); ok {
					out = append(out, rm)
				}
			}
		}
	}
	return out
}

// clauseWords are the keywords that start a clause of an update expression.
var clauseWords = map[string]bool{"SET": true, "REMOVE": true, "ADD": true, "DELETE": true}

// topLevelRemovals returns the attribute names a REMOVE clause of expr
// removes whole: paths without a "." or "[", with #placeholders resolved.
func topLevelRemovals(expr string, names map[string]string) []string {
	fields := strings.FieldsFunc(expr, func(r rune) bool { return unicode.IsSpace(r) || r == ',' })
	var out []string
	in := false
	for _, f := range fields {
		if w := strings.ToUpper(f); clauseWords[w] {
			in = w == "REMOVE"
			continue
		}
		if !in || strings.ContainsAny(f, ".[") {
			continue
		}
		if n, ok := names[f]; ok {
			f = n
		}
		out = append(out, f)
	}
	return out
}

// stripReturned removes attrs from the Attributes of an UpdateItem answer
// (ReturnValues ALL_NEW or UPDATED_NEW would otherwise still show them).
func stripReturned(body []byte, attrs []string) []byte {
	var resp map[string]json.RawMessage
	if json.Unmarshal(body, &resp) != nil || resp["Attributes"] == nil {
		return body
	}
	var item map[string]json.RawMessage
	if json.Unmarshal(resp["Attributes"], &item) != nil {
		return body
	}
	for _, a := range attrs {
		delete(item, a)
	}
	b, err := json.Marshal(item)
	if err != nil {
		return body
	}
	resp["Attributes"] = b
	if out, err := json.Marshal(resp); err == nil {
		return out
	}
	return body
}

func readAll(r *http.Request) []byte {
	var b bytes.Buffer
	_, _ = b.ReadFrom(r.Body)
	_ = r.Body.Close()
	return b.Bytes()
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
