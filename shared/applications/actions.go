package applications

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"cads/shared/apigw"
	"cads/shared/applications/appconfig"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/jsontext"
	"cads/shared/patch"
	"cads/shared/store"
	"cads/shared/tasks"
)

// Action is the wire shape of an action. secret_key is write-only: it is
// accepted and used to sign run-action requests, never returned.
type Action struct {
	ID           string    `json:"id"`
	Href         string    `json:"href"`
	URL          string    `json:"url"`
	Name         string    `json:"name"`
	HTTPMethod   string    `json:"http_method"`
	Description  string    `json:"description"`
	Certificates string    `json:"certificates,omitempty"`
	Created      time.Time `json:"created"`
	Updated      time.Time `json:"updated"`
}

func actionHref(app, id string) string { return tasks.AppHref(app) + "/actions/" + id }

func actionOut(a domain.Action) Action {
	return Action{ID: a.ID, Href: actionHref(a.App, a.ID), URL: a.URL, Name: a.Name, HTTPMethod: a.HTTPMethod,
		Description: a.Description, Certificates: a.Certificates, Created: a.Created, Updated: a.Updated}
}

// actionFields are the writable fields (POST adds id).
type actionFields struct {
	URL          *string `json:"url"`
	Name         *string `json:"name"`
	HTTPMethod   *string `json:"http_method"`
	Description  *string `json:"description"`
	SecretKey    *string `json:"secret_key"`
	Certificates *string `json:"certificates"`
}

type actionPost struct {
	ID *string `json:"id"`
	actionFields
}

// Limits of action fields this service sets where the reference gives none.
const (
	maxURLLen         = 2048
	maxActionName     = 255
	maxDescription    = 1000
	maxSecretKeyChars = 1024
	minSecretKeyBytes = 16
	maxCertificates   = 64 << 10
)

var (
	actionURLRE   = regexp.MustCompile(`^https?://[^/]+/.*$`)
	secretKeyRE   = regexp.MustCompile(`^[A-Za-z0-9+/]+={0,3}$`)
	actionMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
)

// apply sets f's non-nil fields on a and validates the result.
func (f actionFields) apply(a *domain.Action) error {
	if f.URL != nil {
		a.URL = *f.URL
	}
	if f.Name != nil {
		a.Name = *f.Name
	}
	if f.HTTPMethod != nil {
		a.HTTPMethod = strings.ToUpper(*f.HTTPMethod)
	}
	if f.Description != nil {
		a.Description = *f.Description
	}
	if f.SecretKey != nil {
		a.SecretKey = *f.SecretKey
	}
	if f.Certificates != nil {
		a.Certificates = *f.Certificates
	}
	if a.HTTPMethod == "" {
		a.HTTPMethod = http.MethodPost
	}
	return validateAction(*a)
}

func validateAction(a domain.Action) error {
	if a.URL == "" {
		return domain.Errorf(domain.Invalid, "url is required: the http(s) URL the action calls, like https://ops.example.com/hooks/purge")
	}
	u, err := url.Parse(a.URL)
	if len(a.URL) > maxURLLen || !actionURLRE.MatchString(a.URL) || err != nil || u.Host == "" {
		return domain.Errorf(domain.Invalid, "url must be an http or https URL with a path, like https://ops.example.com/hooks/purge (at most %d characters)", maxURLLen)
	}
	if u.User != nil {
		return domain.Errorf(domain.Invalid, "url must not carry credentials (anyone who may read the action would see them); set secret_key to have requests signed")
	}
	if err := text("name", a.Name, maxActionName); err != nil {
		return err
	}
	if err := text("description", a.Description, maxDescription); err != nil {
		return err
	}
	if !slices.Contains(actionMethods, a.HTTPMethod) {
		return domain.Errorf(domain.Invalid, "http_method must be one of %s", strings.Join(actionMethods, ", "))
	}
	if a.SecretKey != "" {
		key, err := base64.StdEncoding.DecodeString(a.SecretKey)
		if len(a.SecretKey) > maxSecretKeyChars || !secretKeyRE.MatchString(a.SecretKey) || err != nil {
			return domain.Errorf(domain.Invalid, "secret_key must be base64 (standard alphabet, padded), at most %d characters", maxSecretKeyChars)
		}
		if len(key) < minSecretKeyBytes {
			return domain.Errorf(domain.Invalid, "secret_key must decode to at least %d bytes", minSecretKeyBytes)
		}
	}
	if a.Certificates != "" {
		if len(a.Certificates) > maxCertificates {
			return domain.Errorf(domain.Invalid, "certificates exceeds %d bytes", maxCertificates)
		}
		if _, err := appconfig.ParseChain(a.Certificates); err != nil {
			return domain.Errorf(domain.Invalid, "certificates (the CA certificates trusted for the url): %s", err)
		}
	}
	return nil
}

