package samtest_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/testing/samtest"
)

// TestStoreActionsCoverTheStoreAPI keeps StoreActions honest: a method
// added to dynamo.API must say what it needs in IAM before any role can be
// checked against it.
func TestStoreActionsCoverTheStoreAPI(t *testing.T) {
	methods := samtest.Methods[dynamo.API]()
	if mapped := slices.Sorted(maps.Keys(samtest.StoreActions)); !slices.Equal(methods, mapped) {
		t.Errorf("dynamo.API has %v; StoreActions maps %v", methods, mapped)
	}
}

func TestStoreGrants(t *testing.T) {
	got := samtest.StoreGrants("getatt:Table.Arn", samtest.StoreCall{Method: "UpdateItem"}, samtest.StoreCall{Method: "Query", Index: "attention"})
	want := map[samtest.Grant]bool{
		{Action: "dynamodb:UpdateItem", Resource: "getatt:Table.Arn"}:            true,
		{Action: "dynamodb:Query", Resource: "getatt:Table.Arn/index/attention"}: true,
	}
	if !maps.Equal(got, want) {
		t.Errorf("grants %v, want %v", got, want)
	}
}

// TestPermits: a request is allowed by a grant of the same action and
// resource whose LeadingKeys patterns, if any, match its partition key.
func TestPermits(t *testing.T) {
	role := map[samtest.Grant]bool{
		{Action: "dynamodb:PutItem", Resource: "getatt:Table.Arn", Keys: "op#*,ticket#*"}:                                           true,
		{Action: "dynamodb:Query", Resource: "getatt:Table.Arn/index/attention"}:                                                    true,
		{Action: "dynamodb:UpdateItem", Resource: "getatt:Table.Arn", Keys: "ticket#*", Attrs: "delivery,dver,pk", Returns: "NONE"}: true,
	}
	for _, c := range []struct {
		req samtest.Grant
		ok  bool
	}{
		{samtest.Grant{Action: "dynamodb:PutItem", Resource: "getatt:Table.Arn", Key: "op#1f2e"}, true},
		{samtest.Grant{Action: "dynamodb:PutItem", Resource: "getatt:Table.Arn", Key: "ticket#c370"}, true},
		{samtest.Grant{Action: "dynamodb:PutItem", Resource: "getatt:Table.Arn", Key: "user#user-a"}, false},
		{samtest.Grant{Action: "dynamodb:PutItem", Resource: "getatt:Table.Arn", Key: "xop#1"}, false},
		{samtest.Grant{Action: "dynamodb:PutItem", Resource: "getatt:Table.Arn"}, false},
		{samtest.Grant{Action: "dynamodb:UpdateItem", Resource: "getatt:Table.Arn", Key: "op#1"}, false},
		{samtest.Grant{Action: "dynamodb:Query", Resource: "getatt:Table.Arn/index/attention"}, true},
		{samtest.Grant{Action: "dynamodb:UpdateItem", Resource: "getatt:Table.Arn", Key: "ticket#c370", Attrs: "delivery,pk", Returns: "NONE"}, true},
		{samtest.Grant{Action: "dynamodb:UpdateItem", Resource: "getatt:Table.Arn", Key: "ticket#c370", Attrs: "audit,delivery,pk", Returns: "NONE"}, false},
		{samtest.Grant{Action: "dynamodb:UpdateItem", Resource: "getatt:Table.Arn", Key: "ticket#c370", Attrs: "delivery,pk", Returns: "ALL_OLD"}, false},
		{samtest.Grant{Action: "dynamodb:UpdateItem", Resource: "getatt:Table.Arn", Key: "ticket#c370", Attrs: "delivery,pk"}, false},
	} {
		if _, ok := samtest.Permits(role, c.req); ok != c.ok {
			t.Errorf("Permits(%s) = %v, want %v", c.req, ok, c.ok)
		}
	}
}
