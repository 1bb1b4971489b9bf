package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// LoadCredential reads, in parallel, the principal, the key and (when
// target != "") the target account with one BatchGetItem, and the first
// `grants` of the principal's grants in key order with one Query (none,
// and no Query, when grants is 0; Credential.MoreGrants says whether
// GrantsAfter has more). A missing principal or key is domain.ErrNotFound.
func (s *Principals) LoadCredential(ctx context.Context, principal, keyID, target string, grants int) (domain.Credential, error) {
	var (
		c     domain.Credential
		batch []map[string]types.AttributeValue
	)
	keys := []map[string]types.AttributeValue{key(principalPK(principal), skPrincipal), key(principalPK(principal), keySK(keyID))}
	if target != "" {
		keys = append(keys, key(accountPK(target), skAccount))
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		batch, err = ddb.BatchGetConsistent(gctx, s.db, s.table, keys)
		return wrap("load credential", err)
	})
	if grants > 0 {
		g.Go(func() (err error) {
			c.Grants, c.MoreGrants, err = s.repos.Roles.grantsPage(gctx, principal, nil, grants)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return c, err
	}
	var havePrincipal, haveKey bool
	for _, it := range batch {
		var k keyAttrs
		if err := attributevalue.UnmarshalMap(it, &k); err != nil {
			return c, fmt.Errorf("load credential: %w", err)
		}
		var err error
		switch k.Entity {
		case "principal":
			havePrincipal, err = true, attributevalue.UnmarshalMap(it, &c.Principal)
		case "access_key":
			haveKey, err = true, attributevalue.UnmarshalMap(it, &c.Key)
		case "account":
			c.Target = &domain.Account{}
			err = attributevalue.UnmarshalMap(it, c.Target)
		}
		if err != nil {
			return c, fmt.Errorf("load credential: unmarshal %s: %w", k.Entity, err)
		}
	}
	if !havePrincipal || !haveKey {
		return c, domain.ErrNotFound
	}
	return c, nil
}
