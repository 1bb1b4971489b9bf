package accounts

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/text/unicode/norm"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/authz"
	"cads/shared/builtin"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/names"
	"cads/shared/store"
)

// Account is the wire shape of an account. Field names follow the
// reference document (name, keyword, owner, log_retention, href); parent
// is read-only and null for the root, so clients can draw the tree; owner
// is absent when there is none (a string when present, never null).
type Account struct {
	ID           string         `json:"id"`
	Href         string         `json:"href"`
	Name         string         `json:"name"`
	Keyword      string         `json:"keyword"`
	Owner        *string        `json:"owner,omitempty"`
	LogRetention []LogRetention `json:"log_retention"`
	Parent       *string        `json:"parent"`
	Created      time.Time      `json:"created"`
	Updated      time.Time      `json:"updated"`
}

// LogRetention is the retention of an account's non-application logs.
type LogRetention struct {
	Type                  string `json:"type"`
	OnlineDays            *int   `json:"online_days,omitempty"`
	ArchiveDays           *int   `json:"archive_days,omitempty"`
	OnlineSpaceAllowance  *int   `json:"online_space_allowance,omitempty"`
	ArchiveSpaceAllowance *int   `json:"archive_space_allowance,omitempty"`
}

func accountOut(a domain.AccountRecord) Account {
	out := Account{ID: a.ID, Href: accountHref(a.ID), Name: a.Name, Keyword: a.Keyword, LogRetention: []LogRetention{}, Created: a.Created, Updated: a.Updated}
	if a.Owner != "" {
		o := userHref(a.Owner)
		out.Owner = &o
	}
	if a.Parent != "" {
		p := accountHref(a.Parent)
		out.Parent = &p
	}
	nz := func(n int) *int {
		if n == 0 {
			return nil
		}
		return &n
	}
	for _, l := range a.LogRetention {
		out.LogRetention = append(out.LogRetention, LogRetention{Type: l.Type, OnlineDays: nz(l.OnlineDays), ArchiveDays: nz(l.ArchiveDays),
			OnlineSpaceAllowance: nz(l.OnlineSpaceAllowance), ArchiveSpaceAllowance: nz(l.ArchiveSpaceAllowance)})
	}
	return out
}

// ---------------------------------------------------------------- list

