package domain

import "time"

// AddressSet is the set item. Includers counts the sets that include this
// one (kept with ADD by their writes, never by this set's own writes): a set
// can be deleted only while it is 0.
type AddressSet struct {
	ID          string    `dynamodbav:"id"`
	Account     string    `dynamodbav:"account"`
	Name        string    `dynamodbav:"name"`
	Description string    `dynamodbav:"description,omitempty"`
	Type        string    `dynamodbav:"type"`
	Inclusions  []string  `dynamodbav:"inclusions,omitempty"`
	Domains     []string  `dynamodbav:"domains,omitempty"` // a domains set's parameters.domains
	Version     int       `dynamodbav:"version"`
	Includers   int       `dynamodbav:"includers,omitempty"`
	EntryCount  int       `dynamodbav:"entry_count"`
	CreatedBy   string    `dynamodbav:"created_by,omitempty"`
	Created     time.Time `dynamodbav:"created"`
	Updated     time.Time `dynamodbav:"updated"`
}

// AddressEntry is one entry item. Prefix is the normalized network
// (netip.Prefix form, e.g. 10.0.0.0/8 or 2001:db8::1/128), Address the form
// shown to clients (a single address without /32 or /128).
type AddressEntry struct {
	Set         string     `dynamodbav:"set"`
	Prefix      string     `dynamodbav:"prefix"`
	Address     string     `dynamodbav:"address"`
	Description string     `dynamodbav:"description,omitempty"`
	Expiry      *time.Time `dynamodbav:"expiry,omitempty"`
	CreatedBy   string     `dynamodbav:"created_by,omitempty"`
	Created     time.Time  `dynamodbav:"created"`
}

// ExpiredAt reports whether the entry has expired at t (it stops being
// listed at its expiry).
func (e AddressEntry) ExpiredAt(t time.Time) bool { return e.Expiry != nil && !t.Before(*e.Expiry) }
