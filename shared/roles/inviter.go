package roles

import (
	"context"
	"net/http"

	"cads/shared/access"
	"cads/shared/authz"
	"cads/shared/domain"
)

// mayInvite decides whether the caller may invite users to the roles and
// groups of account target with the request method+path
// (docs/api.md#who-may-invite): the engine must allow the request, AND one of
// the roles that apply to it, as the engine selects them, must be the
// target account's own Account owner control role or the platform
// operator's entitlement administrator role (defined in the root account).
// A permit for the invitation endpoints in any other role is not enough:
// an Editor given such a permit still cannot invite.
//
// The Account owner is identified by its name and account (control role
// names are reserved: no custom role takes one, no control role loses one);
// the entitlement administrator by the identity the bootstrap gave it, as
// the engine identifies it for account creation and entitlement writes.
func (h *handler) mayInvite(ctx context.Context, d *access.Decider, method, path string, target domain.Account) error {
	dec, err := d.DecideFor(ctx, method, path, target)
	if err != nil {
		return err
	}
	if !dec.Allowed {
		return domain.Errorf(domain.Forbidden, "%s", dec.Reason)
	}
	may, err := d.AnyApplies(ctx, method, path, target, func(r authz.Role) bool {
		owner := r.Name == h.names.owner && r.AccountID == target.ID && !r.Inheritable
		return owner || r.EntitlementAdministrator
	})
	if err != nil || may {
		return err
	}
	return domain.Errorf(domain.Forbidden, "only a holder of the %s role of account %s, or the %s, may invite users to its roles and groups",
		h.names.owner, target.ID, h.names.admin)
}

// mayInviteHere is mayInvite for the request being served.
func (h *handler) mayInviteHere(r *http.Request, a inAccount) error {
	return h.mayInvite(r.Context(), a.d, r.Method, r.URL.Path, a.acct)
}
