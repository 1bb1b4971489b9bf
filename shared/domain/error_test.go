package domain_test

import (
	"errors"
	"fmt"
	"testing"

	"cads/shared/domain"
)

// Codes and messages survive wrapping; errors without a code are internal
// and keep their own text for logs.
func TestErrorCodeAndMessage(t *testing.T) {
	cause := errors.New("ProvisionedThroughputExceededException")
	for _, c := range []struct {
		err        error
		code, msg  string
		isNotFound bool
	}{
		{nil, "", "", false},
		{domain.Errorf(domain.Invalid, "name: %d characters at most", 100), domain.Invalid, "name: 100 characters at most", false},
		{fmt.Errorf("create: %w", domain.Errorf(domain.Conflict, "taken")), domain.Conflict, "taken", false},
		{fmt.Errorf("get: %w", domain.ErrNotFound), domain.NotFound, "not found", true},
		{domain.IfNotFound(fmt.Errorf("get: %w", domain.ErrNotFound), "no application %q", "a1"), domain.NotFound, `no application "a1"`, false},
		{domain.IfNotFound(cause, "no application"), domain.Internal, cause.Error(), false},
		{fmt.Errorf("put: %w", domain.Throttle(cause)), domain.Throttled, "the service is busy; retry after a second", false},
		{cause, domain.Internal, cause.Error(), false},
	} {
		if got := domain.ErrorCode(c.err); got != c.code {
			t.Errorf("ErrorCode(%v) = %q, want %q", c.err, got, c.code)
		}
		if got := domain.ErrorMessage(c.err); got != c.msg {
			t.Errorf("ErrorMessage(%v) = %q, want %q", c.err, got, c.msg)
		}
		if got := errors.Is(c.err, domain.ErrNotFound); got != c.isNotFound {
			t.Errorf("errors.Is(%v, ErrNotFound) = %v", c.err, got)
		}
	}
	// The cause of a throttled error stays reachable for logs and retries.
	if err := domain.Throttle(cause); !errors.Is(err, cause) {
		t.Errorf("Throttle lost its cause: %v", err)
	}
}

func TestQuotaReachedNamesTheKind(t *testing.T) {
	err := domain.QuotaReached("acct1", domain.Quota{Kind: domain.ResourceAddressSets, Limit: 3, Limited: true}, "3")
	want := "account acct1 is entitled to 3 address sets and has 3; delete one or ask the platform operator for a larger entitlement"
	if domain.ErrorCode(err) != domain.Conflict || err.Message != want {
		t.Errorf("QuotaReached = %q %q, want conflict %q", err.Code, err.Message, want)
	}
}

func TestClipCutsOnACharacterBoundary(t *testing.T) {
	if got := domain.Clip("short", 10); got != "short" {
		t.Errorf("Clip of a short value: %q", got)
	}
	// "é" is two bytes: a cut after 3 bytes falls inside the second one.
	if got := domain.Clip("aéé", 4); got != "aé…" {
		t.Errorf("Clip(aéé, 4) = %q, want aé…", got)
	}
	if got := domain.Clip("aéé", 2); got != "a…" {
		t.Errorf("Clip(aéé, 2) = %q, want a… (no half character)", got)
	}
}
