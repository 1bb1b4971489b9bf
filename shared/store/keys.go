// Package store is the single-table access layer: every entity of the API
// lives in one DynamoDB table whose key schema is declared in template.yaml
// (a test checks the names below against it). docs/data-model.md lists the
// entities, their keys and which request uses which access pattern.
package store

import (
	"strings"

	"cads/shared/domain"
)

// Key attribute and index names, as declared by the Table resource of
// template.yaml.
const (
	AttrPK     = "PK"
	AttrSK     = "SK"
	AttrGSI1PK = "GSI1PK"
	AttrGSI1SK = "GSI1SK"
	IndexGSI1  = "GSI1"
	// GSI2 keeps collections in their listed order where neither the
	// table's key nor GSI1 does (page.go); GSI3 is a second listing of an
	// item that already has one (an invitation: its account's list and
	// its invitee's inbox).
	AttrGSI2PK = "GSI2PK"
	AttrGSI2SK = "GSI2SK"
	IndexGSI2  = "GSI2"
	AttrGSI3PK = "GSI3PK"
	AttrGSI3SK = "GSI3SK"
	IndexGSI3  = "GSI3"
	AttrTTL    = "ttl"
)

// Item key shapes. Ids never contain '#' (they match ^[a-z0-9]+$), so the
// separator cannot be forged through an id.
func accountPK(id string) string        { return "ACCOUNT#" + id }
func childrenGSI(parent string) string  { return "CHILDREN#" + parent }
func rbacPK(account string) string      { return "RBAC#" + account }
func roleSK(id string) string           { return "ROLE#" + id }
func principalPK(id string) string      { return "PRINCIPAL#" + id }
func emailPK(email string) string       { return "EMAIL#" + strings.ToLower(email) }
func keySK(id string) string            { return "KEY#" + id }
func accountKeysGSI(acct string) string { return "ACCOUNTKEYS#" + acct }
func usageSK(kind string) string        { return prefixUsage + kind }

const prefixUsage = "USAGE#"

func grantSK(acct, role string) string { return "GRANT#" + acct + "#" + role }
func roleHoldersGSI(acct, role string) string {
	return "HOLDERS#" + acct + "#" + role
}

const (
	skAccount      = "ACCOUNT"
	skAccountName  = "ACCOUNTNAME"
	skPrincipal    = "PRINCIPAL"
	skEmail        = "EMAIL"
	gsiUsers       = "USERS"
	pkInstallation = "INSTALLATION"
	prefixGrant    = "GRANT#"
	prefixKey      = "KEY#"
	prefixRole     = "ROLE#"
)

// Keys shared between resource families: an account's deletion must find
// what is left in it (issue "accounts"), and the families that own these
// items write them. Applications and address sets are listed per account
// through GSI1.
func appsGSI(account string) string { return "APPS#" + account }

// accountNamePK is the partition of a's name claim: its NameKey (the
// accounts function and the bootstrap set it, shared/names), or, for an
// account written before schema version 3 without one, its lower-cased
// name, the claim that version's migration moves (migrateNameClaim).
func accountNamePK(a domain.Account) string {
	if a.NameKey != "" {
		return "ACCOUNTNAME#" + a.NameKey
	}
	return legacyAccountNamePK(a.Name)
}

// accountNamePKs are the partitions of all of a's name claims: the one
// under its NameKey (accountNamePK) and, when its NameSkeleton differs,
// the one under that. Both kinds share one key space, so a name is taken
// when any of its keys is any account's claim.
func accountNamePKs(a domain.Account) []string {
	pks := []string{accountNamePK(a)}
	if a.NameSkeleton != "" {
		if sk := "ACCOUNTNAME#" + a.NameSkeleton; sk != pks[0] {
			pks = append(pks, sk)
		}
	}
	return pks
}

// legacyAccountNamePK is the name claim written before schema version 3.
func legacyAccountNamePK(name string) string { return "ACCOUNTNAME#" + strings.ToLower(name) }
func addressSetsGSI(account string) string   { return "ADDRSETS#" + account }
