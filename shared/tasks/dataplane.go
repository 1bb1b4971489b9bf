package tasks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"cads/shared/domain"
	"cads/shared/store"
)

// DataPlane is the driver through which tasks act outside the table. The
// table stays the record of what the control plane decided (states,
// configurations, invalidations); the driver tells the data plane.
type DataPlane interface {
	// SetState tells the data plane that app is to be in state (running,
	// stopped, maintenance).
	SetState(ctx context.Context, app domain.Application, state string) error
	// RunAction calls an action's URL.
	RunAction(ctx context.Context, call ActionCall) (ActionResult, error)
	// InvalidateCache passes on a cache invalidation.
	InvalidateCache(ctx context.Context, inv store.Invalidation) error
}

// ActionCall is one run of an action.
type ActionCall struct {
	Task   string // task id: the request's idempotency key
	App    string
	Action domain.Action
}

// ActionResult is what the action's URL answered.
type ActionResult struct {
	StatusCode int    `json:"status_code"`
	Body       string `json:"body,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// ActionError is a failed call; Retryable says whether calling again may
// succeed (network errors, timeouts, 5xx, 429) or not (4xx, refused URL).
type ActionError struct {
	Retryable bool
	Msg       string
}

func (e *ActionError) Error() string { return e.Msg }

// Headers of an action request.
const (
	HeaderSignature = "X-Cads-Signature" // "sha256=<hex HMAC-SHA256 of timestamp + "." + body>"
	HeaderTimestamp = "X-Cads-Timestamp" // Unix seconds
	HeaderTask      = "X-Cads-Task"      // task href
	HeaderIdemKey   = "Idempotency-Key"  // task id: a redelivered task calls again with the same key
)

// DialPolicy decides which addresses action calls may connect to. It is
// checked on the resolved address of every connection, so no host name,
// redirect or DNS answer can lead a call elsewhere.
type DialPolicy func(addr netip.Addr) error

// LoopbackOnly is the local platform's policy: actions may only call this
// machine (the developer's own endpoints, the tests' servers).
func LoopbackOnly(addr netip.Addr) error {
	if addr.Unmap().IsLoopback() {
		return nil
	}
	return fmt.Errorf("the local platform calls only loopback addresses, not %s", addr)
}

var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

// PublicOnly is the deployed policy: actions may call public addresses
// only, never the service's own network, loopback or link-local (the
// instance metadata endpoint).
func PublicOnly(addr netip.Addr) error {
	a := addr.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsMulticast() ||
		a.IsUnspecified() || a.IsInterfaceLocalMulticast() || sharedSpace.Contains(a) || !a.IsGlobalUnicast() {
		return fmt.Errorf("actions may not call the non-public address %s", addr)
	}
	return nil
}

// ActionTimeout bounds one action call (the worker's function timeout is
// 30 s and a batch's calls run in parallel).
const ActionTimeout = 10 * time.Second

// maxResultBody bounds the part of an action's answer kept in the result.
const maxResultBody = 4 << 10

// HTTPActions calls action URLs over HTTP(S).
type HTTPActions struct {
	Policy  DialPolicy
	Timeout time.Duration
	now     func() time.Time
}

func (h *HTTPActions) client(act domain.Action) (*http.Client, error) {
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return policyError{fmt.Errorf("dial %s: %w", address, err)}
		}
		if err := h.Policy(ap.Addr()); err != nil {
			return policyError{err}
		}
		return nil
	}}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would hide the real destination from the policy
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: h.Timeout,
		DisableKeepAlives:     true,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}
	if act.Certificates != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(act.Certificates)) {
			return nil, &ActionError{Msg: "the action's certificates hold no PEM certificate"}
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	return &http.Client{
		Transport: tr,
		Timeout:   h.Timeout,
		// A redirect is the action's answer, not an instruction to call
		// somewhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// Call makes the action's request: its method, a JSON body naming the
// task, application and action (none for GET and HEAD), signed with
// HMAC-SHA256 when the action has a secret key.
func (h *HTTPActions) Call(ctx context.Context, call ActionCall) (ActionResult, error) {
	now := time.Now
	if h.now != nil {
		now = h.now
	}
	act := call.Action
	c, err := h.client(act)
	if err != nil {
		return ActionResult{}, err
	}
	var body []byte
	if act.HTTPMethod != http.MethodGet && act.HTTPMethod != http.MethodHead {
		body, _ = json.Marshal(map[string]string{
			"task": Href(call.Task), "application": AppHref(call.App), "action": act.ID, "time": now().UTC().Format(time.RFC3339),
		})
	}
	req, err := http.NewRequestWithContext(ctx, act.HTTPMethod, act.URL, bytes.NewReader(body))
	if err != nil {
		return ActionResult{}, &ActionError{Msg: fmt.Sprintf("the action's request cannot be made: %v", err)}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "cads-task-worker/2")
	req.Header.Set(HeaderTask, Href(call.Task))
	req.Header.Set(HeaderIdemKey, call.Task)
	if act.SecretKey != "" {
		key, err := base64.StdEncoding.DecodeString(act.SecretKey)
		if err != nil {
			return ActionResult{}, &ActionError{Msg: "the action's secret_key is not base64"}
		}
		ts := strconv.FormatInt(now().Unix(), 10)
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, "sha256="+Sign(key, ts, body))
	}
	began := time.Now()
	res, err := c.Do(req)
	if err != nil {
		var ae *ActionError
		if errors.As(err, &ae) {
			return ActionResult{}, ae
		}
		var pe policyError
		if errors.As(err, &pe) {
			return ActionResult{}, &ActionError{Msg: fmt.Sprintf("calling %s refused: %v", act.URL, pe.err)}
		}
		return ActionResult{}, &ActionError{Retryable: true, Msg: fmt.Sprintf("calling %s failed: %v", act.URL, err)}
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, maxResultBody))
	out := ActionResult{StatusCode: res.StatusCode, DurationMS: time.Since(began).Milliseconds()}
	if utf8.Valid(raw) {
		out.Body = string(raw)
	}
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return out, nil
	case res.StatusCode >= 500 || res.StatusCode == http.StatusTooManyRequests:
		return out, &ActionError{Retryable: true, Msg: fmt.Sprintf("%s answered %s", act.URL, res.Status)}
	default:
		return out, &ActionError{Msg: fmt.Sprintf("%s answered %s", act.URL, res.Status)}
	}
}

// policyError marks a connection the DialPolicy refused: not retryable.
type policyError struct{ err error }

func (e policyError) Error() string { return e.err.Error() }

// Sign is the signature of an action request: hex HMAC-SHA256 under key
// of timestamp, ".", body. Receivers recompute it to check the request.
func Sign(key []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(timestamp + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// FakeDataPlane stands in for the data plane, which this project does not
// include: SetState and InvalidateCache only record and log what the data
// plane would have been told (the table already holds the decision), while
// RunAction makes the real HTTP call through Actions.
type FakeDataPlane struct {
	Actions *HTTPActions
	Log     *slog.Logger

	mu       sync.Mutex
	recorded []string
}

// NewFakeDataPlane returns a fake data plane whose actions may connect
// only where policy allows.
func NewFakeDataPlane(log *slog.Logger, policy DialPolicy) *FakeDataPlane {
	return &FakeDataPlane{Actions: &HTTPActions{Policy: policy, Timeout: ActionTimeout}, Log: log}
}

// SetState records the request.
func (f *FakeDataPlane) SetState(ctx context.Context, app domain.Application, state string) error {
	f.record(ctx, "set-state "+app.ID+" "+state)
	return nil
}

// RunAction calls the action.
func (f *FakeDataPlane) RunAction(ctx context.Context, call ActionCall) (ActionResult, error) {
	return f.Actions.Call(ctx, call)
}

// InvalidateCache records the request.
func (f *FakeDataPlane) InvalidateCache(ctx context.Context, inv store.Invalidation) error {
	f.record(ctx, "invalidate "+inv.App+" "+inv.Task)
	return nil
}

func (f *FakeDataPlane) record(ctx context.Context, what string) {
	f.mu.Lock()
	f.recorded = append(f.recorded, what)
	if len(f.recorded) > 1000 {
		f.recorded = f.recorded[len(f.recorded)-1000:]
	}
	f.mu.Unlock()
	f.Log.InfoContext(ctx, "fake data plane: recorded (nothing serves traffic here)", "request", what)
}

// Recorded returns what the fake data plane was told, oldest first.
func (f *FakeDataPlane) Recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.recorded...)
}
