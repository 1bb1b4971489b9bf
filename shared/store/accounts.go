package store

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"

	"cads/shared/ddb"
)

// GetAccount reads one account.
func (s *Store) GetAccount(ctx context.Context, id string) (Account, error) {
	var a Account
	err := s.getItem(ctx, "get account", accountPK(id), skAccount, &a)
	return a, err
}

// accountWrites are the items that create an account: the account itself
// and the reservation of its name, which makes names unique across all
// accounts even under concurrent creates (the second transaction fails its
// condition).
func (s *Store) accountWrites(a Account) []keyAttrsValue {
	return []keyAttrsValue{
		{keyAttrs{PK: accountPK(a.ID), SK: skAccount, GSI1PK: childrenGSI(a.Parent), GSI1SK: accountPK(a.ID), Entity: "account"}, a},
		{keyAttrs{PK: accountNamePK(a.Name), SK: skAccountName, Entity: "account_name"}, struct {
			Account string `dynamodbav:"account"`
		}{a.ID}},
	}
}

type keyAttrsValue struct {
	k keyAttrs
	v any
}

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

// CreateAccount writes an account, its name reservation and its roles (the
// control roles of spec 5.6.1) in one transaction: all or nothing. A taken
// name is a *ConflictError, also when two creates race.
func (s *Store) CreateAccount(ctx context.Context, a Account, roles []Role) error {
	kvs := s.accountWrites(a)
	for _, r := range roles {
		kvs = append(kvs, keyAttrsValue{roleKey(r), r})
	}
	items, err := s.puts(kvs)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "create account", items)
	if errors.Is(err, ddb.ErrConditionFailed) {
		return &ConflictError{Msg: "an account named " + strconv.Quote(a.Name) + " already exists; choose another name"}
	}
	return err
}
