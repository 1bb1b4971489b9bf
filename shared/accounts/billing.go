package accounts

import (
	"net/http"
	"sort"
	"time"

	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
)

// BillingRecord is one calendar month (UTC) of an account's billing: the
// month's invoice and the payments dated in it. GET .../billing returns the
// account's months newest first, from the month it was created to the
// current one (docs/api.md#billing: an array of billing records holding
// invoices and payments).
type BillingRecord struct {
	Period   string    `json:"period"` // YYYY-MM
	Invoices []Invoice `json:"invoices"`
	Payments []Payment `json:"payments"`
}

// Invoice is the bill of one month. due_date, total_amount and
// remaining_amount_due are the reference document's InvoiceItem fields.
// total_amount is the sum of the lines, one per entitlement charged that
// month; usage is what the account was using when it was measured (now, for
// the open month; when the month was closed, for the others). Payments are
// applied to invoices oldest first.
type Invoice struct {
	Period             string        `json:"period"`
	State              string        `json:"state"` // open (the current month, still changing) | closed
	DueDate            string        `json:"due_date"`
	TotalAmount        Money         `json:"total_amount"`
	RemainingAmountDue Money         `json:"remaining_amount_due"`
	Lines              []InvoiceLine `json:"lines"`
	Usage              *Usage        `json:"usage"`
}

// InvoiceLine is the charge of one entitlement: unit_price x quantity.
type InvoiceLine struct {
	Entitlement string  `json:"entitlement"` // href; the entitlement may have been deleted since
	Resource    string  `json:"resource"`
	PlanID      *string `json:"plan_id"`
	Quantity    int     `json:"quantity"`
	Period      string  `json:"period"`
	UnitPrice   Money   `json:"unit_price"`
	Amount      Money   `json:"amount"`
}

// Usage is what the account used, as counted at Measured. The open
// month's also shows the account's quotas (closed months record only what
// was billed).
type Usage struct {
	Applications int          `json:"applications"`
	Measured     time.Time    `json:"measured"`
	Quotas       []QuotaUsage `json:"quotas,omitempty"`
}

// QuotaUsage is one quota of the account (docs/api.md#quotas): its limit
// now (the active entitlements of the resource, else the default), the
// default, and for an account-wide quota how many the account has; a
// per-application quota (per "application") bounds each application, a
// per-principal one (per "principal") each user, and their use is not
// summed here.
type QuotaUsage struct {
	Resource string `json:"resource"`
	Per      string `json:"per"` // account | application | principal
	Limit    int    `json:"limit"`
	Default  int    `json:"default"`
	Used     *int   `json:"used"`
}

// quotasOf is the quota table of an account, as its billing data has it.
func quotasOf(b domain.Billing, now time.Time) []QuotaUsage {
	out := []QuotaUsage{}
	for _, d := range domain.QuotaDefaults() {
		if d.PerPrincipal && b.Account.Parent != "" {
			// Each user's keys are bounded by the root account's
			// entitlements: a sub-account's would change nothing.
			continue
		}
		limit, _ := domain.Allowance(b.Entitlements, d.Kind, now)
		q := QuotaUsage{Resource: d.Kind, Per: "account", Limit: limit, Default: d.Default}
		switch {
		case d.PerApplication:
			q.Per = "application"
		case d.PerPrincipal:
			q.Per = "principal"
		default:
			n := max(b.Counts[d.Kind], 0)
			q.Used = &n
		}
		out = append(out, q)
	}
	return out
}

// Payment is a payment received (the reference document's PaymentItem:
// amount, date), recorded by the platform operator.
type Payment struct {
	ID        string  `json:"id"`
	Amount    Money   `json:"amount"`
	Date      string  `json:"date"`
	Reference *string `json:"reference"`
}

const (
	invoiceOpen   = "open"
	invoiceClosed = "closed"
)

func (h *handler) getBilling(r *http.Request, _ caller.Principal) (int, any, error) {
	id, err := accountID(r)
	if err != nil {
		return 0, nil, err
	}
	page, err := apigw.ParsePage(r.URL.Query())
	if err != nil {
		return 0, nil, err
	}
	b, err := h.st.Accounts.LoadBilling(r.Context(), id)
	if err != nil {
		return 0, nil, domain.IfNotFound(err, "no account %s", accountHref(id))
	}
	now := h.st.Now()
	closed, toClose := closedInvoices(b, now)
	if len(toClose) > 0 {
		stored, err := h.st.Accounts.CloseInvoices(r.Context(), toClose)
		if err != nil {
			return 0, nil, err
		}
		for _, inv := range stored {
			closed[inv.Period] = inv
		}
	}
	return http.StatusOK, apigw.Window(billingRecords(b, closed, now), page), nil
}

// maxBilledMonths bounds the months an account's billing covers (the most
// recent ones).
const maxBilledMonths = 1200

