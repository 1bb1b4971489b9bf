package users

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/authz"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/store"
)

type keyPost struct {
	Type    *string    `json:"type"`
	Account *string    `json:"account"`
	Expiry  *time.Time `json:"expiry"`
}

// createKey makes a persistent key for a user. Binding it to an account
// needs the same right as switching into that account (docs/api.md#switching-accounts): the
// caller must be allowed GET /v2/accounts/{id} there.
func (h *handler) createKey(r *http.Request, p caller.Principal) (int, any, error) {
	uid, err := userID(r, p)
	if err != nil {
		return 0, nil, err
	}
	var in keyPost
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Type == nil {
		return 0, nil, domain.Errorf(domain.Invalid, "type is required; the only type is \"bearer\"")
	}
	if *in.Type != "bearer" {
		return 0, nil, domain.Errorf(domain.Invalid, "type %q is not supported; the only type is \"bearer\"", *in.Type)
	}
	now := h.st.Now()
	if in.Expiry != nil && !in.Expiry.After(now) {
		return 0, nil, domain.Errorf(domain.Invalid, "expiry must be in the future")
	}
	k := domain.AccessKey{ID: ids.New(), PrincipalID: uid, Type: "bearer", Durability: domain.DurabilityPersistent, Created: now}
	if in.Expiry != nil {
		e := in.Expiry.UTC()
		k.Expiry = &e
	}
	if p.Minted() {
		// A key minted with a session key (or with a key minted under one)
		// joins its lineage and may not outlive it: without an expiry it
		// gets the caller's; a later one is refused, as an explicit
		// request is never silently changed (docs/rbac.md, "Key lineage").
		if limit := p.KeyExpiry; limit != nil {
			if k.Expiry != nil && k.Expiry.After(*limit) {
				return 0, nil, domain.Errorf(domain.Invalid, "expiry must not be later than %s: the key you are authenticated with is a session key, or was minted with one, and expires then; keys it mints expire no later (omit expiry to get that time)",
					limit.UTC().Format(time.RFC3339))
			}
			if k.Expiry == nil {
				e := limit.UTC()
				k.Expiry = &e
			}
		}
		k.Origin, k.Parent = lineageOf(p)
	}
	q, acct, err := h.quotaBeside(r, p, k.Durability, in.Account)
	if err != nil {
		return 0, nil, err
	}
	if in.Account != nil {
		k.Account, k.AccountAncestors = acct.ID, acct.Ancestors
	}
	return h.issue(r, k, q)
}

// quotaBeside reads the quota of a key of durability and, when href is
// not nil, resolves the account the key binds to (switchable), in
// parallel: the quota costs no sequential round trip beside an account.
// The caller's mistake about the account is the error before the quota's.
func (h *handler) quotaBeside(r *http.Request, p caller.Principal, durability string, href *string) (domain.Quota, domain.Account, error) {
	var (
		q          domain.Quota
		acct       domain.Account
		qErr, aErr error
		wg         sync.WaitGroup
	)
	wg.Go(func() { q, qErr = h.st.Entitlements.KeyQuota(r.Context(), durability) })
	if href != nil {
		wg.Go(func() { acct, aErr = h.switchable(r, p, *href) })
	}
	wg.Wait()
	if aErr != nil {
		return q, acct, aErr
	}
	return q, acct, qErr
}

// issue stores k with a new secret and returns the secret once.
func (h *handler) issue(r *http.Request, k domain.AccessKey, q domain.Quota) (int, any, error) {
	secret := access.NewSecret(k.PrincipalID, k.ID)
	k.SecretHash = access.HashSecret(secret)
	// Only users: service users get keys from their account's
	// service-users endpoint, bound to that account.
	if err := h.st.Principals.CreateUserKey(r.Context(), k, q); err != nil {
		return 0, nil, domain.IfNotFound(err, "no user %q", k.PrincipalID)
	}
	// The tag is the one a GET shows (without the secret, which is never
	// shown again).
	return http.StatusOK, apigw.WithETag(AccessKeySecret{AccessKey: keyOut(k), SecretKey: secret}, keyETag(k)), nil
}

