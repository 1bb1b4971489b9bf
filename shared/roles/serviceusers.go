package roles

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/jsontext"
	"cads/shared/store"
	"cads/shared/users"
)

// Limits of service user fields (name as in the reference document).
const maxServiceUserName = 32

// serviceUserConfig is the body of POST (optional) and PATCH. A field left
// out is unchanged; "" clears it.
type serviceUserConfig struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
}

func (c *serviceUserConfig) validate() error {
	var err error
	if c.Name != nil {
		var v string
		if v, err = validText("name", *c.Name, maxServiceUserName, false); err != nil {
			return err
		}
		c.Name = &v
	}
	if c.Description != nil {
		var v string
		if v, err = validText("description", *c.Description, maxDescriptionLen, false); err != nil {
			return err
		}
		c.Description = &v
	}
	return nil
}

// serviceUserTagged is a service user's body with its ETag.
func serviceUserTagged(u domain.ServiceUser, keys []domain.AccessKey, now time.Time) *apigw.Tagged {
	return apigw.WithETag(serviceUserOut(u, keys, now), serviceUserETag(u, keys, now))
}

// serviceUserETag: the body shows the service user's keys (their use and
// expiry included), which change without a change of the service user
// item, so the tag names them besides its version.
func serviceUserETag(u domain.ServiceUser, keys []domain.AccessKey, now time.Time) string {
	return etag.Of("serviceuser", serviceUserTagID(u.Account, u.ID, keys, now), u.Version)
}

func serviceUserTagID(acct, id string, keys []domain.AccessKey, now time.Time) string {
	shown, _ := json.Marshal(serviceUserOut(domain.ServiceUser{}, keys, now).AccessKeys)
	return acct + "/" + id + "/" + string(shown)
}

func serviceUserIDs(r *http.Request) (acct, id string, err error) {
	return memberIDs(r, "service_user_id", "service user")
}

// createServiceUser makes a principal of the account with one persistent
// access key bound to the account; the key's secret is in this response
// only. The service user holds no role until invited (to its generated
// email; such invitations are accepted at creation).
func (h *handler) createServiceUser(r *http.Request, _ caller.Principal) (int, any, error) {
	acct, err := accountID(r)
	if err != nil {
		return 0, nil, err
	}
	var in serviceUserConfig
	body, err := apigw.ReadBody(r, apigw.MaxJSONBody)
	if err != nil {
		return 0, nil, err
	}
	if len(bytes.TrimSpace(body)) > 0 {
		// The body is optional (docs/api.md#service-users), but when sent it is strict JSON.
		if err := apigw.RequireContentType(r, "application/json"); err != nil {
			return 0, nil, err
		}
		if err := jsontext.UnmarshalStrict(body, &in); err != nil {
			return 0, nil, err
		}
	}
	if err := in.validate(); err != nil {
		return 0, nil, err
	}
	account, err := h.st.Accounts.GetAccount(r.Context(), acct)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no account %s", acct)
	}
	now := h.st.Now()
	u := domain.ServiceUser{ID: ids.New(), Kind: domain.KindServiceUser, Account: acct, Created: now, Updated: now, Version: 1}
	u.Email = domain.ServiceUserEmail(acct, u.ID)
	if in.Name != nil {
		u.Name = *in.Name
	}
	if in.Description != nil {
		u.Description = *in.Description
	}
	k := domain.AccessKey{ID: ids.New(), PrincipalID: u.ID, Type: "bearer", Durability: domain.DurabilityPersistent,
		Account: acct, AccountAncestors: account.Ancestors, Created: now}
	secret := access.NewSecret(u.ID, k.ID)
	k.SecretHash = access.HashSecret(secret)
	if err := h.st.Principals.CreateServiceUser(r.Context(), u, k); err != nil {
		return 0, nil, domain.IfNotFound(err, "no account %s", acct)
	}
	out := serviceUserOut(u, nil, now)
	out.AccessKeys = []any{users.AccessKeySecret{AccessKey: keyOut(k), SecretKey: secret}}
	// The tag is the one a GET shows (without the secret, which is never
	// shown again).
	return http.StatusOK, apigw.WithETag(out, serviceUserETag(u, []domain.AccessKey{k}, now)), nil
}

