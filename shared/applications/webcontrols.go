package applications

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/store"
	"cads/shared/tasks"
)

// Web controls are the reference document's read-only view of what an
// application's edge applies to its requests. Here that is exactly the
// stored page controls: GET /v2/applications/{id}/webcontrols[/{webcontrol_id}]
// shows them with the same ids, versions and history, conditions written
// as a list of typed conditions (each key of a page control's conditions
// object becomes {"type": key, ...its fields}), in id order, the order in
// which controls are applied (docs/tasks.md, Web controls). Nothing else
// backs them, so the two views cannot disagree.

// WebControl is the wire shape of a web control. Fields are dropped or
// added by the attributes parameter (webControlAttrs), so it is written as
// an ordered object.
type WebControl struct {
	ID          string          `json:"id"`
	Href        string          `json:"href"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Mode        string          `json:"mode,omitempty"`
	Enabled     bool            `json:"enabled"`
	Conditions  json.RawMessage `json:"conditions"`
	Actions     json.RawMessage `json:"actions"`
	Version     int             `json:"version"`
	Created     time.Time       `json:"created"`
	History     []WebControl    `json:"history,omitempty"`
}

func webControlHref(app string, id int) string {
	return tasks.AppHref(app) + "/webcontrols/" + strconv.Itoa(id)
}

func webControlOne(pc domain.PageControl) (WebControl, error) {
	conds, err := conditionList(pc.Conditions)
	if err != nil {
		return WebControl{}, fmt.Errorf("page control %d of %s: %w", pc.ID, pc.App, err)
	}
	out := WebControl{ID: strconv.Itoa(pc.ID), Href: webControlHref(pc.App, pc.ID), Name: pc.Name, Description: pc.Description,
		Mode: pc.Mode, Enabled: pc.Enabled, Conditions: conds, Actions: json.RawMessage(pc.Actions), Version: pc.Version, Created: pc.Created}
	if len(out.Actions) == 0 {
		out.Actions = json.RawMessage("[]")
	}
	return out, nil
}

func webControlOut(v domain.PageControlVersions, history bool) (WebControl, error) {
	out, err := webControlOne(v.Current)
	if err != nil || !history {
		return out, err
	}
	out.History = make([]WebControl, 0, len(v.History))
	for _, h := range v.History {
		w, err := webControlOne(h)
		if err != nil {
			return out, err
		}
		out.History = append(out.History, w)
	}
	return out, nil
}

// conditionList turns a stored conditions object into the list form,
// keeping the order of its keys. The object was validated against the
// page control schema, where every condition is an object.
func conditionList(obj string) (json.RawMessage, error) {
	if obj == "" {
		return json.RawMessage("[]"), nil
	}
	d := json.NewDecoder(strings.NewReader(obj))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("conditions are not an object")
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for n := 0; d.More(); n++ {
		t, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("conditions: %w", err)
		}
		typ, _ := t.(string)
		var fields map[string]json.RawMessage
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return nil, fmt.Errorf("conditions: %w", err)
		}
		if json.Unmarshal(raw, &fields) != nil || fields == nil {
			// Not an object: kept whole under value rather than lost.
			fields = map[string]json.RawMessage{"value": raw}
		}
		typJSON, _ := json.Marshal(typ)
		fields["type"] = typJSON
		// Ordered: type first, then the condition's fields by name.
		keys := make([]string, 0, len(fields))
		for k := range fields {
			if k != "type" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":`)
		b.Write(typJSON)
		for _, k := range keys {
			kj, _ := json.Marshal(k)
			b.WriteByte(',')
			b.Write(kj)
			b.WriteByte(':')
			b.Write(fields[k])
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	var out bytes.Buffer
	if err := json.Compact(&out, b.Bytes()); err != nil {
		return nil, fmt.Errorf("conditions: %w", err)
	}
	return out.Bytes(), nil
}

// webControlFields are the attribute names of a web control; history is
// the one left out of the default set.
var webControlFields = []string{"id", "href", "name", "description", "mode", "enabled", "conditions", "actions", "version", "created", "history"}

var attrsRE = regexp.MustCompile(`^([-+][a-z0-9_]+)(,[-+][a-z0-9_]+)*$`)

// webControlAttrs is the attributes parameter: "+name" adds an attribute
// to the default set (all but history), "-name" removes one.
type webControlAttrs map[string]bool

