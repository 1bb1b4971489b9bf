// Package roles serves the roles function: an account's roles, role
// invitations, groups, group invitations and service users
// (/v2/accounts/{id}/...), and the invitee's side of it (/v2/users/{id}/
// invitations, group-invitations, roles and groups). Its SQS-triggered
// companion, the notifier (notify.go), delivers queued invitations.
//
// The authorizer has already authenticated the caller and allowed the
// route with the RBAC engine. Decisions beyond the route (which members of
// a collection the caller may see, whether the caller may invite) use the
// same engine through access.Decider.
package roles

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/outbox"
	"cads/shared/routes"
	"cads/shared/store"
)

// Store is what the roles function reads and writes.
type Store struct {
	Now      func() time.Time
	Accounts interface {
		GetAccount(ctx context.Context, id string) (domain.Account, error)
	}
	Roles interface {
		GetRole(ctx context.Context, account, id string) (domain.Role, error)
		CreateRole(ctx context.Context, r domain.Role) error
		PutRole(ctx context.Context, r domain.Role) error
		DeleteRole(ctx context.Context, account, id string, pre ...func(domain.Role) error) (domain.Role, error)
		GetGroup(ctx context.Context, account, id string) (domain.Group, error)
		PageRoles(ctx context.Context, account, after string, desc bool, n int) ([]domain.Role, []string, bool, error)
		PageGroups(ctx context.Context, account, after string, desc bool, n int) ([]domain.Group, []string, bool, error)
		PageHeldRoles(ctx context.Context, principal, after string, desc bool, n int) ([]domain.Role, []string, bool, error)
		PageHeldGroups(ctx context.Context, principal, after string, desc bool, n int) ([]domain.Group, []string, bool, error)
		CreateGroup(ctx context.Context, g domain.Group) error
		PutGroup(ctx context.Context, g domain.Group) error
		DeleteGroup(ctx context.Context, account, id string, pre ...func(domain.Group) error) (domain.Group, error)
		Grants(ctx context.Context, principal string) ([]domain.Grant, error)
		DeleteGrant(ctx context.Context, g domain.Grant, via domain.InvitationRef) error
		// Who can (access.go).
		RBACPartitions(ctx context.Context, accounts []string) ([]domain.Role, []domain.Group, error)
		PageHolders(ctx context.Context, ref domain.RBACRef, group bool, after string, desc bool, n int) ([]domain.Grant, []string, bool, error)
		GetPrincipals(ctx context.Context, ids []string) ([]domain.Principal, error)
	}
	Invitations interface {
		CreateInvitation(ctx context.Context, inv domain.Invitation, m *store.OutboxMarker) error
		GetInvitation(ctx context.Context, account, kind, id string) (domain.Invitation, error)
		PageInvitations(ctx context.Context, account, kind, after string, desc bool, n int) ([]domain.Invitation, []string, bool, error)
		PageInbox(ctx context.Context, email, kind, after string, desc bool, n int) ([]domain.Invitation, []string, bool, error)
		InboxInvitation(ctx context.Context, email, kind, id string) (domain.Invitation, error)
		RequeueInvitation(ctx context.Context, inv domain.Invitation, m *store.OutboxMarker, versions ...int) (domain.Invitation, error)
		AcceptInvitation(ctx context.Context, inv domain.Invitation, principal string, versions ...int) (domain.Invitation, error)
		DeclineInvitation(ctx context.Context, inv domain.Invitation, versions ...int) (domain.Invitation, error)
		DeleteInvitation(ctx context.Context, inv domain.Invitation, versions ...int) error
	}
	Principals interface {
		GetPrincipal(ctx context.Context, id string) (domain.Principal, error)
		CreateServiceUser(ctx context.Context, u domain.ServiceUser, k domain.AccessKey) error
		GetServiceUser(ctx context.Context, account, id string) (domain.ServiceUser, error)
		PageServiceUsers(ctx context.Context, account, after string, desc bool, n int) ([]domain.ServiceUser, []string, bool, error)
		UpdateServiceUser(ctx context.Context, account, id string, name, description *string, versions ...int) (domain.ServiceUser, error)
		DeleteServiceUser(ctx context.Context, account, id string, pre ...func(domain.ServiceUser, []domain.AccessKey) error) (domain.ServiceUser, error)
		ListKeys(ctx context.Context, principal string) ([]domain.AccessKey, error)
	}
}

// NewStore is a Store over the table's repositories.
func NewStore(st *store.Store) Store {
	return Store{Now: st.Now, Accounts: st.Accounts, Roles: st.Roles, Invitations: st.Invitations, Principals: st.Principals}
}

