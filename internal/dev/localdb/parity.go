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

// parity is the handler in front of minidyn that makes it answer as
// DynamoDB does where oncecall depends on the difference. minidyn (v0.8.2)
// departs from DynamoDB in two ways that matter to a sparse index such as
// oncecall's attention index:
//
//   - a top-level REMOVE in an update expression is parsed and then
//     ignored: the attribute stays, so the item never leaves the index;
//   - an UpdateItem that gives an item an index key it did not have
//     overwrites the index's first entry instead of adding one, so a later
//     query silently misses an item.
//
// Both come from minidyn's UpdateItem; its PutItem keeps indexes right.
// So an UpdateItem is carried out on a copy of the item in a scratch table
// of the same key schema and no index (conditions, update expression and
// return values evaluated there by minidyn itself), the removed attributes
// are taken off the result, and the result is written to the real table
// with PutItem. Those updates take the lock alone; every other request
// shares it, so nothing observes an item between the steps. minidyn
// serializes every operation anyway, so the lock costs no concurrency it
// had. An Update action inside TransactWriteItems is left to minidyn, with
// only its REMOVE repaired afterwards (oncecall's transactions use Put and
// ConditionCheck).
type parity struct {
	next http.Handler
	mu   sync.RWMutex
	// scratch names the scratch table made for each real table.
	scratch map[string]string
}

func newParity(next http.Handler) *parity {
	return &parity{next: next, scratch: map[string]string{}}
}

// scratchSuffix names a real table's scratch table.
const scratchSuffix = ".oncecall-scratch"

// removal is one item whose top-level attributes an update removed.
type removal struct {
	table string
	key   map[string]json.RawMessage
	attrs []string
	// returnsNew is true when the answer shows the item as updated.
	returnsNew bool
}

