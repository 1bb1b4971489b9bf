package identity

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/store"
)

// Store is what the users function reads and writes.
type Store interface {
	Now() time.Time
	CreatePrincipal(ctx context.Context, p domain.Principal) error
	GetPrincipal(ctx context.Context, id string) (domain.Principal, error)
	PageUsers(ctx context.Context, after string, desc bool, n int) ([]domain.Principal, []string, bool, error)
	UpdatePrincipalName(ctx context.Context, id, name string) (domain.Principal, error)
	CreateUserKey(ctx context.Context, k domain.AccessKey) error
	GetKey(ctx context.Context, principal, id string) (domain.AccessKey, error)
	ListKeys(ctx context.Context, principal string) ([]domain.AccessKey, error)
	PageKeys(ctx context.Context, principal, after string, desc bool, n int) ([]domain.AccessKey, []string, bool, error)
	DeleteKey(ctx context.Context, principal, id string) (domain.AccessKey, error)
	GetAccount(ctx context.Context, id string) (domain.Account, error)
}

// Deciders makes second decisions with the authorizer's engine.
type Deciders interface {
	Decider(ctx context.Context, p apigw.Principal) (*access.Decider, error)
}

// SessionKeyLifetime bounds keys made by POST /v2/users/self/authorization.
const SessionKeyLifetime = 12 * time.Hour

// Limits of user fields.
const (
	maxNameLen  = 100
	maxEmailLen = 254
)

type handler struct {
	st  Store
	dec Deciders
	log *slog.Logger
}

// New returns the users function's HTTP handler.
func New(st Store, dec Deciders, log *slog.Logger) http.Handler {
	h := &handler{st: st, dec: dec, log: log}
	mux := apigw.NewMux()
	mux.HandleFunc("GET /v2/users", h.wrap(h.listUsers))
	mux.HandleFunc("POST /v2/users", h.wrap(h.createUser))
	mux.HandleFunc("GET /v2/users/{id}", h.wrap(h.getUser))
	mux.HandleFunc("PATCH /v2/users/{id}", h.wrap(h.patchUser))
	mux.HandleFunc("GET /v2/users/{id}/access-keys", h.wrap(h.listKeys))
	mux.HandleFunc("POST /v2/users/{id}/access-keys", h.wrap(h.createKey))
	mux.HandleFunc("GET /v2/users/{id}/access-keys/{key_id}", h.wrap(h.getKey))
	mux.HandleFunc("DELETE /v2/users/{id}/access-keys/{key_id}", h.wrap(h.deleteKey))
	mux.HandleFunc("GET /v2/users/self/authorization", h.wrap(h.getAuthorization))
	mux.HandleFunc("POST /v2/users/self/authorization", h.wrap(h.switchAccount))
	return mux
}

type endpoint = apigw.Endpoint

func (h *handler) wrap(e endpoint) http.HandlerFunc { return apigw.Handle(h.log, e) }

// userID resolves {id}: "self" and the caller's own id are the same user.
func userID(r *http.Request, p apigw.Principal) (string, error) {
	id := r.PathValue("id")
	if id == "self" {
		return p.ID, nil
	}
	if !ids.Valid(id) {
		return "", apigw.NotFound("no user %q", id)
	}
	return id, nil
}

// ---------------------------------------------------------------- users

type userPost struct {
	Email *string `json:"email"`
	Name  *string `json:"name"`
}

func (h *handler) createUser(r *http.Request, _ apigw.Principal) (int, any, error) {
	var in userPost
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Email == nil {
		return 0, nil, apigw.BadRequest("email is required")
	}
	email, err := validEmail(*in.Email)
	if err != nil {
		return 0, nil, err
	}
	name := ""
	if in.Name != nil {
		if name, err = validName(*in.Name); err != nil {
			return 0, nil, err
		}
	}
	now := h.st.Now()
	u := domain.Principal{ID: ids.New(), Kind: domain.KindUser, Email: email, Name: name, Created: now, Updated: now}
	if err := h.st.CreatePrincipal(r.Context(), u); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, userOut(u), nil
}

func (h *handler) listUsers(r *http.Request, p apigw.Principal) (int, any, error) {
	page, err := apigw.ParsePage(r.URL.Query(), "email", "name", "created")
	if err != nil {
		return 0, nil, err
	}
	list, err := apigw.List(r, page, apigw.Lister[domain.Principal, User]{
		Name: "users", Indexed: "created", Read: h.st.PageUsers, ValidPosition: store.ValidPosition,
		// A collection shows only the members the caller may GET (docs/api.md#collection-reads).
		Allow: func(ctx context.Context) (func(domain.Principal) bool, error) {
			d, err := h.dec.Decider(ctx, p)
			if err != nil {
				return nil, err
			}
			return func(u domain.Principal) bool { return u.ID == p.ID || d.Allows(http.MethodGet, userHref(u.ID)) }, nil
		},
		Out:  func(u domain.Principal) (User, error) { return userOut(u), nil },
		Sort: sortUsers,
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

func sortUsers(us []User, order []apigw.OrderKey) {
	apigw.Sort(us, order, func(u User, field string) any {
		switch field {
		case "email":
			return u.Email
		case "name":
			return u.Name
		}
		return u.Created
	}, func(u User) string { return u.ID }, apigw.OrderKey{Field: "created"})
}

func (h *handler) getUser(r *http.Request, p apigw.Principal) (int, any, error) {
	id, err := userID(r, p)
	if err != nil {
		return 0, nil, err
	}
	u, err := h.st.GetPrincipal(r.Context(), id)
	if err != nil || u.Kind != domain.KindUser {
		return 0, nil, domain.IfNotFound(orNotFound(err), "no user %q", id)
	}
	return http.StatusOK, userOut(u), nil
}

func orNotFound(err error) error {
	if err == nil {
		return domain.ErrNotFound
	}
	return err
}

type userPatch struct {
	Name *string `json:"name"`
}

func (h *handler) patchUser(r *http.Request, p apigw.Principal) (int, any, error) {
	id, err := userID(r, p)
	if err != nil {
		return 0, nil, err
	}
	var in userPatch
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Name == nil {
		return 0, nil, apigw.BadRequest("nothing to change: the body may set name")
	}
	name, err := validName(*in.Name)
	if err != nil {
		return 0, nil, err
	}
	u, err := h.st.UpdatePrincipalName(r.Context(), id, name)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no user %q", id)
	}
	return http.StatusOK, userOut(u), nil
}

func validEmail(s string) (string, error) {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > maxEmailLen || !strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".") && !strings.HasSuffix(s, "@localhost") {
		return "", apigw.BadRequest("email %q is not a valid address (like name@example.com)", s)
	}
	return strings.ToLower(s), nil
}

func validName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxNameLen {
		return "", apigw.BadRequest("name must be valid UTF-8 of at most %d characters", maxNameLen)
	}
	for _, c := range s {
		if apigw.IsControl(c) {
			return "", apigw.BadRequest("name must not contain control characters")
		}
	}
	return s, nil
}

func isNotFound(err error) bool { return errors.Is(err, domain.ErrNotFound) }
