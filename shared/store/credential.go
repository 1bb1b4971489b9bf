package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// LoadCredential reads, in parallel, the principal, the key and (when
// target != "") the target account with one BatchGetItem, and the
// principal's grants with one Query. A missing principal or key is
// domain.ErrNotFound.
func (s *Store) LoadCredential(ctx context.Context, principal, keyID, target string) (domain.Credential, error) {
	var (
		c         domain.Credential
		wg        sync.WaitGroup
		batch     []map[string]types.AttributeValue
		batchErr  error
		grantsErr error
	)
	keys := []map[string]types.AttributeValue{key(principalPK(principal), skPrincipal), key(principalPK(principal), keySK(keyID))}
	if target != "" {
		keys = append(keys, key(accountPK(target), skAccount))
	}
	wg.Add(2)
	go func() { defer wg.Done(); batch, batchErr = ddb.BatchGet(ctx, s.db, s.table, keys) }()
	go func() { defer wg.Done(); c.Grants, grantsErr = s.Grants(ctx, principal) }()
	wg.Wait()
	if batchErr != nil {
		return c, wrap("load credential", batchErr)
	}
	if grantsErr != nil {
		return c, grantsErr
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
