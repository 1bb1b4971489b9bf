package store

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// ErrInstalled means the table was bootstrapped already.
var ErrInstalled = errors.New("already installed")

// GetInstallation reads the installation marker (domain.ErrNotFound before the
// first bootstrap).
func (s *Installation) GetInstallation(ctx context.Context) (domain.Installation, error) {
	var in domain.Installation
	err := s.getItem(ctx, "get installation", pkInstallation, pkInstallation, &in)
	return in, err
}

// Install writes the plan in one transaction guarded by the installation
// marker: either everything exists afterwards or nothing was written, and a
// second bootstrap (or two racing ones) finds ErrInstalled.
func (s *Installation) Install(ctx context.Context, p domain.InstallPlan) error {
	kvs := []keyAttrsValue{{keyAttrs{PK: pkInstallation, SK: pkInstallation, Entity: "installation"}, p.Installation}}
	kvs = append(kvs, s.repos.Accounts.accountWrites(p.Root, p.Root)...)
	for _, r := range p.Roles {
		kvs = append(kvs, keyAttrsValue{roleKey(r), r})
	}
	kvs = append(kvs, s.repos.Principals.principalWrites(p.Operator)...)
	for _, g := range p.Grants {
		kvs = append(kvs, keyAttrsValue{grantKey(g), g})
	}
	kvs = append(kvs, keyAttrsValue{accessKeyKey(p.Key), p.Key})
	items, err := s.puts(kvs)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "install", items)
	if errors.Is(err, ddb.ErrConditionFailed) {
		var tx *ddb.TxCanceledError
		if errors.As(err, &tx) {
			for _, r := range tx.Reasons {
				// Item 0 is the marker: the installation exists. Anything
				// else colliding is a real conflict.
				if r.Index == 0 && r.Code == ddb.ReasonConditionalCheckFailed {
					return ErrInstalled
				}
			}
		}
		return domain.InstallCollides
	}
	return err
}

const skRolesUpgrade = "ROLESUPGRADE"

// GetRolesUpgrade reads the built-in roles upgrade's progress
// (domain.ErrNotFound before the first upgrade).
func (s *Installation) GetRolesUpgrade(ctx context.Context) (domain.RolesUpgrade, error) {
	var u domain.RolesUpgrade
	err := s.getItem(ctx, "get roles upgrade", pkInstallation, skRolesUpgrade, &u)
	return u, err
}

// PutRolesUpgrade records the upgrade's progress, unless the table already
// records a later revision (a rolled-back deployment's older code must not
// move it back): then it is a *domain.Error.
func (s *Installation) PutRolesUpgrade(ctx context.Context, u domain.RolesUpgrade) error {
	m, err := item(keyAttrs{PK: pkInstallation, SK: skRolesUpgrade, Entity: "roles_upgrade"}, u)
	if err != nil {
		return err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     m,
		ConditionExpression:      aws.String("attribute_not_exists(PK) OR #rev <= :rev"),
		ExpressionAttributeNames: map[string]string{"#rev": "revision"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":rev": avNum(int64(u.Revision)),
		},
	})
	if ddb.IsConditionFailed(err) {
		return domain.AheadOf("the table's built-in roles are at a later revision", u.Revision)
	}
	return wrap("put roles upgrade", err)
}
