package authz

import "testing"

func TestSelfService(t *testing.T) {
	const me = "u1"
	allowed := [][2]string{
		{"GET", "/v2/users/self"},
		{"GET", "/v2/users/self/invitations"},
		{"GET", "/v2/users/self/invitations/i1"},
		{"PATCH", "/v2/users/self/invitations/i1"},
		{"GET", "/v2/users/self/group-invitations"},
		{"GET", "/v2/users/self/group-invitations/g1"},
		{"PATCH", "/v2/users/self/group-invitations/g1"},
		{"GET", "/v2/users/self/access-keys"},
		{"POST", "/v2/users/self/access-keys"},
		{"GET", "/v2/users/self/access-keys/k1"},
		{"DELETE", "/v2/users/self/access-keys/k1"},
		{"GET", "/v2/users/self/roles"},
		{"GET", "/v2/users/self/roles/r1"},
		{"DELETE", "/v2/users/self/roles/r1"},
		{"GET", "/v2/users/self/groups"},
		{"GET", "/v2/users/self/groups/g1"},
		{"DELETE", "/v2/users/self/groups/g1"},
		{"GET", "/v2/users/u1/roles/r1"},
		{"GET", "/v2/users/self/authorization"},
		{"POST", "/v2/users/self/authorization"},
		// the caller's own id is interchangeable with self
		{"GET", "/v2/users/u1"},
		{"DELETE", "/v2/users/u1/access-keys/k1"},
		{"POST", "/v2/users/u1/authorization"},
		// the API description, with or without a principal
		{"GET", "/v2/openapi.json"},
	}
	for _, c := range allowed {
		if !SelfService(c[0], c[1], me) {
			t.Errorf("SelfService(%s %s) = false", c[0], c[1])
		}
	}
	refused := [][2]string{
		{"PATCH", "/v2/users/self"},
		{"DELETE", "/v2/users/self"},
		{"POST", "/v2/users/self/invitations"},
		{"DELETE", "/v2/users/self/invitations/i1"},
		{"PATCH", "/v2/users/self/access-keys/k1"},
		{"POST", "/v2/users/self/roles"},
		{"PATCH", "/v2/users/self/roles/r1"},
		{"GET", "/v2/users/self/roles/r1/x"},
		{"PATCH", "/v2/users/self/groups/g1"},
		{"GET", "/v2/users/u2/roles/r1"}, // somebody else's held role
		{"DELETE", "/v2/users/self/authorization"},
		{"GET", "/v2/users/self/authorization/x"},
		{"GET", "/v2/users/self/access-keys/k1/x"},
		{"GET", "/v2/users/self/other"},
		{"get", "/v2/users/self"},
		{"", "/v2/users/self"},
		{"GET", "/v2/users/u2"},              // somebody else
		{"POST", "/v2/users/u2/access-keys"}, // users create keys for others only via RBAC
		{"POST", "/v2/users"},                // creating users is RBAC (docs/api.md#creating-users)
		{"GET", "/v2/users"},
		{"GET", "/v2/users/self/"},              // not canonical
		{"GET", "/v2/users/self/../u2"},         // not canonical
		{"GET", "/v2/users//self"},              // not canonical
		{"GET", "/v2/users/self/invitations/."}, // not canonical
		{"GET", "/v1/users/self"},
		{"GET", "/v2/users/selfish"},
		{"POST", "/v2/openapi.json"},
		{"GET", "/v2/openapi.json/x"},
		{"GET", "/v2/openapi.yaml"},
		{"GET", "/v2/openapi.json/"}, // not canonical
	}
	for _, c := range refused {
		if SelfService(c[0], c[1], me) {
			t.Errorf("SelfService(%s %s) = true", c[0], c[1])
		}
	}
	// With no principal id, only "self" works, and "" never matches an empty segment.
	if SelfService("GET", "/v2/users/u1", "") {
		t.Error("empty principal id matched a user id")
	}
	if !SelfService("GET", "/v2/users/self", "") {
		t.Error("self refused with an empty principal id")
	}
}
