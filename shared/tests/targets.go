package tests

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strings"

	"cads/shared/domain"
	"cads/shared/loadgen"
)

// A test loads only the account's own applications: every request URL
// must name, as its host, an alias of one of the account's applications,
// and the runner delivers it to the platform's edge for that alias, never
// to an address taken from the URL (docs/application-tests.md).

// aliasReader reads alias claims.
type aliasReader interface {
	AliasAccounts(ctx context.Context, aliases []string) (map[string]string, error)
}

// OwnAliases is the set of the hosts urls name that are aliases of the
// account's applications, in their stored (lower-case) spelling. It reads
// the claims of those hosts (the base table, consistently), not the
// account's applications through GSI1: that index may not show an
// application created a moment ago, and a refusal must not come from a
// stale read.
func OwnAliases(ctx context.Context, st aliasReader, account string, urls []string) (map[string]bool, error) {
	var hosts []string
	for _, u := range urls {
		if a, ok := aliasOf(u); ok {
			hosts = append(hosts, a)
		}
	}
	claims, err := st.AliasAccounts(ctx, hosts)
	if err != nil {
		return nil, fmt.Errorf("read the alias claims: %w", err)
	}
	own := map[string]bool{}
	for alias, acct := range claims {
		if acct == account {
			own[alias] = true
		}
	}
	return own, nil
}

// ConfigURLs is every request URL of c.
func ConfigURLs(c *Config) []string {
	var out []string
	for _, m := range c.Models {
		for _, r := range m.Session.Requests {
			out = append(out, r.URL)
		}
		for _, r := range m.Session.Constants {
			out = append(out, r.URL)
		}
	}
	return out
}

// planURLs is every request URL of p.
func planURLs(p *loadgen.Plan) []string {
	var out []string
	for _, s := range p.Sessions {
		for _, r := range s.Requests {
			out = append(out, r.URL)
		}
		for _, r := range s.Constants {
			out = append(out, r.URL)
		}
	}
	return out
}

// aliasOf is the alias a request URL names, compared as aliases are
// stored: lower case. Only a bare ASCII host name can be one: a port, an
// IP literal or a non-ASCII spelling (which Unicode case folding could
// turn into an ASCII alias, as the Kelvin sign folds to "k") is not.
func aliasOf(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || strings.Contains(u.Host, ":") {
		return "", false
	}
	for i := 0; i < len(u.Host); i++ {
		if u.Host[i] >= 0x80 {
			return "", false
		}
	}
	if _, err := netip.ParseAddr(u.Host); err == nil {
		return "", false
	}
	return strings.ToLower(u.Host), true
}

// hostOf is a URL's host as a message names it.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return raw
}

// CheckTargets refuses a configuration with a request URL whose host is
// not an alias of the account's applications: a 400 naming the file, the
// request and the host.
func CheckTargets(c *Config, aliases map[string]bool) error {
	for _, m := range c.Models {
		file := m.File
		if file == "" {
			file = c.File + ": models." + m.Name
		}
		check := func(kind string, rs []Request) error {
			for i, r := range rs {
				if a, ok := aliasOf(r.URL); !ok || !aliases[a] {
					return domain.Errorf(domain.Invalid, "%s: %s[%d].url: host %q is not an alias of an application of this account; a test sends only to the account's own applications, named by an alias alone (no port, no address)",
						file, kind, i, hostOf(r.URL))
				}
			}
			return nil
		}
		if err := check("requests", m.Session.Requests); err != nil {
			return err
		}
		if err := check("constants", m.Session.Constants); err != nil {
			return err
		}
	}
	return nil
}

// refuseForeign marks the plan's requests whose host is no longer an alias
// of the account's applications (an alias removed or an application
// deleted since the upload): they are counted as errors, not sent. It
// returns one sentence per such host.
func refuseForeign(p *loadgen.Plan, aliases map[string]bool) []string {
	refused := map[string]string{}
	mark := func(rs []loadgen.Request) {
		for i := range rs {
			if a, ok := aliasOf(rs[i].URL); ok && aliases[a] {
				continue
			}
			h := hostOf(rs[i].URL)
			msg := fmt.Sprintf("not sent: host %q is not an alias of an application of this account", h)
			rs[i].Refused, refused[h] = msg, msg
		}
	}
	for si := range p.Sessions {
		mark(p.Sessions[si].Requests)
		mark(p.Sessions[si].Constants)
	}
	out := make([]string, 0, len(refused))
	for _, msg := range refused {
		out = append(out, msg)
	}
	sort.Strings(out)
	return out
}
