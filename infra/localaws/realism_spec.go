package localaws

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// RealismEnv names the variable a test binary (infra/local/localtest,
// infra/testenv) reads to start its DynamoDB in realistic mode; its value
// is a ParseRealism spec.
const RealismEnv = "CADS_DYNAMO_REALISM"

// ParseRealism reads a realistic mode spec, as `make run REALISTIC=…` and
// RealismEnv take it:
//
//   - "", "0", "off", "false": off (nil);
//   - "1", "on", "true": the preset (Realistic) with a seed from the clock;
//   - otherwise comma-separated parts on top of the preset: a bare integer
//     is the seed; seed=N, read-lag=D, index-lag=D, lag=D (both),
//     tx-hold=D, conflicts=F, throttles=F, unprocessed=F, page-bytes=N.
//
// Without a seed the clock gives one; the caller prints it (Realism's
// String) so that a run can be replayed.
func ParseRealism(spec string) (*Realism, error) {
	spec = strings.TrimSpace(spec)
	switch strings.ToLower(spec) {
	case "", "0", "off", "false":
		return nil, nil
	case "1", "on", "true":
		spec = ""
	}
	r := Realistic(time.Now().UnixNano() % 1_000_000)
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			name, value = "seed", part
		}
		var err error
		switch name {
		case "seed":
			r.Seed, err = strconv.ParseInt(value, 10, 64)
		case "read-lag":
			r.ReadLag, err = time.ParseDuration(value)
		case "index-lag":
			r.IndexLag, err = time.ParseDuration(value)
		case "lag":
			r.ReadLag, err = time.ParseDuration(value)
			r.IndexLag = r.ReadLag
		case "tx-hold":
			r.TxHold, err = time.ParseDuration(value)
		case "conflicts":
			r.ConflictRate, err = parseRate(value)
		case "throttles":
			r.ThrottleRate, err = parseRate(value)
		case "unprocessed":
			r.UnprocessedRate, err = parseRate(value)
		case "page-bytes":
			r.PageBytes, err = strconv.Atoi(value)
		default:
			err = fmt.Errorf("unknown setting (want seed, read-lag, index-lag, lag, tx-hold, conflicts, throttles, unprocessed, page-bytes)")
		}
		if err != nil {
			return nil, fmt.Errorf("realistic DynamoDB %q: %s: %w", spec, part, err)
		}
	}
	return &r, nil
}

func parseRate(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, err
	}
	if strings.HasSuffix(s, "%") {
		f /= 100
	}
	if f < 0 || f > 1 {
		return 0, fmt.Errorf("rate %g out of [0, 1]", f)
	}
	return f, nil
}

// RealismFromEnv is ParseRealism of RealismEnv.
func RealismFromEnv() (*Realism, error) {
	return ParseRealism(os.Getenv(RealismEnv))
}