// listAccounts returns the accounts the caller may view: those for which
// GET /v2/accounts/{id} would be allowed (docs/api.md#collection-reads,
// decided as if authenticated into each, like the authorizer does), paged
// through every account of the installation in creation order.
func (h *handler) listAccounts(r *http.Request, p caller.Principal) (int, any, error) {
	page, err := apigw.ParsePage(r.URL.Query(), "name", "keyword", "created")
	if err != nil {
		return 0, nil, err
	}
	list, err := apigw.List(r, page, apigw.Lister[domain.AccountRecord, Account]{
		Name: "accounts", Indexed: "created", Read: h.st.Accounts.PageAccounts, ValidPosition: store.ValidPosition,
		Allow: func(ctx context.Context) (func(domain.AccountRecord) (bool, error), error) {
			d, err := h.dec.Decider(ctx, p)
			if err != nil {
				return nil, err
			}
			return func(a domain.AccountRecord) (bool, error) {
				return d.AllowsFor(ctx, http.MethodGet, accountHref(a.ID), a.Account)
			}, nil
		},
		Out:  func(a domain.AccountRecord) (Account, error) { return accountOut(a), nil },
		Sort: sortAccounts,
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

func sortAccounts(as []Account, order []apigw.OrderKey) {
	apigw.Sort(as, order, func(a Account, field string) any {
		switch field {
		case "name":
			return a.Name
		case "keyword":
			return a.Keyword
		}
		return a.Created
	}, func(a Account) string { return a.ID }, apigw.OrderKey{Field: "created"})
}

// ---------------------------------------------------------------- create

type accountPost struct {
	Name         *string           `json:"name"`
	Keyword      *string           `json:"keyword"`
	Owner        *string           `json:"owner"`
	LogRetention *[]logRetentionIn `json:"log_retention"`
	Parent       present           `json:"parent"`
}

type logRetentionIn struct {
	Type                  *string `json:"type"`
	OnlineDays            *int    `json:"online_days"`
	ArchiveDays           *int    `json:"archive_days"`
	OnlineSpaceAllowance  *int    `json:"online_space_allowance"`
	ArchiveSpaceAllowance *int    `json:"archive_space_allowance"`
}

// createAccount makes a sub-account of the account the caller is
// authenticated into (docs/api.md#sub-accounts), with its three control
// roles in the same transaction and nobody invited to them. The
// authorizer has required the permit for POST /v2/accounts, which only the
// entitlement administrator role gives.
func (h *handler) createAccount(r *http.Request, p caller.Principal) (int, any, error) {
	if p.AccountID == "" {
		return 0, nil, domain.Errorf(domain.Forbidden, "this key is authenticated into no account; switch into the intended parent account with POST /v2/users/self/authorization")
	}
	var in accountPost
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Parent {
		return 0, nil, domain.Errorf(domain.Invalid, "parent cannot be set: a new account is a sub-account of the account you are authenticated into (%s); authenticate into the intended parent first", accountHref(p.AccountID))
	}
	if in.Name == nil {
		return 0, nil, domain.Errorf(domain.Invalid, "name is required")
	}
	id := ids.New()
	now := h.st.Now()
	a := domain.AccountRecord{Account: domain.Account{ID: id, Parent: p.AccountID, Created: now, Updated: now}}
	var err error
	if a.Name, err = accountName(*in.Name); err != nil {
		return 0, nil, err
	}
	a.NameKey, a.NameSkeleton = names.KeyAndSkeleton(a.Name)
	a.Keyword = domain.Keyword(a.Name)
	if in.Keyword != nil {
		if a.Keyword, err = keyword(*in.Keyword); err != nil {
			return 0, nil, err
		}
	}
	if a.Keyword == "" {
		// Nothing of the name survives transliteration ("日本"): the id
		// is a keyword that is always valid.
		a.Keyword = id
	}
	if in.LogRetention != nil {
		if a.LogRetention, err = logRetention(*in.LogRetention); err != nil {
			return 0, nil, err
		}
	}
	var (
		g      errgroup.Group // both answers are needed to choose the error
		parent domain.AccountRecord
		pErr   error
		owner  ownerCheck
	)
	g.Go(func() error { parent, pErr = h.st.Accounts.GetAccountRecord(r.Context(), p.AccountID); return nil })
	if in.Owner != nil {
		// The new account holds no grant yet: only a role inherited from
		// the parent or above can apply in it, and the parent is where
		// such a user is found.
		g.Go(func() (err error) { owner, err = h.startOwner(r.Context(), *in.Owner, p.AccountID); return err })
	}
	if ownErr := g.Wait(); ownErr != nil {
		return 0, nil, ownErr
	}
	if errors.Is(pErr, domain.ErrNotFound) || pErr == nil && parent.Deleting != nil {
		return 0, nil, domain.Errorf(domain.Conflict, "the account you are authenticated into (%s) is being deleted or no longer exists: no sub-account can be created in it", accountHref(p.AccountID))
	}
	if pErr != nil {
		return 0, nil, pErr
	}
	a.Ancestors = append(slices.Clone(parent.Ancestors), parent.ID)
	if in.Owner != nil {
		if a.Owner, err = owner.in(r.Context(), a.Account); err != nil {
			return 0, nil, err
		}
	}
	defs, err := builtin.ControlRoles(id)
	if err != nil {
		return 0, nil, err
	}
	roles := make([]domain.Role, 0, len(defs))
	for _, d := range defs {
		roles = append(roles, domain.Role{AccountID: id, ID: ids.New(), Name: d.Name, Description: d.Description, Inheritable: d.Inheritable,
			Control: true, Builtin: d.Key, BuiltinRevision: d.Revision, Permissions: d.Permissions, Version: 1, Created: now, Updated: now})
	}
	if err := h.st.Accounts.CreateSubAccount(r.Context(), a, roles); err != nil {
		return 0, nil, domain.IfNotFound(err, "account %s no longer exists", accountHref(p.AccountID))
	}
	return http.StatusOK, accountTagged(a), nil
}

// accountName validates a name. It is stored in Unicode NFC, as typed
// otherwise; uniqueness compares its names.Key and names.Skeleton (the
// account's NameKey and NameSkeleton), so look-alike names are one name.
func accountName(s string) (string, error) {
	name, err := text("name", norm.NFC.String(s), domain.AccountNameMaxRunes)
	if err != nil {
		return "", domain.Errorf(domain.Invalid, "%s", err.Error())
	}
	if name == "" {
		return "", domain.Errorf(domain.Invalid, "name must not be empty")
	}
	if err := names.Check("name", name); err != nil {
		return "", err
	}
	return name, nil
}

var keywordRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func keyword(s string) (string, error) {
	if len(s) > domain.AccountKeywordMaxBytes || !keywordRE.MatchString(s) {
		return "", domain.Errorf(domain.Invalid, "keyword must be lower-case letters and digits in dash-separated words (like \"exito-s-a\"), at most %d characters, not %q", domain.AccountKeywordMaxBytes, s)
	}
	return s, nil
}

// Log retention limits: the reference document sets minimum 1; the upper
// bounds (a century of days, 2^31-1 allowance units) keep values sane.
const (
	maxRetentionDays      = 36500
	maxRetentionAllowance = 1<<31 - 1
)

func logRetention(in []logRetentionIn) ([]domain.LogRetention, error) {
	var out []domain.LogRetention
	seen := map[string]bool{}
	for i, l := range in {
		if l.Type == nil || *l.Type != "events" {
			return nil, domain.Errorf(domain.Invalid, "log_retention[%d].type is required and must be \"events\"", i)
		}
		if seen[*l.Type] {
			return nil, domain.Errorf(domain.Invalid, "log_retention[%d]: type %q is given twice", i, *l.Type)
		}
		seen[*l.Type] = true
		v := domain.LogRetention{Type: *l.Type}
		for _, f := range []struct {
			name string
			in   *int
			max  int
			out  *int
		}{
			{"online_days", l.OnlineDays, maxRetentionDays, &v.OnlineDays},
			{"archive_days", l.ArchiveDays, maxRetentionDays, &v.ArchiveDays},
			{"online_space_allowance", l.OnlineSpaceAllowance, maxRetentionAllowance, &v.OnlineSpaceAllowance},
			{"archive_space_allowance", l.ArchiveSpaceAllowance, maxRetentionAllowance, &v.ArchiveSpaceAllowance},
		} {
			if f.in == nil {
				continue
			}
			if *f.in < 1 || *f.in > f.max {
				return nil, domain.Errorf(domain.Invalid, "log_retention[%d].%s must be an integer from 1 to %d", i, f.name, f.max)
			}
			*f.out = *f.in
		}
		out = append(out, v)
	}
	return out, nil
}

// errOwner is the one answer to every owner that is not a user holding a
// role in the account: malformed, no such user, a service user, a user
// of another tenant or one without a role here. It echoes nothing of the
// value, so its body is the same for all of them and the field cannot
// tell which user ids exist (issue 27, finding 2).
func errOwner() error {
	return &domain.Error{Code: domain.Invalid, Message: "owner must be the href (/v2/users/<id>) of a user who holds a role that applies in this account: " +
		"an accepted invitation to a role of the account, or to an inheritable role of an account above it"}
}

// ownerCheck is an owner being resolved: the principal and the reads of
// its grants, started before the account it is checked in is known.
type ownerCheck struct {
	id      string
	user    bool
	decider *access.Decider
}

// startOwner reads, in one round trip, the principal an owner href names
// and its first grants (a Decider for it, its key account keyAccount).
// Only a failed read is an error here; every refusal is errOwner, from in.
func (h *handler) startOwner(ctx context.Context, href, keyAccount string) (ownerCheck, error) {
	id, ok := strings.CutPrefix(href, "/v2/users/")
	if !ok || !ids.Valid(id) {
		return ownerCheck{}, errOwner()
	}
	c := ownerCheck{id: id}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		u, err := h.st.Principals.GetPrincipal(gctx, id)
		if errors.Is(err, domain.ErrNotFound) {
			return nil
		}
		c.user = err == nil && u.Kind == domain.KindUser
		return err
	})
	g.Go(func() (err error) {
		c.decider, err = h.dec.Decider(gctx, caller.Principal{ID: id, Kind: domain.KindUser, AccountID: keyAccount})
		return err
	})
	return c, g.Wait()
}

// in resolves the owner for account target: its user id when the user
// holds a role that applies there (authz.Applicable, as the authorizer
// selects roles: a role of the account, or an inheritable one of an
// ancestor, directly or through a group), else errOwner. The owner is
// who the account belongs to, for people; it grants nothing (access comes
// only from accepted invitations, docs/api.md#invitations). A refusal is
// decided from strongly consistent reads, never from the warm path's
// cache (access.Decider.AnyApplies), so a role just accepted counts.
func (c ownerCheck) in(ctx context.Context, target domain.Account) (string, error) {
	if c.decider == nil || !c.user {
		return "", errOwner()
	}
	ok, err := c.decider.AnyApplies(ctx, http.MethodGet, accountHref(target.ID), target, func(authz.Role) bool { return true })
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errOwner()
	}
	return c.id, nil
}

