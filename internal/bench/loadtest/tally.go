package loadtest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// StoredTicket is a ticket item as the store holds it.
type StoredTicket struct {
	ID, Tenant, RequestID, OperationKey string
}

// StoredTickets reads every ticket whose request_id starts with prefix,
// with consistent scans of the whole table.
func StoredTickets(ctx context.Context, client *dynamodb.Client, table, prefix string) ([]StoredTicket, error) {
	var out []StoredTicket
	var start map[string]types.AttributeValue
	for {
		res, err := client.Scan(ctx, &dynamodb.ScanInput{
			TableName:                 aws.String(table),
			ConsistentRead:            aws.Bool(true),
			FilterExpression:          aws.String("#kind = :ticket"),
			ExpressionAttributeNames:  map[string]string{"#kind": "kind"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":ticket": str("ticket")},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("loadtest: scan %s: %w", table, err)
		}
		for _, item := range res.Items {
			// The prefix is matched here rather than in the scan's
			// filter, so that any store the tests run on can take it.
			if !strings.HasPrefix(attr(item, "request_id"), prefix) {
				continue
			}
			out = append(out, StoredTicket{
				ID: strings.TrimPrefix(attr(item, "pk"), "ticket#"), Tenant: attr(item, "tenant_id"),
				RequestID: attr(item, "request_id"), OperationKey: attr(item, "operation_key"),
			})
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func attr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// Report is the comparison of a run's answers with the store.
type Report struct {
	Requests     int
	Created      int
	Deduplicated int
	Rejected     int
	Found        int
	NotFound     int
	InProgress   int
	// Busy counts every busy answer, the ones Run retried included.
	Busy int
	// Refused counts 401 and 403 answers.
	Refused int
	// Errors counts 5xx answers and calls that got no answer.
	Errors int

	// Operations is the number of distinct operations planned; Answered
	// those that got at least one created or deduplicated answer.
	Operations, Answered int
	// Tickets is the number of the run's tickets in the store.
	Tickets int
	// Lost counts tickets named in answers that the store does not hold.
	Lost int
	// Unacknowledged counts stored tickets that no answer named.
	Unacknowledged int
	// Split counts operations whose answers named more than one ticket,
	// and calls that should create nothing but named a ticket.
	Split int
	// Recreated counts operations with more than one created answer.
	Recreated int
	// Duplicated counts operation keys holding more than one ticket.
	Duplicated int
	// ErrorExamples describes a few of the calls counted in Errors.
	ErrorExamples []string
}

// Tally compares results, in the order of calls, with the tickets stored.
func Tally(calls []Call, results []Result, stored []StoredTicket) Report {
	var r Report
	named := map[string]bool{}            // ticket ids named in answers
	perOp := map[string]map[string]bool{} // operation -> ticket ids
	createdPerOp := map[string]int{}
	ops := map[string]bool{}
	for i, res := range results {
		r.Requests++
		r.Busy += res.Busy
		if calls[i].Op != "" {
			ops[calls[i].Op] = true
		}
		switch {
		case res.Status == 0 || res.Status >= 500 || res.Err != "":
			r.Errors++
			if len(r.ErrorExamples) < 5 {
				r.ErrorExamples = append(r.ErrorExamples, fmt.Sprintf("call %d (%s): status %d, code %q, error %q, after %d busy", i, res.Op, res.Status, res.Code, res.Err, res.Busy))
			}
			continue
		case res.Status == 401 || res.Status == 403:
			r.Refused++
			continue
		}
		switch res.Outcome {
		case "created":
			r.Created++
			createdPerOp[res.Op]++
		case "deduplicated":
			r.Deduplicated++
		case "rejected":
			r.Rejected++
		case "found":
			r.Found++
		case "not_found":
			r.NotFound++
		case "in_progress":
			r.InProgress++
		case "busy":
			r.Busy++
		}
		if res.TicketID != "" && (res.Outcome == "created" || res.Outcome == "deduplicated") {
			named[res.TicketID] = true
			if perOp[res.Op] == nil {
				perOp[res.Op] = map[string]bool{}
			}
			perOp[res.Op][res.TicketID] = true
		}
	}
	r.Operations, r.Answered = len(ops), len(perOp)
	for op, ids := range perOp {
		if len(ids) > 1 || op == "" {
			r.Split++
		}
	}
	for _, n := range createdPerOp {
		if n > 1 {
			r.Recreated++
		}
	}
	inStore := map[string]bool{}
	perKey := map[string]int{}
	for _, t := range stored {
		inStore[t.ID] = true
		perKey[t.OperationKey]++
		if !named[t.ID] {
			r.Unacknowledged++
		}
	}
	r.Tickets = len(stored)
	for id := range named {
		if !inStore[id] {
			r.Lost++
		}
	}
	for _, n := range perKey {
		if n > 1 {
			r.Duplicated++
		}
	}
	return r
}

// Check returns what is wrong with a run in which nothing was injected:
// every call answered without a server error, every operation answered and
// holding exactly one stored ticket with exactly one created answer, and
// nothing lost either way.
func (r Report) Check() error {
	var errs []error
	bad := func(cond bool, format string, args ...any) {
		if cond {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	bad(r.Errors > 0, "%d calls ended in a server error or no answer: %s", r.Errors, strings.Join(r.ErrorExamples, "; "))
	bad(r.Lost > 0, "%d answered tickets are not in the store", r.Lost)
	bad(r.Unacknowledged > 0, "%d stored tickets were never answered", r.Unacknowledged)
	bad(r.Split > 0, "%d operations were answered with more than one ticket", r.Split)
	bad(r.Recreated > 0, "%d operations got more than one created answer", r.Recreated)
	bad(r.Duplicated > 0, "%d operation keys hold more than one ticket", r.Duplicated)
	bad(r.Tickets != r.Operations, "%d tickets stored for %d operations", r.Tickets, r.Operations)
	bad(r.Created != r.Operations, "%d created answers for %d operations", r.Created, r.Operations)
	return errors.Join(errs...)
}

// String prints the report as make stress shows it, one "name: value" a line.
func (r Report) String() string {
	var b strings.Builder
	for _, f := range []struct {
		name string
		n    int
	}{
		{"requests", r.Requests}, {"created", r.Created}, {"deduplicated", r.Deduplicated}, {"rejected", r.Rejected},
		{"found", r.Found}, {"not_found", r.NotFound}, {"in_progress", r.InProgress}, {"busy", r.Busy},
		{"refused", r.Refused}, {"errors", r.Errors}, {"operations", r.Operations}, {"tickets stored", r.Tickets},
		{"lost", r.Lost}, {"unacknowledged", r.Unacknowledged}, {"split", r.Split}, {"recreated", r.Recreated},
		{"duplicated", r.Duplicated},
	} {
		fmt.Fprintf(&b, "%s: %d\n", f.name, f.n)
	}
	return b.String()
}
