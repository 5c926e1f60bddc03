package dynamotest

import (
	"encoding/json"
	"sync"
	"time"
)

// TokenWindow is how long DynamoDB remembers a TransactWriteItems'
// ClientRequestToken.
const TokenWindow = 10 * time.Minute

// Tokens is DynamoDB's rule for a TransactWriteItems' ClientRequestToken,
// which dynoxide does not apply, as the Proxy applies it when its Tokens
// field is set (../shared/docs/dynamodb-rules.md, from the API reference of
// TransactWriteItems): a token sent again within TokenWindow with other
// parameters is refused with IdempotentParameterMismatchException, and
// nothing of it applies. DynamoDB documents no exception for a token whose
// first use was cancelled, so none is made here: every request that
// reaches the rule spends its token.
type Tokens struct {
	mu         sync.Mutex
	seen       map[string]sentToken
	mismatches int
}

type sentToken struct {
	params string
	at     time.Time
}

// Mismatches is how many requests the rule refused.
func (k *Tokens) Mismatches() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.mismatches
}

// admit decides a request under the rule: nil when it may go on.
func (k *Tokens) admit(op string, body []byte) *Fault {
	if op != "TransactWriteItems" {
		return nil
	}
	var req map[string]any
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	token, _ := req["ClientRequestToken"].(string)
	if token == "" {
		return nil
	}
	delete(req, "ClientRequestToken")
	// encoding/json writes map members in key order: one spelling per
	// content, whatever order the SDK wrote them in.
	canon, _ := json.Marshal(req)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen == nil {
		k.seen = map[string]sentToken{}
	}
	now := time.Now()
	if s, ok := k.seen[token]; ok && now.Sub(s.at) < TokenWindow {
		if s.params != string(canon) {
			k.mismatches++
			return &Fault{Error: "IdempotentParameterMismatchException"}
		}
		return nil
	}
	k.seen[token] = sentToken{params: string(canon), at: now}
	return nil
}
