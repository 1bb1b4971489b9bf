package applications

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"time"

	"cads/shared/apigw"
	"cads/shared/applications/pagecontrol"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/jsontext"
	"cads/shared/patch"
	"cads/shared/store"
	"cads/shared/tasks"
)

// PageControl is the wire shape of a page control (the reference
// document's web controls): its configuration, its version (1 when
// created, one more on every change, with created the time of this
// version), the earlier versions in history, and deleted on the answer to
// a DELETE.
type PageControl struct {
	ID          string          `json:"id"`
	Href        string          `json:"href"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Mode        string          `json:"mode,omitempty"`
	Enabled     bool            `json:"enabled"`
	Conditions  json.RawMessage `json:"conditions,omitempty"`
	Actions     json.RawMessage `json:"actions"`
	Version     int             `json:"version"`
	Created     time.Time       `json:"created"`
	Deleted     *time.Time      `json:"deleted,omitempty"`
	History     *[]PageControl  `json:"history,omitempty"`
}

func pageControlHref(app string, id int) string {
	return tasks.AppHref(app) + "/pagecontrols/" + strconv.Itoa(id)
}

func pageControlOne(pc domain.PageControl) PageControl {
	out := PageControl{ID: strconv.Itoa(pc.ID), Href: pageControlHref(pc.App, pc.ID), Name: pc.Name, Description: pc.Description,
		Mode: pc.Mode, Enabled: pc.Enabled, Actions: json.RawMessage(pc.Actions), Version: pc.Version, Created: pc.Created}
	if pc.Conditions != "" {
		out.Conditions = json.RawMessage(pc.Conditions)
	}
	if len(out.Actions) == 0 {
		out.Actions = json.RawMessage("[]")
	}
	return out
}

func pageControlOut(v domain.PageControlVersions) PageControl {
	out := pageControlOne(v.Current)
	hist := make([]PageControl, 0, len(v.History))
	for _, h := range v.History {
		hist = append(hist, pageControlOne(h))
	}
	out.History = &hist
	return out
}

// pageControlFields are the writable fields.
type pageControlFields struct {
	Name        *string         `json:"name"`
	Description *string         `json:"description"`
	Mode        *string         `json:"mode"`
	Enabled     *bool           `json:"enabled"`
	Conditions  json.RawMessage `json:"conditions"`
	Actions     json.RawMessage `json:"actions"`
}

// Limits from the reference document (name 1-50, description 0-255).
const (
	maxPageControlName = 50
	maxPageControlDesc = 255
)

var pageControlModes = map[string]bool{"maintenance": true, "request": true, "response": true}

// build validates f (a whole configuration, as created or as patched)
// into the stored form.
func (f pageControlFields) build(pc *domain.PageControl) error {
	if f.Name == nil || *f.Name == "" {
		return domain.Errorf(domain.Invalid, "name is required: 1 to %d characters", maxPageControlName)
	}
	if err := text("name", *f.Name, maxPageControlName); err != nil {
		return err
	}
	pc.Name = *f.Name
	pc.Description = ""
	if f.Description != nil {
		if err := text("description", *f.Description, maxPageControlDesc); err != nil {
			return err
		}
		pc.Description = *f.Description
	}
	pc.Mode = ""
	if f.Mode != nil {
		if !pageControlModes[*f.Mode] {
			return domain.Errorf(domain.Invalid, "mode must be maintenance, request or response")
		}
		pc.Mode = *f.Mode
	}
	// A control is enabled unless it says otherwise.
	pc.Enabled = f.Enabled == nil || *f.Enabled
	pc.Conditions = ""
	if !isNull(f.Conditions) {
		if err := pagecontrol.ValidateConditions(f.Conditions); err != nil {
			return domain.Errorf(domain.Invalid, "%s", err)
		}
		pc.Conditions = compact(f.Conditions)
		if pc.Conditions == "{}" {
			pc.Conditions = ""
		}
	}
	if isNull(f.Actions) {
		return domain.Errorf(domain.Invalid, "actions is required: the actions applied when the control triggers (may be [])")
	}
	if err := pagecontrol.ValidateActions(f.Actions); err != nil {
		return domain.Errorf(domain.Invalid, "%s", err)
	}
	pc.Actions = compact(f.Actions)
	return nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// controlIDs reads the application and the control number of a page
// control's path (param: pagecontrol_id or webcontrol_id, what names the
// view in a 404): a number this service could not have made is a 404 like
// any missing control.
func controlIDs(r *http.Request, param, what string) (app string, id int, err error) {
	if app, err = appID(r); err != nil {
		return "", 0, err
	}
	s := r.PathValue(param)
	id, err = strconv.Atoi(s)
	if err != nil || id < 1 || strconv.Itoa(id) != s || len(s) > 10 {
		return "", 0, domain.Errorf(domain.NotFound, "no %s %q in application %s", what, s, app)
	}
	return app, id, nil
}

func (h *handler) listPageControls(r *http.Request, p caller.Principal) (int, any, error) {
	app, err := appID(r)
	if err != nil {
		return 0, nil, err
	}
	page, err := apigw.ParsePage(r.URL.Query())
	if err != nil {
		return 0, nil, err
	}
	list, err := apigw.List(r, page, apigw.Lister[domain.PageControlVersions, PageControl]{
		Name: "pagecontrols", Indexed: "id", ValidPosition: store.ValidPageControlPosition,
		Read: func(ctx context.Context, after string, desc bool, n int) ([]domain.PageControlVersions, []string, bool, error) {
			return h.st.Applications.PagePageControls(ctx, p.AccountID, app, after, desc, n, true)
		},
		// The store checks the application's account with the read; what
		// it returns without a current version is history an interrupted
		// delete left, passed over.
		Allow: func(context.Context) (func(domain.PageControlVersions) (bool, error), error) {
			return func(v domain.PageControlVersions) (bool, error) { return v.Current.ID != 0, nil }, nil
		},
		Out: func(v domain.PageControlVersions) (PageControl, error) { return pageControlOut(v), nil },
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

func (h *handler) createPageControl(r *http.Request, p caller.Principal) (int, any, error) {
	app, err := appID(r)
	if err != nil {
		return 0, nil, err
	}
	var in pageControlFields
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	pc := domain.PageControl{App: app, Version: 1}
	if err := in.build(&pc); err != nil {
		return 0, nil, err
	}
	id, err := h.st.Applications.NextPageControlID(r.Context(), p.AccountID, app)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no application %q", app)
	}
	pc.ID, pc.Created = id, h.st.Now()
	if err := h.st.Applications.CreatePageControl(r.Context(), p.AccountID, pc); err != nil {
		return 0, nil, domain.IfNotFound(err, "no application %q", app)
	}
	return http.StatusOK, pageControlTagged(domain.PageControlVersions{Current: pc}), nil
}

// pageControlTagged is a page control's body with its ETag: the body's
// history grows with the current version, so that version is enough.
func pageControlTagged(v domain.PageControlVersions) *apigw.Tagged {
	return apigw.WithETag(pageControlOut(v), pageControlETag(v.Current))
}

func pageControlETag(pc domain.PageControl) string {
	return etag.Of("pagecontrol", pc.App+"/"+strconv.Itoa(pc.ID), pc.Version)
}

func (h *handler) getPageControl(r *http.Request, p caller.Principal) (int, any, error) {
	app, id, err := controlIDs(r, "pagecontrol_id", "page control")
	if err != nil {
		return 0, nil, err
	}
	v, err := h.st.Applications.GetPageControl(r.Context(), p.AccountID, app, id)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no page control %d in application %s", id, app)
	}
	return http.StatusOK, pageControlTagged(v), nil
}

// patchPageControl applies a merge patch to the control's configuration;
// a change makes a new version and keeps the old one in history.
func (h *handler) patchPageControl(r *http.Request, p caller.Principal) (int, any, error) {
	app, id, err := controlIDs(r, "pagecontrol_id", "page control")
	if err != nil {
		return 0, nil, err
	}
	body, err := patch.Read(apigw.ReadJSON(r, jsontext.TextOption{}, patch.MediaJSON, patch.MediaMergePatch))
	if err != nil {
		return 0, nil, err
	}
	var v domain.PageControlVersions
	read := func(ctx context.Context) (domain.PageControlVersions, error) {
		cur, err := h.st.Applications.GetPageControl(ctx, p.AccountID, app, id)
		return cur, domain.IfNotFound(err, "no page control %d in application %s", id, app)
	}
	tag := func(v domain.PageControlVersions) string { return pageControlETag(v.Current) }
	err = store.Edit(r.Context(), apigw.IfMatch(r), read, tag, func(ctx context.Context, got domain.PageControlVersions) error {
		v = got
		cur := v.Current
		next, changed, err := patchPageControl(cur, maps.Clone(body.Fields()))
		if err != nil || !changed {
			return err
		}
		next.Version, next.Created = cur.Version+1, h.st.Now()
		if err := h.st.Applications.UpdatePageControl(ctx, p.AccountID, cur, next); err != nil {
			return domain.IfNotFound(err, "no page control %d in application %s", id, app)
		}
		v.History = append(v.History, cur)
		v.Current = next
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, pageControlTagged(v), nil
}

func patchPageControl(cur domain.PageControl, top map[string]json.RawMessage) (domain.PageControl, bool, error) {
	shown, _ := json.Marshal(pageControlOne(cur))
	var ro map[string]json.RawMessage
	_ = json.Unmarshal(shown, &ro)
	for _, f := range []string{"id", "href", "version", "created", "deleted", "history"} {
		if v, ok := top[f]; ok {
			if f == "history" || !sameJSON(v, ro[f]) {
				return cur, false, domain.Errorf(domain.Invalid, "%s is read-only", f)
			}
			delete(top, f)
		}
	}
	desc, mode, enabled := cur.Description, cur.Mode, cur.Enabled
	doc := pageControlFields{Name: &cur.Name, Enabled: &enabled, Actions: json.RawMessage(cur.Actions)}
	if desc != "" {
		doc.Description = &desc
	}
	if mode != "" {
		doc.Mode = &mode
	}
	if cur.Conditions != "" {
		doc.Conditions = json.RawMessage(cur.Conditions)
	}
	docJSON, _ := json.Marshal(doc)
	rest, _ := json.Marshal(top)
	merged, err := patch.Merge(docJSON, rest)
	if err != nil {
		return cur, false, err
	}
	var f pageControlFields
	if err := jsontext.UnmarshalStrict(merged, &f); err != nil {
		return cur, false, err
	}
	next := cur
	if err := f.build(&next); err != nil {
		return cur, false, err
	}
	changed := next.Name != cur.Name || next.Description != cur.Description || next.Mode != cur.Mode ||
		next.Enabled != cur.Enabled || next.Conditions != cur.Conditions || next.Actions != compact(json.RawMessage(cur.Actions))
	return next, changed, nil
}

func (h *handler) deletePageControl(r *http.Request, p caller.Principal) (int, any, error) {
	app, id, err := controlIDs(r, "pagecontrol_id", "page control")
	if err != nil {
		return 0, nil, err
	}
	var v domain.PageControlVersions
	read := func(ctx context.Context) (domain.PageControlVersions, error) {
		cur, err := h.st.Applications.GetPageControl(ctx, p.AccountID, app, id)
		return cur, domain.IfNotFound(err, "no page control %d in application %s", id, app)
	}
	tag := func(v domain.PageControlVersions) string { return pageControlETag(v.Current) }
	err = store.Edit(r.Context(), apigw.IfMatch(r), read, tag, func(ctx context.Context, got domain.PageControlVersions) error {
		v = got
		return domain.IfNotFound(h.st.Applications.DeletePageControl(ctx, p.AccountID, v), "no page control %d in application %s", id, app)
	})
	if err != nil {
		return 0, nil, err
	}
	out := pageControlOut(v)
	now := h.st.Now()
	out.Deleted = &now
	return http.StatusOK, out, nil
}