// switchable resolves an account href the caller may authenticate into.
func (h *handler) switchable(r *http.Request, p caller.Principal, href string) (domain.Account, error) {
	id, ok := strings.CutPrefix(href, "/v2/accounts/")
	if !ok || !ids.Valid(id) {
		return domain.Account{}, domain.Errorf(domain.Invalid, "account must be an account href like /v2/accounts/<id>, not %q", href)
	}
	// The account and the caller's roles are independent reads: in parallel.
	var (
		acct domain.Account
		d    *access.Decider
		aErr error
		g    errgroup.Group // both answers are needed to choose the error
	)
	g.Go(func() error { acct, aErr = h.st.Accounts.GetAccount(r.Context(), id); return nil })
	g.Go(func() (err error) { d, err = h.dec.Decider(r.Context(), p); return err })
	dErr := g.Wait()
	if aErr != nil {
		// Unknown and forbidden look the same: no probing for account ids.
		return domain.Account{}, domain.IfNotFound(aErr, "no account %s that you may access", href)
	}
	if dErr != nil {
		return domain.Account{}, dErr
	}
	dec, err := d.CanSwitch(r.Context(), acct)
	if err != nil {
		return domain.Account{}, err
	}
	if !dec.Allowed {
		return domain.Account{}, domain.Errorf(domain.NotFound, "no account %s that you may access", href)
	}
	return acct, nil
}