// certificatesText lets an action's PEM certificates hold line breaks, the
// one exception to the API's text rule in actions.
var certificatesText = jsontext.AllowTabNewline("certificates")

func text(field, s string, max int) error {
	if err := jsontext.CheckText(field, s); err != nil {
		return err
	}
	if utf8.RuneCountInString(s) > max {
		return domain.Errorf(domain.Invalid, "%s must be valid UTF-8 of at most %d characters", field, max)
	}
	return nil
}

// actionIDs reads the application and the action of an action's path; an
// action id that no action may have is a 404 like any missing action.
func actionIDs(r *http.Request) (app, id string, err error) {
	if app, err = appID(r); err != nil {
		return "", "", err
	}
	id = r.PathValue("action_id")
	if !tasks.ValidActionID(id) {
		return "", "", domain.Errorf(domain.NotFound, "no action %q in application %s", id, app)
	}
	return app, id, nil
}

func (h *handler) listActions(r *http.Request, p caller.Principal) (int, any, error) {
	app, err := appID(r)
	if err != nil {
		return 0, nil, err
	}
	page, err := apigw.ParsePage(r.URL.Query(), "id", "name", "created")
	if err != nil {
		return 0, nil, err
	}
	list, err := apigw.List(r, page, apigw.Lister[domain.Action, Action]{
		Name: "actions", Indexed: "id", ValidPosition: tasks.ValidActionID,
		Read: func(ctx context.Context, after string, desc bool, n int) ([]domain.Action, []string, bool, error) {
			return h.st.Applications.PageActions(ctx, app, after, desc, n)
		},
		Allow: inApp[domain.Action](h, p, app),
		Out:   func(a domain.Action) (Action, error) { return actionOut(a), nil },
		Sort:  sortActions,
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

// inApp is the filter of a collection of application app: every member,
// once the application is found in the caller's account (a 404
// otherwise); the route decided who may read the collection.
func inApp[T any](h *handler, p caller.Principal, app string) func(ctx context.Context) (func(T) (bool, error), error) {
	return func(ctx context.Context) (func(T) (bool, error), error) {
		if err := h.st.Applications.ApplicationInAccount(ctx, p.AccountID, app); err != nil {
			return nil, domain.IfNotFound(err, "no application %q", app)
		}
		return apigw.AllowAll[T](ctx)
	}
}

func sortActions(as []Action, order []apigw.OrderKey) {
	apigw.Sort(as, order, func(a Action, field string) any {
		switch field {
		case "id":
			return a.ID
		case "name":
			return a.Name
		}
		return a.Created
	}, func(a Action) string { return a.ID })
}

func (h *handler) createAction(r *http.Request, p caller.Principal) (int, any, error) {
	app, err := appID(r)
	if err != nil {
		return 0, nil, err
	}
	var in actionPost
	if err := apigw.DecodeJSON(r, &in, certificatesText); err != nil {
		return 0, nil, err
	}
	if in.ID == nil {
		return 0, nil, domain.Errorf(domain.Invalid, "id is required: a lower-case name for the action, like purge-cache")
	}
	if !tasks.ValidActionID(*in.ID) {
		return 0, nil, domain.Errorf(domain.Invalid, "id %q must start with a letter, use a-z, 0-9 and -, not end with -, and have 2 to 63 characters", *in.ID)
	}
	now := h.st.Now()
	a := domain.Action{App: app, ID: *in.ID, Version: 1, Created: now, Updated: now}
	if err := in.actionFields.apply(&a); err != nil {
		return 0, nil, err
	}
	if err := h.st.Applications.CreateAction(r.Context(), p.AccountID, a); err != nil {
		return 0, nil, domain.IfNotFound(err, "no application %q", app)
	}
	return http.StatusOK, actionTagged(a), nil
}

// actionTagged is an action's body with its ETag.
func actionTagged(a domain.Action) *apigw.Tagged {
	return apigw.WithETag(actionOut(a), etag.Of("action", a.App+"/"+a.ID, a.Version))
}

func (h *handler) getAction(r *http.Request, p caller.Principal) (int, any, error) {
	app, id, err := actionIDs(r)
	if err != nil {
		return 0, nil, err
	}
	a, err := h.st.Applications.GetAction(r.Context(), p.AccountID, app, id)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no action %q in application %s", id, app)
	}
	return http.StatusOK, actionTagged(a), nil
}

// patchAction is PATCH with a merge patch of the writable fields; null
// resets a field (secret_key and certificates are removed, http_method
// goes back to POST).
func (h *handler) patchAction(r *http.Request, p caller.Principal) (int, any, error) {
	app, id, err := actionIDs(r)
	if err != nil {
		return 0, nil, err
	}
	body, err := patch.Read(apigw.ReadJSON(r, certificatesText, patch.MediaJSON, patch.MediaMergePatch))
	if err != nil {
		return 0, nil, err
	}
	var next domain.Action
	read := func(ctx context.Context) (domain.Action, error) {
		cur, err := h.st.Applications.GetAction(ctx, p.AccountID, app, id)
		return cur, domain.IfNotFound(err, "no action %q in application %s", id, app)
	}
	tag := func(a domain.Action) string { return actionTagged(a).ETag }
	err = store.Edit(r.Context(), apigw.IfMatch(r), read, tag, func(ctx context.Context, cur domain.Action) (err error) {
		if next, err = patchAction(cur, maps.Clone(body.Fields())); err != nil {
			return err
		}
		next.Version, next.Updated = cur.Version+1, h.st.Now()
		return domain.IfNotFound(h.st.Applications.ReplaceAction(ctx, p.AccountID, next, cur.Version), "no action %q in application %s", id, app)
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, actionTagged(next), nil
}

// patchAction applies a merge patch's top-level fields (which it may
// change) to an action.
func patchAction(cur domain.Action, top map[string]json.RawMessage) (domain.Action, error) {
	shown, _ := json.Marshal(actionOut(cur))
	var ro map[string]json.RawMessage
	_ = json.Unmarshal(shown, &ro)
	for _, f := range []string{"id", "href", "created", "updated"} {
		if v, ok := top[f]; ok {
			if !sameJSON(v, ro[f]) {
				return cur, domain.Errorf(domain.Invalid, "%s is read-only", f)
			}
			delete(top, f)
		}
	}
	doc, _ := json.Marshal(actionFields{URL: &cur.URL, Name: &cur.Name, HTTPMethod: &cur.HTTPMethod, Description: &cur.Description,
		SecretKey: &cur.SecretKey, Certificates: &cur.Certificates})
	rest, _ := json.Marshal(top)
	merged, err := patch.Merge(doc, rest)
	if err != nil {
		return cur, err
	}
	var f actionFields
	if err := jsontext.UnmarshalStrict(merged, &f, certificatesText); err != nil {
		return cur, err
	}
	next := cur
	next.URL, next.Name, next.HTTPMethod, next.Description, next.SecretKey, next.Certificates = "", "", "", "", "", ""
	if err := f.apply(&next); err != nil {
		return cur, err
	}
	return next, nil
}

func (h *handler) deleteAction(r *http.Request, p caller.Principal) (int, any, error) {
	app, id, err := actionIDs(r)
	if err != nil {
		return 0, nil, err
	}
	var cur domain.Action
	read := func(ctx context.Context) (domain.Action, error) {
		a, err := h.st.Applications.GetAction(ctx, p.AccountID, app, id)
		return a, domain.IfNotFound(err, "no action %q in application %s", id, app)
	}
	tag := func(a domain.Action) string { return actionTagged(a).ETag }
	err = store.Edit(r.Context(), apigw.IfMatch(r), read, tag, func(ctx context.Context, got domain.Action) error {
		cur = got
		return domain.IfNotFound(h.st.Applications.DeleteAction(ctx, p.AccountID, app, id, cur.Version), "no action %q in application %s", id, app)
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, actionOut(cur), nil
}
