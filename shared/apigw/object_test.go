package apigw

import (
	"encoding/json"
	"testing"

	"cads/shared/jsontext"
)

func TestMarshalObjectKeepsOrder(t *testing.T) {
	b, err := jsontext.MarshalObject([]string{"z", "a\"b", "m"}, []any{1, nil, []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"z":1,"a\"b":null,"m":[2]}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if !json.Valid(b) {
		t.Fatalf("not JSON: %s", b)
	}
	if b, _ := jsontext.MarshalObject(nil, nil); string(b) != "{}" {
		t.Fatalf("empty: got %s", b)
	}
	if _, err := jsontext.MarshalObject([]string{"f"}, []any{func() {}}); err == nil {
		t.Fatal("an unmarshalable value did not fail")
	}
}
