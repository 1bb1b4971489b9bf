package logs_test

import (
	"encoding/json"
	"testing"

	"cads/shared/logs"
)

// Every field of every schema is described and typed; numeric fields are
// the metrics; the endpoint answers the same document.
func TestLogSchemasDescribeEveryField(t *testing.T) {
	ss := logs.LogSchemas()
	if len(ss) != len(logs.Types()) {
		t.Fatalf("%d schemas for %d types", len(ss), len(logs.Types()))
	}
	for _, s := range ss {
		sc, ok := logs.SchemaOf(s.Type)
		if !ok || len(s.Fields) != len(sc.Fields) || s.Display == "" || s.DefaultOrder != sc.TimeField || s.Retention.OnlineAge != 30 {
			t.Fatalf("schema %s: %+v", s.Type, s)
		}
		for i, f := range s.Fields {
			if f.Name != sc.Fields[i].Name || f.Display == "" || f.Description == "" || f.Type.Name == "" {
				t.Errorf("%s.%s: %+v", s.Type, f.Name, f)
			}
			if f.IsMetric != (sc.Fields[i].Kind == logs.KindNumber) {
				t.Errorf("%s.%s: is_metric %v", s.Type, f.Name, f.IsMetric)
			}
			if f.Type.Name == "enum" && len(f.Type.Values) == 0 || f.Type.Name == "array" && (f.Type.ElementType == nil || f.Type.ElementType.Name == "") {
				t.Errorf("%s.%s: type %+v", s.Type, f.Name, f.Type)
			}
		}
	}
	e := newEnv(t)
	r := e.call(e.op, "GET", "/v2/log-schemas", nil, "")
	want, _ := json.Marshal(ss)
	if r.status != 200 || r.raw != string(want) {
		t.Fatalf("GET /v2/log-schemas: %d %.300s", r.status, r.raw)
	}
}