// Deciders makes second decisions with the authorizer's engine.
type Deciders interface {
	Decider(ctx context.Context, p caller.Principal) (*access.Decider, error)
	DeciderOver(ctx context.Context, p caller.Principal, acct domain.Account, known *access.Known) (*access.Decider, error)
}

type handler struct {
	st    Store
	dec   Deciders
	queue *outbox.Queue // nil: invitations that need sending cannot be made
	log   *slog.Logger
	names builtinNames
}

// New returns the roles function's HTTP handler. queue is the outbox of
// the notification queue: an invitation to send is written with its
// marker and sent through it. Without one (nil), creating or re-sending
// an invitation that needs a notification fails with a 500 and a log line.
func New(st Store, dec Deciders, queue *outbox.Queue, log *slog.Logger) *apigw.Router {
	names, err := loadBuiltinNames()
	if err != nil {
		// The built-in roles are embedded data checked by tests: a build
		// where they do not load must not serve.
		panic(err)
	}
	h := &handler{st: st, dec: dec, queue: queue, log: log, names: names}
	mux := apigw.NewRouter(routes.Roles)
	route := func(operation string, e endpoint) { mux.HandleFunc(operation, h.wrap(e)) }

	route("getAccountsByIdRoles", h.listRoles)
	route("postAccountsByIdRoles", h.createRole)
	route("getAccountsByIdRolesByRoleId", h.getRole)
	route("patchAccountsByIdRolesByRoleId", h.patchRole)
	route("deleteAccountsByIdRolesByRoleId", h.deleteRole)

	route("getAccountsByIdInvitations", h.listInvitations(roleInvitations))
	route("postAccountsByIdInvitations", h.createInvitation(roleInvitations))
	route("getAccountsByIdInvitationsByInvitationId", h.getInvitation(roleInvitations))
	route("patchAccountsByIdInvitationsByInvitationId", h.resendInvitation(roleInvitations))
	route("deleteAccountsByIdInvitationsByInvitationId", h.deleteInvitation(roleInvitations))
	route("getUsersByIdInvitations", h.listInbox(roleInvitations))
	route("getUsersByIdInvitationsByInvitationId", h.getInbox(roleInvitations))
	route("patchUsersByIdInvitationsByInvitationId", h.answerInvitation(roleInvitations))

	route("getAccountsByIdGroupInvitations", h.listInvitations(groupInvitations))
	route("postAccountsByIdGroupInvitations", h.createInvitation(groupInvitations))
	route("getAccountsByIdGroupInvitationsByInvitationId", h.getInvitation(groupInvitations))
	route("patchAccountsByIdGroupInvitationsByInvitationId", h.resendInvitation(groupInvitations))
	route("deleteAccountsByIdGroupInvitationsByInvitationId", h.deleteInvitation(groupInvitations))
	route("getUsersByIdGroupInvitations", h.listInbox(groupInvitations))
	route("getUsersByIdGroupInvitationsByInvitationId", h.getInbox(groupInvitations))
	route("patchUsersByIdGroupInvitationsByInvitationId", h.answerInvitation(groupInvitations))

	route("getAccountsByIdGroups", h.listGroups)
	route("postAccountsByIdGroups", h.createGroup)
	route("getAccountsByIdGroupsByGroupId", h.getGroup)
	route("patchAccountsByIdGroupsByGroupId", h.patchGroup)
	route("deleteAccountsByIdGroupsByGroupId", h.deleteGroup)

	route("getAccountsByIdServiceUsers", h.listServiceUsers)
	route("postAccountsByIdServiceUsers", h.createServiceUser)
	route("getAccountsByIdServiceUsersByServiceUserId", h.getServiceUser)
	route("patchAccountsByIdServiceUsersByServiceUserId", h.patchServiceUser)
	route("deleteAccountsByIdServiceUsersByServiceUserId", h.deleteServiceUser)

	route("getAccountsByIdAccess", h.whoCan)

	route("getUsersByIdRoles", h.listHeldRoles)
	route("getUsersByIdRolesByRoleId", h.getHeldRole)
	route("deleteUsersByIdRolesByRoleId", h.leaveRole)
	route("getUsersByIdGroups", h.listHeldGroups)
	route("getUsersByIdGroupsByGroupId", h.getHeldGroup)
	route("deleteUsersByIdGroupsByGroupId", h.leaveGroup)
	return mux
}

type endpoint = apigw.Endpoint

