package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
// exist and not be being deleted (a conflict otherwise), and counts it in
// the account's usage item, which the account's deletion reads, on the
// condition that the account's metric_prototypes quota has room
// (domain.QuotaReached otherwise).
func (s *Metrics) CreateMetricPrototype(ctx context.Context, p domain.MetricPrototype) error {
	put, err := s.put(metricProtoKey(p), p)
	if err != nil {
		return err
	}
	q, err := s.quotaOf(ctx, p.Account, domain.ResourceMetricPrototypes)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "create metric prototype", []types.TransactWriteItem{put, {ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(p.Account), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK) AND attribute_not_exists(deleting)"),
	}}, s.usageOp(p.Account, q, 1)})
	switch {
	case txConditionFailedAt(err, 0):
		return domain.Duplicate("metric prototype", p.ID, "")
	case txConditionFailedAt(err, 1):
		return domain.AccountGone(p.Account)
	}
	if qerr := quotaRefused(err, 2, p.Account, q); qerr != nil {
		return qerr
	}
	return err
}

// GetMetricPrototype reads a prototype of account; one of another account
// is domain.ErrNotFound, exactly like a missing one.
func (s *Metrics) GetMetricPrototype(ctx context.Context, account, id string) (domain.MetricPrototype, error) {
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
func (s *Metrics) PageMetricPrototypes(ctx context.Context, account, after string, desc bool, n int) ([]domain.MetricPrototype, []string, bool, error) {
	return pageOf[domain.MetricPrototype](ctx, s.Table, collection{op: "list metric prototypes", index: IndexGSI1, pk: metricProtosGSI(account), skPrefix: metricProtosGSISKPrefix,
		tableKey: func(pos string) (string, string) { return metricProtoPK(idOf(pos)), skMetricProto }}, after, desc, n)
}

// DeleteMetricPrototype deletes a prototype of account and returns it as
// it was; one of another account is domain.ErrNotFound. A transaction
// returns no old item, so the prototype is read first (prototypes are
// never changed, so the one read is the one deleted); the delete and the
// account's usage count change in one transaction.
func (s *Metrics) DeleteMetricPrototype(ctx context.Context, account, id string) (domain.MetricPrototype, error) {
	ctx = withLists(ctx, metricProtoPK(id), skMetricProto, metricProtosGSI(account))
	p, err := s.GetMetricPrototype(ctx, account, id)
	if err != nil {
		return domain.MetricPrototype{}, err
	}
	err = s.transact(ctx, "delete metric prototype", []types.TransactWriteItem{{Delete: &types.Delete{
		TableName:                 aws.String(s.table),
		Key:                       key(metricProtoPK(id), skMetricProto),
		ConditionExpression:       aws.String("account = :acct"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":acct": avStr(account)},
	}}, s.usageOp(account, domain.Quota{Kind: usageMetricPrototypes}, -1)})
	if txConditionFailedAt(err, 0) {
		return domain.MetricPrototype{}, domain.ErrNotFound // a concurrent DELETE finished first
	}
	if err != nil {
		return domain.MetricPrototype{}, err
	}
	return p, nil
}
