package apigw

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"cads/shared/routes"
)

func TestRouterServesOperationsByID(t *testing.T) {
	ops := []routes.Operation{{ID: "getThing", Method: "GET", Path: "/v2/things/{id}"}, {ID: "deleteThing", Method: "DELETE", Path: "/v2/things/{id}"}}
	r := NewRouter(ops)
	r.HandleFunc("getThing", func(w http.ResponseWriter, req *http.Request) { w.Write([]byte(req.PathValue("id"))) })
	if got := r.Unhandled(); !slices.Equal(got, []string{"deleteThing (DELETE /v2/things/{id})"}) {
		t.Errorf("Unhandled %v", got)
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest("GET", "/v2/things/a1", nil))
	if w.Code != 200 || w.Body.String() != "a1" {
		t.Errorf("GET: %d %q", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest("GET", "/v2/other", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("unmatched: %d", w.Code)
	}
	for name, id := range map[string]string{"unknown id": "postThing", "second handler": "getThing"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			r.HandleFunc(id, func(http.ResponseWriter, *http.Request) {})
		}()
	}
}
