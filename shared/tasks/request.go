package tasks

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"time"

	"cads/shared/applications/appconfig"
	"cads/shared/domain"
	"cads/shared/jsontext"
)

// Request is a validated task request: what POST /v2/tasks (or a PATCH of
// an application) asks to run.
type Request struct {
	Type   string
	App    string // the target application's id; "" only for a certificate without target
	Params any    // normalized parameters, stored as the task's parameters
}

// Parameters of each type, decoded strictly (unknown members are a 400, as
// the reference document's additionalProperties: false says).
type (
	// EnterParams are enter_maintenance's: maximum_duration (seconds)
	// schedules the end of the maintenance.
	EnterParams struct {
		MaximumDuration *int `json:"maximum_duration,omitempty"`
	}
	// RunActionParams names the action to run.
	RunActionParams struct {
		ID string `json:"id"`
	}
	// CertificateParams are generate-origin-certificate's: the subject's
	// RSA public key (PEM), the host names to certify, the expiry.
	CertificateParams struct {
		Key       string     `json:"key"`
		Hostnames []string   `json:"hostnames,omitempty"`
		Expiry    *time.Time `json:"expiry,omitempty"`
	}
	// InvalidateParams are invalidate-cache's: URL patterns or tags; neither
	// means the whole cache.
	InvalidateParams struct {
		URLs []string `json:"urls,omitempty"`
		Tags []string `json:"tags,omitempty"`
	}
	// PrepareParams are prepare-for-download's: the archive's reference,
	// its range of whole hours, how many days it is kept, and the
	// restore urgency (accepted; every range is online, so all are
	// prepared at once).
	PrepareParams struct {
		Reference   string     `json:"reference"`
		From        *time.Time `json:"from"`
		To          *time.Time `json:"to"`
		Retention   *int       `json:"retention,omitempty"`
		RestoreType string     `json:"restore_type,omitempty"`
	}
	// PatchParams are patch-application's: the new values of the changed
	// configuration fields (null: back to the default).
	PatchParams struct {
		Changes appconfig.Changes `json:"changes"`
	}
)

type taskPost struct {
	Type       *string         `json:"type"`
	Target     json.RawMessage `json:"target"`
	Parameters json.RawMessage `json:"parameters"`
}

// Limits of task parameters this service sets where the reference gives none.
const (
	MaxInvalidationEntries = 1000
	// MaxMaintenanceDuration bounds enter_maintenance's maximum_duration.
	MaxMaintenanceDuration = 30 * 24 * time.Hour
	MaxCertHostnames       = 100
	MaxCertLifetime        = 15 * 365 * 24 * time.Hour
	DefaultCertLifetime    = 365 * 24 * time.Hour
)

var (
	actionIDRE  = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])$`)
	certHostRE  = regexp.MustCompile(`^([a-zA-Z0-9_][a-zA-Z0-9\-_]{0,62}\.){1,}[a-zA-Z0-9_][a-zA-Z0-9\-_]{1,62}$`)
	invalURLRE  = regexp.MustCompile(`^[!$%&'*+,\-./0-9:;=?@A-Z_a-z]*$`)
	invalTagRE  = regexp.MustCompile("^[!\"#$%&'()*+,\\-./0-9:;<=>?@A-Z\\[\\\\\\]^_`a-z{|}~ ]*$")
	maxActionID = 63
)

// ValidActionID reports whether id can name an action.
func ValidActionID(id string) bool { return len(id) <= maxActionID && actionIDRE.MatchString(id) }

// KeyText lets a certificate request's PEM key hold line breaks, the one
// exception to the API's text rule in tasks; paramsKeyText is the same
// field seen from the parameters object.
var (
	KeyText       = jsontext.AllowTabNewline("parameters.key")
	paramsKeyText = jsontext.AllowTabNewline("key")
)

