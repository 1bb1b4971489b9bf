package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// wrap gives the client an answer it can act on for what DynamoDB refuses
// after the client's retries: contention is a 429, an item over the size
// limit a 400 naming it; anything else stays internal.
func TestWrapMapsWhatTheClientCanActOn(t *testing.T) {
	conflict := &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"),
		CancellationReasons: []types.CancellationReason{{Code: aws.String("None")}, {Code: aws.String("TransactionConflict")}}}
	conditionToo := &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"),
		CancellationReasons: []types.CancellationReason{{Code: aws.String("ConditionalCheckFailed")}, {Code: aws.String("TransactionConflict")}}}
	txTooLarge := &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"),
		CancellationReasons: []types.CancellationReason{{Code: aws.String("ValidationError"), Message: aws.String("Item size to update has exceeded the maximum allowed size")}}}
	cases := []struct {
		name string
		err  error
		code string
		text string
	}{
		{"conflict-only transaction", ddb.MapError(conflict), domain.Throttled, ""},
		{"single-item conflict", &smithy.GenericAPIError{Code: "TransactionConflictException", Message: "Transaction is ongoing for the item"}, domain.Throttled, ""},
		{"throughput", &types.ProvisionedThroughputExceededException{Message: aws.String("exceeded")}, domain.Throttled, ""},
		{"condition and conflict", ddb.MapError(conditionToo), domain.Internal, ""},
		{"update over the size limit", &smithy.GenericAPIError{Code: "ValidationException", Message: "Item size has exceeded the maximum allowed size"}, domain.Invalid, "400 KB"},
		{"transaction over the size limit", ddb.MapError(txTooLarge), domain.Invalid, "400 KB"},
		{"client-side size check", fmt.Errorf("x: %w", ddb.ErrItemTooLarge), domain.Invalid, "400 KB"},
		{"deadline", fmt.Errorf("op: %w", context.DeadlineExceeded), domain.Throttled, ""},
		{"another validation error", &smithy.GenericAPIError{Code: "ValidationException", Message: "One or more parameter values were invalid"}, domain.Internal, ""},
	}
	for _, c := range cases {
		err := wrap("op", c.err)
		if got := domain.ErrorCode(err); got != c.code || !strings.Contains(domain.ErrorMessage(err), c.text) {
			t.Errorf("%s: %s %q, want %s containing %q", c.name, got, domain.ErrorMessage(err), c.code, c.text)
		}
	}
}

// item() refuses an item over 400 KB with a 400 naming the entity and the limit.
func TestItemOverTheLimitIsA400(t *testing.T) {
	_, err := item(keyAttrs{PK: "RBAC#a", SK: "ROLE#r", Entity: "role"}, map[string]string{"description": strings.Repeat("x", ddb.MaxItemBytes)})
	if domain.ErrorCode(err) != domain.Invalid || !strings.Contains(domain.ErrorMessage(err), "the role would take") || !strings.Contains(domain.ErrorMessage(err), "400 KB") {
		t.Fatalf("err = %v (%s), want a 400 naming the role and the 400 KB limit", err, domain.ErrorCode(err))
	}
}
