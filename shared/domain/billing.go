package domain

import "time"

// Payment is money received from an account, recorded by the platform
// operator (RecordPayment). Amounts are in US cents.
type Payment struct {
	ID          string    `dynamodbav:"id"`
	Account     string    `dynamodbav:"account"`
	AmountCents int64     `dynamodbav:"amount_cents"`
	Date        string    `dynamodbav:"date"` // YYYY-MM-DD, when it was paid
	Reference   string    `dynamodbav:"reference,omitempty"`
	Recorded    time.Time `dynamodbav:"recorded"`
}

// Invoice is the bill of one account for one calendar month (UTC). Only
// closed months are stored: the first read of an account's billing after a
// month ends freezes that month's invoice, so later changes to
// entitlements never rewrite a bill that was issued.
type Invoice struct {
	Account    string        `dynamodbav:"account"`
	Period     string        `dynamodbav:"period"` // YYYY-MM
	Lines      []InvoiceLine `dynamodbav:"lines,omitempty"`
	TotalCents int64         `dynamodbav:"total_cents"`
	DueDate    string        `dynamodbav:"due_date"` // YYYY-MM-DD
	Usage      *Usage        `dynamodbav:"usage,omitempty"`
	Closed     time.Time     `dynamodbav:"closed"`
}

// InvoiceLine is the charge of one entitlement in one invoice.
type InvoiceLine struct {
	Entitlement    string `dynamodbav:"entitlement"` // id
	Resource       string `dynamodbav:"resource"`
	PlanID         string `dynamodbav:"plan_id,omitempty"`
	Quantity       int    `dynamodbav:"quantity"`
	Period         string `dynamodbav:"period"`
	UnitPriceCents int64  `dynamodbav:"unit_price_cents"`
	AmountCents    int64  `dynamodbav:"amount_cents"`
}

// Usage is what an account was using when it was measured.
type Usage struct {
	Applications int       `dynamodbav:"applications"`
	Measured     time.Time `dynamodbav:"measured"`
}

// Billing is everything an account's bill is computed from.
type Billing struct {
	Account      AccountRecord
	Entitlements []Entitlement
	Invoices     []Invoice // closed months, as frozen
	Payments     []Payment
	Usage        Usage // measured now
	// Counts holds the account's usage items of the account-wide quota
	// kinds (roles, groups, service users), as their transactions keep
	// them; a kind with no item is absent (0).
	Counts map[string]int
}
