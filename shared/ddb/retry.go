package ddb

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	sdkretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/retry"
)

// RetryPolicy is how a client retries a call DynamoDB refused only for
// contention or throttling: at most MaxAttempts attempts in all, retry n
// after a full-jitter wait of retry.Delay(n, Base, Max).
type RetryPolicy struct {
	MaxAttempts int
	Base, Max   time.Duration
}

// DefaultRetries is the policy of every client the project builds. A 25 ms
// base lets a transaction that lost to another one by a few milliseconds
// go through at once. Twenty attempts, not the ten AWS's SDKs once gave
// DynamoDB: eight writers on one item keep it held by one transaction or
// another much of the time, and with ten a few in a few hundred still
// found it held every time (a DynamoDB stand-in holding a transaction's
// items 20 ms). The budget then waits about eight seconds on average, at
// most fifteen, and never past the deadline (NewRetryer).
var DefaultRetries = RetryPolicy{MaxAttempts: 20, Base: 25 * time.Millisecond, Max: time.Second}

// WithRetries is the client option that installs p's retryer (see
// NewRetryer). NewClient applies it with DefaultRetries; so does the local
// platform's client, so Lambdas and local runs retry alike.
func WithRetries(p RetryPolicy) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) { o.Retryer = NewRetryer(p) }
}

// NewRetryer is the SDK's standard retryer (which keeps retrying what it
// retries by default: throttling codes, 5xx, broken connections) plus
// DynamoDB's contention (IsContention), with p's attempts and backoff, and
//   - no client-side retry quota: the quota is a circuit breaker against an
//     unhealthy endpoint, and contention on a busy item would drain it and
//     turn the next requests' first conflicts into errors;
//   - no retry unless the context's deadline leaves room for the longest
//     wait and one more attempt: the caller gets the contention error (a
//     429 for the API) rather than a timeout that hides it.
//
// Retrying is safe: a canceled or throttled request wrote nothing, and
// TransactWriteItems carries the SDK's ClientRequestToken, the same on
// every attempt.
func NewRetryer(p RetryPolicy) aws.RetryerV2 {
	std := sdkretry.NewStandard(func(so *sdkretry.StandardOptions) {
		so.MaxAttempts = p.MaxAttempts
		so.MaxBackoff = p.Max
		so.Backoff = sdkretry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
			return retry.Delay(attempt, p.Base, p.Max), nil
		})
		so.RateLimiter = ratelimit.None
		so.Retryables = append(so.Retryables, sdkretry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			if IsContention(err) {
				return aws.TrueTernary
			}
			return aws.UnknownTernary
		}))
	})
	// Room for the longest wait and an attempt after it: an attempt the
	// deadline cuts short is a timeout, not the contention it retried.
	return deadlineRetryer{RetryerV2: std, reserve: 2 * p.Max}
}

// errNoTimeToRetry is joined to the last attempt's error when the deadline
// leaves no room for another attempt.
var errNoTimeToRetry = errors.New("ddb: no time left before the deadline to retry")

type deadlineRetryer struct {
	aws.RetryerV2
	reserve time.Duration
}

// GetRetryToken is asked before every retry's wait, with the call's
// context: the one place the retry loop shows the deadline.
func (r deadlineRetryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) < r.reserve {
		return nil, errNoTimeToRetry
	}
	return r.RetryerV2.GetRetryToken(ctx, opErr)
}

// IsContention reports whether DynamoDB refused a call only because of
// contention or throttling, so that it wrote nothing and the same call may
// succeed later: throttling (IsThrottled), a TransactionConflictException
// (a single-item write on an item a transaction holds), or a canceled
// transaction whose every reason is TransactionConflict, ThrottlingError or
// ProvisionedThroughputExceeded. A transaction canceled also for a failed
// condition is not: retrying would fail the same way.
func IsContention(err error) bool {
	if err == nil {
		return false
	}
	if apiErrorCode(err) == "TransactionConflictException" {
		return true
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		tx := newTxCanceledError(tce)
		if len(tx.Reasons) == 0 {
			return false
		}
		for _, r := range tx.Reasons {
			switch r.Code {
			case ReasonTransactionConflict, ReasonThrottlingError, ReasonProvisionedThroughputExceeded:
			default:
				return false
			}
		}
		return true
	}
	return IsThrottled(err)
}

// IsItemTooLarge reports whether err says an item would exceed the 400 KB
// item size limit: ErrItemTooLarge (the client-side check), or DynamoDB's
// own ValidationException, alone or as a canceled transaction's reason,
// for an update whose result only the server can measure.
func IsItemTooLarge(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrItemTooLarge) {
		return true
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range newTxCanceledError(tce).Reasons {
			if r.Code == ReasonValidationError && itemSizeMessage(r.Message) {
				return true
			}
		}
		return false
	}
	var ae interface{ ErrorMessage() string }
	return apiErrorCode(err) == "ValidationException" && errors.As(err, &ae) && itemSizeMessage(ae.ErrorMessage())
}

// itemSizeMessage matches DynamoDB's wording: "Item size has exceeded the
// maximum allowed size" (PutItem, UpdateItem) and "Item size to update has
// exceeded the maximum allowed size" (transactions).
func itemSizeMessage(m string) bool {
	return strings.Contains(m, "Item size") && strings.Contains(m, "exceeded the maximum allowed size")
}