// ParsePost validates the body of POST /v2/tasks.
func ParsePost(body []byte, now time.Time) (Request, error) {
	var in taskPost
	if err := jsontext.UnmarshalStrict(body, &in, KeyText); err != nil {
		return Request{}, err
	}
	if in.Type == nil {
		return Request{}, domain.Errorf(domain.Invalid, "type is required: one of %s", strings.Join(PostTypes, ", "))
	}
	typ := *in.Type
	if !slices.Contains(PostTypes, typ) {
		if typ == TypePatchApplication {
			return Request{}, domain.Errorf(domain.Invalid, "patch-application tasks are made by PATCH /v2/applications/{id}")
		}
		return Request{}, domain.Errorf(domain.Invalid, "type %q is not a task type; use one of %s", typ, strings.Join(PostTypes, ", "))
	}
	r := Request{Type: typ}
	target, err := parseTarget(in.Target)
	if err != nil {
		return Request{}, err
	}
	if typ == TypePrepareForDownload {
		p, err := parsePrepareParams(in.Parameters, target)
		if err != nil {
			return Request{}, err
		}
		r.App, _, _ = domain.ParseArchiveReference(p.Reference)
		r.Params = p
		return r, nil
	}
	if target == "" && typ != TypeGenerateOriginCertificate {
		return Request{}, domain.Errorf(domain.Invalid, "target is required: the application's href, like /v2/applications/<id>")
	}
	if target != "" {
		id, ok := AppIDOf(target)
		if !ok {
			return Request{}, domain.Errorf(domain.Invalid, "target %q is not an application href (/v2/applications/<id>)", target)
		}
		r.App = id
	}
	switch typ {
	case TypeStart, TypeStop, TypeExitMaintenance:
		if err := noParameters(typ, in.Parameters); err != nil {
			return Request{}, err
		}
		r.Params = struct{}{}
	case TypeEnterMaintenance:
		var p EnterParams
		if err := decodeParams(in.Parameters, &p, false); err != nil {
			return Request{}, err
		}
		if d := p.MaximumDuration; d != nil && (*d < 1 || *d > int(MaxMaintenanceDuration/time.Second)) {
			return Request{}, domain.Errorf(domain.Invalid, "parameters.maximum_duration must be a whole number of seconds from 1 to %d (30 days)", int(MaxMaintenanceDuration/time.Second))
		}
		r.Params = p
	case TypeRunAction:
		var p RunActionParams
		if err := decodeParams(in.Parameters, &p, true); err != nil {
			return Request{}, err
		}
		if p.ID == "" {
			return Request{}, domain.Errorf(domain.Invalid, "parameters.id is required: the id of the application's action to run")
		}
		if !ValidActionID(p.ID) {
			return Request{}, domain.Errorf(domain.Invalid, "parameters.id %q is not an action id", p.ID)
		}
		r.Params = p
	case TypeGenerateOriginCertificate:
		p, err := parseCertificateParams(in.Parameters, now, target != "")
		if err != nil {
			return Request{}, err
		}
		r.Params = p
	case TypeInvalidateCache:
		var p InvalidateParams
		if err := decodeParams(in.Parameters, &p, false); err != nil {
			return Request{}, err
		}
		if err := p.validate(); err != nil {
			return Request{}, err
		}
		r.Params = p
	}
	return r, nil
}

func parseTarget(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", domain.Errorf(domain.Invalid, "target must be an href string or {\"href\": ...}")
		}
		return s, nil
	}
	var ref struct {
		Href string `json:"href"`
	}
	if err := jsontext.UnmarshalStrict(raw, &ref); err != nil {
		return "", domain.Errorf(domain.Invalid, "target must be an href string or {\"href\": ...}")
	}
	return ref.Href, nil
}

