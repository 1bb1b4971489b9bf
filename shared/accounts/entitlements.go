package accounts

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/store"
)

// Entitlement is the wire shape of an entitlement (docs/api.md#entitlements): a quantity
// of one resource kind allocated to the account, charged unit_price x
// quantity per period while active (from started, until expiry if set).
// plan_id and started are the reference document's fields; an entitlement
// made from them alone records a plan: no resource, quantity 0.
type Entitlement struct {
	ID        string     `json:"id"`
	Href      string     `json:"href"`
	Account   string     `json:"account"`
	PlanID    *string    `json:"plan_id,omitempty"`
	Resource  string     `json:"resource,omitempty"`
	Quantity  int        `json:"quantity"`
	Period    string     `json:"period"`
	UnitPrice Money      `json:"unit_price"`
	Started   time.Time  `json:"started"`
	Expiry    *time.Time `json:"expiry"`
	Active    bool       `json:"active"`
	Created   time.Time  `json:"created"`
	Updated   time.Time  `json:"updated"`
}

func entitlementHref(account, id string) string {
	return accountHref(account) + "/entitlements/" + id
}

func entitlementOut(e domain.Entitlement, now time.Time) Entitlement {
	out := Entitlement{ID: e.ID, Href: entitlementHref(e.Account, e.ID), Account: accountHref(e.Account), Resource: e.Resource,
		Quantity: e.Quantity, Period: e.Period, UnitPrice: Money(e.UnitPriceCents), Started: e.Started, Expiry: e.Expiry,
		Active: e.ActiveAt(now), Created: e.Created, Updated: e.Updated}
	if e.PlanID != "" {
		out.PlanID = &e.PlanID
	}
	return out
}

// Limits of entitlement fields.
const (
	maxQuantity  = 1_000_000
	maxPlanIDLen = 100
)

var periods = []string{domain.PeriodMonth, domain.PeriodYear}

type entitlementPost struct {
	PlanID    *string    `json:"plan_id,omitempty"`
	Resource  *string    `json:"resource"`
	Quantity  *int       `json:"quantity"`
	Period    *string    `json:"period"`
	UnitPrice *Money     `json:"unit_price"`
	Started   *time.Time `json:"started"`
	Expiry    *time.Time `json:"expiry"`
}

type entitlementPatch struct {
	PlanID    optional[string]    `json:"plan_id"`
	Resource  present             `json:"resource"`
	Quantity  *int                `json:"quantity"`
	Period    *string             `json:"period"`
	UnitPrice *Money              `json:"unit_price"`
	Started   *time.Time          `json:"started"`
	Expiry    optional[time.Time] `json:"expiry"`
}

