// Package appconfig is the configuration of an application: the fields of
// the reference document's ApplicationConfiguration that this control plane
// stores and can validate, their defaults and limits, which of them change
// what runs (and so are applied by a task), and how a set of changes is
// applied. The applications API and the task worker share it.
package appconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"cads/shared/domain"
	"cads/shared/jsontext"
	"cads/shared/store"
)

// Configuration is what a client writes of an Application.
type Configuration struct {
	// Descriptive fields: a change applies at once.
	Name   string   `json:"name"`
	Labels []string `json:"labels,omitempty"`

	// Fields that change what runs: a change is applied by a task.
	Aliases          []string `json:"aliases"`
	DefaultHostname  string   `json:"default_hostname,omitempty"`
	EnableTLS        bool     `json:"enable_tls"`
	TLS              *TLS     `json:"tls_configuration,omitempty"`
	Servers          []Server `json:"servers,omitempty"`
	RequestTimeout   int      `json:"request_timeout"`
	ConcurrentLimit  *int     `json:"concurrent_limit,omitempty"`
	MaximumQueueTime *int     `json:"maximum_queue_time,omitempty"`
	SuspendLimit     *int     `json:"suspend_limit,omitempty"`
	Protection       string   `json:"protection,omitempty"`
	MergeSlashes     *bool    `json:"merge_slashes,omitempty"`
	TranslatePath    string   `json:"translate_path"`
}

// TLS is tls_configuration. Private keys are not part of it: this service
// has no secrets store to reference them from (docs/tasks.md).
type TLS struct {
	CertificateChain       string   `json:"certificate_chain,omitempty"`
	EnableAutoTLS          bool     `json:"enable_auto_tls"`
	EnableForceTLS         bool     `json:"enable_force_tls"`
	EnableTLSOffloading    bool     `json:"enable_tls_offloading"`
	EnableServerValidation *bool    `json:"enable_server_validation,omitempty"`
	TolerateInvalidChain   bool     `json:"tolerate_invalid_chain"`
	Versions               []string `json:"versions,omitempty"`
	// CoveredAliases is read-only: computed from the chain and the aliases
	// whenever the application is shown, never stored.
	CoveredAliases []CoveredAlias `json:"covered_aliases,omitempty"`
}

// Server is an origin server.
type Server struct {
	PublicAddress string `json:"public_address"`
}

// Fields whose change applies at once (200 with the Application); a change
// to any other field is applied by a patch-application task (201 with the
// Task). docs/tasks.md lists both.
var Descriptive = map[string]bool{"name": true, "labels": true}

// ReadOnly are the Application fields a client cannot write.
var ReadOnly = []string{"id", "href", "state", "created", "updated", "current_outage"}

// Defaults of the reference document.
const (
	DefaultRequestTimeout = 30
	DefaultTranslatePath  = "preserve"
)

// Limits this service sets where the reference document gives none.
// MaxAliases: every alias is claimed by an item written in the same
// transaction as the application (store.MaxAliasWrites: DynamoDB's 100
// actions less the application's own three).
const (
	MaxAliases      = store.MaxAliasWrites
	MaxLabels       = 50
	MaxServers      = 100
	MaxNameLen      = 255
	MaxChainBytes   = 64 << 10
	MaxLabelLen     = 63
	MaxHostnameLen  = 253
	MaxQueueSeconds = 86400
	MaxSuspendLimit = 1 << 20
)

var (
	hostnameRE  = regexp.MustCompile(`^([a-zA-Z0-9][a-zA-Z0-9\-_]*\.){1,}[a-zA-Z0-9-]{2,}$`)
	labelRE     = regexp.MustCompile(`^[a-z][0-9a-z]*([-_]+[0-9a-z]+)*$`)
	addressRE   = regexp.MustCompile(`^(([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\.){3}([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])(/([0-9]|[1-2][0-9]|3[0-2]))?(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9][0-9]|6[0-4][0-9][0-9][0-9]|[1-5](\d){4}|[1-9](\d){0,3}))?$`)
	tlsVersions = []string{"TlsV1.1", "TlsV1.2", "TlsV1.3"}
)

// Normalize fills in defaults and canonical spellings (host names are
// case-insensitive, so they are kept in lower case: ASCII lower case only,
// so that a non-ASCII look-alike such as the Kelvin sign is refused by
// Validate rather than folded onto an ASCII letter).
func (c *Configuration) Normalize() {
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.TranslatePath == "" {
		c.TranslatePath = DefaultTranslatePath
	}
	for i, a := range c.Aliases {
		c.Aliases[i] = domain.AliasKey(a)
	}
	c.DefaultHostname = domain.AliasKey(c.DefaultHostname)
	if c.TLS != nil && c.TLS.EnableServerValidation == nil {
		t := true
		c.TLS.EnableServerValidation = &t
	}
}

