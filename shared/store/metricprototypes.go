package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

const (
	skMetricProto = "METRICPROTO"
	// metricProtosGSISKPrefix starts the GSI1 sort key of a prototype in
	// its account's collection (created order, see page.go).
	metricProtosGSISKPrefix = "METRICPROTO#"
)

func metricProtoPK(id string) string        { return "METRICPROTO#" + id }
func metricProtosGSI(account string) string { return "METRICPROTOS#" + account }
func metricProtoKey(p domain.MetricPrototype) keyAttrs {
	return keyAttrs{PK: metricProtoPK(p.ID), SK: skMetricProto, GSI1PK: metricProtosGSI(p.Account),
		GSI1SK: metricProtosGSISKPrefix + createdPosition(p.Created, p.ID), Entity: "metric_prototype"}
}

// CreateMetricPrototype writes a new prototype of p.Account, which must
// exist and not be being deleted (a conflict otherwise).
func (s *Store) CreateMetricPrototype(ctx context.Context, p domain.MetricPrototype) error {
	put, err := s.put(metricProtoKey(p), p)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "create metric prototype", []types.TransactWriteItem{put, {ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(p.Account), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK) AND attribute_not_exists(deleting)"),
	}}})
	switch {
	case txConditionFailedAt(err, 0):
		return conflict(fmt.Sprintf("a metric prototype with id %q already exists", p.ID))
	case txConditionFailedAt(err, 1):
		return conflict("account " + p.Account + " is being deleted or no longer exists")
	}
	return err
}

// GetMetricPrototype reads a prototype of account; one of another account
// is domain.ErrNotFound, exactly like a missing one.
func (s *Store) GetMetricPrototype(ctx context.Context, account, id string) (domain.MetricPrototype, error) {
	var p domain.MetricPrototype
	if err := s.getItem(ctx, "get metric prototype", metricProtoPK(id), skMetricProto, &p); err != nil {
		return domain.MetricPrototype{}, err
	}
	if p.Account != account {
		return domain.MetricPrototype{}, domain.ErrNotFound
	}
	return p, nil
}

// PageMetricPrototypes reads at most n prototypes of account after
// position after in creation order (desc: newest first), with their
// positions and whether more may follow: one Query of n items.
func (s *Store) PageMetricPrototypes(ctx context.Context, account, after string, desc bool, n int) ([]domain.MetricPrototype, []string, bool, error) {
	return pageOf[domain.MetricPrototype](ctx, s, collection{op: "list metric prototypes", index: IndexGSI1, pk: metricProtosGSI(account), skPrefix: metricProtosGSISKPrefix,
		tableKey: func(pos string) (string, string) { return metricProtoPK(idOf(pos)), skMetricProto }}, after, desc, n)
}

// DeleteMetricPrototype deletes a prototype of account in one conditional
// delete and returns it as it was; one of another account is domain.ErrNotFound.
func (s *Store) DeleteMetricPrototype(ctx context.Context, account, id string) (domain.MetricPrototype, error) {
	ctx = withLists(ctx, metricProtoPK(id), skMetricProto, metricProtosGSI(account))
	res, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(metricProtoPK(id), skMetricProto),
		ConditionExpression:       aws.String("account = :acct"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":acct": avStr(account)},
		ReturnValues:              types.ReturnValueAllOld,
	})
	if ddb.IsConditionFailed(err) {
		return domain.MetricPrototype{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.MetricPrototype{}, wrap("delete metric prototype", err)
	}
	var p domain.MetricPrototype
	if err := attributevalue.UnmarshalMap(res.Attributes, &p); err != nil {
		return domain.MetricPrototype{}, fmt.Errorf("delete metric prototype: unmarshal: %w", err)
	}
	return p, nil
}
