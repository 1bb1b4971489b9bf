// Package ddb is the low-level DynamoDB plumbing under the project's
// single-table store: client construction that works unchanged against AWS
// and against local stand-ins (minidyn, dynalite), a counting middleware used
// by tests and benchmarks to assert round trips per request, the size and
// count limits DynamoDB enforces (and local servers do not), and helpers for
// multi-item operations (transactions, chunked batches, paged queries).
//
// Every client retries what DynamoDB refused only for contention or
// throttling (retry.go), so that no caller needs a retry loop of its own for
// them.
//
// Lambda functions link this package, so non-test files import only the AWS
// SDK, the standard library and shared/retry; minidyn is used in _test.go
// files only.
package ddb
