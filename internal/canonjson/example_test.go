package canonjson_test

import (
	"errors"
	"fmt"

	"github.com/oncecall/oncecall/internal/canonjson"
)

// Parse reads JSON strictly: a member name given twice is refused, where
// encoding/json would keep the last one.
func ExampleParse() {
	v, err := canonjson.Parse([]byte(`{"title": "Cannot sign in", "tags": ["login"]}`), canonjson.Limits{})
	fmt.Println(v, err)

	_, err = canonjson.Parse([]byte(`{"title": "a", "title": "b"}`), canonjson.Limits{})
	var e *canonjson.Error
	fmt.Println(errors.Is(err, canonjson.ErrSyntax), errors.As(err, &e))
	fmt.Println(err)
	// Output:
	// map[tags:[login] title:Cannot sign in] <nil>
	// true true
	// duplicate member name "title" at byte 15
}

// Marshal writes the RFC 8785 canonical form: members sorted by their
// UTF-16 code units, no white space, numbers in their shortest form. Two
// values that mean the same encode alike, which is what an operation key
// is made of.
func ExampleMarshal() {
	a, _ := canonjson.Marshal(map[string]any{"title": "Cannot sign in", "priority": "high", "tags": []any{"login", 2.50}})
	b, _ := canonjson.Parse([]byte(`{ "tags": ["login", 2.5e0], "priority": "high", "title": "Cannot sign in" }`), canonjson.Limits{})
	c, _ := canonjson.Marshal(b)
	fmt.Println(string(a))
	fmt.Println(string(a) == string(c))
	// Output:
	// {"priority":"high","tags":["login",2.5],"title":"Cannot sign in"}
	// true
}
