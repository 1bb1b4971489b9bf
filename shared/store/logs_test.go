package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/domain"
	"cads/shared/store"
)

func TestLogHourIndex(t *testing.T) {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	ctx := context.Background()
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	chunk := func(at time.Time, id string) domain.LogItem {
		return domain.LogItem{App: "app1", Type: "access", Time: at, ID: id, Data: "[]"}
	}
	at := func(h int) time.Time { return day.Add(time.Duration(h)*time.Hour + 5*time.Minute) }

	// A chunk whose hour the index does not name is refused before any call.
	d.Counter.Reset()
	err := st.Logs.PutLogs(ctx, []domain.LogItem{chunk(at(3), "a")}, []store.LogDay{{App: "app1", Type: "access", Day: day, Hours: []int{4}}})
	if err == nil || !strings.Contains(err.Error(), "not in the hour index") || d.Counter.Total() != 0 {
		t.Fatalf("unindexed chunk: %v, %d calls", err, d.Counter.Total())
	}

	// Hours of two days, written in one round (sets added to, duplicates once).
	d.Counter.SetDelay(20 * time.Millisecond)
	d.Counter.Reset()
	err = st.Logs.PutLogs(ctx, []domain.LogItem{chunk(at(3), "a"), chunk(at(23), "b"), chunk(at(25), "c")}, []store.LogDay{
		{App: "app1", Type: "access", Day: day, Hours: []int{3, 23, 3}, TTL: 1},
		{App: "app1", Type: "access", Day: day.Add(24 * time.Hour), Hours: []int{1}, TTL: 2},
	})
	d.Counter.SetDelay(0)
	if err != nil || d.Counter.Total() != 3 || d.Counter.Sequential() != 1 {
		t.Fatalf("put: %v, %d calls (%d sequential), want 3 in 1 (BatchWriteItem beside two UpdateItems)", err, d.Counter.Total(), d.Counter.Sequential())
	}
	if err := st.Logs.PutLogs(ctx, []domain.LogItem{chunk(at(5), "d")}, []store.LogDay{{App: "app1", Type: "access", Day: at(5), Hours: []int{5}, TTL: 1}}); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		from, to time.Time
		want     []int // hours after day
	}{
		{day.Add(-time.Hour), day.Add(48 * time.Hour), []int{3, 5, 23, 25}},
		{at(3), at(23), []int{3, 5, 23}}, // from inside an hour: that hour is read
		{day.Add(4 * time.Hour), at(23), []int{5, 23}},
		{day, day.Add(23 * time.Hour), []int{3, 5}}, // to exclusive
		{day.Add(6 * time.Hour), day.Add(22 * time.Hour), nil},
		{day.Add(-48 * time.Hour), day, nil},
	} {
		d.Counter.Reset()
		got, err := st.Logs.LogHours(ctx, "app1", "access", c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		var hours []int
		for _, h := range got {
			hours = append(hours, int(h.Sub(day)/time.Hour))
		}
		if !slices.Equal(hours, c.want) || d.Counter.Total() != 1 {
			t.Fatalf("[%s, %s): hours %v, want %v (%d calls, want 1)", c.from, c.to, hours, c.want, d.Counter.Total())
		}
	}
	if got, err := st.Logs.LogHours(ctx, "app1", "cdn", day, day.Add(48*time.Hour)); err != nil || len(got) != 0 {
		t.Fatalf("another type: %v %v", got, err)
	}
}
