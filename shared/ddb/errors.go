package ddb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// ErrConditionFailed matches (errors.Is) a failed condition expression:
// a *TxCanceledError with a ConditionalCheckFailed reason, or a plain
// ConditionalCheckFailedException passed through MapError. IsConditionFailed
// also recognises the raw SDK errors.
var ErrConditionFailed = errors.New("ddb: conditional check failed")

// Cancellation reason codes DynamoDB reports in TransactionCanceledException.
const (
	ReasonNone                          = "None"
	ReasonConditionalCheckFailed        = "ConditionalCheckFailed"
	ReasonTransactionConflict           = "TransactionConflict"
	ReasonThrottlingError               = "ThrottlingError"
	ReasonProvisionedThroughputExceeded = "ProvisionedThroughputExceeded"
	ReasonItemCollectionSizeLimit       = "ItemCollectionSizeLimitExceeded"
	ReasonValidationError               = "ValidationError"
)

// TxReason is why one action of a canceled transaction failed.
type TxReason struct {
	Index   int    // position of the action in TransactItems
	Code    string // e.g. "ConditionalCheckFailed", "TransactionConflict"
	Message string
	// Item is the item's old image when the action set
	// ReturnValuesOnConditionCheckFailure to ALL_OLD.
	Item map[string]types.AttributeValue
}

// TxCanceledError is a TransactionCanceledException with its cancellation
// reasons decoded. Reasons lists only the actions that failed (code other
// than "None"), with their index. errors.Is(err, ErrConditionFailed) is true
// when any reason is ConditionalCheckFailed; errors.As to
// *types.TransactionCanceledException still works.
type TxCanceledError struct {
	Message string
	Reasons []TxReason
	err     *types.TransactionCanceledException
}

func newTxCanceledError(e *types.TransactionCanceledException) *TxCanceledError {
	t := &TxCanceledError{Message: aws.ToString(e.Message), err: e}
	for i, r := range e.CancellationReasons {
		code := aws.ToString(r.Code)
		if code == "" || code == ReasonNone {
			continue
		}
		t.Reasons = append(t.Reasons, TxReason{Index: i, Code: code, Message: aws.ToString(r.Message), Item: r.Item})
	}
	return t
}

func (e *TxCanceledError) Error() string {
	var b strings.Builder
	b.WriteString("ddb: transaction canceled")
	for i, r := range e.Reasons {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "item %d: %s", r.Index, r.Code)
		if r.Message != "" {
			b.WriteString(" (" + r.Message + ")")
		}
	}
	if len(e.Reasons) == 0 && e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Unwrap returns the SDK's *types.TransactionCanceledException.
func (e *TxCanceledError) Unwrap() error { return e.err }

// Is reports whether target is ErrConditionFailed and a reason is a condition failure.
func (e *TxCanceledError) Is(target error) bool {
	return target == ErrConditionFailed && e.HasReason(ReasonConditionalCheckFailed)
}

// HasReason reports whether any action failed with the given code.
func (e *TxCanceledError) HasReason(code string) bool {
	for _, r := range e.Reasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

// Conflict reports whether the transaction lost a race with another
// transaction on one of its items (retrying may succeed).
func (e *TxCanceledError) Conflict() bool { return e.HasReason(ReasonTransactionConflict) }

// MapError normalises DynamoDB errors for callers:
//   - a ConditionalCheckFailedException is wrapped so that
//     errors.Is(err, ErrConditionFailed) is true (errors.As to
//     *types.ConditionalCheckFailedException still works, e.g. for its Item);
//   - a TransactionCanceledException becomes a *TxCanceledError;
//   - anything else (including nil) is returned unchanged.
func MapError(err error) error {
	if err == nil || errors.Is(err, ErrConditionFailed) {
		return err
	}
	var tx *TxCanceledError
	if errors.As(err, &tx) {
		return err
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		return newTxCanceledError(tce)
	}
	if apiErrorCode(err) == "ConditionalCheckFailedException" {
		return fmt.Errorf("%w: %w", ErrConditionFailed, err)
	}
	return err
}

// IsConditionFailed reports whether err is a failed condition expression:
// anything matching ErrConditionFailed, a raw ConditionalCheckFailedException,
// or a raw TransactionCanceledException with a ConditionalCheckFailed reason.
func IsConditionFailed(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrConditionFailed) || apiErrorCode(err) == "ConditionalCheckFailedException" {
		return true
	}
	var tce *types.TransactionCanceledException
	return errors.As(err, &tce) && errors.Is(newTxCanceledError(tce), ErrConditionFailed)
}

// IsThrottled reports whether err is DynamoDB throttling:
// ProvisionedThroughputExceededException, ThrottlingException,
// RequestLimitExceeded, or a canceled transaction with a ThrottlingError or
// ProvisionedThroughputExceeded reason. (The SDK has already retried such
// errors by the time a caller sees them.)
func IsThrottled(err error) bool {
	if err == nil {
		return false
	}
	switch apiErrorCode(err) {
	case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded":
		return true
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		tx := newTxCanceledError(tce)
		return tx.HasReason(ReasonThrottlingError) || tx.HasReason(ReasonProvisionedThroughputExceeded)
	}
	return false
}

func apiErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
