package samtest

import (
	"reflect"
	"slices"
)

// StoreActions is what each method of dynamo.API needs in IAM terms: a
// transaction needs the action of each kind of item in it, and oncecall's
// one transaction holds a Put and an Update (TransactWriteItems: the
// operation, and the ticket inserted). A test in this
// package fails when dynamo.API gains a method this map does not name.
var StoreActions = map[string][]string{
	"TransactWriteItems": {"dynamodb:PutItem", "dynamodb:UpdateItem"},
	"GetItem":            {"dynamodb:GetItem"},
	"PutItem":            {"dynamodb:PutItem"},
	"UpdateItem":         {"dynamodb:UpdateItem"},
	"Query":              {"dynamodb:Query"},
}

// StoreCall is a dynamo.API method a function calls; Index names the
// index a Query reads ("" for the table).
type StoreCall struct{ Method, Index string }

// StoreGrants is what a role must allow, and all it may allow, on the
// table for calls: actions on the table's ARN (table, the evaluated
// reference, such as "getatt:Table.Arn"), a Query on an index's ARN
// (table + "/index/" + name).
func StoreGrants(table string, calls ...StoreCall) map[Grant]bool {
	out := map[Grant]bool{}
	for _, c := range calls {
		res := table
		if c.Index != "" {
			res = table + "/index/" + c.Index
		}
		for _, a := range StoreActions[c.Method] {
			out[Grant{Action: a, Resource: res}] = true
		}
	}
	return out
}

// Methods lists the methods of the interface type T.
func Methods[T any]() []string {
	typ := reflect.TypeFor[T]()
	out := make([]string, typ.NumMethod())
	for i := range out {
		out[i] = typ.Method(i).Name
	}
	slices.Sort(out)
	return out
}