// ---------------------------------------------------------------- read

func (h *handler) getAccount(r *http.Request, _ caller.Principal) (int, any, error) {
	id, err := accountID(r)
	if err != nil {
		return 0, nil, err
	}
	a, err := h.st.Accounts.GetAccountRecord(r.Context(), id)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no account %s", accountHref(id))
	}
	return http.StatusOK, accountTagged(a), nil
}

// accountTagged is an account's body with its ETag. An account's version
// is its `updated` (in nanoseconds): every change sets it, and the store's
// writes are conditional on it (UpdateAccount, DeleteAccount), so it
// needs no counter of its own.
func accountTagged(a domain.AccountRecord) *apigw.Tagged {
	return apigw.WithETag(accountOut(a), accountETag(a))
}

func accountETag(a domain.AccountRecord) string {
	return etag.Of("account", a.ID, int(a.Updated.UnixNano()))
}

// ---------------------------------------------------------------- patch

type accountPatch struct {
	Name         *string                    `json:"name"`
	Keyword      *string                    `json:"keyword"`
	Owner        optional[string]           `json:"owner"`
	LogRetention optional[[]logRetentionIn] `json:"log_retention"`
	Parent       present                    `json:"parent"`
}

// patchAccount changes an account's name, keyword, owner or log retention.
// A rename keeps the keyword (as in the reference document: the keyword is
// used in other systems' names). owner and log_retention take null to clear.
func (h *handler) patchAccount(r *http.Request, _ caller.Principal) (int, any, error) {
	id, err := accountID(r)
	if err != nil {
		return 0, nil, err
	}
	var in accountPatch
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Parent {
		return 0, nil, domain.Errorf(domain.Invalid, "parent cannot be changed: accounts never move in the tree")
	}
	if in.Name == nil && in.Keyword == nil && !in.Owner.Set && !in.LogRetention.Set {
		return 0, nil, domain.Errorf(domain.Invalid, "nothing to change: the body may set name, keyword, owner and log_retention")
	}
	var (
		name, nameKey, nameSkeleton, kw, owner string
		lr                                     []domain.LogRetention
	)
	if in.Name != nil {
		if name, err = accountName(*in.Name); err != nil {
			return 0, nil, err
		}
		nameKey, nameSkeleton = names.KeyAndSkeleton(name)
	}
	if in.Keyword != nil {
		if kw, err = keyword(*in.Keyword); err != nil {
			return 0, nil, err
		}
	}
	if in.LogRetention.Set && in.LogRetention.Value != nil {
		if lr, err = logRetention(*in.LogRetention.Value); err != nil {
			return 0, nil, err
		}
	}
	var (
		g     errgroup.Group // both answers are needed to choose the error
		prev  domain.AccountRecord
		gErr  error
		check ownerCheck
	)
	g.Go(func() error { prev, gErr = h.st.Accounts.GetAccountRecord(r.Context(), id); return nil })
	setOwner := in.Owner.Set && in.Owner.Value != nil
	if setOwner {
		g.Go(func() (err error) { check, err = h.startOwner(r.Context(), *in.Owner.Value, id); return err })
	}
	ownErr := g.Wait()
	if gErr != nil {
		return 0, nil, domain.IfNotFound(gErr, "no account %s", accountHref(id))
	}
	if ownErr != nil {
		return 0, nil, ownErr
	}
	if setOwner {
		// An account never moves, so the ancestors read now are the
		// ones the owner's roles are checked against whatever Reapply
		// reads later.
		if owner, err = check.in(r.Context(), prev.Account); err != nil {
			return 0, nil, err
		}
	}
	var next domain.AccountRecord
	fresh := true // prev was just read
	// Without a precondition the change applies to the account as it is
	// when written: a lost race reads it again. With one (If-Match) it
	// applies once, to the account the precondition names.
	pre := apigw.IfMatch(r)
	err = store.ReapplyIf(r.Context(), pre.Set(), func(ctx context.Context) error {
		if !fresh {
			if prev, err = h.st.Accounts.GetAccountRecord(ctx, id); err != nil {
				return domain.IfNotFound(err, "no account %s", accountHref(id))
			}
		}
		fresh = false
		if err := pre.Check(accountETag(prev)); err != nil {
			return err
		}
		if prev.Deleting != nil {
			return domain.Errorf(domain.Conflict, "account %s is being deleted", accountHref(id))
		}
		next = prev
		next.Updated = h.st.Now()
		if in.Name != nil {
			next.Name, next.NameKey, next.NameSkeleton = name, nameKey, nameSkeleton
		}
		if in.Keyword != nil {
			next.Keyword = kw
		}
		if in.Owner.Set {
			next.Owner = owner
		}
		if in.LogRetention.Set {
			next.LogRetention = lr
		}
		return domain.IfNotFound(h.st.Accounts.UpdateAccount(ctx, prev, next), "no account %s", accountHref(id))
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, accountTagged(next), nil
}

// ---------------------------------------------------------------- delete

// deleteAccount deletes an account that has no sub-accounts, applications
// or address sets (else 409 naming what is left), revoking every access key
// bound to it and every grant of its roles before it goes (store.DeleteAccount).
func (h *handler) deleteAccount(r *http.Request, _ caller.Principal) (int, any, error) {
	id, err := accountID(r)
	if err != nil {
		return 0, nil, err
	}
	// The mark that starts the deletion is conditional on the `updated`
	// of the states If-Match names.
	versions, err := apigw.IfMatch(r).WriteVersions("account", id)
	if err != nil {
		return 0, nil, err
	}
	at := make([]time.Time, len(versions))
	for i, v := range versions {
		at[i] = time.Unix(0, int64(v)).UTC()
	}
	a, err := h.st.Accounts.DeleteAccount(r.Context(), id, at...)
	if errors.Is(err, domain.ErrChanged) {
		return 0, nil, domain.ErrStale
	}
	var cleanup *store.CleanupError
	if errors.As(err, &cleanup) {
		h.log.WarnContext(r.Context(), "account deleted; removing its leftovers failed", "account", id, "error", err.Error(), "request_id", apigw.RequestID(r.Context()))
		err = nil
	}
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no account %s", accountHref(id))
	}
	return http.StatusOK, accountOut(a), nil
}
