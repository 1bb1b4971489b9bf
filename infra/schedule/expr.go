// Package schedule is the local stand-in for the EventBridge rules that a
// SAM Schedule event creates: it parses the rule's rate(...) or cron(...)
// expression, and invokes the function at that schedule with the event
// EventBridge sends ("detail-type": "Scheduled Event"), on a clock that
// tests can drive by hand.
package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Expr is a parsed schedule expression. Next gives the first fire time
// strictly after prev; the zero time means never.
type Expr interface {
	Next(prev time.Time) time.Time
	String() string
}

// Parse reads an EventBridge schedule expression. It accepts rate(N unit)
// with EventBridge's rule that the unit is singular exactly when N is 1,
// and cron(...) with six fields made of numbers, names, '*', '?', lists,
// ranges and '/' steps. The L, W and # forms are valid on AWS but not
// emulated here: Parse refuses them, so the platform fails to start rather
// than silently never running a schedule.
func Parse(s string) (Expr, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "rate(") && strings.HasSuffix(s, ")"):
		return parseRate(s)
	case strings.HasPrefix(s, "cron(") && strings.HasSuffix(s, ")"):
		return parseCron(s)
	}
	return nil, fmt.Errorf("schedule %q: want rate(...) or cron(...)", s)
}

// Rate fires every Every, counted from the previous fire.
type Rate struct {
	Every time.Duration
	expr  string
}

func (r Rate) Next(prev time.Time) time.Time { return prev.Add(r.Every) }
func (r Rate) String() string                { return r.expr }

func parseRate(s string) (Expr, error) {
	fields := strings.Fields(s[len("rate(") : len(s)-1])
	if len(fields) != 2 {
		return nil, fmt.Errorf("schedule %q: want rate(<value> <unit>)", s)
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("schedule %q: the value must be a positive integer", s)
	}
	units := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}
	unit := fields[1]
	singular := strings.TrimSuffix(unit, "s")
	d, ok := units[singular]
	if !ok {
		return nil, fmt.Errorf("schedule %q: unit %q: want minute(s), hour(s) or day(s)", s, unit)
	}
	// EventBridge refuses rate(1 minutes) and rate(5 minute).
	if (n == 1) != (unit == singular) {
		return nil, fmt.Errorf("schedule %q: the unit must be singular for 1 and plural otherwise", s)
	}
	return Rate{Every: time.Duration(n) * d, expr: s}, nil
}

// Cron is a parsed cron(...) expression, evaluated in UTC as EventBridge
// does.
type Cron struct {
	minute, hour, dom, month, dow, year set
	domAny                              bool // day-of-month is '?': day-of-week decides
	expr                                string
}

type set map[int]bool

func (c Cron) String() string { return c.expr }

var (
	monthNames = map[string]int{"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6, "JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}
	dayNames   = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}
)

func parseCron(s string) (Expr, error) {
	f := strings.Fields(s[len("cron(") : len(s)-1])
	if len(f) != 6 {
		return nil, fmt.Errorf("schedule %q: cron needs 6 fields (minutes hours day-of-month month day-of-week year), got %d", s, len(f))
	}
	// EventBridge: one of day-of-month and day-of-week must be '?'.
	if (f[2] == "?") == (f[4] == "?") {
		return nil, fmt.Errorf("schedule %q: exactly one of day-of-month and day-of-week must be ?", s)
	}
	c := Cron{expr: s, domAny: f[2] == "?"}
	var err error
	fields := []struct {
		dst      *set
		text     string
		lo, hi   int
		names    map[string]int
		question bool
	}{
		{&c.minute, f[0], 0, 59, nil, false},
		{&c.hour, f[1], 0, 23, nil, false},
		{&c.dom, f[2], 1, 31, nil, true},
		{&c.month, f[3], 1, 12, monthNames, false},
		{&c.dow, f[4], 1, 7, dayNames, true},
		{&c.year, f[5], 1970, 2199, nil, false},
	}
	for _, fl := range fields {
		if fl.question && fl.text == "?" {
			continue
		}
		if *fl.dst, err = parseField(fl.text, fl.lo, fl.hi, fl.names); err != nil {
			return nil, fmt.Errorf("schedule %q: field %q: %w", s, fl.text, err)
		}
	}
	return c, nil
}

func parseField(text string, lo, hi int, names map[string]int) (set, error) {
	bare := strings.ToUpper(text)
	for n := range names {
		bare = strings.ReplaceAll(bare, n, "")
	}
	if strings.ContainsAny(bare, "LW#") {
		return nil, fmt.Errorf("L, W and # are valid on AWS but not supported by the local scheduler")
	}
	out := set{}
	for part := range strings.SplitSeq(text, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("bad step %q", stepText)
			}
			step = n
		}
		from, to := lo, hi
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if from, err = value(a, lo, hi, names); err != nil {
				return nil, err
			}
			if to, err = value(b, lo, hi, names); err != nil {
				return nil, err
			}
			if from > to {
				return nil, fmt.Errorf("range %q runs backwards", rng)
			}
		default:
			v, err := value(rng, lo, hi, names)
			if err != nil {
				return nil, err
			}
			from = v
			if !hasStep {
				to = v
			}
		}
		for v := from; v <= to; v += step {
			out[v] = true
		}
	}
	return out, nil
}

func value(s string, lo, hi int, names map[string]int) (int, error) {
	if v, ok := names[strings.ToUpper(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%q is not a value in %d..%d", s, lo, hi)
	}
	return v, nil
}

// Next is the first whole minute after prev (UTC) the expression matches.
func (c Cron) Next(prev time.Time) time.Time {
	t := prev.UTC().Truncate(time.Minute).Add(time.Minute)
	for t.Year() <= 2199 {
		switch {
		case !c.year[t.Year()]:
			t = time.Date(t.Year()+1, 1, 1, 0, 0, 0, 0, time.UTC)
		case !c.month[int(t.Month())]:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.day(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		case !c.hour[t.Hour()]:
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, time.UTC)
		case !c.minute[t.Minute()]:
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{}
}

func (c Cron) day(t time.Time) bool {
	if c.domAny {
		return c.dow[int(t.Weekday())+1] // EventBridge counts SUN as 1
	}
	return c.dom[t.Day()]
}
