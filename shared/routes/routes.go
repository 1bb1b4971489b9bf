// Package routes is the API's routes as the contract states them: every
// operation of shared/openapi/openapi.json with its method, path and the
// function that serves it (the operation's x-cads-function, a folder of
// functions/). routes_gen.go is generated from the document; each
// function's handler registers its operations by operationId
// (apigw.Router), so a route's method and path are written once, in the
// document. One table per function: a function links its own and not the
// document.
package routes

//go:generate go run cads/infra/cmd/routegen

// Operation is one operation of the contract.
type Operation struct {
	ID     string // operationId
	Method string // upper case
	// Path uses API Gateway's rule of one parameter name per level
	// (docs/local-platform.md), which net/http's patterns take as is.
	Path     string
	Function string // the folder under functions/ that serves it
	// List marks a collection (a GET answering a JSON array of members that
	// pages through apigw.List, docs/api.md#collections): the operation
	// takes the cursor parameter.
	List bool
}

// Pattern is the operation as a net/http pattern, "METHOD /path".
func (o Operation) Pattern() string { return o.Method + " " + o.Path }
