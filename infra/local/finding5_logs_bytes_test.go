//go:build !race

package local_test

// Not built with the race detector: the test moves pages of megabytes of
// escaped characters through the gateway, which under it cost a tenth of
// this package's CPU, and the paths it drives (a log page cut at its
// budget) are the ones the race-enabled log tests run with small pages.
// make test runs it in its unraced pass (test-unraced) and again on the
// realistic DynamoDB.

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"cads/shared/logs"
)

// TestFinding5_LogsPageByteBudget: records whose messages are 32 KiB of
// '<' (six bytes each in JSON, seven in the Lambda payload) are within
// limit, but a page of them is not within the response budget: the page
// stops at the budget with the cut stated, and next reaches the rest; CSV
// says the same in headers.
func TestFinding5_LogsPageByteBudget(t *testing.T) {
	p, c := start(t)
	op := p.Bootstrap.Secret
	// A '<' is six bytes of a CSV row in the Lambda payload (\u003c) and
	// seven of a JSON row (\\u003c). Records enough that the CSV rows from
	// the second on weigh a record more than the budget, and the JSON rows
	// several more: both pages are cut whatever the few bytes of the other
	// fields. More records would only cost bytes (and CPU under -race).
	n := logs.ResponseBudget/(6*(32<<10)) + 2
	app := budgetApp(t, c, op, n, "<")
	q := url.Values{"type": {"custom"}, "from": {time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)}, "limit": {"100"}}
	seen := 0
	for pages := 0; ; pages++ {
		status, d, raw := getLogs(t, c, op, app, q)
		if status != 200 || len(raw) > 6<<20 {
			t.Fatalf("page %d: %d, %d bytes %.200s", pages, status, len(raw), raw)
		}
		seen += d.Records.Count
		if d.Records.Next == nil {
			if d.Records.Cut != nil || pages == 0 {
				t.Fatalf("last page: %+v after %d pages", d.Records.Cut, pages)
			}
			break
		}
		if cut := d.Records.Cut; cut == nil || cut.Budget != logs.CutBytes || d.Records.Count == 0 || d.Records.Count >= n {
			t.Fatalf("page %d: %d records, cut %+v", pages, d.Records.Count, cut)
		}
		q.Set("start", fmt.Sprint(*d.Records.Next))
	}
	if seen != n {
		t.Fatalf("%d records over the pages, want %d", seen, n)
	}

	q.Set("start", "1")
	q.Set("format", "csv")
	res, b := rawDo(t, c, "GET", "/v2/applications/"+app+"/logs?"+q.Encode(), op, "", nil)
	rows := bytes.Count(b, []byte("\n")) - 1
	if res.StatusCode != 200 || res.Header.Get(logs.HeaderCut) != logs.CutBytes || res.Header.Get(logs.HeaderNextStart) != fmt.Sprint(rows+1) ||
		!strings.Contains(res.Header.Get(logs.HeaderContinue), "resume=") || rows < 1 || rows >= n-1 {
		t.Fatalf("CSV: %d, %d rows, headers %v", res.StatusCode, rows, res.Header)
	}
}
