package apigw

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"cads/shared/jsontext"
)

// TestEnvelopeLen: the length EnvelopeLen predicts is the length
// encoding/json gives the body as a string (what the Lambda runtime
// sends), or its base64 when it is not UTF-8.
func TestEnvelopeLen(t *testing.T) {
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
	}
	for _, s := range []string{"", "plain", `"quoted" \back\`, "<a href=\"x\">&amp;</a>", "tab\tnl\ncr\r\b\f\x00\x1f\x7f", "é\u2028\u2029😀", string(all[:128])} {
		b, _ := json.Marshal(s)
		if got, want := jsontext.EnvelopeLen([]byte(s)), len(b)-2; got != want {
			t.Errorf("%q: %d, encoding/json %d", s, got, want)
		}
	}
	if got, want := jsontext.EnvelopeLen(all), len(base64.StdEncoding.EncodeToString(all)); got != want {
		t.Errorf("not UTF-8: %d, want %d", got, want)
	}
}

// TestCollectionPagedByBytes: a collection whose members would exceed the
// response budget is cut before it, stating the cut and the next start.
func TestCollectionPagedByBytes(t *testing.T) {
	member := strings.Repeat("<>", 100<<10) // 200 KiB: 1.2 MiB in JSON, 1.4 MiB in the payload
	items := []string{member, member, member, member, member}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/v2/things?start=11&limit=5", nil)
	if !writeList(w, r, http.StatusOK, items) {
		t.Fatal("a slice was not written as a collection")
	}
	var got []string
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || len(got) != 2 {
		t.Fatalf("%d members, %v", len(got), err)
	}
	if w.Header().Get(HeaderCut) != CutBytes || w.Header().Get(HeaderNextStart) != "13" {
		t.Errorf("headers %v", w.Header())
	}
	if n := jsontext.EnvelopeLen(w.Body.Bytes()); n > jsontext.ResponseBudget {
		t.Errorf("%d bytes in the payload, budget %d", n, jsontext.ResponseBudget)
	}
	// Within the budget nothing changes: the bytes json.Marshal makes.
	w = httptest.NewRecorder()
	writeList(w, r, http.StatusOK, []map[string]int{{"a": 1}, {"b": 2}})
	if w.Body.String() != `[{"a":1},{"b":2}]` || w.Header().Get(HeaderCut) != "" {
		t.Errorf("%s %v", w.Body.String(), w.Header())
	}
}