func (f *parity) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	if op != "UpdateItem" && op != "TransactWriteItems" {
		f.mu.RLock()
		defer f.mu.RUnlock()
		f.next.ServeHTTP(w, r)
		return
	}
	body := readAll(r)
	r.Body = readCloser{bytes.NewReader(body)}
	var removals []removal
	if op == "TransactWriteItems" {
		if removals = removalsOf(body); len(removals) == 0 {
			f.mu.RLock()
			defer f.mu.RUnlock()
			f.next.ServeHTTP(w, r)
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var status int
	var header http.Header
	var out []byte
	if op == "UpdateItem" {
		status, header, out = f.update(r, body)
	} else {
		rec := httptest.NewRecorder()
		f.next.ServeHTTP(rec, r)
		status, header, out = rec.Code, rec.Header(), rec.Body.Bytes()
		if status == http.StatusOK {
			for _, rm := range removals {
				f.removeAttrs(r, rm)
			}
		}
	}
	for k, vs := range header {
		if !strings.EqualFold(k, "Content-Length") {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// update carries out an UpdateItem on a scratch copy of the item and, if it
// succeeds, writes the result to the real table with PutItem.
func (f *parity) update(r *http.Request, body []byte) (int, http.Header, []byte) {
	var in map[string]json.RawMessage
	var u update
	if json.Unmarshal(body, &in) != nil || json.Unmarshal(body, &u) != nil || u.TableName == "" {
		return f.forward(r)
	}
	scratch, ok := f.scratchOf(r, u.TableName, u.Key)
	if !ok {
		return f.forward(r)
	}
	current := f.get(r, u.TableName, u.Key)
	if current != nil {
		f.call(r, "PutItem", map[string]any{"TableName": scratch, "Item": current})
	}
	in["TableName"], _ = json.Marshal(scratch)
	rewritten, _ := json.Marshal(in)
	rec := httptest.NewRecorder()
	f.next.ServeHTTP(rec, f.request(r, "UpdateItem", rewritten))
	updated := f.get(r, scratch, u.Key)
	f.call(r, "DeleteItem", map[string]any{"TableName": scratch, "Key": u.Key})
	out := rec.Body.Bytes()
	if rec.Code != http.StatusOK || updated == nil {
		return rec.Code, rec.Header(), out
	}
	rm, _ := u.removal()
	for _, a := range rm.attrs {
		delete(updated, a)
	}
	f.call(r, "PutItem", map[string]any{"TableName": u.TableName, "Item": updated})
	if rm.returnsNew {
		out = stripReturned(out, rm.attrs)
	}
	return rec.Code, rec.Header(), out
}

// scratchOf returns the scratch table of table, creating it on first use
// with table's key schema; key (an item key of table) gives the key
// attributes' types, which minidyn's DescribeTable leaves out.
func (f *parity) scratchOf(r *http.Request, table string, key map[string]json.RawMessage) (string, bool) {
	if s, ok := f.scratch[table]; ok {
		return s, true
	}
	var desc struct {
		Table struct {
			KeySchema []struct{ AttributeName, KeyType string }
		}
	}
	if json.Unmarshal(f.call(r, "DescribeTable", map[string]any{"TableName": table}), &desc) != nil || len(desc.Table.KeySchema) == 0 {
		return "", false
	}
	var defs []map[string]string
	for _, k := range desc.Table.KeySchema {
		var typed map[string]json.RawMessage
		if json.Unmarshal(key[k.AttributeName], &typed) != nil || len(typed) != 1 {
			return "", false
		}
		for t := range typed {
			defs = append(defs, map[string]string{"AttributeName": k.AttributeName, "AttributeType": t})
		}
	}
	name := table + scratchSuffix
	var created struct{ TableDescription json.RawMessage }
	out := f.call(r, "CreateTable", map[string]any{
		"TableName": name, "KeySchema": desc.Table.KeySchema, "AttributeDefinitions": defs, "BillingMode": "PAY_PER_REQUEST",
	})
	if json.Unmarshal(out, &created) != nil || len(created.TableDescription) == 0 {
		return "", false
	}
	f.scratch[table] = name
	return name, true
}

func (f *parity) forward(r *http.Request) (int, http.Header, []byte) {
	rec := httptest.NewRecorder()
	f.next.ServeHTTP(rec, r)
	return rec.Code, rec.Header(), rec.Body.Bytes()
}

// get reads an item consistently; nil when absent.
func (f *parity) get(r *http.Request, table string, key map[string]json.RawMessage) map[string]json.RawMessage {
	var got struct{ Item map[string]json.RawMessage }
	if json.Unmarshal(f.call(r, "GetItem", map[string]any{"TableName": table, "Key": key, "ConsistentRead": true}), &got) != nil || len(got.Item) == 0 {
		return nil
	}
	return got.Item
}

// removeAttrs rewrites the item rm names without rm's attributes.
func (f *parity) removeAttrs(r *http.Request, rm removal) {
	item := f.get(r, rm.table, rm.key)
	if item == nil {
		return
	}
	changed := false
	for _, a := range rm.attrs {
		if _, ok := item[a]; ok {
			delete(item, a)
			changed = true
		}
	}
	if changed {
		f.call(r, "PutItem", map[string]any{"TableName": rm.table, "Item": item})
	}
}

// call sends one request of operation op to minidyn and returns its body.
func (f *parity) call(orig *http.Request, op string, v any) []byte {
	body, _ := json.Marshal(v)
	rec := httptest.NewRecorder()
	f.next.ServeHTTP(rec, f.request(orig, op, body))
	return rec.Body.Bytes()
}

func (f *parity) request(orig *http.Request, op string, body []byte) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)).WithContext(orig.Context())
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Authorization", orig.Header.Get("Authorization"))
	return req
}

// update is the part of an UpdateItem request, or of a TransactWriteItems
// Update action, that the repairs need.
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

// removalsOf returns the removals of a TransactWriteItems request's Update
// actions.
func removalsOf(body []byte) []removal {
	var out []removal
	var req struct{ TransactItems []struct{ Update *update } }
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	for _, it := range req.TransactItems {
		if it.Update == nil {
			continue
		}
		if rm, ok := it.Update.removal(); ok {
			out = append(out, rm)
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
