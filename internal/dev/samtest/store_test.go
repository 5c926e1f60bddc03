package samtest_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/oncecall/oncecall/internal/dev/samtest"
	"github.com/oncecall/oncecall/internal/dynamo"
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
