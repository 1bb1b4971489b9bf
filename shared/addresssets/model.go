// Package addresssets serves the address sets (docs/api.md#address-sets): sets of IPv4
// and IPv6 addresses and CIDR blocks (manual, dynamic, or combined from
// other sets), entries that expire, transitive inclusion, and the metrics
// events every change of an entry produces. Sets belong to the account the
// caller is authenticated into.
package addresssets

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"cads/shared/domain"
	"cads/shared/store"
)

// Set types. A domains set holds no entries: its parameters.domains say
// which addresses belong to it (those whose forward-confirmed reverse DNS
// name is in one of the domains), decided where an address is tested. The
// reference document also names json-file and text-file sets, which fetch
// their entries from elsewhere; this service does not fetch, so it
// refuses them.
const (
	TypeManual   = "manual"
	TypeDynamic  = "dynamic"
	TypeCombined = "combined"
	TypeDomains  = "domains"
)

// Limits (docs/metrics.md and docs/data-model.md say why).
const (
	MaxNameLen        = 50
	MaxDescriptionLen = 500
	MaxEntryDescLen   = 256
	// MaxEntries bounds the live entries of one set, so that a set (about
	// 100 bytes per entry) stays far below Lambda's 6 MB response.
	MaxEntries = 10000
	// MaxInclusions bounds the sets one set includes directly, and
	// MaxReachable the sets reachable from one set through inclusions
	// (itself included): a change of inclusions checks all of them in its
	// transaction, and /addresses reads all of them.
	MaxInclusions = 10
	MaxReachable  = 25
	// MaxDomains bounds a domains set's parameters.domains.
	MaxDomains = 100
	// MaxExpiry bounds how far ahead an expiry may be.
	MaxExpiry = 10 * 365 * 24 * time.Hour
)

// AddressSet is the wire shape of a set. Entries are present in the
// responses about one set and omitted from the listing (see docs).
type AddressSet struct {
	ID          string    `json:"id"`
	Href        string    `json:"href"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Type        string    `json:"type"`
	Entries     *[]Entry  `json:"entries,omitempty"`
	Inclusions  []string  `json:"inclusions"`
	Parameters  *Params   `json:"parameters,omitempty"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
}

// Params are a set's parameters: only domains sets have them.
type Params struct {
	Domains []string `json:"domains"`
}

// Entry is the wire shape of an entry (AddressSetEntry). AddressSet is set
// only by /addresses, where entries come from several sets.
type Entry struct {
	Address     string     `json:"address"`
	Description string     `json:"description"`
	Expiry      *time.Time `json:"expiry,omitempty"`
	Created     time.Time  `json:"created"`
	CreatedBy   string     `json:"created_by,omitempty"`
	AddressSet  string     `json:"address_set,omitempty"`
}

// Href is a set's href.
func Href(id string) string { return "/v2/address-sets/" + id }

// SetOut is a set as its body shows it at now (withEntries: its live
// entries too, as a single set shows them; a listing does not).
func SetOut(st store.AddressSetState, now time.Time, withEntries bool) AddressSet {
	a := st.Set
	out := AddressSet{ID: a.ID, Href: Href(a.ID), Name: a.Name, Description: a.Description, Type: a.Type,
		Inclusions: make([]string, 0, len(a.Inclusions)), Created: a.Created, Updated: a.Updated}
	for _, id := range a.Inclusions {
		out.Inclusions = append(out.Inclusions, Href(id))
	}
	if a.Type == TypeDomains {
		out.Parameters = &Params{Domains: slices.Clone(a.Domains)}
	}
	if withEntries {
		es := visible(st.Entries, now)
		list := make([]Entry, 0, len(es))
		for _, e := range es {
			list = append(list, entryOut(e))
		}
		out.Entries = &list
	}
	return out
}

func entryOut(e domain.AddressEntry) Entry {
	return Entry{Address: e.Address, Description: e.Description, Expiry: e.Expiry, Created: e.Created, CreatedBy: e.CreatedBy}
}

// visible returns the entries that have not expired at now, in address
// order.
func visible(es []domain.AddressEntry, now time.Time) []domain.AddressEntry {
	out := make([]domain.AddressEntry, 0, len(es))
	for _, e := range es {
		if !e.ExpiredAt(now) {
			out = append(out, e)
		}
	}
	sortEntries(out)
	return out
}

func sortEntries(es []domain.AddressEntry) {
	slices.SortFunc(es, func(a, b domain.AddressEntry) int { return comparePrefix(a.Prefix, b.Prefix) })
}

// comparePrefix orders networks by address (IPv4 first), then by length.
func comparePrefix(a, b string) int {
	pa, ea := netip.ParsePrefix(a)
	pb, eb := netip.ParsePrefix(b)
	if ea != nil || eb != nil {
		return strings.Compare(a, b)
	}
	if c := pa.Addr().Compare(pb.Addr()); c != 0 {
		return c
	}
	return pa.Bits() - pb.Bits()
}

// parseAddress reads an entry's address: an IPv4 or IPv6 address, or a
// CIDR block whose host bits are zero. IPv4-mapped IPv6 addresses are
// stored as IPv4; zones are refused. It returns the normalized prefix (the
// entry's identity) and the form shown to clients.
func parseAddress(s string) (netip.Prefix, string, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, "", fmt.Errorf("%q is not an IP address or CIDR block", domain.Clip(s, 64))
		}
		if p.Addr().Zone() != "" {
			return netip.Prefix{}, "", fmt.Errorf("%q: zones are not allowed", domain.Clip(s, 64))
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return netip.Prefix{}, "", fmt.Errorf("%q mixes IPv4-mapped and IPv6 space", domain.Clip(s, 64))
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		if m := p.Masked(); m != p {
			return netip.Prefix{}, "", fmt.Errorf("%q has host bits set; did you mean %s?", domain.Clip(s, 64), m)
		}
		if p.IsSingleIP() {
			return p, p.Addr().String(), nil
		}
		return p, p.String(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, "", fmt.Errorf("%q is not an IP address or CIDR block", domain.Clip(s, 64))
	}
	if a.Zone() != "" {
		return netip.Prefix{}, "", fmt.Errorf("%q: zones are not allowed", domain.Clip(s, 64))
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), a.String(), nil
}

// later reports whether expiry a is later than b (no expiry is latest).
func later(a, b *time.Time) bool {
	switch {
	case a == nil:
		return b != nil
	case b == nil:
		return false
	}
	return a.After(*b)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
