package jsonx

import (
	"encoding/json"
	"reflect"
	"testing"
)

type thing struct {
	Name string `json:"name"`
	N    int    `json:"n,omitempty"`
	Skip string `json:"-"`
}

func TestDecodeAppend(t *testing.T) {
	var v thing
	extra, err := Decode([]byte(`{"z":[1, 2],"name":"a","a<b":{"x":null}}`), &v)
	if err != nil || v.Name != "a" || len(extra) != 2 || string(extra["z"]) != "[1, 2]" {
		t.Fatalf("%+v %v %v", v, extra, err)
	}
	b, _ := json.Marshal(v)
	out, err := Append(b, extra, Options{})
	if want := `{"name":"a","a\u003cb":{"x":null},"z":[1, 2]}`; err != nil || string(out) != want {
		t.Fatalf("%s %v, want %s", out, err, want)
	}
	if extra, err := Decode([]byte(`{"name":"a"}`), &v); extra != nil || err != nil {
		t.Fatalf("no extra: %v %v", extra, err)
	}
	if _, err := Decode([]byte(`{"name":1}`), &v); err == nil {
		t.Fatal("a wrong type decodes")
	}
}

func TestAppendOptions(t *testing.T) {
	extra := Extra{"name": json.RawMessage(`"twice"`), "b": json.RawMessage(`{`)}
	if out, err := Append([]byte(`{}`), extra, Options{}); err != nil || string(out) != `{"b":{,"name":"twice"}` {
		t.Fatalf("as they are: %s %v", out, err)
	}
	skip := Declared(typeOf[thing]())
	if _, err := Append([]byte(`{"name":"a"}`), extra, Options{Skip: skip, Check: true}); err == nil {
		t.Fatal("an invalid member passes the check")
	}
	delete(extra, "b")
	if out, err := Append([]byte(`{"name":"a"}`), extra, Options{Skip: skip, Check: true}); err != nil || string(out) != `{"name":"a"}` {
		t.Fatalf("declared key written again: %s %v", out, err)
	}
	if d := Declared(typeOf[*thing]()); !d["name"] || !d["n"] || d["-"] || d["Skip"] {
		t.Fatalf("declared %v", d)
	}
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }
