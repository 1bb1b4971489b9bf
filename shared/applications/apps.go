package applications

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"cads/shared/apigw"
	"cads/shared/applications/appconfig"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/patch"
	"cads/shared/store"
	"cads/shared/tasks"
)

// Application is the wire shape of an application: its configuration and
// the read-only id, href, state, created, updated and current_outage.
type Application struct {
	ID   string `json:"id"`
	Href string `json:"href"`
	appconfig.Configuration
	State string `json:"state"`
	// CurrentOutage is always false: this control plane does not monitor
	// applications, so it knows of no outage (docs/tasks.md).
	CurrentOutage bool      `json:"current_outage"`
	Created       time.Time `json:"created"`
	Updated       time.Time `json:"updated"`
}

func appOut(a domain.Application, now time.Time) (Application, error) {
	c, err := appconfig.Parse(a.Config)
	if err != nil {
		return Application{}, err
	}
	if c.TLS != nil {
		t := *c.TLS
		t.CoveredAliases = appconfig.Covered(c, now)
		c.TLS = &t
	}
	return Application{ID: a.ID, Href: tasks.AppHref(a.ID), Configuration: c, State: a.State, Created: a.Created, Updated: a.Updated}, nil
}

func (h *handler) listApps(r *http.Request, p caller.Principal) (int, any, error) {
	page, err := apigw.ParsePage(r.URL.Query(), "name", "created", "state")
	if err != nil {
		return 0, nil, err
	}
	now := h.st.Now()
	list, err := apigw.List(r, page, apigw.Lister[domain.Application, Application]{
		Name: "applications", Indexed: "created", ValidPosition: store.ValidPosition,
		Read: func(ctx context.Context, after string, desc bool, n int) ([]domain.Application, []string, bool, error) {
			return h.st.Applications.PageApplications(ctx, p.AccountID, after, desc, n)
		},
		// Only what the caller may GET (docs/api.md#collection-reads).
		Allow: func(ctx context.Context) (func(domain.Application) (bool, error), error) {
			d, err := h.dec.Decider(ctx, p)
			if err != nil {
				return nil, err
			}
			return func(a domain.Application) (bool, error) { return d.Allows(ctx, http.MethodGet, tasks.AppHref(a.ID)) }, nil
		},
		Out:  func(a domain.Application) (Application, error) { return appOut(a, now) },
		Sort: sortApps,
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

func sortApps(as []Application, order []apigw.OrderKey) {
	apigw.Sort(as, order, func(a Application, field string) any {
		switch field {
		case "name":
			return a.Name
		case "state":
			return a.State
		}
		return a.Created
	}, func(a Application) string { return a.ID }, apigw.OrderKey{Field: "created"})
}

func (h *handler) createApp(r *http.Request, p caller.Principal) (int, any, error) {
	var body json.RawMessage
	if err := apigw.DecodeJSON(r, &body, appconfig.PEMText); err != nil {
		return 0, nil, err
	}
	cfg, err := appconfig.Decode(body)
	if err != nil {
		return 0, nil, err
	}
	// Entitlements (docs/api.md#entitlements) cap how many applications an account has.
	q, err := h.st.Entitlements.CheckAllowance(r.Context(), p.AccountID, domain.ResourceApplications)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no account %q", p.AccountID)
	}
	now := h.st.Now()
	a := domain.Application{ID: ids.New(), Account: p.AccountID, State: domain.AppStopped, Config: cfg.Encode(), Aliases: cfg.Aliases, Version: 1, Created: now, Updated: now}
	if err := h.st.Applications.CreateApplication(r.Context(), a, q); err != nil {
		return 0, nil, domain.IfNotFound(err, "no account %q", p.AccountID)
	}
	out, err := appTagged(a, now)
	return http.StatusOK, out, err
}

// appTagged is an application's body with its ETag. Its version counts
// configuration changes only; its state and the aliases its certificate
// covers now change the body too, so they are part of the tag.
func appTagged(a domain.Application, now time.Time) (*apigw.Tagged, error) {
	out, err := appOut(a, now)
	if err != nil {
		return nil, err
	}
	return apigw.WithETag(out, appETag(a, out)), nil
}

func appETag(a domain.Application, out Application) string {
	covered := ""
	if out.Configuration.TLS != nil {
		covered = fmt.Sprint(out.Configuration.TLS.CoveredAliases)
	}
	return etag.Of("application", a.ID+"/"+a.State+"/"+covered, a.Version)
}

func (h *handler) getApp(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := appID(r)
	if err != nil {
		return 0, nil, err
	}
	a, err := h.st.Applications.GetApplication(r.Context(), p.AccountID, id)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no application %q", id)
	}
	out, err := appTagged(a, h.st.Now())
	return http.StatusOK, out, err
}

func (h *handler) deleteApp(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := appID(r)
	if err != nil {
		return 0, nil, err
	}
	pre := apigw.IfMatch(r)
	var a domain.Application
	err = store.ReapplyIf(r.Context(), pre.Set(), func(ctx context.Context) (err error) {
		a, err = h.st.Applications.DeleteApplication(ctx, p.AccountID, id, func(cur domain.Application) error {
			tagged, err := appTagged(cur, h.st.Now())
			if err != nil {
				return err
			}
			return pre.Check(tagged.ETag)
		})
		return err
	})
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no application %q", id)
	}
	out, err := appOut(a, h.st.Now())
	return http.StatusOK, out, err
}

