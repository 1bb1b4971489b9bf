package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

const (
	prefixInvoice = "INVOICE#"
	prefixPayment = "PAYMENT#"
)

func invoiceKey(inv domain.Invoice) keyAttrs {
	return keyAttrs{PK: accountPK(inv.Account), SK: prefixInvoice + inv.Period, Entity: "invoice"}
}

func paymentKey(p domain.Payment) keyAttrs {
	return keyAttrs{PK: accountPK(p.Account), SK: prefixPayment + p.ID, Entity: "payment"}
}

// LoadBilling reads an account's whole partition (the account, its
// entitlements, closed invoices, payments and usage counts) with one
// Query: one round trip, whatever the number of applications. The
// applications counted are the account's usage item (USAGE#applications),
// which the create and delete transactions keep (usageOp); a missing item
// is an account that never had one (docs/data-model.md, Billing). A
// missing account is domain.ErrNotFound.
func (s *Accounts) LoadBilling(ctx context.Context, account string) (domain.Billing, error) {
	var b domain.Billing
	items, err := s.query(ctx, "load billing", partitionQuery(accountPK(account)), 0)
	if err != nil {
		return b, err
	}
	b.Usage.Measured = s.now()
	found := false
	for _, it := range items {
		var k keyAttrs
		if err := attributevalue.UnmarshalMap(it, &k); err != nil {
			return b, fmt.Errorf("load billing: %w", err)
		}
		var err error
		switch {
		case k.SK == usageSK(domain.ResourceApplications):
			// Written only by ADD updates: no entity attribute.
			var u usage
			err = attributevalue.UnmarshalMap(it, &u)
			b.Usage.Applications = u.N
		case strings.HasPrefix(k.SK, prefixUsage):
			var u usage
			err = attributevalue.UnmarshalMap(it, &u)
			if b.Counts == nil {
				b.Counts = map[string]int{}
			}
			b.Counts[strings.TrimPrefix(k.SK, prefixUsage)] = u.N
		case k.Entity == "account":
			found, err = true, attributevalue.UnmarshalMap(it, &b.Account)
		case k.Entity == "entitlement":
			var e domain.Entitlement
			err = attributevalue.UnmarshalMap(it, &e)
			b.Entitlements = append(b.Entitlements, e)
		case k.Entity == "invoice":
			var inv domain.Invoice
			err = attributevalue.UnmarshalMap(it, &inv)
			b.Invoices = append(b.Invoices, inv)
		case k.Entity == "payment":
			var p domain.Payment
			err = attributevalue.UnmarshalMap(it, &p)
			b.Payments = append(b.Payments, p)
		}
		if err != nil {
			return b, fmt.Errorf("load billing: unmarshal %s: %w", k.Entity, err)
		}
	}
	if !found {
		return b, domain.ErrNotFound
	}
	return b, nil
}

// CloseInvoices stores invoices of months that have ended, each only if
// that month is not stored yet, and returns them as stored: when a
// concurrent read froze a month first, its invoice is the one returned.
// The puts run in parallel (at most ddb.MaxParallelBatches at once).
func (s *Accounts) CloseInvoices(ctx context.Context, invs []domain.Invoice) ([]domain.Invoice, error) {
	out := make([]domain.Invoice, len(invs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(ddb.MaxParallelBatches)
	for i, inv := range invs {
		g.Go(func() (err error) { out[i], err = s.closeInvoice(gctx, inv); return err })
	}
	err := g.Wait()
	return out, err
}

func (s *Accounts) closeInvoice(ctx context.Context, inv domain.Invoice) (domain.Invoice, error) {
	m, err := item(invoiceKey(inv), inv)
	if err != nil {
		return inv, err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                m,
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	})
	if ddb.IsConditionFailed(err) {
		var stored domain.Invoice
		k := invoiceKey(inv)
		return stored, s.getItem(ctx, "get invoice", k.PK, k.SK, &stored)
	}
	return inv, wrap("close invoice", err)
}

// RecordPayment stores a payment received from an account. It is how the
// platform operator records payments: the API has no route for it (billing
// is read only: GET .../billing). The amount must be positive and the
// date a day that is not in the future; the account must exist.
func (s *Accounts) RecordPayment(ctx context.Context, p domain.Payment) error {
	if p.AmountCents <= 0 {
		return fmt.Errorf("record payment: amount must be positive, not %d cents", p.AmountCents)
	}
	d, err := time.Parse(time.DateOnly, p.Date)
	if err != nil {
		return fmt.Errorf("record payment: date %q is not YYYY-MM-DD", p.Date)
	}
	if d.After(s.now()) {
		return fmt.Errorf("record payment: date %s is in the future", p.Date)
	}
	put, err := s.put(paymentKey(p), p)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "record payment", []types.TransactWriteItem{put, {ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(p.Account), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}}})
	var tx *ddb.TxCanceledError
	if errors.As(err, &tx) && tx.HasReason(ddb.ReasonConditionalCheckFailed) {
		for _, r := range tx.Reasons {
			if r.Index == 0 {
				return domain.Duplicate("payment", p.ID, "")
			}
		}
		return domain.ErrNotFound
	}
	return err
}