func isEmpty(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

func noParameters(typ string, raw json.RawMessage) error {
	if isEmpty(raw) {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) > 0 {
		return domain.Errorf(domain.Invalid, "a %s task takes no parameters", typ)
	}
	return nil
}

func decodeParams(raw json.RawMessage, v any, required bool) error {
	if isEmpty(raw) {
		if required {
			return domain.Errorf(domain.Invalid, "parameters is required for this task type")
		}
		return nil
	}
	if err := jsontext.UnmarshalStrict(raw, v, paramsKeyText); err != nil {
		e, _ := domain.AsError(err)
		return domain.Errorf(domain.Invalid, "parameters: %s", strings.TrimPrefix(e.Message, "invalid JSON body: "))
	}
	return nil
}

func (p InvalidateParams) validate() error {
	if p.URLs != nil && p.Tags != nil {
		return domain.Errorf(domain.Invalid, "parameters: give urls or tags, not both")
	}
	if p.URLs != nil && len(p.URLs) == 0 || p.Tags != nil && len(p.Tags) == 0 {
		return domain.Errorf(domain.Invalid, "parameters: urls and tags, when given, list at least one entry; leave both out to invalidate the whole cache")
	}
	if len(p.URLs) > MaxInvalidationEntries || len(p.Tags) > MaxInvalidationEntries {
		return domain.Errorf(domain.Invalid, "parameters: at most %d urls or tags per task", MaxInvalidationEntries)
	}
	for i, u := range p.URLs {
		if u == "" || len(u) > 1000 || !invalURLRE.MatchString(u) {
			return domain.Errorf(domain.Invalid, "parameters.urls[%d]: 1 to 1000 characters of US-ASCII, unsafe characters percent-encoded (like https://www.example.com/images/*)", i)
		}
	}
	for i, t := range p.Tags {
		if t == "" || len(t) > 200 || !invalTagRE.MatchString(t) {
			return domain.Errorf(domain.Invalid, "parameters.tags[%d]: 1 to 200 printable ASCII characters", i)
		}
	}
	return nil
}

func parsePrepareParams(raw json.RawMessage, target string) (PrepareParams, error) {
	var p PrepareParams
	if err := decodeParams(raw, &p, true); err != nil {
		return p, err
	}
	if p.Reference == "" {
		return p, domain.Errorf(domain.Invalid, "parameters.reference is required: the archive's reference, like /v2/archived-logs/applications/<id>/proxy-logs")
	}
	app, _, err := domain.ParseArchiveReference(p.Reference)
	if err != nil {
		return p, domain.Errorf(domain.Invalid, "parameters.%s", err.Error())
	}
	if target != "" && target != AppHref(app) {
		return p, domain.Errorf(domain.Invalid, "target %q is not the application of parameters.reference (%s); leave it out", target, AppHref(app))
	}
	if p.From == nil || p.To == nil {
		return p, domain.Errorf(domain.Invalid, "parameters.from and parameters.to are required: the range to archive, on whole hours")
	}
	from, to := p.From.UTC(), p.To.UTC()
	if !from.Truncate(time.Hour).Equal(from) || !to.Truncate(time.Hour).Equal(to) {
		return p, domain.Errorf(domain.Invalid, "parameters.from and parameters.to must be on whole hours, like 2026-05-01T13:00:00Z")
	}
	if !from.Before(to) {
		return p, domain.Errorf(domain.Invalid, "parameters.from must be before parameters.to")
	}
	if to.Sub(from) > domain.MaxArchiveHours*time.Hour {
		return p, domain.Errorf(domain.Invalid, "parameters: a range of at most %d hours (MaxPartitions of the logs)", domain.MaxArchiveHours)
	}
	if p.Retention != nil && (*p.Retention < domain.MinArchiveRetention || *p.Retention > domain.MaxArchiveRetention) {
		return p, domain.Errorf(domain.Invalid, "parameters.retention: %d to %d days", domain.MinArchiveRetention, domain.MaxArchiveRetention)
	}
	switch p.RestoreType {
	case "", "bulk", "standard", "expedited":
	default:
		return p, domain.Errorf(domain.Invalid, "parameters.restore_type: bulk, standard or expedited")
	}
	p.From, p.To = &from, &to
	return p, nil
}

func parseCertificateParams(raw json.RawMessage, now time.Time, hasTarget bool) (CertificateParams, error) {
	var p CertificateParams
	if err := decodeParams(raw, &p, true); err != nil {
		return p, err
	}
	if p.Key == "" {
		return p, domain.Errorf(domain.Invalid, "parameters.key is required: the PEM-encoded RSA public key to certify")
	}
	pub, err := PublicKeyPEM(p.Key)
	if err != nil {
		return p, domain.Errorf(domain.Invalid, "parameters.key: %s", err)
	}
	// Only the public key is kept, even when a private key was sent.
	p.Key = pub
	if p.Hostnames == nil && !hasTarget {
		return p, domain.Errorf(domain.Invalid, "parameters.hostnames is required without a target")
	}
	if p.Hostnames != nil && len(p.Hostnames) == 0 {
		return p, domain.Errorf(domain.Invalid, "parameters.hostnames: list at least one host name, or leave it out to use the target's aliases")
	}
	if len(p.Hostnames) > MaxCertHostnames {
		return p, domain.Errorf(domain.Invalid, "parameters.hostnames: at most %d", MaxCertHostnames)
	}
	for i, h := range p.Hostnames {
		if len(h) > 253 || !certHostRE.MatchString(h) {
			return p, domain.Errorf(domain.Invalid, "parameters.hostnames[%d]: %q is not a host name", i, h)
		}
		p.Hostnames[i] = strings.ToLower(h)
		if slices.Contains(p.Hostnames[:i], p.Hostnames[i]) {
			return p, domain.Errorf(domain.Invalid, "parameters.hostnames[%d]: %q is listed twice", i, h)
		}
	}
	if p.Expiry != nil {
		e := p.Expiry.UTC()
		if !e.After(now) {
			return p, domain.Errorf(domain.Invalid, "parameters.expiry must be in the future")
		}
		if e.After(now.Add(MaxCertLifetime)) {
			return p, domain.Errorf(domain.Invalid, "parameters.expiry: at most 15 years from now")
		}
		p.Expiry = &e
	}
	return p, nil
}
