// Package addresssetsapi is the address-sets function's HTTP handler: it
// reads the requests, calls package addresssets (the sets' rules, which
// the aggregator's queue worker runs too, without the HTTP layer) and
// renders the answers with their ETags.
package addresssetsapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"cads/shared/access"
	"cads/shared/addresssets"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/jsontext"
	"cads/shared/patch"
	"cads/shared/routes"
	"cads/shared/store"
)

// Deciders makes second decisions with the authorizer's engine (a listing
// shows only what the caller may GET: docs/api.md#collection-reads).
type Deciders interface {
	Decider(ctx context.Context, p caller.Principal) (*access.Decider, error)
}

type handler struct {
	svc *addresssets.Service
	st  addresssets.Store
	dec Deciders
	log *slog.Logger
}

// New returns the address-sets function's HTTP handler.
func New(svc *addresssets.Service, st addresssets.Store, dec Deciders, log *slog.Logger) *apigw.Router {
	h := &handler{svc: svc, st: st, dec: dec, log: log}
	mux := apigw.NewRouter(routes.AddressSets)
	mux.HandleFunc("getAddressSets", h.wrap(h.list))
	mux.HandleFunc("postAddressSets", h.wrap(h.create))
	mux.HandleFunc("getAddressSetsById", h.wrap(h.get))
	mux.HandleFunc("patchAddressSetsById", h.wrap(h.patch))
	mux.HandleFunc("deleteAddressSetsById", h.wrap(h.delete))
	mux.HandleFunc("getAddressSetsByIdAddresses", h.wrap(h.addresses))
	return mux
}

type endpoint = apigw.Endpoint

func (h *handler) wrap(e endpoint) http.HandlerFunc { return apigw.HandleInAccount(h.log, e) }

// tagged is a set's body (with its entries) and its ETag.
func tagged(st store.AddressSetState, now time.Time) *apigw.Tagged {
	return apigw.WithETag(addresssets.SetOut(st, now, true), addresssets.ETag(st, now))
}

// setID is the path's {id}; one that cannot be an id is a 404 like any
// other missing set.
func setID(r *http.Request) (string, error) { return apigw.PathID(r, "id", "address set") }

// list is GET /v2/address-sets: the account's sets the caller may GET,
// paged in the store in creation order (apigw.List).
func (h *handler) list(r *http.Request, p caller.Principal) (int, any, error) {
	page, err := apigw.ParsePage(r.URL.Query(), "name", "type", "created", "updated")
	if err != nil {
		return 0, nil, err
	}
	now := h.st.Now()
	list, err := apigw.List(r, page, apigw.Lister[domain.AddressSet, addresssets.AddressSet]{
		Name: "address-sets", Indexed: "created", ValidPosition: store.ValidPosition,
		Read: func(ctx context.Context, after string, desc bool, n int) ([]domain.AddressSet, []string, bool, error) {
			return h.st.AddressSets.PageAddressSets(ctx, p.AccountID, after, desc, n)
		},
		// Only what the caller may GET (docs/api.md#collection-reads).
		Allow: func(ctx context.Context) (func(domain.AddressSet) (bool, error), error) {
			d, err := h.dec.Decider(ctx, p)
			if err != nil {
				return nil, err
			}
			return func(s domain.AddressSet) (bool, error) { return d.Allows(ctx, http.MethodGet, addresssets.Href(s.ID)) }, nil
		},
		Out: func(s domain.AddressSet) (addresssets.AddressSet, error) {
			return addresssets.SetOut(store.AddressSetState{Set: s}, now, false), nil
		},
		Sort: sortSets,
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

func sortSets(s []addresssets.AddressSet, order []apigw.OrderKey) {
	apigw.Sort(s, order, func(a addresssets.AddressSet, field string) any {
		switch field {
		case "name":
			return a.Name
		case "type":
			return a.Type
		case "updated":
			return a.Updated
		}
		return a.Created
	}, func(a addresssets.AddressSet) string { return a.ID }, apigw.OrderKey{Field: "created"})
}

func (h *handler) create(r *http.Request, p caller.Principal) (int, any, error) {
	var in addresssets.SetIn
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	st, err := h.svc.Create(r.Context(), p.AccountID, addresssets.ActorOf(p), in)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, tagged(st, h.st.Now()), nil
}

func (h *handler) get(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := setID(r)
	if err != nil {
		return 0, nil, err
	}
	st, err := h.svc.Get(r.Context(), p.AccountID, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, tagged(st, h.st.Now()), nil
}

func (h *handler) delete(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := setID(r)
	if err != nil {
		return 0, nil, err
	}
	st, err := h.svc.Remove(r.Context(), p.AccountID, id, apigw.IfMatch(r))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, addresssets.SetOut(st, h.st.Now(), true), nil
}

func (h *handler) addresses(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := setID(r)
	if err != nil {
		return 0, nil, err
	}
	page, err := apigw.ParsePage(r.URL.Query())
	if err != nil {
		return 0, nil, err
	}
	// The union of up to MaxReachable sets, each address once, paged in
	// the store like every collection: a merge of the sets' entries in
	// address order (addresssets.Union). Expired entries are examined and
	// passed over, within the read budget.
	u := addresssets.NewUnion(h.st, p.AccountID, id, h.st.Now(),
		func(ctx context.Context) (func(string) (bool, error), error) {
			d, err := h.dec.Decider(ctx, p)
			if err != nil {
				return nil, err
			}
			return func(set string) (bool, error) { return d.Allows(ctx, http.MethodGet, addresssets.Href(set)) }, nil
		})
	list, err := apigw.List(r, page, apigw.Lister[addresssets.Member, addresssets.Entry]{
		Name: "addresses", Indexed: "address", ValidPosition: store.ValidAddressPosition,
		Read: u.Read,
		Allow: func(context.Context) (func(addresssets.Member) (bool, error), error) {
			return func(m addresssets.Member) (bool, error) { return m.Live(), nil }, nil
		},
		Out: func(m addresssets.Member) (addresssets.Entry, error) { return m.Out(), nil },
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

func (h *handler) patch(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := setID(r)
	if err != nil {
		return 0, nil, err
	}
	// A merge patch (also under its own name) or a JSON Patch (docs/api.md#patch-bodies),
	// checked before the set is read, so a malformed patch is a 400
	// whether or not the set exists.
	body, err := patch.Read(apigw.ReadJSON(r, jsontext.TextOption{}, patch.MediaJSON, patch.MediaMergePatch, patch.MediaJSONPatch))
	if err != nil {
		return 0, nil, err
	}
	st, err := h.svc.Replace(r.Context(), p.AccountID, id, addresssets.ActorOf(p), apigw.IfMatch(r), func(doc addresssets.Document) (addresssets.SetIn, error) {
		cur, err := json.Marshal(doc)
		if err != nil {
			return addresssets.SetIn{}, err
		}
		out, err := body.Apply(cur)
		if err != nil {
			return addresssets.SetIn{}, err
		}
		var in addresssets.SetIn
		if err := apigw.UnmarshalPatched(out, &in, "address set"); err != nil {
			return addresssets.SetIn{}, err
		}
		return in, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, tagged(st, h.st.Now()), nil
}
