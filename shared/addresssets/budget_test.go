//go:build !race

package addresssets_test

// Not built with the race detector: filling a set to the 4 MiB response
// budget reads and writes it about a hundred times, which under it was a
// third of the suite's longest package; the write path it drives is the
// one the race-enabled tests of this package run on small sets. make test
// runs it in its unraced pass (test-unraced).

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cads/shared/domain"
	"cads/shared/jsontext"
	"cads/shared/store"
)

// A set is refused at write time before GET /v2/address-sets/{id} could
// outgrow the response budget: entries whose descriptions are full of
// '<' (7 bytes each in the Lambda response) fill a set to just under
// jsontext.ResponseBudget, which GET returns with 200; the entry that would
// take it over is a 400 naming the limit, and nothing is written.
func TestSetStaysWithinTheResponseBudget(t *testing.T) {
	a := newAPI(t)
	const coll, item = "/v2/address-sets", "/v2/address-sets/{id}"
	id := a.must(a.call(a.sets, a.op, "POST", coll, coll, `{"name":"heavy","type":"manual"}`, "application/json"), 200, "create").body["id"].(string)
	href := "/v2/address-sets/" + id
	heavy := strings.Repeat("<", 256)

	// Addresses of one width (10.100.100.100 on), so that every entry
	// takes the same bytes.
	next := 0
	addr := func() string {
		a := fmt.Sprintf("10.%d.%d.%d", 100+next/10000, 100+next/100%100, 100+next%100)
		next++
		return a
	}
	// patch adds one entry; only the accepted entries' bytes matter, so
	// the 4 MB answers are not decoded (a refusal is small and is).
	patch := func(desc string) reply {
		t.Helper()
		op := fmt.Sprintf(`[{"op":"add","path":"/entries/-","value":{"address":%q,"description":%q}}]`, addr(), desc)
		r := a.send(a.sets, a.op, "PATCH", href, item, op, "application/json-patch+json")
		if r.status != 200 {
			_ = json.Unmarshal([]byte(r.raw), &r.body)
		}
		return r
	}
	// size is a set's representation as it travels in the Lambda
	// response (a PATCH answers with the set, as GET shows it).
	size := func(r reply) int { return jsontext.EnvelopeLen([]byte(r.raw)) }
	get := func() reply {
		t.Helper()
		return a.must(a.send(a.sets, a.op, "GET", href, item, "", ""), 200, "GET")
	}

	// seed writes heavy entries straight to the store, as earlier writes
	// would have (much faster than JSON Patches of a 4 MB set), with
	// descriptions of the given lengths. Their creation times have all
	// nine fractional digits, so that entries of one description take
	// the same bytes.
	ctx := context.Background()
	st, err := a.deps.Store.AddressSets.GetAddressSet(ctx, a.op.AccountID, id)
	if err != nil {
		t.Fatal(err)
	}
	set := st.Set
	seed := func(descs ...int) {
		t.Helper()
		now := a.deps.Store.Now().Truncate(time.Second).Add(123456789)
		set.Version++
		set.EntryCount += len(descs)
		set.Updated = now
		w := store.AddressSetWrite{Set: set}
		for _, d := range descs {
			ad := addr()
			w.PutEntries = append(w.PutEntries, domain.AddressEntry{Set: id, Prefix: ad + "/32", Address: ad, Description: heavy[:d], Created: now, CreatedBy: "/v2/users/" + a.op.ID})
		}
		if err := a.deps.Store.AddressSets.WriteAddressSet(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	full := func(n int) []int { return slices.Repeat([]int{len(heavy)}, n) }

	s0 := size(get())
	seed(full(98)...)
	s1 := size(get())
	// One heavy entry, about 2 KB (the set's own updated time may have
	// changed length by a few bytes too).
	per := (s1 - s0) / 98
	if per < 256*7 {
		t.Fatalf("98 heavy entries take %d bytes", s1-s0)
	}
	// Between two seeded sets only the seeded entries differ, so this is
	// what one takes to the byte; each '<' fewer in its description is 7
	// bytes fewer.
	seed(full(98)...)
	s2 := size(get())
	if (s2-s1)%98 != 0 {
		t.Fatalf("98 seeded entries take %d bytes, not a multiple of 98", s2-s1)
	}
	perSeed := (s2 - s1) / 98
	// Seed to room for one and a half entries, so that exactly one more
	// goes in through the API and the next is refused: whole entries,
	// then one with a shorter description that takes up what is left
	// within an entry's width (or none, if less is left than the
	// shortest such entry takes).
	over := jsontext.ResponseBudget - s2 - perSeed*3/2
	rest := full(over / perSeed)
	if left := over % perSeed; left >= perSeed-7*len(heavy) {
		rest = append(rest, len(heavy)-(perSeed-left)/7)
	}
	for c := range slices.Chunk(rest, 98) {
		seed(c...)
	}
	// What the set now takes is known to the byte; the first entry
	// accepted through the API must add one entry's bytes to it.
	accepted, last := s2, reply{}
	for _, d := range rest {
		accepted += perSeed - 7*(len(heavy)-d)
	}
	if room := jsontext.ResponseBudget - accepted; room < per+32 || room > 2*per-32 {
		t.Fatalf("seeded to %d bytes: %d left, an entry takes %d", accepted, room, per)
	}
	var refused reply
	for i := 0; ; i++ {
		r := patch(heavy)
		if r.status == 400 {
			refused = r
			break
		}
		a.must(r, 200, "one more entry")
		if n := size(r); n > jsontext.ResponseBudget || n-accepted < per-16 || n-accepted > per+16 {
			t.Fatalf("an accepted entry made the set %d bytes (from %d; an entry is %d)", n, accepted, per)
		}
		accepted, last = size(r), r
		if i > 5 {
			t.Fatal("no entry was refused")
		}
	}
	if last.raw == "" {
		t.Fatal("no entry was accepted through the API")
	}

	// The set as it stands: just under the budget, and GET returns it.
	g := get()
	got := size(g)
	_ = json.Unmarshal([]byte(g.raw), &g.body)
	if got != accepted || g.raw != last.raw || jsontext.ResponseBudget-got >= per {
		t.Fatalf("GET: %d bytes in the response (the last accepted PATCH answered %d); budget %d, an entry %d", got, accepted, jsontext.ResponseBudget, per)
	}
	entries := len(g.body["entries"].([]any))
	// The refusal names the limit and the size the change would have
	// made: over the budget, by the one entry it added.
	e, _ := refused.body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	m := regexp.MustCompile(`make the address set (\d+) bytes`).FindStringSubmatch(msg)
	if e["type"] != "bad_request" || !strings.Contains(msg, strconv.Itoa(jsontext.ResponseBudget)) || m == nil {
		t.Fatalf("refusal: %s", refused.raw)
	}
	if would, _ := strconv.Atoi(m[1]); would <= jsontext.ResponseBudget || would-got < per-16 || would-got > per+16 {
		t.Fatalf("the refused change would have made %d bytes from %d (an entry is %d)", would, got, per)
	}
	// A longer set description over the limit is refused the same way
	// (nothing written); removing entries always goes.
	if r := a.call(a.sets, a.op, "PATCH", href, item, `{"description":"`+strings.Repeat("&", 500)+`"}`, "application/json"); r.status != 400 || !strings.Contains(r.raw, "response budget") {
		t.Fatalf("description over the budget: %d %s", r.status, r.raw)
	}
	r := a.call(a.sets, a.op, "PATCH", href, item, `[{"op":"remove","path":"/entries/0"},{"op":"remove","path":"/entries/0"}]`, "application/json-patch+json")
	if r.status != 200 || len(r.body["entries"].([]any)) != entries-2 || r.body["description"] != "" {
		t.Fatalf("removing entries: %d, description %v", r.status, r.body["description"])
	}
}
