package addresssets

import (
	"encoding/json"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/jsontext"
)

// SetIn is the body of POST (AddressSetPost) and the result of a PATCH
// applied to a set's document (AddressSetPatch); unknown fields are a 400.
type SetIn struct {
	Name        *string         `json:"name"`
	Description *string         `json:"description"`
	Type        *string         `json:"type"`
	Entries     []entryIn       `json:"entries"`
	Inclusions  []string        `json:"inclusions"`
	Parameters  json.RawMessage `json:"parameters"`
}

// entryIn is AddressSetEntryConfiguration.
type entryIn struct {
	Address     *string    `json:"address"`
	Description *string    `json:"description"`
	Expiry      *time.Time `json:"expiry"`
}

// spec is a validated desired state of a set.
type spec struct {
	Name, Description, Type string
	// Entries are the live entries the set should have, by prefix.
	Entries    map[netip.Prefix]desired
	Inclusions []string // ids
	Domains    []string // a domains set's, lower case
}

type desired struct {
	address     string
	description string
	expiry      *time.Time
}

// validate checks a set body as a whole. The same address twice is one
// entry with the later expiry (a re-add extends, docs/api.md#address-sets), so a JSON Patch
// "add" of an existing address behaves like a POST of it would.
func validate(in SetIn) (spec, error) {
	var s spec
	if in.Name == nil {
		return s, domain.Errorf(domain.Invalid, "name is required")
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(*in.Name)); n == 0 || utf8.RuneCountInString(*in.Name) > MaxNameLen {
		return s, domain.Errorf(domain.Invalid, "name must be 1 to %d characters", MaxNameLen)
	}
	s.Name = *in.Name
	if in.Description != nil {
		if utf8.RuneCountInString(*in.Description) > MaxDescriptionLen {
			return s, domain.Errorf(domain.Invalid, "description may be at most %d characters", MaxDescriptionLen)
		}
		s.Description = *in.Description
	}
	if in.Type == nil {
		return s, domain.Errorf(domain.Invalid, "type is required: one of %s, %s, %s, %s", TypeManual, TypeDynamic, TypeCombined, TypeDomains)
	}
	switch *in.Type {
	case TypeManual, TypeDynamic, TypeCombined, TypeDomains:
		s.Type = *in.Type
	case "json-file", "text-file":
		return s, domain.Errorf(domain.Invalid, "type %q is not supported: this service does not fetch address lists; use %s, %s, %s or %s", *in.Type, TypeManual, TypeDynamic, TypeCombined, TypeDomains)
	default:
		return s, domain.Errorf(domain.Invalid, "type must be one of %s, %s, %s, %s, not %q", TypeManual, TypeDynamic, TypeCombined, TypeDomains, domain.Clip(*in.Type, 64))
	}
	hasParams := len(in.Parameters) > 0 && string(in.Parameters) != "null"
	switch {
	case s.Type == TypeDomains:
		d, err := parseDomainsParams(in.Parameters, hasParams)
		if err != nil {
			return s, err
		}
		s.Domains = d
		if len(in.Entries) > 0 {
			return s, domain.Errorf(domain.Invalid, "entries: a %s set has none: its parameters.domains say which addresses belong to it", TypeDomains)
		}
	case hasParams:
		return s, domain.Errorf(domain.Invalid, "parameters apply only to %s sets (and to text-file and json-file sets, which this service does not support)", TypeDomains)
	}
	s.Entries = make(map[netip.Prefix]desired, len(in.Entries))
	for i, e := range in.Entries {
		if e.Address == nil {
			return s, domain.Errorf(domain.Invalid, "entries[%d].address is required", i)
		}
		p, shown, err := parseAddress(*e.Address)
		if err != nil {
			return s, domain.Errorf(domain.Invalid, "entries[%d].address: %s", i, err.Error())
		}
		d := desired{address: shown}
		if e.Description != nil {
			if utf8.RuneCountInString(*e.Description) > MaxEntryDescLen {
				return s, domain.Errorf(domain.Invalid, "entries[%d].description may be at most %d characters", i, MaxEntryDescLen)
			}
			d.description = *e.Description
		}
		if e.Expiry != nil {
			t := e.Expiry.UTC().Truncate(time.Millisecond)
			d.expiry = &t
		}
		if prev, dup := s.Entries[p]; dup {
			if !later(d.expiry, prev.expiry) {
				d.expiry = prev.expiry
			}
			if d.description == "" {
				d.description = prev.description
			}
		}
		s.Entries[p] = d
	}
	if len(s.Entries) > MaxEntries {
		return s, domain.Errorf(domain.Invalid, "entries: %d addresses; a set holds at most %d", len(s.Entries), MaxEntries)
	}
	if len(in.Inclusions) > 0 && s.Type != TypeCombined {
		return s, domain.Errorf(domain.Invalid, "inclusions are only for %s sets", TypeCombined)
	}
	if len(in.Inclusions) > MaxInclusions {
		return s, domain.Errorf(domain.Invalid, "inclusions: at most %d sets", MaxInclusions)
	}
	for i, h := range in.Inclusions {
		id, ok := strings.CutPrefix(h, "/v2/address-sets/")
		if !ok || !ids.Valid(id) {
			return s, domain.Errorf(domain.Invalid, "inclusions[%d]: %q is not an address set href (/v2/address-sets/<id>)", i, domain.Clip(h, 64))
		}
		if slices.Contains(s.Inclusions, id) {
			return s, domain.Errorf(domain.Invalid, "inclusions[%d]: %s is listed twice", i, h)
		}
		s.Inclusions = append(s.Inclusions, id)
	}
	return s, nil
}

