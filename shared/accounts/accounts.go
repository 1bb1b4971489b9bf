// Package accounts serves the accounts function: the account tree
// (/v2/accounts, docs/api.md#accounts), the entitlements of each account
// (/v2/accounts/{id}/entitlements) and its billing
// (/v2/accounts/{id}/billing). Its handlers are plain net/http, run as a
// Lambda through apigw.Lambda and called in-process by the local platform
// and the tests. The authorizer has already decided every request; this
// package makes only the second decisions of docs/api.md#collection-reads (which members of a
// collection the caller may see), with the same engine.
package accounts

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/audit"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/routes"
	"cads/shared/store"
)

// Store is what the accounts function reads and writes.
type Store struct {
	Now   func() time.Time
	Roles interface {
		Grants(ctx context.Context, principal string) ([]domain.Grant, error)
	}
	Principals interface {
		GetPrincipal(ctx context.Context, id string) (domain.Principal, error)
	}
	Accounts interface {
		GetAccountRecord(ctx context.Context, id string) (domain.AccountRecord, error)
		GetAccountRecords(ctx context.Context, ids []string) ([]domain.AccountRecord, error)
		PageAccounts(ctx context.Context, after string, desc bool, n int) ([]domain.AccountRecord, []string, bool, error)
		CreateSubAccount(ctx context.Context, a domain.AccountRecord, roles []domain.Role) error
		UpdateAccount(ctx context.Context, prev, next domain.AccountRecord) error
		DeleteAccount(ctx context.Context, id string, at ...time.Time) (domain.AccountRecord, error)
		LoadBilling(ctx context.Context, account string) (domain.Billing, error)
		CloseInvoices(ctx context.Context, invs []domain.Invoice) ([]domain.Invoice, error)
	}
	Entitlements interface {
		CreateEntitlement(ctx context.Context, e domain.Entitlement) error
		GetEntitlement(ctx context.Context, account, id string) (domain.Entitlement, error)
		ListEntitlements(ctx context.Context, account string) ([]domain.Entitlement, error)
		PageEntitlements(ctx context.Context, account, after string, desc bool, n int) ([]domain.Entitlement, []string, bool, error)
		PutEntitlement(ctx context.Context, e domain.Entitlement) error
		DeleteEntitlement(ctx context.Context, account, id string, versions ...int) (domain.Entitlement, error)
	}
	Audit interface {
		PageAuditEvents(ctx context.Context, account string, from, to time.Time, after string, desc bool, n int) ([]audit.Event, []string, bool, error)
	}
}

// NewStore is a Store over the table's repositories.
func NewStore(st *store.Store) Store {
	return Store{Now: st.Now, Roles: st.Roles, Principals: st.Principals, Accounts: st.Accounts, Entitlements: st.Entitlements, Audit: st.Audit}
}

// Deciders makes second decisions with the authorizer's engine.
type Deciders interface {
	Decider(ctx context.Context, p caller.Principal) (*access.Decider, error)
}

type handler struct {
	st  Store
	dec Deciders
	log *slog.Logger
}

// New returns the accounts function's HTTP handler.
func New(st Store, dec Deciders, log *slog.Logger) *apigw.Router {
	h := &handler{st: st, dec: dec, log: log}
	mux := apigw.NewRouter(routes.Accounts)
	mux.HandleFunc("getAccounts", h.wrap(h.listAccounts))
	mux.HandleFunc("postAccounts", h.wrap(h.createAccount))
	mux.HandleFunc("getAccountsById", h.wrap(h.getAccount))
	mux.HandleFunc("patchAccountsById", h.wrap(h.patchAccount))
	mux.HandleFunc("deleteAccountsById", h.wrap(h.deleteAccount))
	mux.HandleFunc("getAccountsByIdBilling", h.wrap(h.getBilling))
	mux.HandleFunc("getAccountsByIdAuditEvents", h.wrap(h.listAuditEvents))
	mux.HandleFunc("getAccountsByIdEntitlements", h.wrap(h.listEntitlements))
	mux.HandleFunc("postAccountsByIdEntitlements", h.wrap(h.createEntitlement))
	mux.HandleFunc("getAccountsByIdEntitlementsByEntitlementId", h.wrap(h.getEntitlement))
	mux.HandleFunc("patchAccountsByIdEntitlementsByEntitlementId", h.wrap(h.patchEntitlement))
	mux.HandleFunc("deleteAccountsByIdEntitlementsByEntitlementId", h.wrap(h.deleteEntitlement))
	return mux
}

type endpoint = apigw.Endpoint

func (h *handler) wrap(e endpoint) http.HandlerFunc { return apigw.Handle(h.log, e) }

// accountID reads {id}. An id this service could not have made is a 404
// like any unknown account (the authorizer refuses most of them before).
func accountID(r *http.Request) (string, error) { return apigw.PathID(r, "id", "account") }

func accountHref(id string) string { return "/v2/accounts/" + id }
func userHref(id string) string    { return "/v2/users/" + id }
