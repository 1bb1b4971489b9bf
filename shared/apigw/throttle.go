package apigw

// ThrottledError marks a store error as throttling: WriteError turns it into
// 429 with Retry-After instead of a 500. The store wraps throttling errors in
// it so that apigw needs no DynamoDB imports.
type ThrottledError struct{ Err error }

func (e *ThrottledError) Error() string { return "throttled: " + e.Err.Error() }
func (e *ThrottledError) Unwrap() error { return e.Err }
