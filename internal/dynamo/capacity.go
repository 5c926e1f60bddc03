package dynamo

import (
	"context"
	"reflect"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// AskCapacity is an SDK stack option (dynamodb.Options.APIOptions) that
// makes every request whose input has a ReturnConsumedCapacity field ask
// for INDEXES: the answer then says how many read and write units the call
// consumed on the table and on each index. Options installs it, so no
// request oncecall builds has to remember the field. The caller's input is
// left as it is: the request is sent from a shallow copy with the field
// set, so one input may be shared by concurrent calls.
func AskCapacity(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("oncecallAskCapacity",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			in.Parameters = askIndexes(in.Parameters)
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

var returnConsumedCapacity = reflect.TypeFor[types.ReturnConsumedCapacity]()

// askIndexes returns params, or, when params points to a struct with a
// ReturnConsumedCapacity field that does not say INDEXES, a copy that does.
func askIndexes(params any) any {
	v := reflect.ValueOf(params)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return params
	}
	f := v.Elem().FieldByName("ReturnConsumedCapacity")
	if !f.IsValid() || f.Type() != returnConsumedCapacity || f.String() == string(types.ReturnConsumedCapacityIndexes) {
		return params
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	cp.Elem().FieldByName("ReturnConsumedCapacity").SetString(string(types.ReturnConsumedCapacityIndexes))
	return cp.Interface()
}

// capacityOps are the DynamoDB operations whose requests take
// ReturnConsumedCapacity, from the API reference; reads are those whose
// units are read units.
var capacityOps = map[string]bool{
	"BatchGetItem": true, "GetItem": true, "Query": true, "Scan": true, "TransactGetItems": true,
	"BatchWriteItem": false, "DeleteItem": false, "PutItem": false, "UpdateItem": false, "TransactWriteItems": false,
	"ExecuteStatement": false, "BatchExecuteStatement": false, "ExecuteTransaction": false,
}

// TakesCapacity reports whether requests of operation op (such as
// "GetItem") take ReturnConsumedCapacity.
func TakesCapacity(op string) bool {
	_, ok := capacityOps[op]
	return ok
}

// Units are capacity units: read and write.
type Units struct {
	Read, Write float64
}

// Plus returns u + v.
func (u Units) Plus(v Units) Units { return Units{u.Read + v.Read, u.Write + v.Write} }

// Minus returns u - v.
func (u Units) Minus(v Units) Units { return Units{u.Read - v.Read, u.Write - v.Write} }

// Capacity is what answers reported as consumed, summed: on the table and
// on each index (by index name). It holds only what the answers said:
// nothing here is computed from item sizes.
type Capacity struct {
	// Requests is how many answers were summed; Reported how many of them
	// carried a ConsumedCapacity. An error answer (a failed condition, a
	// cancelled transaction) carries none, although DynamoDB may bill it.
	Requests, Reported int64
	Table              Units
	Indexes            map[string]Units
}

// Total is the units of the table and of every index together.
func (c Capacity) Total() Units {
	t := c.Table
	for _, u := range c.Indexes {
		t = t.Plus(u)
	}
	return t
}

// Index is the units of every index together.
func (c Capacity) Index() Units { return c.Total().Minus(c.Table) }

// IndexNames returns the names of the indexes c has units for, sorted.
func (c Capacity) IndexNames() []string {
	names := make([]string, 0, len(c.Indexes))
	for k := range c.Indexes {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Add returns c + d, sharing no map with either.
func (c Capacity) Add(d Capacity) Capacity {
	out := Capacity{Requests: c.Requests + d.Requests, Reported: c.Reported + d.Reported, Table: c.Table.Plus(d.Table)}
	for _, m := range []map[string]Units{c.Indexes, d.Indexes} {
		for k, u := range m {
			if out.Indexes == nil {
				out.Indexes = map[string]Units{}
			}
			out.Indexes[k] = out.Indexes[k].Plus(u)
		}
	}
	return out
}

// Sub returns c - d, for the capacity between two readings.
func (c Capacity) Sub(d Capacity) Capacity {
	neg := Capacity{Requests: -d.Requests, Reported: -d.Reported, Table: Units{}.Minus(d.Table)}
	for k, u := range d.Indexes {
		if neg.Indexes == nil {
			neg.Indexes = map[string]Units{}
		}
		neg.Indexes[k] = Units{}.Minus(u)
	}
	out := c.Add(neg)
	for k, u := range out.Indexes {
		if u == (Units{}) {
			delete(out.Indexes, k)
		}
	}
	return out
}

// Consumed is the capacity of one answer of operation op, from the
// ConsumedCapacity entries it carried (none for an error answer).
// ReadCapacityUnits and WriteCapacityUnits are taken as given; an entry or
// part that gives only CapacityUnits counts them as read units for the
// reading operations (GetItem, BatchGetItem, Query, Scan, TransactGetItems)
// and as write units for the others, as DynamoDB bills them. The table's
// part is the entry's Table; without one, the entry's total less its
// indexes.
func Consumed(op string, entries []types.ConsumedCapacity) Capacity {
	c := Capacity{Requests: 1}
	if len(entries) > 0 {
		c.Reported = 1
	}
	read := capacityOps[op]
	for _, e := range entries {
		var idx Units
		for _, m := range []map[string]types.Capacity{e.GlobalSecondaryIndexes, e.LocalSecondaryIndexes} {
			for name, p := range m {
				u := units(read, p.CapacityUnits, p.ReadCapacityUnits, p.WriteCapacityUnits)
				if c.Indexes == nil {
					c.Indexes = map[string]Units{}
				}
				c.Indexes[name] = c.Indexes[name].Plus(u)
				idx = idx.Plus(u)
			}
		}
		if e.Table != nil {
			c.Table = c.Table.Plus(units(read, e.Table.CapacityUnits, e.Table.ReadCapacityUnits, e.Table.WriteCapacityUnits))
		} else {
			c.Table = c.Table.Plus(units(read, e.CapacityUnits, e.ReadCapacityUnits, e.WriteCapacityUnits).Minus(idx))
		}
	}
	return c
}

func units(read bool, total, r, w *float64) Units {
	if r != nil || w != nil {
		return Units{aws.ToFloat64(r), aws.ToFloat64(w)}
	}
	if read {
		return Units{Read: aws.ToFloat64(total)}
	}
	return Units{Write: aws.ToFloat64(total)}
}

// consumedOf returns the ConsumedCapacity entries of an SDK output (a
// pointer to a struct with a ConsumedCapacity field of either shape), or
// none.
func consumedOf(result any) []types.ConsumedCapacity {
	v := reflect.ValueOf(result)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("ConsumedCapacity")
	if !f.IsValid() {
		return nil
	}
	switch cc := f.Interface().(type) {
	case *types.ConsumedCapacity:
		if cc != nil {
			return []types.ConsumedCapacity{*cc}
		}
	case []types.ConsumedCapacity:
		return cc
	}
	return nil
}
