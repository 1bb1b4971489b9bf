package users

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/jsontext"
	"cads/shared/routes"
	"cads/shared/store"
)

// Store is what the users function reads and writes.
type Store struct {
	Now        func() time.Time
	Principals interface {
		CreatePrincipal(ctx context.Context, p domain.Principal) error
		GetPrincipal(ctx context.Context, id string) (domain.Principal, error)
		PageUsers(ctx context.Context, after string, desc bool, n int) ([]domain.Principal, []string, bool, error)
		UpdatePrincipal(ctx context.Context, id string, c store.PrincipalChange, versions ...int) (domain.Principal, error)
		CreateUserKey(ctx context.Context, k domain.AccessKey, q domain.Quota) error
		GetKey(ctx context.Context, principal, id string) (domain.AccessKey, error)
		ListKeys(ctx context.Context, principal string) ([]domain.AccessKey, error)
		PageKeys(ctx context.Context, principal, after string, desc bool, n int) ([]domain.AccessKey, []string, bool, error)
		DeleteKey(ctx context.Context, principal, id string, pre ...func(domain.AccessKey) error) (domain.AccessKey, error)
	}
	Entitlements interface {
		KeyQuota(ctx context.Context, durability string) (domain.Quota, error)
	}
	Accounts interface {
		GetAccount(ctx context.Context, id string) (domain.Account, error)
	}
}

// NewStore is a Store over the table's repositories.
func NewStore(st *store.Store) Store {
	return Store{Now: st.Now, Principals: st.Principals, Entitlements: st.Entitlements, Accounts: st.Accounts}
}

// Deciders makes second decisions with the authorizer's engine.
type Deciders interface {
	Decider(ctx context.Context, p caller.Principal) (*access.Decider, error)
}

// SessionKeyLifetime bounds keys made by POST /v2/users/self/authorization.
const SessionKeyLifetime = 12 * time.Hour

// Limits of user fields.
const (
	maxNameLen  = 100
	maxEmailLen = 254
	maxPhoneLen = 32
)

type handler struct {
	st  Store
	dec Deciders
	log *slog.Logger
}

// New returns the users function's HTTP handler.
func New(st Store, dec Deciders, log *slog.Logger) *apigw.Router {
	h := &handler{st: st, dec: dec, log: log}
	mux := apigw.NewRouter(routes.Users)
	mux.HandleFunc("getUsers", h.wrap(h.listUsers))
	mux.HandleFunc("postUsers", h.wrap(h.createUser))
	mux.HandleFunc("getUsersById", h.wrap(h.getUser))
	mux.HandleFunc("patchUsersById", h.wrap(h.patchUser))
	mux.HandleFunc("getUsersByIdAccessKeys", h.wrap(h.listKeys))
	mux.HandleFunc("postUsersByIdAccessKeys", h.wrap(h.createKey))
	mux.HandleFunc("getUsersByIdAccessKeysByKeyId", h.wrap(h.getKey))
	mux.HandleFunc("deleteUsersByIdAccessKeysByKeyId", h.wrap(h.deleteKey))
	// {id} is "self" or the caller's own id (docs/api.md#self-service);
	// the contract states the self form apart.
	mux.HandleFunc("getUsersSelfAuthorization", asSelf(h.wrap(h.getAuthorization)))
	mux.HandleFunc("postUsersSelfAuthorization", asSelf(h.wrap(h.switchAccount)))
	mux.HandleFunc("getUsersAuthorization", h.wrap(h.getAuthorization))
	mux.HandleFunc("postUsersAuthorization", h.wrap(h.switchAccount))
	return mux
}

type endpoint = apigw.Endpoint

// asSelf serves a self form of the contract (/v2/users/self/...), whose
// path has no {id}, as its {id} form with id "self".
func asSelf(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.SetPathValue("id", "self")
		h(w, r)
	}
}

func (h *handler) wrap(e endpoint) http.HandlerFunc { return apigw.Handle(h.log, e) }

// userID resolves {id}: "self" and the caller's own id are the same user.
func userID(r *http.Request, p caller.Principal) (string, error) {
	id := r.PathValue("id")
	if id == "self" {
		return p.ID, nil
	}
	if !ids.Valid(id) {
		return "", domain.Errorf(domain.NotFound, "no user %q", id)
	}
	return id, nil
}

// ownID checks that {id} names the caller: an authorization is the
// caller's own key, so no other user has one to read or switch with. The
// answer is the same whether that other user exists or not.
func ownID(r *http.Request, p caller.Principal) error {
	if id := r.PathValue("id"); id != "self" && id != p.ID {
		return domain.Errorf(domain.NotFound, "no authorization at %s: it is the caller's own; use /v2/users/self/authorization", domain.Clip(r.URL.Path, 120))
	}
	return nil
}

// ---------------------------------------------------------------- users

type userPost struct {
	Email *string `json:"email"`
	Name  *string `json:"name"`
}

