package authz

// Prepared answers "is this request allowed?" for many requests of one
// caller, as Evaluate would, without building an explanation and without
// selecting the applicable roles again for each request: they are chosen
// once per scope (and class) and kept. It is for filtering collections by
// permission (a GET per member): after the first member, each one costs a
// path check and one Decide, which does not allocate.
//
// A Prepared is built for one target account (the Input's Target and
// TargetAncestors); a request that addresses another account is refused,
// as Evaluate refuses a Target that does not match the path. Not safe for
// concurrent use.
type Prepared struct {
	in     Input
	scoped [3][2][]*CompiledRole // [scope][admin class] applicable roles, built on first use
	built  [3][2]bool
	global []*CompiledRole
	gbuilt bool
}

// Prepare returns a Prepared over in; in.Method and in.Path are ignored.
func Prepare(in Input) *Prepared { return &Prepared{in: in} }

// Allowed reports Evaluate(in with method and path).Allowed.
func (p *Prepared) Allowed(method, path string) bool {
	in := &p.in
	if CheckPath(path) != nil {
		return false
	}
	if SelfService(method, path, in.PrincipalID) {
		return true
	}
	if in.KeyAccount == "" {
		return false
	}
	class := ClassOf(method, path, in.PrincipalID)
	if class == ClassGlobal {
		if in.Root == "" {
			return false
		}
		if !p.gbuilt {
			p.global, p.gbuilt = Applicable(in.Held, in.Root, nil, ScopeAuthenticated), true
		}
		return p.in.Sets.decide(p.global, method, path).Allowed
	}
	target := in.Target
	if _, fromPath := Target(method, path, in.KeyAccount); target == "" && !fromPath {
		target = in.KeyAccount
	}
	scope, err := ScopeFor(method, path, in.KeyAccount, target, in.TargetAncestors)
	if err != nil {
		return false
	}
	admin := 0
	if class == ClassAdmin {
		admin = 1
	}
	if !p.built[scope][admin] {
		app := Applicable(in.Held, target, in.TargetAncestors, scope)
		if admin == 1 {
			app = onlyAdmin(app)
		}
		p.scoped[scope][admin], p.built[scope][admin] = app, true
	}
	return p.in.Sets.decide(p.scoped[scope][admin], method, path).Allowed
}