func bad(format string, args ...any) error { return domain.Errorf(domain.Invalid, format, args...) }

// Validate checks the configuration as a whole; the error is a 400 naming
// the field.
func (c Configuration) Validate() error {
	if err := validName(c.Name); err != nil {
		return err
	}
	if len(c.Labels) > MaxLabels {
		return bad("labels: at most %d labels", MaxLabels)
	}
	for i, l := range c.Labels {
		if len(l) > MaxLabelLen || !labelRE.MatchString(l) {
			return bad("labels[%d]: %q is not a label (lower-case letters and digits, words joined by - or _, at most %d characters, like \"web-prod\")", i, l, MaxLabelLen)
		}
		if slices.Contains(c.Labels[:i], l) {
			return bad("labels[%d]: %q is listed twice", i, l)
		}
	}
	if len(c.Aliases) == 0 {
		return bad("aliases is required: at least one host name the application answers to")
	}
	if len(c.Aliases) > MaxAliases {
		return bad("aliases: at most %d host names", MaxAliases)
	}
	for i, a := range c.Aliases {
		if err := validHostname(a); err != nil {
			return bad("aliases[%d]: %s", i, err)
		}
		if slices.Contains(c.Aliases[:i], a) {
			return bad("aliases[%d]: %q is listed twice", i, a)
		}
	}
	if c.DefaultHostname != "" && !slices.Contains(c.Aliases, c.DefaultHostname) {
		return bad("default_hostname %q must be one of the aliases", c.DefaultHostname)
	}
	if err := c.validateTLS(); err != nil {
		return err
	}
	if len(c.Servers) > MaxServers {
		return bad("servers: at most %d servers", MaxServers)
	}
	for i, s := range c.Servers {
		if !addressRE.MatchString(s.PublicAddress) {
			return bad("servers[%d].public_address: %q is not an IPv4 address with an optional /prefix and :port (like 203.0.113.7:8443)", i, s.PublicAddress)
		}
		for _, o := range c.Servers[:i] {
			if o.PublicAddress == s.PublicAddress {
				return bad("servers[%d]: %s is listed twice", i, s.PublicAddress)
			}
		}
	}
	if c.RequestTimeout < 1 || c.RequestTimeout > 60 {
		return bad("request_timeout must be from 1 to 60 (seconds)")
	}
	if err := intRange("concurrent_limit", c.ConcurrentLimit, 1, 1024); err != nil {
		return err
	}
	if err := intRange("maximum_queue_time", c.MaximumQueueTime, 1, MaxQueueSeconds); err != nil {
		return err
	}
	if err := intRange("suspend_limit", c.SuspendLimit, 1, MaxSuspendLimit); err != nil {
		return err
	}
	if c.Protection != "" && c.Protection != "normal" && c.Protection != "maximum" {
		return bad("protection must be normal or maximum")
	}
	if c.TranslatePath != "preserve" && c.TranslatePath != "unescape" {
		return bad("translate_path must be preserve or unescape")
	}
	return nil
}

func (c Configuration) validateTLS() error {
	t := c.TLS
	if t == nil {
		return nil
	}
	if t.EnableForceTLS && !c.EnableTLS {
		return bad("tls_configuration.enable_force_tls needs enable_tls")
	}
	if len(t.Versions) == 0 && t.Versions != nil {
		return bad("tls_configuration.versions: list at least one version, or leave it out")
	}
	for i, v := range t.Versions {
		if !slices.Contains(tlsVersions, v) {
			return bad("tls_configuration.versions[%d]: %q is not one of %s", i, v, strings.Join(tlsVersions, ", "))
		}
		if slices.Contains(t.Versions[:i], v) {
			return bad("tls_configuration.versions[%d]: %s is listed twice", i, v)
		}
	}
	if t.CertificateChain != "" {
		if len(t.CertificateChain) > MaxChainBytes {
			return bad("tls_configuration.certificate_chain exceeds %d bytes", MaxChainBytes)
		}
		if _, err := ParseChain(t.CertificateChain); err != nil {
			return bad("tls_configuration.certificate_chain: %s", err)
		}
	}
	return nil
}

func validName(s string) error {
	if s == "" || strings.TrimSpace(s) != s {
		return bad("name is required: 1 to %d characters, without leading or trailing spaces", MaxNameLen)
	}
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxNameLen {
		return bad("name must be valid UTF-8 of at most %d characters", MaxNameLen)
	}
	for _, r := range s {
		if jsontext.IsControl(r) {
			return bad("name must not contain control characters")
		}
	}
	return nil
}

