package wire

import (
	"cads/shared/access"
	"cads/shared/accounts"
	"cads/shared/apigw"
)

// Accounts is the accounts function's handler: the account tree, its
// entitlements and billing.
func Accounts(d Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, accounts.New(d.Store, access.New(d.Store, d.Log), d.Log))
}
