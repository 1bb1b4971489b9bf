package domain

// Credential is everything the authorizer needs to authenticate a key and
// find the principal's roles, read in one round trip of wall time.
type Credential struct {
	Principal Principal
	Key       AccessKey
	Grants    []Grant
	// Target is the account named by the request path when one was asked
	// for (the /v2/accounts/{id} cases), nil otherwise or when it does not
	// exist.
	Target *Account
}
