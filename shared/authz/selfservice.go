package authz

import "strings"

// DescriptionPath is where the API serves its OpenAPI document.
const DescriptionPath = "/v2/openapi.json"

// selfServiceMethods lists what any authenticated principal may do on its
// own identity without a role (docs/api.md#self-service), by the collection below
// /v2/users/{self} ("" = /v2/users/self itself) and whether the path names
// one member /{id} of it: the allowed methods, space separated.
func selfServiceMethods(sub string, member bool) string {
	type m struct{ onSelf, onMember string }
	var x m
	switch sub {
	case "":
		x = m{"GET", ""}
	case "invitations", "group-invitations":
		x = m{"GET", "GET PATCH"}
	case "access-keys":
		x = m{"GET POST", "GET DELETE"}
	case "roles", "groups":
		x = m{"GET", "GET DELETE"}
	case "authorization":
		x = m{"GET POST", ""}
	}
	if member {
		return x.onMember
	}
	return x.onSelf
}

// SelfService reports whether method and path are a self-service call that
// any authenticated principal may make without a role (docs/api.md#self-service):
//
//	GET          /v2/users/self
//	GET          /v2/users/self/invitations          GET|PATCH  .../invitations/{id}
//	GET          /v2/users/self/group-invitations    GET|PATCH  .../group-invitations/{id}
//	GET|POST     /v2/users/self/access-keys          GET|DELETE .../access-keys/{id}
//	GET          /v2/users/self/roles                GET|DELETE .../roles/{id}
//	GET          /v2/users/self/groups               GET|DELETE .../groups/{id}
//	GET|POST     /v2/users/self/authorization
//	GET          /v2/openapi.json (the API's description: it names no
//	             identity and holds no data, docs/api.md#api-description)
//
// "self" and the caller's own principal id are interchangeable; an empty
// principalID only allows "self". Non-canonical paths are never self-service.
func SelfService(method, path, principalID string) bool {
	if !canonical(path) {
		return false
	}
	if path == DescriptionPath {
		return method == "GET"
	}
	rest, ok := strings.CutPrefix(path, "/v2/users/")
	if !ok {
		return false
	}
	who, rest, _ := strings.Cut(rest, "/")
	if who != "self" && (principalID == "" || who != principalID) {
		return false
	}
	sub, member, hasMember := strings.Cut(rest, "/")
	if hasMember && (member == "" || strings.IndexByte(member, '/') >= 0) {
		return false // deeper than /{id}
	}
	return hasWord(selfServiceMethods(sub, hasMember), method)
}

// hasWord reports whether w is one of the space-separated words of list.
func hasWord(list, w string) bool {
	if w == "" {
		return false
	}
	for f := range strings.FieldsSeq(list) {
		if f == w {
			return true
		}
	}
	return false
}