func parseWebControlAttrs(q string) (webControlAttrs, error) {
	a := webControlAttrs{}
	for _, f := range webControlFields {
		a[f] = f != "history"
	}
	if q == "" {
		return a, nil
	}
	if len(q) > 1000 || !attrsRE.MatchString(q) {
		return nil, domain.Errorf(domain.Invalid, "attributes: a comma-separated list of +name or -name (adds to or removes from the default attributes), e.g. +history,-actions")
	}
	for _, part := range strings.Split(q, ",") {
		name := part[1:]
		if _, ok := a[name]; !ok {
			return nil, domain.Errorf(domain.Invalid, "attributes: a web control has no attribute %q; the attributes are %s", name, strings.Join(webControlFields, ", "))
		}
		a[name] = part[0] == '+'
	}
	return a, nil
}

// shape writes w with the selected attributes only, in their usual order.
func (a webControlAttrs) shape(w WebControl) (json.RawMessage, error) {
	full, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(full, &m); err != nil {
		return nil, err
	}
	if a["history"] && m["history"] == nil {
		m["history"] = json.RawMessage("[]")
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, f := range webControlFields {
		v, ok := m[f]
		if !a[f] || !ok {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		kj, _ := json.Marshal(f)
		b.Write(kj)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// webControlFilter checks the filter parameter: only the empty filter
// exists, which asks for deleted controls too. A deleted page control is
// removed with its history, so there are none to add: the answer is the
// same as without it.
func webControlFilter(q map[string][]string) error {
	if v, ok := q["filter"]; ok && (len(v) != 1 || v[0] != "") {
		return domain.Errorf(domain.Invalid, "filter: only the empty filter (filter=) is accepted, which asks for every web control; deleted page controls are not kept, so every web control is listed either way")
	}
	return nil
}

// listWebControls is GET /v2/applications/{id}/webcontrols: the
// application's page controls in id order, paged in the store
// (apigw.List), only those the caller may GET.
func (h *handler) listWebControls(r *http.Request, p caller.Principal) (int, any, error) {
	app, err := appID(r)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	if err := webControlFilter(q); err != nil {
		return 0, nil, err
	}
	attrs, err := parseWebControlAttrs(q.Get("attributes"))
	if err != nil {
		return 0, nil, err
	}
	page, err := apigw.ParsePage(q, "id")
	if err != nil {
		return 0, nil, err
	}
	list, err := apigw.List(r, page, apigw.Lister[domain.PageControlVersions, json.RawMessage]{
		Name: "webcontrols", Indexed: "id", ValidPosition: store.ValidPageControlPosition,
		Read: func(ctx context.Context, after string, desc bool, n int) ([]domain.PageControlVersions, []string, bool, error) {
			vs, pos, more, err := h.st.Applications.PagePageControls(ctx, p.AccountID, app, after, desc, n, attrs["history"])
			return vs, pos, more, domain.IfNotFound(err, "no application %q", app)
		},
		// Only what the caller may GET (docs/api.md#collection-reads).
		Allow: func(ctx context.Context) (func(domain.PageControlVersions) (bool, error), error) {
			d, err := h.dec.Decider(ctx, p)
			if err != nil {
				return nil, err
			}
			// A member without a current version is history an interrupted
			// delete left (store.PagePageControls): passed over.
			return func(v domain.PageControlVersions) (bool, error) {
				if v.Current.ID == 0 {
					return false, nil
				}
				return d.Allows(ctx, http.MethodGet, webControlHref(app, v.Current.ID))
			}, nil
		},
		Out: func(v domain.PageControlVersions) (json.RawMessage, error) {
			w, err := webControlOut(v, attrs["history"])
			if err != nil {
				return nil, err
			}
			return attrs.shape(w)
		},
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

// getWebControl is GET /v2/applications/{id}/webcontrols/{webcontrol_id}.
func (h *handler) getWebControl(r *http.Request, p caller.Principal) (int, any, error) {
	app, id, err := controlIDs(r, "webcontrol_id", "web control")
	if err != nil {
		return 0, nil, err
	}
	attrs, err := parseWebControlAttrs(r.URL.Query().Get("attributes"))
	if err != nil {
		return 0, nil, err
	}
	v, err := h.st.Applications.GetPageControl(r.Context(), p.AccountID, app, id)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no web control %d in application %s", id, app)
	}
	w, err := webControlOut(v, attrs["history"])
	if err != nil {
		return 0, nil, err
	}
	out, err := attrs.shape(w)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}