// patchedConfig reads the configuration out of a patched Application
// document: read-only fields must be left as they were.
func patchedConfig(orig, patched []byte) (appconfig.Configuration, error) {
	var o, n map[string]json.RawMessage
	if err := json.Unmarshal(orig, &o); err != nil {
		return appconfig.Configuration{}, err
	}
	if err := json.Unmarshal(patched, &n); err != nil {
		return appconfig.Configuration{}, domain.Errorf(domain.Invalid, "the patched application is not a JSON object")
	}
	for _, f := range appconfig.ReadOnly {
		if !sameJSON(o[f], n[f]) {
			if f == "state" {
				return appconfig.Configuration{}, domain.Errorf(domain.Invalid, "state is read-only: change it with a task (start, stop, enter_maintenance, exit_maintenance) through POST /v2/tasks")
			}
			return appconfig.Configuration{}, domain.Errorf(domain.Invalid, "%s is read-only", f)
		}
		delete(n, f)
	}
	// covered_aliases is computed; drop it if unchanged.
	if raw, ok := n["tls_configuration"]; ok {
		var t map[string]json.RawMessage
		if json.Unmarshal(raw, &t) == nil && t != nil {
			var ot map[string]json.RawMessage
			_ = json.Unmarshal(o["tls_configuration"], &ot)
			if !sameJSON(ot["covered_aliases"], t["covered_aliases"]) {
				return appconfig.Configuration{}, domain.Errorf(domain.Invalid, "tls_configuration.covered_aliases is read-only: it is computed from the certificate chain")
			}
			delete(t, "covered_aliases")
			n["tls_configuration"], _ = json.Marshal(t)
		}
	}
	b, err := json.Marshal(n)
	if err != nil {
		return appconfig.Configuration{}, err
	}
	return appconfig.Decode(b)
}

func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// patchApp is PATCH /v2/applications/{id}. The patch is applied to the
// application as read and the result validated as a whole. A change of
// descriptive fields only is written at once (200, the Application); any
// change to what runs becomes a patch-application task carrying the new
// values of every changed field (201, the Task).
func (h *handler) patchApp(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := appID(r)
	if err != nil {
		return 0, nil, err
	}
	// A merge patch (application/json, application/merge-patch+json) or a JSON Patch (docs/api.md#patch-bodies).
	body, err := patch.Read(apigw.ReadJSON(r, appconfig.PatchPEMText, patch.MediaJSON, patch.MediaMergePatch, patch.MediaJSONPatch))
	if err != nil {
		return 0, nil, err
	}
	var (
		status int
		out    any
	)
	pre := apigw.IfMatch(r)
	err = store.ReapplyIf(r.Context(), pre.Set(), func(ctx context.Context) error {
		a, err := h.st.Applications.GetApplication(ctx, p.AccountID, id)
		if err != nil {
			return domain.IfNotFound(err, "no application %q", id)
		}
		now := h.st.Now()
		cur, err := appOut(a, now)
		if err != nil {
			return err
		}
		if err := pre.Check(appETag(a, cur)); err != nil {
			return err
		}
		doc, err := json.Marshal(cur)
		if err != nil {
			return err
		}
		patched, err := body.Apply(doc)
		if err != nil {
			return err
		}
		next, err := patchedConfig(doc, patched)
		if err != nil {
			return err
		}
		changed := appconfig.Changed(cur.Configuration, next)
		if len(changed) == 0 {
			status, out = http.StatusOK, apigw.WithETag(cur, appETag(a, cur))
			return nil
		}
		if appconfig.OnlyDescriptive(changed) {
			upd, err := h.st.Applications.UpdateApplicationConfig(ctx, p.AccountID, id, a.Version, next.Encode())
			if err != nil {
				return domain.IfNotFound(err, "no application %q", id)
			}
			status = http.StatusOK
			out, err = appTagged(upd, now)
			return err
		}
		if err := h.checkAliases(ctx, id, cur.Aliases, next.Aliases); err != nil {
			return err
		}
		t, err := tasks.NewTask(now, p.AccountID, p.ID, tasks.Request{Type: tasks.TypePatchApplication, App: id,
			Params: tasks.PatchParams{Changes: appconfig.ChangesOf(next, changed)}})
		if err != nil {
			return err
		}
		if err := h.tasks.Submit(ctx, t); err != nil {
			return err
		}
		status, out = http.StatusCreated, tasks.Out(t)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return status, out, nil
}

// checkAliases answers a patch that changes the aliases before its task is
// queued: more changes than one transaction can claim are a 400, an added
// alias that another application holds a 409 naming it. The task's
// transaction claims them again (store.FinishTask), so an alias taken
// between this check and the task fails the task with the same message.
func (h *handler) checkAliases(ctx context.Context, id string, from, to []string) error {
	added := minusAliases(to, from)
	if len(added) == 0 && len(from) == len(to) {
		return nil
	}
	if n := len(added) + len(minusAliases(from, to)); n > store.MaxAliasWrites {
		return domain.Errorf(domain.Invalid, "aliases: this change adds and removes %d host names; one change may add and remove at most %d together (each is claimed or released in the one transaction that applies it): make it in steps", n, store.MaxAliasWrites)
	}
	if len(added) == 0 {
		return nil
	}
	owners, err := h.st.Applications.AliasOwners(ctx, added)
	if err != nil {
		return err
	}
	for _, a := range added {
		if app, ok := owners[domain.AliasKey(a)]; ok && app != id {
			return domain.AliasTaken(a)
		}
	}
	return nil
}

// minusAliases is the aliases of a not in b.
func minusAliases(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