func (h *handler) listServiceUsers(r *http.Request, p caller.Principal) (int, any, error) {
	now := h.st.Now()
	return listIn(h, r, p, apigw.Lister[domain.ServiceUser, ServiceUser]{
		Name: "service-users",
		Out:  func(x domain.ServiceUser) (ServiceUser, error) { return serviceUserOut(x, nil, now), nil },
		Sort: sortNamed(ServiceUser.named, func(x ServiceUser) string { return x.ID }),
		// The page's members' keys, all at once.
		Finish: func(ctx context.Context, page []ServiceUser) error {
			keys := make([][]domain.AccessKey, len(page))
			fns := make([]func() error, len(page))
			for i, u := range page {
				fns[i] = func() (err error) { keys[i], err = h.st.Principals.ListKeys(ctx, u.ID); return err }
			}
			if err := parallel(fns...); err != nil {
				return err
			}
			for i := range page {
				page[i].AccessKeys = serviceUserOut(domain.ServiceUser{}, keys[i], now).AccessKeys
			}
			return nil
		},
	}, h.st.Principals.PageServiceUsers, func(x domain.ServiceUser) string { return serviceUserHref(x.Account, x.ID) })
}

func (h *handler) getServiceUser(r *http.Request, _ caller.Principal) (int, any, error) {
	acct, id, err := serviceUserIDs(r)
	if err != nil {
		return 0, nil, err
	}
	var (
		u    domain.ServiceUser
		keys []domain.AccessKey
	)
	err = parallel(
		func() (err error) { u, err = h.st.Principals.GetServiceUser(r.Context(), acct, id); return err },
		func() (err error) { keys, err = h.st.Principals.ListKeys(r.Context(), id); return err },
	)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no service user %q in account %s", id, acct)
	}
	return http.StatusOK, serviceUserTagged(u, keys, h.st.Now()), nil
}

func (h *handler) patchServiceUser(r *http.Request, _ caller.Principal) (int, any, error) {
	acct, id, err := serviceUserIDs(r)
	if err != nil {
		return 0, nil, err
	}
	var in serviceUserConfig
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Name == nil && in.Description == nil {
		return 0, nil, domain.Errorf(domain.Invalid, "nothing to change: the body may set name and description")
	}
	if err := in.validate(); err != nil {
		return 0, nil, err
	}
	var (
		u    domain.ServiceUser
		keys []domain.AccessKey
		now  = h.st.Now()
	)
	update := func(versions ...int) (err error) {
		err = store.ReapplyIf(r.Context(), len(versions) > 0, func(ctx context.Context) (err error) {
			u, err = h.st.Principals.UpdateServiceUser(ctx, acct, id, in.Name, in.Description, versions...)
			return err
		})
		return err
	}
	listKeys := func() (err error) { keys, err = h.st.Principals.ListKeys(r.Context(), id); return err }
	if pre := apigw.IfMatch(r); pre.Set() {
		// The keys the tag names are read first; the update is then
		// conditional on the versions the If-Match names with them.
		err = listKeys()
		if err == nil {
			var versions []int
			if versions, err = pre.WriteVersions("serviceuser", serviceUserTagID(acct, id, keys, now)); err == nil {
				err = update(versions...)
			}
		}
	} else {
		err = parallel(func() error { return update() }, listKeys)
	}
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no service user %q in account %s", id, acct)
	}
	return http.StatusOK, serviceUserTagged(u, keys, h.st.Now()), nil
}

// deleteServiceUser deletes a service user: none of its keys authenticates
// from the next request on.
func (h *handler) deleteServiceUser(r *http.Request, _ caller.Principal) (int, any, error) {
	acct, id, err := serviceUserIDs(r)
	if err != nil {
		return 0, nil, err
	}
	pre := apigw.IfMatch(r)
	var checks []func(domain.ServiceUser, []domain.AccessKey) error
	if pre.Set() {
		now := h.st.Now()
		checks = append(checks, func(u domain.ServiceUser, keys []domain.AccessKey) error {
			return pre.Check(serviceUserETag(u, keys, now))
		})
	}
	var u domain.ServiceUser
	err = store.ReapplyIf(r.Context(), pre.Set(), func(ctx context.Context) (err error) {
		u, err = h.st.Principals.DeleteServiceUser(ctx, acct, id, checks...)
		return err
	})
	var ce *store.CleanupError
	if err != nil && !errors.As(err, &ce) {
		return 0, nil, domain.IfNotFound(err, "no service user %q in account %s", id, acct)
	}
	return http.StatusOK, serviceUserOut(u, nil, h.st.Now()), err
}