func (h *handler) createUser(r *http.Request, _ caller.Principal) (int, any, error) {
	var in userPost
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Email == nil {
		return 0, nil, domain.Errorf(domain.Invalid, "email is required")
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
	u := domain.Principal{ID: ids.New(), Kind: domain.KindUser, Email: email, Name: name, Created: now, Updated: now, Version: 1}
	if err := h.st.Principals.CreatePrincipal(r.Context(), u); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, userTagged(u), nil
}

func (h *handler) listUsers(r *http.Request, p caller.Principal) (int, any, error) {
	page, err := apigw.ParsePage(r.URL.Query(), "email", "name", "created")
	if err != nil {
		return 0, nil, err
	}
	list, err := apigw.List(r, page, apigw.Lister[domain.Principal, User]{
		Name: "users", Indexed: "created", Read: h.st.Principals.PageUsers, ValidPosition: store.ValidPosition,
		// A collection shows only the members the caller may GET (docs/api.md#collection-reads).
		Allow: func(ctx context.Context) (func(domain.Principal) (bool, error), error) {
			d, err := h.dec.Decider(ctx, p)
			if err != nil {
				return nil, err
			}
			return func(u domain.Principal) (bool, error) {
				if u.ID == p.ID {
					return true, nil
				}
				return d.Allows(ctx, http.MethodGet, userHref(u.ID))
			}, nil
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

func (h *handler) getUser(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := userID(r, p)
	if err != nil {
		return 0, nil, err
	}
	u, err := h.st.Principals.GetPrincipal(r.Context(), id)
	if err != nil || u.Kind != domain.KindUser {
		return 0, nil, domain.IfNotFound(orNotFound(err), "no user %q", id)
	}
	return http.StatusOK, userTagged(u), nil
}

// userTagged is a user's body with its ETag.
func userTagged(u domain.Principal) *apigw.Tagged {
	return apigw.WithETag(userOut(u), etag.Of("user", u.ID, u.Version))
}

func orNotFound(err error) error {
	if err == nil {
		return domain.ErrNotFound
	}
	return err
}

// userPatch is the reference document's UserPatch, as far as this
// service keeps it: name and phone.
type userPatch struct {
	Name  *string `json:"name"`
	Phone *string `json:"phone"`
}

func (h *handler) patchUser(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := userID(r, p)
	if err != nil {
		return 0, nil, err
	}
	var in userPatch
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Name == nil && in.Phone == nil {
		return 0, nil, domain.Errorf(domain.Invalid, "nothing to change: the body may set name and phone")
	}
	var c store.PrincipalChange
	if in.Name != nil {
		name, err := validName(*in.Name)
		if err != nil {
			return 0, nil, err
		}
		c.Name = &name
	}
	if in.Phone != nil {
		phone, err := validPhone(*in.Phone)
		if err != nil {
			return 0, nil, err
		}
		c.Phone = &phone
	}
	// One write, conditional on the versions If-Match names.
	versions, err := apigw.IfMatch(r).WriteVersions("user", id)
	if err != nil {
		return 0, nil, err
	}
	var u domain.Principal
	err = store.ReapplyIf(r.Context(), len(versions) > 0, func(ctx context.Context) (err error) {
		u, err = h.st.Principals.UpdatePrincipal(ctx, id, c, versions...)
		return err
	})
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no user %q", id)
	}
	return http.StatusOK, userTagged(u), nil
}

// phoneRE is a phone number as people write one: an optional +, then
// digits with spaces, dots, hyphens, slashes and parentheses between them.
var phoneRE = regexp.MustCompile(`^\+?[0-9()]([0-9 ().\-/]*[0-9)])?$`)

// validPhone checks a phone number; "" removes it (docs/api.md#creating-users).
func validPhone(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	if len(s) > maxPhoneLen || !phoneRE.MatchString(s) {
		return "", domain.Errorf(domain.Invalid, "phone must be a phone number of at most %d characters: an optional +, then digits, spaces, dots, hyphens, slashes or parentheses (like +1 555 010 0199), or \"\" to remove it", maxPhoneLen)
	}
	return s, nil
}

func validEmail(s string) (string, error) {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > maxEmailLen || !strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".") {
		return "", domain.Errorf(domain.Invalid, "email %q is not a valid address (like name@example.com)", s)
	}
	return strings.ToLower(s), nil
}

// validName checks a user's name. A name, when given, has a visible
// character: a user without one has no name member at all, so "" cannot
// stand for it (docs/api.md#creating-users).
func validName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", domain.Errorf(domain.Invalid, "name must not be empty or white space: a user without a name has no name member (leave name out when creating one)")
	}
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxNameLen {
		return "", domain.Errorf(domain.Invalid, "name must be valid UTF-8 of at most %d characters", maxNameLen)
	}
	for _, c := range s {
		if jsontext.IsControl(c) {
			return "", domain.Errorf(domain.Invalid, "name must not contain control characters")
		}
	}
	return s, nil
}

func isNotFound(err error) bool { return errors.Is(err, domain.ErrNotFound) }
