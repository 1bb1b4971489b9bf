// Package apispec lists every endpoint of the API: those of the product's
// published API and those the project adds (users, keys, self-service and
// the policy simulator: docs/api.md#identity-and-authentication).
// The template test checks template.yaml against it; the bypass corpus and
// the docs read it too. Paths use API Gateway's rule of one parameter name
// per level (docs/local-platform.md), so they differ from the published
// documentation names (`{app_id}` is `{id}` here).
package apispec

// Endpoint is one method and path of the API.
type Endpoint struct {
	Method string
	Path   string
	// Issue is the work item that delivers it; Spec says whether the
	// product's published API has it (false: a project addition).
	Issue int
	Spec  bool
	// List marks a collection (a GET answering a JSON array of members,
	// docs/api.md#collections): it pages through apigw.List, and the cost
	// table measures its first page at 10 and at 10,000 members.
	List bool
}

// Endpoints is the whole API.
var Endpoints = []Endpoint{
	// accounts
	{"GET", "/v2/accounts", 4, true, true},
	{"POST", "/v2/accounts", 4, true, false},
	{"GET", "/v2/accounts/{id}", 4, true, false},
	{"PATCH", "/v2/accounts/{id}", 4, true, false},
	{"DELETE", "/v2/accounts/{id}", 4, true, false},
	{"GET", "/v2/accounts/{id}/billing", 4, true, false},
	// entitlements
	{"GET", "/v2/accounts/{id}/entitlements", 4, true, true},
	{"POST", "/v2/accounts/{id}/entitlements", 4, true, false},
	{"GET", "/v2/accounts/{id}/entitlements/{entitlement_id}", 4, true, false},
	{"PATCH", "/v2/accounts/{id}/entitlements/{entitlement_id}", 4, true, false},
	{"DELETE", "/v2/accounts/{id}/entitlements/{entitlement_id}", 4, true, false},
	// the audit trail (docs/api.md#audit-events)
	{"GET", "/v2/accounts/{id}/audit-events", 30, false, true},
	// roles, invitations, groups, group invitations
	{"GET", "/v2/accounts/{id}/roles", 5, true, true},
	{"POST", "/v2/accounts/{id}/roles", 5, true, false},
	{"GET", "/v2/accounts/{id}/roles/{role_id}", 5, true, false},
	{"PATCH", "/v2/accounts/{id}/roles/{role_id}", 5, true, false},
	{"DELETE", "/v2/accounts/{id}/roles/{role_id}", 5, true, false},
	{"GET", "/v2/accounts/{id}/invitations", 5, true, true},
	{"POST", "/v2/accounts/{id}/invitations", 5, true, false},
	{"GET", "/v2/accounts/{id}/invitations/{invitation_id}", 5, true, false},
	{"PATCH", "/v2/accounts/{id}/invitations/{invitation_id}", 5, true, false},
	{"DELETE", "/v2/accounts/{id}/invitations/{invitation_id}", 5, true, false},
	{"GET", "/v2/accounts/{id}/groups", 5, true, true},
	{"POST", "/v2/accounts/{id}/groups", 5, true, false},
	{"GET", "/v2/accounts/{id}/groups/{group_id}", 5, true, false},
	{"PATCH", "/v2/accounts/{id}/groups/{group_id}", 5, true, false},
	{"DELETE", "/v2/accounts/{id}/groups/{group_id}", 5, true, false},
	{"GET", "/v2/accounts/{id}/group-invitations", 5, true, true},
	{"POST", "/v2/accounts/{id}/group-invitations", 5, true, false},
	{"GET", "/v2/accounts/{id}/group-invitations/{invitation_id}", 5, true, false},
	{"PATCH", "/v2/accounts/{id}/group-invitations/{invitation_id}", 5, true, false},
	{"DELETE", "/v2/accounts/{id}/group-invitations/{invitation_id}", 5, true, false},
	// service users
	{"GET", "/v2/accounts/{id}/service-users", 5, true, true},
	{"POST", "/v2/accounts/{id}/service-users", 5, true, false},
	{"GET", "/v2/accounts/{id}/service-users/{service_user_id}", 5, true, false},
	{"PATCH", "/v2/accounts/{id}/service-users/{service_user_id}", 5, true, false},
	{"DELETE", "/v2/accounts/{id}/service-users/{service_user_id}", 5, true, false},
	// address sets
	{"GET", "/v2/address-sets", 7, true, true},
	{"POST", "/v2/address-sets", 7, true, false},
	{"GET", "/v2/address-sets/{id}", 7, true, false},
	{"PATCH", "/v2/address-sets/{id}", 7, true, false},
	{"DELETE", "/v2/address-sets/{id}", 7, true, false},
	{"GET", "/v2/address-sets/{id}/addresses", 7, true, true},
	{"GET", "/v2/address-sets/{id}/metrics", 7, true, false},
	{"GET", "/v2/address-sets/metrics", 7, true, false},
	// application tests
	{"GET", "/v2/tests", 9, true, true},
	{"POST", "/v2/tests", 9, true, false},
	{"GET", "/v2/tests/{id}", 9, true, false},
	{"PUT", "/v2/tests/{id}", 9, true, false},
	{"PATCH", "/v2/tests/{id}", 9, true, false},
	{"DELETE", "/v2/tests/{id}", 9, true, false},
	// applications
	{"GET", "/v2/applications", 6, true, true},
	{"POST", "/v2/applications", 6, true, false},
	{"GET", "/v2/applications/{id}", 6, true, false},
	{"PATCH", "/v2/applications/{id}", 6, true, false},
	{"DELETE", "/v2/applications/{id}", 6, true, false},
	{"GET", "/v2/applications/{id}/actions", 6, true, true},
	{"POST", "/v2/applications/{id}/actions", 6, true, false},
	{"GET", "/v2/applications/{id}/actions/{action_id}", 6, true, false},
	{"PATCH", "/v2/applications/{id}/actions/{action_id}", 6, true, false},
	{"DELETE", "/v2/applications/{id}/actions/{action_id}", 6, true, false},
	// Web controls come before page controls so that the isolation
	// invariant reads them while the page controls still exist.
	{"GET", "/v2/applications/{id}/webcontrols", 18, false, true},
	{"GET", "/v2/applications/{id}/webcontrols/{webcontrol_id}", 18, false, false},
	{"GET", "/v2/applications/{id}/pagecontrols", 6, false, true},
	{"POST", "/v2/applications/{id}/pagecontrols", 6, false, false},
	{"GET", "/v2/applications/{id}/pagecontrols/{pagecontrol_id}", 6, false, false},
	{"PATCH", "/v2/applications/{id}/pagecontrols/{pagecontrol_id}", 6, false, false},
	{"DELETE", "/v2/applications/{id}/pagecontrols/{pagecontrol_id}", 6, false, false},
	{"GET", "/v2/applications/{id}/logs", 8, true, false},
	{"POST", "/v2/applications/{id}/logs", 8, true, false},
	{"GET", "/v2/applications/{id}/metrics", 7, true, false},
	{"GET", "/v2/applications/metrics", 18, true, false},
	{"GET", "/v2/log-schemas", 18, true, false},
	{"GET", "/v2/archived-logs", 18, true, false},
	{"GET", "/v2/archived-logs/applications/{id}/{log_type}", 18, true, false},
	{"DELETE", "/v2/archived-logs/applications/{id}/{log_type}", 18, true, false},
	// metric prototypes (per account)
	{"GET", "/v2/metric-prototypes", 18, false, true},
	{"POST", "/v2/metric-prototypes", 18, false, false},
	{"GET", "/v2/metric-prototypes/{id}", 18, false, false},
	{"DELETE", "/v2/metric-prototypes/{id}", 18, false, false},
	// endpoints the access-control rules name
	{"POST", "/v2/tasks", 6, true, false},
	{"GET", "/v2/tasks", 6, false, true},
	{"GET", "/v2/tasks/{id}", 6, false, false},
	{"GET", "/v2/tasks/{id}/logs", 18, true, false},
	{"GET", "/v2/users/self/authorization", 3, true, false},
	// identities, keys, self-service (docs/api.md#identity-and-authentication)
	{"POST", "/v2/users/self/authorization", 3, false, false},
	// the same with the caller's own id for self (issue 18: the published
	// path is /users/{id}/authorization)
	{"GET", "/v2/users/{id}/authorization", 18, true, false},
	{"POST", "/v2/users/{id}/authorization", 18, true, false},
	{"GET", "/v2/users", 3, false, true},
	{"POST", "/v2/users", 3, false, false},
	{"GET", "/v2/users/{id}", 3, false, false},
	{"PATCH", "/v2/users/{id}", 3, false, false},
	{"GET", "/v2/users/{id}/access-keys", 3, false, true},
	{"POST", "/v2/users/{id}/access-keys", 3, false, false},
	{"GET", "/v2/users/{id}/access-keys/{key_id}", 3, false, false},
	{"DELETE", "/v2/users/{id}/access-keys/{key_id}", 3, false, false},
	{"GET", "/v2/users/{id}/invitations", 5, false, true},
	{"GET", "/v2/users/{id}/invitations/{invitation_id}", 5, false, false},
	{"PATCH", "/v2/users/{id}/invitations/{invitation_id}", 5, false, false},
	{"GET", "/v2/users/{id}/group-invitations", 5, false, true},
	{"GET", "/v2/users/{id}/group-invitations/{invitation_id}", 5, false, false},
	{"PATCH", "/v2/users/{id}/group-invitations/{invitation_id}", 5, false, false},
	{"GET", "/v2/users/{id}/roles", 5, false, true},
	{"GET", "/v2/users/{id}/roles/{role_id}", 18, false, false},
	{"DELETE", "/v2/users/{id}/roles/{role_id}", 5, false, false},
	{"GET", "/v2/users/{id}/groups", 5, false, true},
	{"GET", "/v2/users/{id}/groups/{group_id}", 18, false, false},
	{"DELETE", "/v2/users/{id}/groups/{group_id}", 5, false, false},
	// the API's own description (docs/api.md#api-description)
	{"GET", "/v2/openapi.json", 18, false, false},
}

// Delivered says which work items have landed: their endpoints must be
// routed, the others must not be (a route without its function would be a
// stub). Each issue that lands adds itself here.
var Delivered = map[int]bool{2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true, 18: true, 30: true}