func (h *handler) wrap(e endpoint) http.HandlerFunc {
	return apigw.Handle(h.log, func(r *http.Request, p caller.Principal) (int, any, error) {
		status, body, err := e(r, p)
		var ce *store.CleanupError
		if errors.As(err, &ce) {
			// The change is committed; only unreachable leftovers remain.
			h.log.WarnContext(r.Context(), "cleanup incomplete", "error", err.Error(), "request_id", apigw.RequestID(r.Context()))
			err = nil
		}
		return status, body, err
	})
}

// pathID reads an id path parameter; anything that cannot be an id names
// nothing (404).
func pathID(r *http.Request, name, what string) (string, error) {
	return apigw.PathID(r, name, what)
}

func accountID(r *http.Request) (string, error) { return pathID(r, "id", "account") }

// memberIDs reads /v2/accounts/{id}/<collection>/{param}: the account and
// the member (a `what`), each a 404 when it cannot be an id.
func memberIDs(r *http.Request, param, what string) (acct, id string, err error) {
	if acct, err = accountID(r); err != nil {
		return "", "", err
	}
	id, err = pathID(r, param, what)
	return acct, id, err
}

// inAccount is what a request on /v2/accounts/{id}/... decides with: the
// caller's decider and the account's item (for its ancestors).
type inAccount struct {
	d    *access.Decider
	acct domain.Account
}

// visible reports whether the caller may GET href, a member of a
// collection of the account (docs/api.md#collection-reads).
func (a inAccount) visible(ctx context.Context, href string) (bool, error) {
	return a.d.AllowsFor(ctx, http.MethodGet, href, a.acct)
}

// parallel runs fns at once and returns their errors joined: reads that do
// not depend on each other cost one round trip of wall time. Every fn runs
// to its end (none is cut short by another's failure): the caller maps the
// joined errors to one answer, such as a 404 whatever else failed.
func parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	var g errgroup.Group
	for i, fn := range fns {
		g.Go(func() error { errs[i] = fn(); return nil })
	}
	_ = g.Wait() // every fn returned nil; their errors are in errs
	return errors.Join(errs...)
}

// account loads the caller's decider and account id's item, in parallel
// with the extra reads given.
func (h *handler) account(r *http.Request, p caller.Principal, id string, extra ...func() error) (inAccount, error) {
	var a inAccount
	err := parallel(append([]func() error{
		func() (err error) { a.d, err = h.dec.Decider(r.Context(), p); return err },
		func() (err error) { a.acct, err = h.st.Accounts.GetAccount(r.Context(), id); return err },
	}, extra...)...)
	if err != nil {
		return a, err
	}
	return a, nil
}

// visibleIn is the permission filter of a collection of account acct: the
// members the caller may GET (docs/api.md#collection-reads); a missing
// account is a 404.
func visibleIn[T any](h *handler, p caller.Principal, acct string, href func(T) string) func(ctx context.Context) (func(T) (bool, error), error) {
	return func(ctx context.Context) (func(T) (bool, error), error) {
		var a inAccount
		err := parallel(
			func() (err error) { a.d, err = h.dec.Decider(ctx, p); return err },
			func() (err error) { a.acct, err = h.st.Accounts.GetAccount(ctx, acct); return err },
		)
		if err != nil {
			return nil, domain.IfNotFound(err, "no account %s", acct)
		}
		return func(x T) (bool, error) { return a.visible(ctx, href(x)) }, nil
	}
}

// listIn answers a collection of named members of the account in the path
// (roles, groups, service users): paged in creation order, only the
// members the caller may GET, `order` by name, created or updated. l
// holds the collection's Name, Out, Sort and Finish; read pages the
// account's members, href names one.
func listIn[T, O any](h *handler, r *http.Request, p caller.Principal, l apigw.Lister[T, O],
	read func(ctx context.Context, account, after string, desc bool, n int) ([]T, []string, bool, error),
	href func(T) string) (int, any, error) {
	acct, err := accountID(r)
	if err != nil {
		return 0, nil, err
	}
	page, err := apigw.ParsePage(r.URL.Query(), "name", "created", "updated")
	if err != nil {
		return 0, nil, err
	}
	l.Indexed, l.ValidPosition = "created", store.ValidPosition
	l.Read = func(ctx context.Context, after string, desc bool, n int) ([]T, []string, bool, error) {
		return read(ctx, acct, after, desc, n)
	}
	l.Allow = visibleIn(h, p, acct, href)
	list, err := apigw.List(r, page, l)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

func accountHref(id string) string { return "/v2/accounts/" + id }
func userHref(id string) string    { return "/v2/users/" + id }
