package domain

import (
	"regexp"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"
)

var nonKeyword = regexp.MustCompile(`[^a-z0-9]+`)

// Keyword derives an account keyword from its name: transliterated to
// lower-case ASCII, runs of anything else turned into one dash
// ("Éxito S.A." -> "exito-s-a").
func Keyword(name string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(strings.ToLower(name)) {
		if r < 128 {
			b.WriteRune(r)
		} else if r >= 0x300 && r <= 0x36f {
			continue // combining accents dropped by the decomposition above
		} else {
			b.WriteByte(' ')
		}
	}
	return strings.Trim(nonKeyword.ReplaceAllString(b.String(), "-"), "-")
}

// AccountRecord is the whole account item: the Account that the authorizer
// and the other families read, plus what only the accounts function uses.
// Embedding keeps one item shape, so readers of Account are unaffected.
type AccountRecord struct {
	Account
	LogRetention []LogRetention `dynamodbav:"log_retention,omitempty"`
	// Deleting is set while DELETE /v2/accounts/{id} runs: it refuses new
	// sub-accounts, entitlements and edits, so nothing is added to an
	// account between the check that it is empty and its removal.
	Deleting *time.Time `dynamodbav:"deleting,omitempty"`
}

// LogRetention is the retention of an account's non-application logs
// (field names from the reference document).
type LogRetention struct {
	Type                  string `dynamodbav:"type"`
	OnlineDays            int    `dynamodbav:"online_days,omitempty"`
	ArchiveDays           int    `dynamodbav:"archive_days,omitempty"`
	OnlineSpaceAllowance  int    `dynamodbav:"online_space_allowance,omitempty"`
	ArchiveSpaceAllowance int    `dynamodbav:"archive_space_allowance,omitempty"`
}

// Leftovers is what keeps an account from being deleted.
type Leftovers struct{ SubAccounts, Applications, AddressSets, Tests, MetricPrototypes bool }

// Any reports whether anything is left.
func (l Leftovers) Any() bool {
	return l.SubAccounts || l.Applications || l.AddressSets || l.Tests || l.MetricPrototypes
}

func (l Leftovers) String() string {
	var parts []string
	if l.SubAccounts {
		parts = append(parts, "sub-accounts")
	}
	if l.Applications {
		parts = append(parts, "applications")
	}
	if l.AddressSets {
		parts = append(parts, "address sets")
	}
	if l.Tests {
		parts = append(parts, "application tests")
	}
	if l.MetricPrototypes {
		parts = append(parts, "metric prototypes")
	}
	switch len(parts) {
	case 0:
		return "nothing"
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// Limits of account fields that size the account item; the accounts
// function validates against them and the store's MaxAccountDepth assumes
// them.
const (
	AccountNameMaxRunes    = 100
	AccountKeywordMaxBytes = 100
)
