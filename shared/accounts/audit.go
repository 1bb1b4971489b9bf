package accounts

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/audit"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/store"
)

// auditFilter is what the query of GET /v2/accounts/{id}/audit-events
// asks for besides the page (docs/api.md#audit-events).
type auditFilter struct {
	from, to              time.Time
	actor, target, action string
}

func parseAuditFilter(r *http.Request) (auditFilter, error) {
	q := r.URL.Query()
	var f auditFilter
	for name, t := range map[string]*time.Time{"from": &f.from, "to": &f.to} {
		if s := q.Get(name); s != "" {
			v, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return f, domain.Errorf(domain.Invalid, "%s must be a time in RFC 3339 form, like 2026-01-31T12:00:00Z", name)
			}
			*t = v
		}
	}
	if !f.from.IsZero() && !f.to.IsZero() && !f.from.Before(f.to) {
		return f, domain.Errorf(domain.Invalid, "from must be before to")
	}
	f.actor, f.target = q.Get("actor"), strings.TrimSuffix(q.Get("target"), "/")
	if a := q.Get("action"); a != "" {
		f.action = strings.ToUpper(a)
		switch f.action {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			return f, domain.Errorf(domain.Invalid, "action must be one of POST, PUT, PATCH, DELETE")
		}
	}
	return f, nil
}

// matches reports whether ev passes the filter: actor names the principal
// (href or id) or the key (href) that acted, target the resource changed
// or one it holds (an href prefix), action the method.
func (f auditFilter) matches(ev audit.Event) bool {
	if f.actor != "" {
		a := ev.Actor
		if f.actor != a.Principal && f.actor != a.Key && f.actor != a.OriginKey && !strings.HasSuffix(a.Principal, "/"+f.actor) {
			return false
		}
	}
	if f.target != "" && ev.Target != f.target && !strings.HasPrefix(ev.Target, f.target+"/") {
		return false
	}
	return f.action == "" || ev.Method == f.action
}

// listAuditEvents pages the audit events of the account and of its
// sub-accounts, newest first: one partition, one Query per page. Events
// of a sub-account are shown to whoever may read that sub-account's own
// events (roles inherited from the account, as for any request there),
// and every event to whoever may read its target, in the event's account;
// the filters apply within the read budget like the permission filter.
func (h *handler) listAuditEvents(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := accountID(r)
	if err != nil {
		return 0, nil, err
	}
	page, err := apigw.ParsePage(r.URL.Query())
	if err != nil {
		return 0, nil, err
	}
	f, err := parseAuditFilter(r)
	if err != nil {
		return 0, nil, err
	}
	list, err := apigw.List(r, page, apigw.Lister[audit.Event, audit.Event]{
		Name: "audit-events", Indexed: "time", ValidPosition: store.ValidPosition,
		// Stored oldest first: the collection's order is the reverse.
		Read: func(ctx context.Context, after string, desc bool, n int) ([]audit.Event, []string, bool, error) {
			return h.st.Audit.PageAuditEvents(ctx, id, f.from, f.to, after, !desc, n)
		},
		Allow: func(ctx context.Context) (func(audit.Event) (bool, error), error) {
			var (
				g    errgroup.Group // the account's error comes first
				d    *access.Decider
				aErr error
			)
			g.Go(func() (err error) { d, err = h.dec.Decider(ctx, p); return err })
			g.Go(func() error { _, aErr = h.st.Accounts.GetAccountRecord(ctx, id); return nil })
			err := g.Wait()
			if aErr != nil {
				return nil, domain.IfNotFound(aErr, "no account %s", accountHref(id))
			}
			if err != nil {
				return nil, err
			}
			return func(ev audit.Event) (bool, error) {
				if !f.matches(ev) {
					return false, nil
				}
				in := domain.Account{ID: ev.AccountID, Ancestors: ev.Ancestors}
				if ev.AccountID != id {
					if ok, err := d.AllowsFor(ctx, http.MethodGet, accountHref(ev.AccountID)+"/audit-events", in); !ok || err != nil {
						return false, err
					}
				}
				// An event holds its target's content (the resource, the
				// patch): it is shown to whoever may read the target,
				// as a collection shows its members (docs/rbac.md,
				// Audit events).
				return d.AllowsFor(ctx, http.MethodGet, ev.Target, targetAccount(ev, in))
			}, nil
		},
		Out: func(ev audit.Event) (audit.Event, error) { return ev, nil },
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

// targetAccount is the account a read of ev's target is decided in, as
// the authorizer would decide it: the account an accounts path names, or
// else the event's own (in). A change to an account or to what it holds
// (its deletion too) is recorded in that account; the one accounts path
// that names another is a sub-account the event's account created
// (POST /v2/accounts), a child of it.
func targetAccount(ev audit.Event, in domain.Account) domain.Account {
	rest, ok := strings.CutPrefix(ev.Target, accountHref(""))
	if !ok {
		return in
	}
	id, _, _ := strings.Cut(rest, "/")
	if id == in.ID {
		return in
	}
	return domain.Account{ID: id, Ancestors: append(slices.Clip(in.Ancestors), in.ID)}
}
