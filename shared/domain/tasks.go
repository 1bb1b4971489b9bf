package domain

import "time"

// Task states (docs/api.md#tasks).
const (
	TaskPending = "pending"
	TaskRunning = "running"
	TaskSuccess = "success"
	TaskFailed  = "failed"
)

// Task is an asynchronous operation, run by the task worker from a queue.
// docs/tasks.md describes its life.
type Task struct {
	ID      string `dynamodbav:"id"`
	Account string `dynamodbav:"account"`
	Type    string `dynamodbav:"type"`
	Target  string `dynamodbav:"target,omitempty"` // href
	App     string `dynamodbav:"app,omitempty"`    // the target application's id
	// Parameters and Result are JSON documents.
	Parameters string     `dynamodbav:"parameters,omitempty"`
	Result     string     `dynamodbav:"result,omitempty"`
	State      string     `dynamodbav:"state"`
	Message    string     `dynamodbav:"message,omitempty"`
	CreatedBy  string     `dynamodbav:"created_by"`
	Created    time.Time  `dynamodbav:"created"`
	Started    *time.Time `dynamodbav:"started,omitempty"`
	Completed  *time.Time `dynamodbav:"completed,omitempty"`
	Updated    time.Time  `dynamodbav:"updated"`
	// Worker bookkeeping: processing attempts so far, the lease of the
	// invocation running it (epoch milliseconds) and the last retryable
	// error.
	Attempts   int    `dynamodbav:"attempts,omitempty"`
	LeaseOwner string `dynamodbav:"lease_owner,omitempty"`
	LeaseUntil int64  `dynamodbav:"lease_until,omitempty"`
	LastError  string `dynamodbav:"last_error,omitempty"`
	// A scheduled task: it is not claimed before NotBefore (epoch
	// milliseconds, a number so that the claim's condition compares it),
	// and Ends is the enter_maintenance task whose maintenance it ends (an
	// exit_maintenance made by maximum_duration).
	NotBefore int64  `dynamodbav:"not_before,omitempty"`
	Ends      string `dynamodbav:"ends,omitempty"`
	// Log is the task's progress, oldest first: one line when it is
	// submitted and one per claim, release and finish, each appended by
	// the write that makes the step (no item or round trip of its own),
	// so it is bounded by the attempts (MaxAttempts in shared/tasks).
	Log []TaskLogLine `dynamodbav:"log,omitempty"`
}

// Severities and activities of task log lines (the reference document's
// event severities).
const (
	SeverityInfo    = "info"
	SeverityWarning = "warning"
	SeveritySevere  = "severe"

	ActivitySubmit = "submit"
	ActivityClaim  = "claim"
	ActivityRetry  = "retry"
	ActivityFinish = "finish"
)

// TaskLogLine is one line of a task's log. Process is the lease owner:
// the worker invocation that wrote it ("" for the submission).
type TaskLogLine struct {
	Created  time.Time `dynamodbav:"t"`
	Severity string    `dynamodbav:"s"`
	Activity string    `dynamodbav:"a"`
	Message  string    `dynamodbav:"m"`
	Process  string    `dynamodbav:"p,omitempty"`
}

// Finished reports whether the task reached success or failed.
func (t Task) Finished() bool { return t.State == TaskSuccess || t.State == TaskFailed }

// Due reports whether t may run at now (it is not scheduled for later).
func (t Task) Due(now time.Time) bool { return t.NotBefore == 0 || now.UnixMilli() >= t.NotBefore }

// CertificateAuthority is an account's private CA, which signs origin
// certificates. Its key is stored in the table (docs/tasks.md: production
// would keep it in KMS or ACM Private CA); nothing ever returns it.
type CertificateAuthority struct {
	Account string    `dynamodbav:"account"`
	CertPEM string    `dynamodbav:"cert_pem"`
	KeyPEM  string    `dynamodbav:"key_pem"`
	Created time.Time `dynamodbav:"created"`
}
