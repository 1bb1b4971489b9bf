package authz

// Input is one request to decide, with what the caller loaded for it.
type Input struct {
	Method, Path string
	PrincipalID  string // the caller's user or service-user id
	KeyAccount   string // the account the access key is authenticated into; "" = none
	// Target and TargetAncestors are what the caller resolved with Target:
	// for most paths Target == KeyAccount and TargetAncestors are the key
	// account's ancestors; for /v2/accounts/{id}[/...] they are {id} and its
	// ancestors. Ancestors are root first, excluding the account itself.
	// An empty Target on a path that does not name an account means
	// KeyAccount.
	Target          string
	TargetAncestors []string
	Held            []*CompiledRole // roles of the principal's accepted invitations, direct or via groups
	// Root is the root account of the key account's tree, as read from the
	// key account's own item (RootOf). Only ClassGlobal requests use it;
	// without it they are refused.
	Root string
	// Sets, when not nil, caches the indexed form of the applicable roles
	// (RoleSets): Evaluate then decides a long list of roles through it,
	// at a cost that does not grow with the roles that cannot match.
	// The decision is the same either way.
	Sets *RoleSets
}

// Evaluate is the whole decision in the one order both the authorizer and
// the functions use:
//
//  1. CheckPath: a non-canonical path is refused (Status 400);
//  2. SelfService: allowed without a role;
//  3. a key authenticated into no account is refused (403);
//  4. ClassOf: a global request (user routes) is decided by the roles that
//     apply in the root account alone, and stops here;
//  5. ScopeFor: the target account must be the key's account or below it,
//     except plain GET /v2/accounts/{id} (403 with the reason otherwise);
//  6. Applicable (for an admin request, only entitlement administrator
//     roles), then Decide.
//
// Reason is always filled.
func Evaluate(in Input) Decision {
	d := Decision{Status: 403, Method: in.Method, Path: in.Path, why: whyRefused}
	if err := CheckPath(in.Path); err != nil {
		d.Status, d.Reason = 400, err.Error()
		return d
	}
	if SelfService(in.Method, in.Path, in.PrincipalID) {
		d.Allowed, d.Status, d.why = true, 200, whySelfService
		d.Reason = d.Explain()
		return d
	}
	if in.KeyAccount == "" {
		d.Reason = msgNoAccount
		return d
	}
	class := ClassOf(in.Method, in.Path, in.PrincipalID)
	if class == ClassGlobal {
		return evaluateGlobal(in)
	}
	target := in.Target
	if _, fromPath := Target(in.Method, in.Path, in.KeyAccount); target == "" && !fromPath {
		target = in.KeyAccount
	}
	scope, err := ScopeFor(in.Method, in.Path, in.KeyAccount, target, in.TargetAncestors)
	if err != nil {
		d.Reason = err.Error()
		return d
	}
	app := Applicable(in.Held, target, in.TargetAncestors, scope)
	if class == ClassAdmin {
		d = in.Sets.decide(onlyAdmin(app), in.Method, in.Path)
	} else {
		d = in.Sets.decide(app, in.Method, in.Path)
	}
	d.Class = class
	d.Reason = d.Explain() + " (decided in account " + target + ", " + scope.String() + " scope"
	if class == ClassAdmin {
		d.Reason += ", " + class.String() + " route"
	}
	d.Reason += ")"
	if !d.Allowed && class == ClassAdmin {
		d.Reason += inert(class, app, in.Method, in.Path)
	}
	return d
}

// evaluateGlobal decides a user route: only the roles that apply in the
// root account (its own roles, inheritable:false) can grant it, whatever
// account the key is in. The roles that apply in the key's account are
// looked at only to explain a refusal.
func evaluateGlobal(in Input) Decision {
	if in.Root == "" {
		d := Decision{Status: 403, Method: in.Method, Path: in.Path, Class: ClassGlobal, why: whyRefused}
		d.Reason = msgGlobalInert + ", and the root account of this key's account is not known"
		return d
	}
	d := in.Sets.decide(Applicable(in.Held, in.Root, nil, ScopeAuthenticated), in.Method, in.Path)
	d.Class = ClassGlobal
	d.Reason = d.Explain() + " (decided in the root account " + in.Root + ", global route)"
	if !d.Allowed && in.Root != in.KeyAccount {
		d.Reason += inert(ClassGlobal, Applicable(in.Held, in.KeyAccount, in.TargetAncestors, ScopeAuthenticated), in.Method, in.Path)
	}
	return d
}

// CanSwitch decides whether the holder of held may switch into account
// (POST /v2/users/self/authorization, docs/api.md#switching-accounts): it needs
// GET /v2/accounts/{account} decided as if authenticated into account. It
// does not depend on the key's current account, so a key authenticated into
// no account can switch. ancestors are account's, root first.
func CanSwitch(held []*CompiledRole, account string, ancestors []string) Decision {
	path := accountsPrefix + account
	if id, plain := accountInPath(path); account == "" || id != account || !plain {
		d := Decision{Status: 400, Method: "GET", Path: path, why: whyRefused}
		d.Reason = "account id " + quoteShort(account) + " is not a path segment"
		return d
	}
	d := Decide(Applicable(held, account, ancestors, ScopeSwitch), "GET", path)
	d.Reason = d.Explain() + " (decided in account " + account + ", " + ScopeSwitch.String() + " scope)"
	return d
}
