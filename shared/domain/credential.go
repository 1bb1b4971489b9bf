package domain

// Credential is everything the authorizer needs to authenticate a key and
// find the principal's roles, read in one round trip of wall time.
type Credential struct {
	Principal Principal
	Key       AccessKey
	// Grants are the principal's first grants in key order, as many as
	// were asked for (none for a self-service request); MoreGrants says
	// whether others follow the last of them.
	Grants     []Grant
	MoreGrants bool
	// Target is the account named by the request path when one was asked
	// for (the /v2/accounts/{id} cases), nil otherwise or when it does not
	// exist.
	Target *Account
}

// RBACRef names a role or a group: its account and its id.
type RBACRef struct{ Account, ID string }
