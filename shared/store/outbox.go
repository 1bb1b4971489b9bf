package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// OutboxMarker is a queue message that a write still owes: written in the
// same transaction as the write it belongs to, so the message cannot be
// lost once the write committed (shared/outbox sends it; docs/data-model.md
// has its keys). The producer fills in Queue, Body and Due; the store
// decides where the item lives when the write places it (the writes take
// a *OutboxMarker and set its key), and whether it is Held.
type OutboxMarker struct {
	// Queue is the logical id of the queue (template.yaml) the message
	// goes to.
	Queue string `dynamodbav:"queue"`
	Body  string `dynamodbav:"body"`
	// Held markers belong to their consumer, which deletes them in the
	// transaction that records the message's effect (a task's outcome,
	// an address-set event's last fold step): until then every sweep
	// past Due sends the message again. Other markers go once the
	// message was sent.
	Held bool `dynamodbav:"held,omitempty"`
	// Due is when a sweep sends the message (again).
	Due time.Time `dynamodbav:"-"`

	pk, sk, gsk string
}

// Placed reports whether a write has given the marker its key.
func (m OutboxMarker) Placed() bool { return m.pk != "" }

// Key names the marker's item, for logs.
func (m OutboxMarker) Key() string { return m.pk + " " + m.sk }

const (
	// gsiOutbox is the GSI1 partition of every marker, sorted by due
	// time: "<due>#<PK>".
	gsiOutbox = "OUTBOX"
	skOutbox  = "OUTBOX"
)

// Marker items of their own: PK OUTBOX#<kind>#<id>, SK OUTBOX.
func invitationOutboxPK(inv domain.Invitation) string {
	return "OUTBOX#INVITATION#" + inv.AccountID + "#" + inv.Kind + "#" + inv.ID
}
func testRunOutboxPK(runID string) string { return "OUTBOX#TESTRUN#" + runID }

func outboxGSK(due time.Time, pk string) string { return due.UTC().Format(timeLayout) + "#" + pk }

// place gives m its key; held says whether its consumer deletes it.
func (m *OutboxMarker) place(pk, sk string, held bool) {
	m.pk, m.sk, m.Held = pk, sk, held
	m.gsk = outboxGSK(m.Due, pk)
}

// outboxKeys are the key attributes of a placed marker.
func (m *OutboxMarker) keys(entity string) keyAttrs {
	return keyAttrs{PK: m.pk, SK: m.sk, GSI1PK: gsiOutbox, GSI1SK: m.gsk, Entity: entity}
}

// outboxPut writes marker m of its own item (not held), placed at pk;
// unconditional, so a write that owes its message again (an invitation
// sent once more) replaces the marker with the new due time.
func (s *Table) outboxPut(m *OutboxMarker, pk string) (types.TransactWriteItem, error) {
	m.place(pk, skOutbox, false)
	it, err := item(m.keys("outbox"), m)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it}}, nil
}

// DueOutbox returns up to max markers, of every kind, whose due time is at
// or before now, earliest first.
func (s *Tasks) DueOutbox(ctx context.Context, now time.Time, max int) ([]OutboxMarker, error) {
	items, err := s.query(ctx, "due outbox", &dynamodb.QueryInput{
		IndexName:              aws.String(IndexGSI1),
		KeyConditionExpression: aws.String("GSI1PK = :pk AND GSI1SK < :bound"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			// '#' < '$': every "<due>#<PK>" with due <= now sorts below.
			":pk": avStr(gsiOutbox), ":bound": avStr(now.UTC().Format(timeLayout) + "$"),
		},
	}, max)
	if err != nil {
		return nil, err
	}
	out := make([]OutboxMarker, 0, len(items))
	for _, it := range items {
		var m OutboxMarker
		if err := attributevalue.UnmarshalMap(it, &m); err != nil {
			return nil, fmt.Errorf("due outbox: unmarshal: %w", err)
		}
		pk, _ := it[AttrPK].(*types.AttributeValueMemberS)
		sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
		gsk, _ := it[AttrGSI1SK].(*types.AttributeValueMemberS)
		if pk == nil || sk == nil || gsk == nil {
			continue
		}
		m.pk, m.sk, m.gsk = pk.Value, sk.Value, gsk.Value
		due, _, _ := strings.Cut(gsk.Value, "#")
		m.Due, _ = time.Parse(time.RFC3339, due)
		out = append(out, m)
	}
	return out, nil
}

// PostponeOutbox moves m's due time to next, unless it changed or went
// away since it was read (then false: another sweep has it, its consumer
// finished, or it was sent). Only the sweep that moved it sends it; m
// then carries the new due time.
func (s *Tasks) PostponeOutbox(ctx context.Context, m *OutboxMarker, next time.Time) (bool, error) {
	gsk := outboxGSK(next, m.pk)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(m.pk, m.sk),
		UpdateExpression:    aws.String("SET GSI1SK = :next"),
		ConditionExpression: aws.String("GSI1SK = :old"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":next": avStr(gsk), ":old": avStr(m.gsk),
		},
	})
	if ddb.IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, wrap("postpone outbox", err)
	}
	m.gsk, m.Due = gsk, next
	return true, nil
}

// DeleteOutbox deletes a marker that is not held once its message was
// sent. It is conditional on the due time m was read or written with: a
// marker that a sweep moved meanwhile, or that a later write replaced,
// stays (its message is sent again, which consumers tolerate). false when
// the condition failed.
func (s *Tasks) DeleteOutbox(ctx context.Context, m OutboxMarker) (bool, error) {
	if m.Held || !m.Placed() {
		return false, fmt.Errorf("delete outbox %s: a held or unplaced marker is not the sender's to delete", m.Key())
	}
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(m.pk, m.sk),
		ConditionExpression:       aws.String("GSI1SK = :gsk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":gsk": avStr(m.gsk)},
	})
	if ddb.IsConditionFailed(err) {
		return false, nil
	}
	return err == nil, wrap("delete outbox", err)
}
