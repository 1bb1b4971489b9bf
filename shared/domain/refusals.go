package domain

import (
	"fmt"
	"strconv"
	"strings"
)

// The refusals a write's condition finds in the table, worded here so that
// the store says which condition failed and the domain says it to the
// client (docs/api.md, "Errors"). The store's own vocabulary (conditions,
// items, transactions) never reaches a message.

// ErrChanged is a read-modify-write that lost a race: the item changed
// between its read and its conditional write. The store re-applies the
// change (store.Reapply) unless the request named the state it was based
// on; a caller that forgot to handle it still answers a 409 the client can
// act on rather than a 500.
var ErrChanged = &Error{Code: Conflict, Message: "the resource changed meanwhile; read it again and retry"}

// ErrStale is ErrChanged answered to a request with a precondition: the
// state it named is gone (412). Match it by its Code.
var ErrStale = &Error{Code: Precondition, Message: "the resource changed since the version If-Match names: read it again and retry on the current version"}

// Duplicate is the conflict of a create whose id is taken; account, when
// not "", is where the id is unique.
func Duplicate(kind, id, account string) *Error {
	msg := "a " + kind + " with id " + strconv.Quote(id) + " already exists"
	if strings.IndexByte("aeiou", kind[0]) >= 0 {
		msg = "an" + msg[1:]
	}
	if account != "" {
		msg += " in account " + account
	}
	return &Error{Code: Conflict, Message: msg}
}

// DuplicateTest is Duplicate for a test, which a client creates under an
// id of its choosing and may mean to replace.
func DuplicateTest(id string) *Error {
	return &Error{Code: Conflict, Message: Duplicate("test", id, "").Message + "; change it with PATCH or delete it first"}
}

// DuplicateAction is the conflict of an action id its application already
// has.
func DuplicateAction(app, id string) *Error {
	return &Error{Code: Conflict, Message: "application " + app + " already has an action " + strconv.Quote(id)}
}

// EmailTaken is the conflict of a user whose email another user has.
func EmailTaken(email string) *Error {
	return &Error{Code: Conflict, Message: "a user with email " + email + " already exists"}
}

// PrincipalTaken is the conflict of a service user whose id or email a
// principal has.
func PrincipalTaken(id, email string) *Error {
	return &Error{Code: Conflict, Message: "a principal with id " + id + " or email " + email + " already exists"}
}

// HasCertificateAuthority is the conflict of a second certificate
// authority for an account.
func HasCertificateAuthority(account string) *Error {
	return &Error{Code: Conflict, Message: "account " + account + " has a certificate authority"}
}

// AccountGone is the conflict of a write into an account that is being
// deleted or no longer exists.
func AccountGone(account string) *Error {
	return &Error{Code: Conflict, Message: "account " + account + " is being deleted or no longer exists"}
}

// ParentGone is AccountGone for the parent of a sub-account.
func ParentGone(parent string) *Error {
	return &Error{Code: Conflict, Message: AccountGone(parent).Message + ": no sub-account can be created in it"}
}

// TooDeep is the conflict of a sub-account below parent, at depth, past
// the deepest an account can be.
func TooDeep(parent string, depth, max int) *Error {
	return &Error{Code: Conflict, Message: fmt.Sprintf("account %s is at depth %d, the deepest an account can be (%d): an account item holds the ids of all its ancestors and DynamoDB items are limited to 400 KB; create the sub-account higher in the tree", parent, depth, max)}
}

// RootUndeletable is the conflict of deleting the root account.
func RootUndeletable(account string) *Error {
	return &Error{Code: Conflict, Message: "account " + account + " is the root of the account tree (the platform operator's); it cannot be deleted"}
}

// NotEmpty is the conflict of deleting an account that still holds
// left.
func NotEmpty(account string, left Leftovers) *Error {
	return &Error{Code: Conflict, Message: "account " + account + " still has " + left.String() + "; delete them first"}
}

// NotStopped is the conflict of deleting an application that is not
// stopped.
func NotStopped(app, state string) *Error {
	return &Error{Code: Conflict, Message: fmt.Sprintf("application %s is %s; only a stopped application can be deleted (run a stop task first)", app, state)}
}

// ChangedWhileDeleting is the conflict of a delete whose item changed
// again and again while it ran.
func ChangedWhileDeleting(what string) *Error {
	return &Error{Code: Conflict, Message: what + " changed while it was being deleted; retry"}
}

// ChangedMeanwhile is the conflict of a write that spans items, one of
// which (what) changed while it ran.
func ChangedMeanwhile(what string) *Error {
	return &Error{Code: Conflict, Message: what + " changed meanwhile; retry"}
}

// ControlRoleUndeletable is the conflict of deleting a control role.
func ControlRoleUndeletable(name string) *Error {
	return &Error{Code: Conflict, Message: "role " + strconv.Quote(name) + " is a control role of the account; control roles cannot be deleted (their permissions can be edited)"}
}

// RunInProgress is the conflict of starting a test's run while another
// run has not finished.
func RunInProgress(test, run, state string) *Error {
	return &Error{Code: Conflict, Message: fmt.Sprintf("test %s already has run %s %s; wait until it has finished", test, run, state)}
}

// AheadOf is the conflict of an installer older than the table: what (the
// built-in roles, the schema migration) is at a later step than want.
func AheadOf(what string, want int) *Error {
	return &Error{Code: Conflict, Message: what + " than " + strconv.Itoa(want)}
}

// InstallCollides is the conflict of a first installation into a table
// that holds other data.
var InstallCollides = &Error{Code: Conflict, Message: "installation collides with existing data"}

// ItemTooLarge is the 400 of a write whose item would not fit in DynamoDB's
// 400 KB (maxBytes): each field can be within its own limit while the
// whole is not, so the message names the limit the caller hit. size is 0
// when only DynamoDB could measure it.
func ItemTooLarge(what string, size, maxBytes int, err error) *Error {
	msg := fmt.Sprintf("the %s would be larger than the 400 KB a stored item may hold; make it smaller", what)
	if size > 0 {
		msg = fmt.Sprintf("the %s would take %d bytes, more than the 400 KB (%d bytes) a stored item may hold; make it smaller", what, size, maxBytes)
	}
	return &Error{Code: Invalid, Message: msg, Err: err}
}

// ConfigTooLarge is the 400 of an application configuration that would
// not leave its item within the size limit.
func ConfigTooLarge(size, max int, err error) *Error {
	return &Error{Code: Invalid, Err: err, Message: fmt.Sprintf("the application's configuration would take %d bytes, more than the %d its stored item leaves it within the 400 KB item size limit; make it smaller", size, max)}
}