func validHostname(h string) error {
	if len(h) > MaxHostnameLen || !hostnameRE.MatchString(h) {
		return fmt.Errorf("%q is not a host name (like www.example.com)", h)
	}
	for _, l := range strings.Split(h, ".") {
		if len(l) > 63 {
			return fmt.Errorf("%q has a label longer than 63 characters", h)
		}
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return fmt.Errorf("%q is an address, not a host name", h)
	}
	return nil
}

// ValidHostname reports whether h is a host name an application may use.
func ValidHostname(h string) bool { return validHostname(h) == nil }

func intRange(field string, v *int, lo, hi int) error {
	if v != nil && (*v < lo || *v > hi) {
		return bad("%s must be from %d to %d", field, lo, hi)
	}
	return nil
}

// PEMText lets the configuration's PEM field hold line breaks, the one
// exception to the API's text rule here.
var PEMText = jsontext.AllowTabNewline("tls_configuration.certificate_chain")

// PatchPEMText is PEMText for PATCH bodies as sent: a merge patch names the
// field; a JSON Patch's values are judged again, at their place, when the
// patched document is decoded (Decode).
var PatchPEMText = jsontext.AllowTabNewline("tls_configuration.certificate_chain", "[*].value", "[*].value.certificate_chain")

// Decode reads a configuration from a client's JSON object strictly
// (unknown fields are a 400, read-only ones too, with their own message),
// then normalizes and validates it.
func Decode(body []byte) (Configuration, error) {
	if err := rejectReadOnly(body); err != nil {
		return Configuration{}, err
	}
	var c Configuration
	if err := jsontext.UnmarshalStrict(body, &c, PEMText); err != nil {
		return Configuration{}, err
	}
	if c.TLS != nil && c.TLS.CoveredAliases != nil {
		return Configuration{}, bad("tls_configuration.covered_aliases is read-only: it is computed from the certificate chain")
	}
	c.Normalize()
	return c, c.Validate()
}

func rejectReadOnly(body []byte) error {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil // UnmarshalStrict reports the syntax error
	}
	for _, f := range ReadOnly {
		if _, ok := top[f]; ok {
			if f == "state" {
				return bad("state is read-only: change it with a task (start, stop, enter_maintenance, exit_maintenance) through POST /v2/tasks")
			}
			return bad("%s is read-only", f)
		}
	}
	return nil
}

// Encode is the stored form.
func (c Configuration) Encode() string {
	stored := c
	if c.TLS != nil {
		t := *c.TLS
		t.CoveredAliases = nil
		stored.TLS = &t
	}
	b, err := json.Marshal(stored)
	if err != nil {
		// Only a programming error (an unmarshalable field) gets here.
		panic(fmt.Sprintf("appconfig: encode: %v", err))
	}
	return string(b)
}

// Parse reads the stored form.
func Parse(stored string) (Configuration, error) {
	var c Configuration
	if err := json.Unmarshal([]byte(stored), &c); err != nil {
		return Configuration{}, fmt.Errorf("stored configuration: %w", err)
	}
	c.Normalize()
	return c, nil
}

// fields is the configuration as top-level JSON members.
func (c Configuration) fields() map[string]json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal([]byte(c.Encode()), &m)
	return m
}

// Changed lists the top-level fields whose value differs between a and b,
// sorted.
func Changed(a, b Configuration) []string {
	fa, fb := a.fields(), b.fields()
	var out []string
	for k, v := range fb {
		if !jsonEqual(fa[k], v) {
			out = append(out, k)
		}
	}
	for k := range fa {
		if _, ok := fb[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// OnlyDescriptive reports whether every changed field applies at once.
func OnlyDescriptive(changed []string) bool {
	for _, f := range changed {
		if !Descriptive[f] {
			return false
		}
	}
	return true
}

// Changes are the new values of changed top-level fields, JSON null for a
// field that was removed (back to its default): the parameters of a
// patch-application task.
type Changes map[string]json.RawMessage

// ChangesOf returns the values of fields in next.
func ChangesOf(next Configuration, fields []string) Changes {
	f := next.fields()
	out := Changes{}
	for _, k := range fields {
		if v, ok := f[k]; ok {
			out[k] = v
		} else {
			out[k] = json.RawMessage("null")
		}
	}
	return out
}

// Apply applies changes to the current configuration and validates the
// result as a whole; the task worker calls it against the configuration
// as it is when the task runs, so concurrent changes to other fields are
// kept.
func Apply(cur Configuration, ch Changes) (Configuration, error) {
	f := cur.fields()
	for k, v := range ch {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(f, k)
		} else {
			f[k] = v
		}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return Configuration{}, fmt.Errorf("apply changes: %w", err)
	}
	return Decode(b)
}

func jsonEqual(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
