package apigw

import (
	"fmt"
	"net/http"

	"cads/shared/routes"
)

// Router serves one function's operations, each registered by its
// operationId: the method and path come from the contract
// (shared/openapi/openapi.json through the generated shared/routes), so a
// handler names what it serves and never writes its route. Requests no
// operation matches get the API's 404 (NewMux).
type Router struct {
	mux     *http.ServeMux
	ops     []routes.Operation
	byID    map[string]routes.Operation
	handled map[string]bool
}

// NewRouter returns a Router for ops, a function's table of shared/routes.
func NewRouter(ops []routes.Operation) *Router {
	r := &Router{mux: NewMux(), ops: ops, byID: make(map[string]routes.Operation, len(ops)), handled: map[string]bool{}}
	for _, op := range ops {
		r.byID[op.ID] = op
	}
	return r
}

// Handle serves the operation id with h. An id that is not one of the
// router's operations, or one given twice, panics: a handler without an
// operation could never be reached (the gateway routes the contract's
// operations only). The constructors run in TestEveryOperationHasOneHandler
// (shared/wire) and at every start of the local platform, so such a build
// fails there first.
func (r *Router) Handle(id string, h http.Handler) {
	op, ok := r.byID[id]
	switch {
	case !ok:
		panic(fmt.Sprintf("apigw.Router: a handler for %q, which is no operation of this function in the contract (shared/openapi/openapi.json, x-cads-function)", id))
	case r.handled[id]:
		panic(fmt.Sprintf("apigw.Router: operation %q given a second handler", id))
	}
	r.handled[id] = true
	r.mux.Handle(op.Pattern(), h)
}

// HandleFunc is Handle for a function.
func (r *Router) HandleFunc(id string, h http.HandlerFunc) { r.Handle(id, h) }

// Unhandled lists the router's operations that have no handler yet, in
// the contract's order.
func (r *Router) Unhandled() []string {
	var out []string
	for _, op := range r.ops {
		if !r.handled[op.ID] {
			out = append(out, op.ID+" ("+op.Pattern()+")")
		}
	}
	return out
}

// ServeHTTP dispatches to the operation's handler.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) { r.mux.ServeHTTP(w, req) }