// firstMonth is the first month billed: the account's creation month, or
// the current month for an account with no creation time (written before
// accounts had one), and never more than maxBilledMonths back.
func firstMonth(a domain.AccountRecord, now time.Time) time.Time {
	current := monthStart(now)
	if a.Created.IsZero() || a.Created.After(now) {
		return current
	}
	return maxTime(monthStart(a.Created), current.AddDate(0, 1-maxBilledMonths, 0))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// monthStart is the first instant of t's month, UTC.
func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

func period(month time.Time) string { return month.Format("2006-01") }

// dueDate: an invoice is due on the last day of the month after its own.
func dueDate(month time.Time) string { return month.AddDate(0, 2, -1).Format(time.DateOnly) }

// closedInvoices returns the stored invoices by period, and the invoices
// of ended months that are not stored yet (to be frozen now).
func closedInvoices(b domain.Billing, now time.Time) (map[string]domain.Invoice, []domain.Invoice) {
	closed := make(map[string]domain.Invoice, len(b.Invoices))
	for _, inv := range b.Invoices {
		closed[inv.Period] = inv
	}
	var toClose []domain.Invoice
	current := monthStart(now)
	for m := firstMonth(b.Account, now); m.Before(current); m = m.AddDate(0, 1, 0) {
		if _, ok := closed[period(m)]; ok {
			continue
		}
		inv := invoiceFor(b.Account.ID, m, b.Entitlements)
		usage := b.Usage
		inv.Usage, inv.Closed = &usage, now
		toClose = append(toClose, inv)
	}
	return closed, toClose
}

// invoiceFor computes the invoice of one month from the entitlements:
// every entitlement active at some time in the month is charged unit price
// x quantity, monthly ones every month, yearly ones in the month they
// started and every twelfth month after.
func invoiceFor(account string, month time.Time, es []domain.Entitlement) domain.Invoice {
	es = append([]domain.Entitlement(nil), es...)
	sort.Slice(es, func(i, j int) bool {
		if !es[i].Created.Equal(es[j].Created) {
			return es[i].Created.Before(es[j].Created)
		}
		return es[i].ID < es[j].ID
	})
	end := month.AddDate(0, 1, 0)
	inv := domain.Invoice{Account: account, Period: period(month), DueDate: dueDate(month)}
	for _, e := range es {
		if !e.Started.Before(end) || e.Expiry != nil && !e.Expiry.After(month) {
			continue
		}
		if e.Period == domain.PeriodYear {
			s := monthStart(e.Started)
			if n := (month.Year()-s.Year())*12 + int(month.Month()-s.Month()); n%12 != 0 {
				continue
			}
		}
		amount := int64(e.Quantity) * e.UnitPriceCents
		inv.Lines = append(inv.Lines, domain.InvoiceLine{Entitlement: e.ID, Resource: e.Resource, PlanID: e.PlanID, Quantity: e.Quantity,
			Period: e.Period, UnitPriceCents: e.UnitPriceCents, AmountCents: amount})
		inv.TotalCents += amount
	}
	return inv
}

// billingRecords builds one record per month, newest first, applying the
// payments to the invoices oldest first.
func billingRecords(b domain.Billing, closed map[string]domain.Invoice, now time.Time) []BillingRecord {
	current := monthStart(now)
	first := firstMonth(b.Account, now)
	var invs []Invoice
	for m := first; !m.After(current); m = m.AddDate(0, 1, 0) {
		if m.Equal(current) {
			inv := invoiceFor(b.Account.ID, m, b.Entitlements)
			usage := b.Usage
			inv.Usage = &usage
			open := invoiceOut(inv, invoiceOpen)
			open.Usage.Quotas = quotasOf(b, now)
			invs = append(invs, open)
			continue
		}
		invs = append(invs, invoiceOut(closed[period(m)], invoiceClosed))
	}
	var paid Money
	payments := map[string][]Payment{}
	sort.Slice(b.Payments, func(i, j int) bool {
		if b.Payments[i].Date != b.Payments[j].Date {
			return b.Payments[i].Date > b.Payments[j].Date
		}
		return b.Payments[i].ID < b.Payments[j].ID
	})
	for _, p := range b.Payments {
		paid += Money(p.AmountCents)
		// Payments dated before the account's first month belong to it.
		per := max(p.Date[:7], period(first))
		out := Payment{ID: p.ID, Amount: Money(p.AmountCents), Date: p.Date}
		if p.Reference != "" {
			out.Reference = &p.Reference
		}
		payments[per] = append(payments[per], out)
	}
	for i := range invs {
		applied := min(paid, invs[i].TotalAmount)
		invs[i].RemainingAmountDue = invs[i].TotalAmount - applied
		paid -= applied
	}
	out := make([]BillingRecord, 0, len(invs))
	for i := len(invs) - 1; i >= 0; i-- {
		ps := payments[invs[i].Period]
		if ps == nil {
			ps = []Payment{}
		}
		out = append(out, BillingRecord{Period: invs[i].Period, Invoices: []Invoice{invs[i]}, Payments: ps})
	}
	return out
}

func invoiceOut(inv domain.Invoice, state string) Invoice {
	out := Invoice{Period: inv.Period, State: state, DueDate: inv.DueDate, TotalAmount: Money(inv.TotalCents), Lines: []InvoiceLine{}}
	for _, l := range inv.Lines {
		line := InvoiceLine{Entitlement: entitlementHref(inv.Account, l.Entitlement), Resource: l.Resource, Quantity: l.Quantity,
			Period: l.Period, UnitPrice: Money(l.UnitPriceCents), Amount: Money(l.AmountCents)}
		if l.PlanID != "" {
			line.PlanID = &l.PlanID
		}
		out.Lines = append(out.Lines, line)
	}
	if inv.Usage != nil {
		out.Usage = &Usage{Applications: inv.Usage.Applications, Measured: inv.Usage.Measured}
	}
	return out
}