func (h *handler) listEntitlements(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := accountID(r)
	if err != nil {
		return 0, nil, err
	}
	page, err := apigw.ParsePage(r.URL.Query(), "resource", "started", "created")
	if err != nil {
		return 0, nil, err
	}
	now := h.st.Now()
	list, err := apigw.List(r, page, apigw.Lister[domain.Entitlement, Entitlement]{
		Name: "entitlements", Indexed: "created", ValidPosition: store.ValidPosition,
		Read: func(ctx context.Context, after string, desc bool, n int) ([]domain.Entitlement, []string, bool, error) {
			return h.st.Entitlements.PageEntitlements(ctx, id, after, desc, n)
		},
		// Only the members the caller may GET (docs/api.md#collection-reads).
		Allow: func(ctx context.Context) (func(domain.Entitlement) (bool, error), error) {
			var (
				g    errgroup.Group // the account's error comes first
				d    *access.Decider
				acct domain.AccountRecord
				aErr error
			)
			g.Go(func() (err error) { d, err = h.dec.Decider(ctx, p); return err })
			g.Go(func() error { acct, aErr = h.st.Accounts.GetAccountRecord(ctx, id); return nil })
			err := g.Wait()
			if aErr != nil {
				return nil, domain.IfNotFound(aErr, "no account %s", accountHref(id))
			}
			if err != nil {
				return nil, err
			}
			return func(e domain.Entitlement) (bool, error) {
				return d.AllowsFor(ctx, http.MethodGet, entitlementHref(id, e.ID), acct.Account)
			}, nil
		},
		Out:  func(e domain.Entitlement) (Entitlement, error) { return entitlementOut(e, now), nil },
		Sort: sortEntitlements,
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

func sortEntitlements(es []Entitlement, order []apigw.OrderKey) {
	apigw.Sort(es, order, func(e Entitlement, field string) any {
		switch field {
		case "resource":
			return e.Resource
		case "started":
			return e.Started
		}
		return e.Created
	}, func(e Entitlement) string { return e.ID }, apigw.OrderKey{Field: "created"})
}

// createEntitlement records an allocation. Only the entitlement
// administrator role permits it (the authorizer decided).
func (h *handler) createEntitlement(r *http.Request, _ caller.Principal) (int, any, error) {
	id, err := accountID(r)
	if err != nil {
		return 0, nil, err
	}
	var in entitlementPost
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	now := h.st.Now()
	e := domain.Entitlement{ID: ids.New(), Account: id, Period: domain.PeriodMonth, Started: now, Version: 1, Created: now, Updated: now}
	switch {
	case in.Resource == nil && in.PlanID != nil:
		// A plan entitlement (the reference document's EntitlementPost:
		// plan_id and started): it records the plan and allocates no
		// resource, so it meters and charges nothing (docs/api.md#entitlements).
		if in.Quantity != nil {
			return 0, nil, domain.Errorf(domain.Invalid, "quantity needs resource: an entitlement without resource records a plan and allocates nothing")
		}
	case in.Resource == nil:
		return 0, nil, domain.Errorf(domain.Invalid, "resource is required: one of %s (or plan_id alone, to record a plan)", strings.Join(domain.ResourceKinds(), ", "))
	case !slices.Contains(domain.ResourceKinds(), *in.Resource):
		return 0, nil, domain.Errorf(domain.Invalid, "resource %q is not a resource kind: use one of %s", *in.Resource, strings.Join(domain.ResourceKinds(), ", "))
	default:
		e.Resource = *in.Resource
		if in.Quantity == nil {
			return 0, nil, domain.Errorf(domain.Invalid, "quantity is required: how many %s the account may have (application_tests: run per period)", e.Resource)
		}
	}
	patch := entitlementPatch{Quantity: in.Quantity, Period: in.Period, UnitPrice: in.UnitPrice, Started: in.Started,
		PlanID: optional[string]{Set: in.PlanID != nil, Value: in.PlanID}, Expiry: optional[time.Time]{Set: in.Expiry != nil, Value: in.Expiry}}
	if e, err = applyEntitlement(e, patch); err != nil {
		return 0, nil, err
	}
	if d, ok := domain.DefaultQuota(e.Resource); ok && d.PerPrincipal {
		// Users belong to the installation: only the root's entitlements
		// set their key quotas, and one on a sub-account would be
		// accepted and change nothing.
		a, err := h.st.Accounts.GetAccountRecord(r.Context(), id)
		if err != nil {
			return 0, nil, domain.IfNotFound(err, "no account %s", accountHref(id))
		}
		if a.Parent != "" {
			return 0, nil, domain.Errorf(domain.Invalid, "%s is a quota per user, and users belong to the installation: the root account's entitlements set it, not %s's", e.Resource, accountHref(id))
		}
	}
	existing, err := h.st.Entitlements.ListEntitlements(r.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	if len(existing) >= domain.MaxEntitlementsPerAccount {
		return 0, nil, domain.Errorf(domain.Conflict, "account %s already has %d entitlements, the most an account can have; delete or change one", accountHref(id), len(existing))
	}
	if err := h.st.Entitlements.CreateEntitlement(r.Context(), e); err != nil {
		return 0, nil, domain.IfNotFound(err, "no account %s", accountHref(id))
	}
	return http.StatusOK, entitlementTagged(e, now), nil
}

// applyEntitlement validates the fields of in that are set and applies
// them to e.
func applyEntitlement(e domain.Entitlement, in entitlementPatch) (domain.Entitlement, error) {
	if in.Resource {
		return e, domain.Errorf(domain.Invalid, "resource cannot be changed: delete this entitlement and create one for the other resource")
	}
	if in.PlanID.Set {
		e.PlanID = ""
		if in.PlanID.Value != nil {
			v, err := text("plan_id", *in.PlanID.Value, maxPlanIDLen)
			if err != nil {
				return e, domain.Errorf(domain.Invalid, "%s", err.Error())
			}
			e.PlanID = v
		}
		if e.PlanID == "" && e.Resource == "" {
			return e, domain.Errorf(domain.Invalid, "plan_id cannot be removed from an entitlement that records only a plan: delete the entitlement instead")
		}
	}
	if in.Quantity != nil {
		if e.Resource == "" && *in.Quantity != 0 {
			return e, domain.Errorf(domain.Invalid, "quantity needs resource: this entitlement records a plan and allocates nothing")
		}
		if *in.Quantity < 0 || *in.Quantity > maxQuantity {
			return e, domain.Errorf(domain.Invalid, "quantity must be an integer from 0 to %d", maxQuantity)
		}
		e.Quantity = *in.Quantity
	}
	if in.Period != nil {
		if !slices.Contains(periods, *in.Period) {
			return e, domain.Errorf(domain.Invalid, "period %q is not a period: use one of %s", *in.Period, strings.Join(periods, ", "))
		}
		e.Period = *in.Period
	}
	if in.UnitPrice != nil {
		e.UnitPriceCents = int64(*in.UnitPrice)
	}
	if in.Started != nil {
		e.Started = in.Started.UTC().Truncate(time.Millisecond)
	}
	if in.Expiry.Set {
		e.Expiry = nil
		if in.Expiry.Value != nil {
			x := in.Expiry.Value.UTC().Truncate(time.Millisecond)
			e.Expiry = &x
		}
	}
	if e.Expiry != nil && !e.Expiry.After(e.Started) {
		return e, domain.Errorf(domain.Invalid, "expiry (%s) must be after started (%s)", e.Expiry.Format(time.RFC3339), e.Started.Format(time.RFC3339))
	}
	return e, nil
}

func entitlementID(r *http.Request) (string, string, error) {
	id, err := accountID(r)
	if err != nil {
		return "", "", err
	}
	eid := r.PathValue("entitlement_id")
	if !ids.Valid(eid) {
		return "", "", domain.Errorf(domain.NotFound, "no entitlement %s", entitlementHref(id, eid))
	}
	return id, eid, nil
}

func (h *handler) getEntitlement(r *http.Request, _ caller.Principal) (int, any, error) {
	id, eid, err := entitlementID(r)
	if err != nil {
		return 0, nil, err
	}
	e, err := h.st.Entitlements.GetEntitlement(r.Context(), id, eid)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no entitlement %s", entitlementHref(id, eid))
	}
	return http.StatusOK, entitlementTagged(e, h.st.Now()), nil
}

// entitlementTagged is an entitlement's body with its ETag. Whether it is
// active changes with time, not with a write, so it is part of the tag:
// a strong tag names one body.
func entitlementTagged(e domain.Entitlement, now time.Time) *apigw.Tagged {
	return apigw.WithETag(entitlementOut(e, now), etag.Of("entitlement", entitlementTagID(e.Account, e.ID, e.ActiveAt(now)), e.Version))
}

func entitlementTagID(account, id string, active bool) string {
	if active {
		return account + "/" + id + "/active"
	}
	return account + "/" + id
}

func (h *handler) patchEntitlement(r *http.Request, _ caller.Principal) (int, any, error) {
	id, eid, err := entitlementID(r)
	if err != nil {
		return 0, nil, err
	}
	var in entitlementPatch
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if !bool(in.Resource) && !in.PlanID.Set && in.Quantity == nil && in.Period == nil && in.UnitPrice == nil && in.Started == nil && !in.Expiry.Set {
		return 0, nil, domain.Errorf(domain.Invalid, "nothing to change: the body may set plan_id, quantity, period, unit_price, started and expiry")
	}
	var next domain.Entitlement
	read := func(ctx context.Context) (domain.Entitlement, error) {
		prev, err := h.st.Entitlements.GetEntitlement(ctx, id, eid)
		return prev, domain.IfNotFound(err, "no entitlement %s", entitlementHref(id, eid))
	}
	tag := func(e domain.Entitlement) string { return entitlementTagged(e, h.st.Now()).ETag }
	err = store.Edit(r.Context(), apigw.IfMatch(r), read, tag, func(ctx context.Context, prev domain.Entitlement) (err error) {
		if next, err = applyEntitlement(prev, in); err != nil {
			return err
		}
		next.Version, next.Updated = prev.Version+1, h.st.Now()
		return domain.IfNotFound(h.st.Entitlements.PutEntitlement(ctx, next), "no entitlement %s", entitlementHref(id, eid))
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, entitlementTagged(next, next.Updated), nil
}

// deleteEntitlement deletes an entitlement of the account named by the
// path; one of another account is not found (its key includes the account).
func (h *handler) deleteEntitlement(r *http.Request, _ caller.Principal) (int, any, error) {
	id, eid, err := entitlementID(r)
	if err != nil {
		return 0, nil, err
	}
	versions, err := apigw.IfMatch(r).WriteVersions("entitlement", entitlementTagID(id, eid, true), entitlementTagID(id, eid, false))
	if err != nil {
		return 0, nil, err
	}
	e, err := h.st.Entitlements.DeleteEntitlement(r.Context(), id, eid, versions...)
	if errors.Is(err, domain.ErrChanged) {
		return 0, nil, domain.ErrStale
	}
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no entitlement %s", entitlementHref(id, eid))
	}
	return http.StatusOK, entitlementOut(e, h.st.Now()), nil
}
