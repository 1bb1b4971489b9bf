package domain

import (
	"fmt"
	"strconv"
)

// AliasKey is the spelling an alias is claimed under: ASCII letters in
// lower case and nothing else changed. Valid aliases are ASCII host names
// (shared/applications/appconfig), so this is their canonical form; any
// other byte is kept as it is, so a non-ASCII look-alike never folds onto
// a claimed name.
func AliasKey(alias string) string {
	b := []byte(alias)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// AliasTaken is the conflict of an alias another application holds. It
// names the alias and nothing about the holder: the holder may be another
// account.
func AliasTaken(alias string) *Error {
	return &Error{Code: Conflict, Message: "the alias " + strconv.Quote(AliasKey(alias)) + " is already used by another application; an alias belongs to one application of the whole installation"}
}

// NamesCompared says, in the refusals users read, how account and role
// names are compared (shared/names.Same).
const NamesCompared = "names are compared after Unicode NFKC normalisation, case folding, removal of invisible characters, collapsing of white space and folding of look-alike characters (Unicode confusables, UTS #39, also on the name as written, where a capital I reads as a small l)"

// NameInvisible is the refusal of a name a reader would see nothing of
// (shared/names.Invisible).
func NameInvisible(field, name string) *Error {
	return &Error{Code: Invalid, Message: field + " " + strconv.QuoteToASCII(name) + " has nothing visible: it is made only of characters that render as nothing (zero-width spaces and joiners, soft hyphens, fillers) and white space"}
}

// NameUnreadable is the refusal of a name holding r, a character whose
// look is not what names are compared by (shared/names.Unreadable).
func NameUnreadable(field string, r rune) *Error {
	return &Error{Code: Invalid, Message: fmt.Sprintf("%s must not contain U+%04X: bidirectional controls, private-use characters and U+FFFC/U+FFFD show a reader something other than what is compared", field, r)}
}

// NameKeyMaxBytes bounds shared/names.Key, which hashes longer forms: the
// account item and its name claim keep it.
const NameKeyMaxBytes = 512

// AccountNameTaken is the conflict of an account name that another
// account's name reads as (names are unique in the whole tree, compared
// by their shared/names.Key). It names neither that account nor its exact
// name: it may belong to another tenant.
func AccountNameTaken(name string) *Error {
	return &Error{Code: Conflict, Message: "an account named " + strconv.Quote(name) + " already exists, or one whose name reads the same (" + NamesCompared + "); choose another name"}
}

// QuotaReached is the conflict of a create that would take an account past
// its entitlement of q.Kind; has says how many it holds ("as many" when the
// count is not at hand).
func QuotaReached(account string, q Quota, has string) *Error {
	if d, ok := DefaultQuota(q.Kind); ok {
		where, holder := "account "+account, "has"
		if d.PerApplication {
			where, holder = "an application of account "+account, "this one has"
		}
		if d.PerPrincipal {
			// account is the user here: these quotas count per user, and
			// the root account's entitlements set them.
			where = "user " + account
		}
		return &Error{Code: Conflict, Message: fmt.Sprintf("quota %q reached: %s may have %d %s and %s %s; delete one or ask the platform operator for a larger entitlement of %q",
			q.Kind, where, q.Limit, kindNoun(q.Kind), holder, has, q.Kind)}
	}
	return &Error{Code: Conflict, Message: fmt.Sprintf("account %s is entitled to %d %s and has %s; delete one or ask the platform operator for a larger entitlement",
		account, q.Limit, kindNoun(q.Kind), has)}
}

func kindNoun(kind string) string {
	switch kind {
	case ResourceAddressSets:
		return "address sets"
	case ResourceApplicationTests:
		return "application test runs"
	case ResourceRoles:
		return "custom roles"
	case ResourceServiceUsers:
		return "service users"
	case ResourceAccessKeys:
		return "unexpired persistent access keys"
	case ResourceSessionKeys:
		return "unexpired session keys"
	case ResourceInvitations:
		return "role invitations"
	case ResourceGroupInvitations:
		return "group invitations"
	case ResourcePageControls:
		return "page controls"
	case ResourceTests:
		return "stored application tests"
	case ResourceMetricPrototypes:
		return "metric prototypes"
	}
	return kind
}
