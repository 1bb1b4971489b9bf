package apigw

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"cads/shared/audit"
	"cads/shared/auditdiff"
)

// What an event keeps of a write's answer: never a secret_key, at any
// depth; a PATCH's JSON Patch from before to after; a POST's resource
// and its href as the target.
func TestAuditCompleteKeepsNoSecret(t *testing.T) {
	var ev audit.Event
	complete(&ev, http.MethodPost, nil, []byte(`{"href":"/v2/accounts/a/service-users/s","name":"ci","access_keys":[{"id":"k","secret_key":"cads_s_k_xyz"}]}`), auditdiff.Patch)
	if strings.Contains(string(ev.Resource), "secret") || !strings.Contains(string(ev.Resource), `"id":"k"`) || ev.Target != "/v2/accounts/a/service-users/s" {
		t.Fatalf("POST: target %q, resource %s", ev.Target, ev.Resource)
	}
	ev = audit.Event{Target: "/v2/applications/x/actions/y"}
	complete(&ev, http.MethodPatch, []byte(`{"href":"/v2/applications/x/actions/y","name":"a","url":"https://a"}`),
		[]byte(`{"href":"/v2/applications/x/actions/y","name":"b","url":"https://a","secret_key":"s3cr3t"}`), auditdiff.Patch)
	var ops []map[string]any
	if err := json.Unmarshal(ev.Patch, &ops); err != nil || len(ops) != 1 || ops[0]["op"] != "replace" || ops[0]["path"] != "/name" || ops[0]["value"] != "b" || ev.Resource != nil {
		t.Fatalf("PATCH: patch %s, resource %s", ev.Patch, ev.Resource)
	}
	ev = audit.Event{}
	complete(&ev, http.MethodPut, nil, []byte("not json"), auditdiff.Patch)
	if ev.Patch != nil || ev.Resource != nil {
		t.Fatalf("a body that is not JSON is kept: %+v", ev)
	}
}
