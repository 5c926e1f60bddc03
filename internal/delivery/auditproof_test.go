package delivery_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
)

// TestAuditProofCoversEveryField: changing any field of a Decision but
// Proof, or the ticket id, changes the digest its proof is made over, so
// that nothing an entry shows can be changed after its proof was made. A
// field added to Decision (or Actor, or Receipt) fails here until
// AuditProof covers it.
func TestAuditProofCoversEveryField(t *testing.T) {
	base := delivery.Decision{At: time.UnixMilli(1_700_000_000_000)}
	_, want := delivery.AuditProof("t-1", base)
	if _, d := delivery.AuditProof("t-2", base); d == want {
		t.Error("the ticket id is not covered")
	}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for i := range v.NumField() {
			f, name := v.Field(i), path+v.Type().Field(i).Name
			if name == "Proof" {
				continue
			}
			switch f.Kind() {
			case reflect.String:
				f.SetString("x")
			case reflect.Bool:
				f.SetBool(!f.Bool())
			case reflect.Struct:
				if f.Type() == reflect.TypeFor[time.Time]() {
					f.Set(reflect.ValueOf(time.UnixMilli(1_700_000_000_001)))
					break
				}
				walk(f, name+".")
				continue
			default:
				t.Errorf("%s: a field of kind %s the test does not know how to change", name, f.Kind())
				continue
			}
			d := base
			reflect.ValueOf(&d).Elem().FieldByIndex(fieldIndex(t, reflect.TypeFor[delivery.Decision](), name)).Set(f)
			if _, got := delivery.AuditProof("t-1", d); got == want {
				t.Errorf("Decision.%s is not covered by AuditProof: an entry's %s could be changed after its proof", name, name)
			}
			f.Set(reflect.Zero(f.Type()))
		}
	}
	c := base
	walk(reflect.ValueOf(&c).Elem(), "")
}

// fieldIndex is the index path of the dotted field name in t.
func fieldIndex(tb testing.TB, t reflect.Type, name string) []int {
	var idx []int
	for name != "" {
		head, rest, _ := strings.Cut(name, ".")
		f, ok := t.FieldByName(head)
		if !ok {
			tb.Fatalf("no field %s", head)
		}
		idx = append(idx, f.Index...)
		t, name = f.Type, rest
	}
	return idx
}
