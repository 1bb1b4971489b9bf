// Package applications serves the applications function: applications,
// their actions, their page controls and the web control view of them. A patch that changes what an
// application runs is handed to the task worker (shared/tasks) as a
// patch-application task; everything else is written at once.
package applications

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/routes"
	"cads/shared/store"
)

// Store is what the applications function reads and writes.
type Store struct {
	Now          func() time.Time
	Entitlements interface {
		CheckAllowance(ctx context.Context, account, kind string) (domain.Quota, error)
	}
	Applications interface {
		CreateApplication(ctx context.Context, a domain.Application, q domain.Quota) error
		GetApplication(ctx context.Context, account, id string) (domain.Application, error)
		PageApplications(ctx context.Context, account, after string, desc bool, n int) ([]domain.Application, []string, bool, error)
		UpdateApplicationConfig(ctx context.Context, account, id string, from int, config string) (domain.Application, error)
		DeleteApplication(ctx context.Context, account, id string, pre ...func(domain.Application) error) (domain.Application, error)
		AliasOwners(ctx context.Context, aliases []string) (map[string]string, error)
		CreateAction(ctx context.Context, account string, a domain.Action) error
		GetAction(ctx context.Context, account, app, id string) (domain.Action, error)
		PageActions(ctx context.Context, app, after string, desc bool, n int) ([]domain.Action, []string, bool, error)
		ApplicationInAccount(ctx context.Context, account, app string) error
		ReplaceAction(ctx context.Context, account string, a domain.Action, from int) error
		DeleteAction(ctx context.Context, account, app, id string, from int) error
		NextPageControlID(ctx context.Context, account, app string) (int, error)
		CreatePageControl(ctx context.Context, account string, pc domain.PageControl) error
		GetPageControl(ctx context.Context, account, app string, id int) (domain.PageControlVersions, error)
		PagePageControls(ctx context.Context, account, app, after string, desc bool, n int, withHistory bool) ([]domain.PageControlVersions, []string, bool, error)
		UpdatePageControl(ctx context.Context, account string, old, next domain.PageControl) error
		DeletePageControl(ctx context.Context, account string, pc domain.PageControlVersions) error
	}
}

// NewStore is a Store over the table's repositories.
func NewStore(st *store.Store) Store {
	return Store{Now: st.Now, Entitlements: st.Entitlements, Applications: st.Applications}
}

// Deciders makes second decisions with the authorizer's engine.
type Deciders interface {
	Decider(ctx context.Context, p caller.Principal) (*access.Decider, error)
}

// Submitter hands a task to the task worker (tasks.Outbox).
type Submitter interface {
	Submit(ctx context.Context, t domain.Task) error
}

type handler struct {
	st    Store
	dec   Deciders
	tasks Submitter
	log   *slog.Logger
}

// New returns the applications function's HTTP handler.
func New(st Store, dec Deciders, tasks Submitter, log *slog.Logger) *apigw.Router {
	h := &handler{st: st, dec: dec, tasks: tasks, log: log}
	mux := apigw.NewRouter(routes.Applications)
	mux.HandleFunc("getApplications", h.wrap(h.listApps))
	mux.HandleFunc("postApplications", h.wrap(h.createApp))
	mux.HandleFunc("getApplicationsById", h.wrap(h.getApp))
	mux.HandleFunc("patchApplicationsById", h.wrap(h.patchApp))
	mux.HandleFunc("deleteApplicationsById", h.wrap(h.deleteApp))

	mux.HandleFunc("getApplicationsByIdActions", h.wrap(h.listActions))
	mux.HandleFunc("postApplicationsByIdActions", h.wrap(h.createAction))
	mux.HandleFunc("getApplicationsByIdActionsByActionId", h.wrap(h.getAction))
	mux.HandleFunc("patchApplicationsByIdActionsByActionId", h.wrap(h.patchAction))
	mux.HandleFunc("deleteApplicationsByIdActionsByActionId", h.wrap(h.deleteAction))

	mux.HandleFunc("getApplicationsByIdPagecontrols", h.wrap(h.listPageControls))
	mux.HandleFunc("postApplicationsByIdPagecontrols", h.wrap(h.createPageControl))
	mux.HandleFunc("getApplicationsByIdPagecontrolsByPagecontrolId", h.wrap(h.getPageControl))
	mux.HandleFunc("patchApplicationsByIdPagecontrolsByPagecontrolId", h.wrap(h.patchPageControl))
	mux.HandleFunc("deleteApplicationsByIdPagecontrolsByPagecontrolId", h.wrap(h.deletePageControl))

	mux.HandleFunc("getApplicationsByIdWebcontrols", h.wrap(h.listWebControls))
	mux.HandleFunc("getApplicationsByIdWebcontrolsByWebcontrolId", h.wrap(h.getWebControl))
	return mux
}

type endpoint = apigw.Endpoint

func (h *handler) wrap(e endpoint) http.HandlerFunc { return apigw.HandleInAccount(h.log, e) }

// appID is the {id} of the path; one that cannot be an id is a 404 like
// any other missing application.
func appID(r *http.Request) (string, error) { return apigw.PathID(r, "id", "application") }
