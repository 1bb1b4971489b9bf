package repotest

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"cads/infra/testenv"
)

var (
	// costRow is a row of docs/performance.md's per-endpoint cost table:
	// endpoint, then RCU and WCU in the last two cells.
	costRow = regexp.MustCompile("^\\| `([^`]+)` \\|.*\\| ([0-9.]+) \\| ([0-9.]+) \\|$")
	// estimateRow is a row of docs/deploy.md's price per million requests.
	estimateRow = regexp.MustCompile("^\\| `([^`]+)` \\| \\$([0-9.]+) \\| \\$([0-9.]+) \\| ([0-9]+) \\+ ([0-9]+) ms: ([0-9,]+) GB-s, \\$([0-9.]+) \\| ([0-9.]+) RRU: \\$([0-9.]+) \\| (?:– |([0-9.]+) WRU: \\$([0-9.]+) )\\| \\*\\*\\$([0-9.]+)\\*\\* \\|$")
	// price finds a price in docs/deploy.md's price table.
	price = regexp.MustCompile(`\$([0-9.]+) per (million requests|million invocations|GB-second|million read request units|million write request units)`)
)

func num(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(t), "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docs/deploy.md's cost estimate per million requests is arithmetic on the
// cost table of docs/performance.md (which TestCostPerEndpoint keeps
// current) and on the prices it states: every read and write unit is the
// table's, and every dollar figure the product and sum it claims to be, so
// a change of an endpoint's cost cannot leave the estimate behind.
func TestCostEstimate(t *testing.T) {
	perf, deploy := readDoc(t, "performance.md"), readDoc(t, "deploy.md")
	begin, end := strings.Index(perf, "<!-- cost-table:begin -->"), strings.Index(perf, "<!-- cost-table:end -->")
	if begin < 0 || end < begin {
		t.Fatal("docs/performance.md has no cost table")
	}
	units := map[string][2]float64{}
	for _, line := range strings.Split(perf[begin:end], "\n") {
		if m := costRow.FindStringSubmatch(line); m != nil {
			units[m[1]] = [2]float64{num(t, m[2]), num(t, m[3])}
		}
	}
	prices := map[string]float64{}
	for _, m := range price.FindAllStringSubmatch(deploy, -1) {
		if _, seen := prices[m[2]]; !seen {
			prices[m[2]] = num(t, m[1])
		}
	}
	if len(units) < 50 || len(prices) != 5 {
		t.Fatalf("read %d cost rows and %d prices: the docs are read wrong", len(units), len(prices))
	}
	if !strings.Contains(deploy, "`LogsFunction` (512 MB)") {
		t.Fatal("docs/deploy.md no longer says LogsFunction has 512 MB: update this test's memory rule")
	}
	cents := func(ep, what string, doc, want float64) {
		// The doc rounds to the cent; allow for a half-cent either way.
		if math.Abs(doc-want) > 0.0051 {
			t.Errorf("docs/deploy.md, %s: %s is $%.2f, the table and prices give $%.4f", ep, what, doc, want)
		}
	}
	rows := 0
	for _, line := range strings.Split(deploy, "\n") {
		m := estimateRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		ep := m[1]
		u, ok := units[ep]
		if !ok {
			t.Errorf("docs/deploy.md estimates %s, which the cost table does not have", ep)
			continue
		}
		rru, wru := num(t, m[8]), 0.0
		if m[10] != "" {
			wru = num(t, m[10])
		}
		if rru != u[0] || wru != u[1] {
			t.Errorf("docs/deploy.md, %s: %.1f RRU, %.1f WRU; the cost table says %.1f RCU, %.1f WCU", ep, rru, wru, u[0], u[1])
		}
		memGB := 0.25
		if strings.HasSuffix(ep, "/logs") {
			memGB = 0.5
		}
		gbs := (num(t, m[4])*0.25 + num(t, m[5])*memGB) / 1000 * 1e6
		if num(t, m[6]) != gbs {
			t.Errorf("docs/deploy.md, %s: %s GB-s, the durations give %.0f", ep, m[6], gbs)
		}
		apigw, invocations := prices["million requests"], 2*prices["million invocations"]
		duration := gbs * prices["GB-second"]
		reads := rru * prices["million read request units"]
		writes := wru * prices["million write request units"]
		cents(ep, "API Gateway", num(t, m[2]), apigw)
		cents(ep, "Lambda requests (two functions)", num(t, m[3]), invocations)
		cents(ep, "Lambda duration", num(t, m[7]), duration)
		cents(ep, "reads", num(t, m[9]), reads)
		if m[11] != "" {
			cents(ep, "writes", num(t, m[11]), writes)
		}
		cents(ep, "the total", num(t, m[12]), apigw+invocations+duration+reads+writes)
	}
	if rows < 5 {
		t.Fatalf("found %d estimate rows in docs/deploy.md: the table is read wrong", rows)
	}
}