// domainsParams is AddressSetDomainsParameters.
type domainsParams struct {
	Domains []string `json:"domains"`
}

// domainLabel is one label of a host name (RFC 1123): letters, digits and
// hyphens, not starting or ending with a hyphen.
var domainLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// parseDomainsParams reads a domains set's parameters: 1 to MaxDomains
// distinct domain names of at least two labels, compared and kept in
// lower case.
func parseDomainsParams(raw json.RawMessage, present bool) ([]string, error) {
	if !present {
		return nil, domain.Errorf(domain.Invalid, "parameters.domains is required for a %s set: the domains whose addresses belong to it", TypeDomains)
	}
	var p domainsParams
	if err := jsontext.UnmarshalStrict(raw, &p); err != nil {
		return nil, prefixed("parameters", err)
	}
	if len(p.Domains) == 0 {
		return nil, domain.Errorf(domain.Invalid, "parameters.domains is required for a %s set and must list at least one domain", TypeDomains)
	}
	if len(p.Domains) > MaxDomains {
		return nil, domain.Errorf(domain.Invalid, "parameters.domains: at most %d domains", MaxDomains)
	}
	out := make([]string, 0, len(p.Domains))
	for i, d := range p.Domains {
		name := strings.ToLower(strings.TrimSuffix(d, "."))
		labels := strings.Split(name, ".")
		ok := len(name) <= 253 && len(labels) >= 2
		for _, l := range labels {
			ok = ok && domainLabel.MatchString(l)
		}
		if !ok {
			return nil, domain.Errorf(domain.Invalid, "parameters.domains[%d]: %q is not a domain name (like example.com)", i, domain.Clip(d, 64))
		}
		if slices.Contains(out, name) {
			return nil, domain.Errorf(domain.Invalid, "parameters.domains[%d]: %s is listed twice", i, name)
		}
		out = append(out, name)
	}
	return out, nil
}

// prefixed puts where in the body a nested decoding error happened.
func prefixed(where string, err error) error {
	return domain.Errorf(domain.Invalid, "%s: %s", where, domain.ErrorMessage(err))
}

// checkExpiry refuses an expiry that is not in the future or too far in it.
func checkExpiry(addr string, e *time.Time, now time.Time) error {
	if e == nil {
		return nil
	}
	if !e.After(now) {
		return domain.Errorf(domain.Invalid, "entries: %s: expiry %s is not in the future", addr, e.Format(time.RFC3339))
	}
	if e.After(now.Add(MaxExpiry)) {
		return domain.Errorf(domain.Invalid, "entries: %s: expiry may be at most %d years ahead", addr, int(MaxExpiry/(365*24*time.Hour)))
	}
	return nil
}

// Document is a set's editable fields as a JSON Patch / merge patch
// applies to them: the live entries in address order, inclusions as hrefs.
type Document struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Type        string     `json:"type"`
	Entries     []docEntry `json:"entries"`
	Inclusions  []string   `json:"inclusions"`
	Parameters  *Params    `json:"parameters,omitempty"`
}

type docEntry struct {
	Address     string     `json:"address"`
	Description string     `json:"description"`
	Expiry      *time.Time `json:"expiry,omitempty"`
}

func documentOf(a AddressSet) Document {
	d := Document{Name: a.Name, Description: a.Description, Type: a.Type, Inclusions: a.Inclusions, Parameters: a.Parameters, Entries: []docEntry{}}
	if a.Entries != nil {
		for _, e := range *a.Entries {
			d.Entries = append(d.Entries, docEntry{Address: e.Address, Description: e.Description, Expiry: e.Expiry})
		}
	}
	return d
}

func describeTooLarge(items int) error {
	return domain.Errorf(domain.Invalid, "this change writes %d items (entries added, changed or removed, and inclusions); one atomic change holds at most 100: split it into smaller PATCH requests", items)
}
