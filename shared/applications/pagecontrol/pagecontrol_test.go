package pagecontrol

import (
	"encoding/json"
	"testing"
)

// The embedded schema compiles and gives every action type of the
// reference document a schema of its own.
func TestSchemaCoversEveryActionType(t *testing.T) {
	s, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.types) != 28 || len(s.actions) != 28 {
		t.Fatalf("%d action types", len(s.types))
	}
	ok := []string{
		`[{"type":"continue"}]`,
		`[{"type":"set-response-header","name":"X-Frame-Options","value":"DENY"}]`,
		`[{"type":"redirect","status_code":"301","location":"https://example.com/"}]`,
	}
	for _, a := range ok {
		if err := ValidateActions(json.RawMessage(a)); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	if err := ValidateConditions(json.RawMessage(`{"random":{"probability":0.5},"method_is":{"type":"method_is","values":["GET"]}}`)); err != nil {
		t.Errorf("conditions: %v", err)
	}
}