func (h *handler) listKeys(r *http.Request, p caller.Principal) (int, any, error) {
	uid, err := userID(r, p)
	if err != nil {
		return 0, nil, err
	}
	page, err := apigw.ParsePage(r.URL.Query())
	if err != nil {
		return 0, nil, err
	}
	now := h.st.Now()
	list, err := apigw.List(r, page, apigw.Lister[domain.AccessKey, AccessKey]{
		Name: "access-keys", Indexed: "created", ValidPosition: store.ValidPosition,
		Read: func(ctx context.Context, after string, desc bool, n int) ([]domain.AccessKey, []string, bool, error) {
			return h.st.Principals.PageKeys(ctx, uid, after, desc, n)
		},
		// Expired keys stay until their TTL removes them; they are not
		// listed. The route decided who may read the user's keys.
		Allow: func(context.Context) (func(domain.AccessKey) (bool, error), error) {
			return func(k domain.AccessKey) (bool, error) { return !k.Expired(now), nil }, nil
		},
		Out: func(k domain.AccessKey) (AccessKey, error) { return keyOut(k), nil },
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

func (h *handler) getKey(r *http.Request, p caller.Principal) (int, any, error) {
	uid, err := userID(r, p)
	if err != nil {
		return 0, nil, err
	}
	kid := r.PathValue("key_id")
	if !ids.Valid(kid) {
		return 0, nil, domain.Errorf(domain.NotFound, "no access key %q", kid)
	}
	k, err := h.st.Principals.GetKey(r.Context(), uid, kid)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no access key %q", kid)
	}
	return http.StatusOK, apigw.WithETag(keyOut(k), keyETag(k)), nil
}

// keyETag is a key's entity tag. A key never changes but for its
// last_used (recorded by the authorizer), so that is its version.
func keyETag(k domain.AccessKey) string {
	v := 0
	if k.LastUsed != nil {
		v = int(k.LastUsed.UnixNano())
	}
	return etag.Of("accesskey", k.PrincipalID+"/"+k.ID, v)
}

func (h *handler) deleteKey(r *http.Request, p caller.Principal) (int, any, error) {
	uid, err := userID(r, p)
	if err != nil {
		return 0, nil, err
	}
	kid := r.PathValue("key_id")
	if !ids.Valid(kid) {
		return 0, nil, domain.Errorf(domain.NotFound, "no access key %q", kid)
	}
	pre := apigw.IfMatch(r)
	var checks []func(domain.AccessKey) error
	if pre.Set() {
		checks = append(checks, func(k domain.AccessKey) error { return pre.Check(keyETag(k)) })
	}
	var k domain.AccessKey
	err = store.ReapplyIf(r.Context(), pre.Set(), func(ctx context.Context) (err error) {
		k, err = h.st.Principals.DeleteKey(ctx, uid, kid, checks...)
		return err
	})
	var ce *store.CleanupError
	if errors.As(err, &ce) {
		// The key is revoked; only some keys minted under it were left,
		// and the authorizer refuses those whose origin or parent it was.
		h.log.WarnContext(r.Context(), "access key deleted; keys minted under it not all deleted", "key", kid, "error", err.Error())
		err = nil
	}
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no access key %q", kid)
	}
	return http.StatusOK, keyOut(k), nil
}

// ---------------------------------------------------------------- self authorization

func (h *handler) getAuthorization(r *http.Request, p caller.Principal) (int, any, error) {
	if err := ownID(r, p); err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	method, path := q.Get("method"), q.Get("path")
	if (method == "") != (path == "") {
		return 0, nil, domain.Errorf(domain.Invalid, "method and path go together: give both to simulate a request, or neither")
	}
	k, err := h.st.Principals.GetKey(r.Context(), p.ID, p.KeyID)
	if err != nil {
		// The authorizer just read this key; it was deleted in between.
		return 0, nil, domain.Errorf(domain.Unauthorized, "the access key was revoked")
	}
	out := Authorization{AccessKey: keyOut(k), Principal: userHref(p.ID)}
	if method != "" {
		dec, err := h.simulate(r, p, strings.ToUpper(method), path)
		if err != nil {
			return 0, nil, err
		}
		out.Decision = dec
	}
	return http.StatusOK, out, nil
}

var methods = map[string]bool{"GET": true, "POST": true, "PATCH": true, "PUT": true, "DELETE": true}

// simulate answers "would my key be allowed METHOD PATH?" with the same
// engine, data and explanation as the authorizer.
func (h *handler) simulate(r *http.Request, p caller.Principal, method, path string) (*Decision, error) {
	if !methods[method] {
		return nil, domain.Errorf(domain.Invalid, "method must be one of GET, POST, PATCH, PUT, DELETE")
	}
	// The decider and the account the path names are read in parallel.
	var (
		d    *access.Decider
		acct domain.Account
		aErr error
		g    errgroup.Group // both answers are needed to choose the error
	)
	id, fromPath := authz.Target(method, path, p.AccountID)
	fromPath = fromPath && authz.CheckPath(path) == nil
	g.Go(func() (err error) { d, err = h.dec.Decider(r.Context(), p); return err })
	if fromPath {
		g.Go(func() error { acct, aErr = h.st.Accounts.GetAccount(r.Context(), id); return nil })
	}
	if dErr := g.Wait(); dErr != nil {
		return nil, dErr
	}
	var (
		dec authz.Decision
		err error
	)
	if fromPath {
		if aErr != nil && !isNotFound(aErr) {
			return nil, aErr
		}
		if acct.ID == "" {
			acct.ID = id // unknown account: nothing applies there
		}
		dec, err = d.DecideFor(r.Context(), method, path, acct)
	} else {
		dec, err = d.Decide(r.Context(), method, path)
	}
	if err != nil {
		return nil, err
	}
	out := &Decision{Method: method, Path: path, Allowed: dec.Allowed, Role: dec.Role, RoleName: dec.RoleName, Reason: dec.Reason}
	if dec.Permission != nil {
		out.Permission = &Grant{Index: dec.Permission.Permission, Method: dec.Permission.Method, Spec: dec.Permission.Pattern, Effect: dec.Permission.Effect}
	}
	return out, nil
}

type switchPost struct {
	Account *string `json:"account"`
}

// switchAccount returns a session key authenticated into another account
// (docs/api.md#switching-accounts).
func (h *handler) switchAccount(r *http.Request, p caller.Principal) (int, any, error) {
	if err := ownID(r, p); err != nil {
		return 0, nil, err
	}
	var in switchPost
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Account == nil {
		return 0, nil, domain.Errorf(domain.Invalid, "account is required: the href of the account to authenticate into")
	}
	if p.Kind != domain.KindUser {
		return 0, nil, domain.Errorf(domain.Forbidden, "service users are bound to their account and cannot switch to another")
	}
	q, acct, err := h.quotaBeside(r, p, domain.DurabilitySession, in.Account)
	if err != nil {
		return 0, nil, err
	}
	now := h.st.Now()
	exp := now.Add(SessionKeyLifetime)
	if p.KeyExpiry != nil && p.KeyExpiry.Before(exp) {
		// The authorizer refuses a session key once its origin or parent
		// expires: its expiry says so up front.
		exp = p.KeyExpiry.UTC()
	}
	k := domain.AccessKey{ID: ids.New(), PrincipalID: p.ID, Type: "bearer", Durability: domain.DurabilitySession,
		Account: acct.ID, AccountAncestors: acct.Ancestors, Expiry: &exp, Created: now}
	k.Origin, k.Parent = lineageOf(p)
	return h.issue(r, k, q)
}

// lineageOf returns the origin and parent of a key minted with the
// caller's key: the origin is the caller's own origin, or the caller's key
// when it has none (it is a persistent key, or a session key from before
// lineages were recorded), so every key of a lineage names the same root
// and the authorizer reads two keys at most, however long the chain.
func lineageOf(p caller.Principal) (origin, parent *domain.KeyRef) {
	parent = &domain.KeyRef{Principal: p.ID, ID: p.KeyID}
	if p.OriginKey != "" {
		return &domain.KeyRef{Principal: p.OriginPrincipal, ID: p.OriginKey}, parent
	}
	return parent, parent
}
