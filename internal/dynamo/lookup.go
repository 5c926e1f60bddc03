package dynamo

import (
	"time"

	"github.com/oncecall/oncecall/internal/canonjson"
)

// Kinds of LookupIndex partition, the first member of lk.
const (
	lookupRequest = "request"
	lookupTenant  = "tenant"
)

// lookupKey is the canonical JSON array of parts (RFC 8785: strings only,
// so no member order or number form to settle). Canonical JSON keeps any
// string, separators included, from running into the next part.
func lookupKey(parts ...string) string {
	b := make([]byte, 0, 16+8*len(parts))
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = canonjson.AppendString(b, p)
	}
	return string(append(b, ']'))
}

// requestLookup is lk of the tickets created for requestID in tenant.
func requestLookup(tenant, requestID string) string {
	return lookupKey(lookupRequest, tenant, requestID)
}

// tenantLookup is lk of tenant's users; their lk_sort is the user id.
func tenantLookup(tenant string) string { return lookupKey(lookupTenant, tenant) }

// lookupTime is a ticket's lk_sort: its creation time in the fixed-width
// form of index times, so that LookupIndex lists a request's tickets
// oldest first.
func lookupTime(t time.Time) string { return indexTime(t) }
