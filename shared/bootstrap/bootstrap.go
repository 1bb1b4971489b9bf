// Package bootstrap creates a fresh installation (docs/api.md#bootstrap):
// the platform operator's root account with its control roles and the
// entitlement administrator roles, an operator user holding the Account
// owner role and both entitlement administrator roles, and one persistent
// operator access key. Running it again changes nothing.
package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"cads/shared/access"
	"cads/shared/builtin"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/names"
	"cads/shared/store"
)

// Result says what Run did. Secret is set only when this run created the
// installation: it is shown once and never stored.
type Result struct {
	Created     bool
	RootAccount string
	Operator    string
	KeyID       string // the operator key made by this run
	Secret      string
}

// RootAccountName is the operator's root account.
const RootAccountName = "Platform operator"

// Run bootstraps st unless it already is.
func Run(ctx context.Context, st *store.Store, operatorEmail string) (Result, error) {
	return RunAndKeep(ctx, st, operatorEmail, nil)
}

// ErrKeptKeyLost says RunAndKeep handed a key to keep and then found the
// table installed by someone else: the kept key opens nothing.
var ErrKeptKeyLost = errors.New("bootstrap: another bootstrap installed the table after the new operator key was kept; the kept key is not valid")

// RunAndKeep is Run that hands the new operator secret to keep before the
// installation is written, so a key that was not kept is never installed:
// if keep fails, nothing is written. With keep set, callers must not run
// concurrently on one table (losing that race returns ErrKeptKeyLost).
// keep is not called when the table is already installed.
func RunAndKeep(ctx context.Context, st *store.Store, operatorEmail string, keep func(ctx context.Context, secret string) error) (Result, error) {
	if in, err := st.Installation.GetInstallation(ctx); err == nil {
		return Result{RootAccount: in.RootAccount, Operator: in.Operator}, nil
	} else if !errors.Is(err, domain.ErrNotFound) {
		return Result{}, fmt.Errorf("bootstrap: %w", err)
	}
	plan, secret, err := Plan(st.Now, operatorEmail)
	if err != nil {
		return Result{}, err
	}
	if keep != nil {
		if err := keep(ctx, secret); err != nil {
			return Result{}, fmt.Errorf("bootstrap: keep the operator key: %w", err)
		}
	}
	err = st.Installation.Install(ctx, plan)
	if errors.Is(err, store.ErrInstalled) {
		if keep != nil {
			return Result{}, ErrKeptKeyLost
		}
		// Lost a race with another bootstrap: theirs stands.
		in, gerr := st.Installation.GetInstallation(ctx)
		if gerr != nil {
			return Result{}, fmt.Errorf("bootstrap: %w", gerr)
		}
		return Result{RootAccount: in.RootAccount, Operator: in.Operator}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("bootstrap: %w", err)
	}
	return Result{Created: true, RootAccount: plan.Root.ID, Operator: plan.Operator.ID, KeyID: plan.Key.ID, Secret: secret}, nil
}

// checkEmail refuses an operator address the users API would refuse: the
// operator is a user like any other, and its address is served wherever
// the contract says format: email, so it must pass clients' validators too
// (a host without a dot, like localhost, fails many of them).
func checkEmail(s string) error {
	a, err := mail.ParseAddress(s)
	at := strings.LastIndexByte(s, '@')
	if err != nil || a.Address != s || len(s) > 255 || at < 1 || !strings.Contains(s[at+1:], ".") {
		return fmt.Errorf("bootstrap: the operator's e-mail %q is not a valid address (like operator@example.com)", s)
	}
	return nil
}

// Plan builds a fresh installation and its operator secret.
func Plan(clock func() time.Time, operatorEmail string) (domain.InstallPlan, string, error) {
	if err := checkEmail(operatorEmail); err != nil {
		return domain.InstallPlan{}, "", err
	}
	now := clock()
	root := domain.Account{ID: ids.New(), Name: RootAccountName, Keyword: domain.Keyword(RootAccountName), Ancestors: []string{}, Created: now, Updated: now}
	root.NameKey, root.NameSkeleton = names.KeyAndSkeleton(RootAccountName)
	control, err := builtin.ControlRoles(root.ID)
	if err != nil {
		return domain.InstallPlan{}, "", err
	}
	admin, err := builtin.EntitlementAdministrator(root.ID)
	if err != nil {
		return domain.InstallPlan{}, "", err
	}
	op := domain.Principal{ID: ids.New(), Kind: domain.KindUser, Email: operatorEmail, Name: "Platform operator", Created: now, Updated: now}
	root.Owner = op.ID
	plan := domain.InstallPlan{
		Installation: domain.Installation{RootAccount: root.ID, Operator: op.ID, Created: now},
		Root:         root,
		Operator:     op,
	}
	for i, d := range append(control, admin...) {
		r := domain.Role{AccountID: root.ID, ID: ids.New(), Name: d.Name, Description: d.Description, Inheritable: d.Inheritable,
			Control: d.Control, EntitlementAdministrator: d.EntitlementAdministrator, Builtin: d.Key, BuiltinRevision: d.Revision,
			Permissions: d.Permissions, Version: 1, Created: now, Updated: now}
		plan.Roles = append(plan.Roles, r)
		// The operator holds the Account owner role (the first control
		// role) and both entitlement administrator roles.
		if i == 0 || i >= len(control) {
			plan.Grants = append(plan.Grants, domain.Grant{PrincipalID: op.ID, AccountID: root.ID, RoleID: r.ID, Via: "bootstrap", Created: now})
		}
	}
	plan.Key = domain.AccessKey{ID: ids.New(), PrincipalID: op.ID, Type: "bearer", Durability: domain.DurabilityPersistent,
		Account: root.ID, AccountAncestors: []string{}, Created: now}
	secret := access.NewSecret(op.ID, plan.Key.ID)
	plan.Key.SecretHash = access.HashSecret(secret)
	return plan, secret, nil
}
