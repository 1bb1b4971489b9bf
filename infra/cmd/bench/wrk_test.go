package main

import (
	"testing"
	"time"
)

// Printed by wrk 4.1.0 (Debian) for a server answering 404, with --latency.
const wrkNotFound = `Running 1s test @ http://127.0.0.1:38123/nope
  2 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     9.58ms   14.58ms  95.31ms   87.78%
    Req/Sec   432.80    276.94     0.93k    65.00%
  Latency Distribution
     50%    3.06ms
     75%   10.01ms
     90%   28.69ms
     99%   68.24ms
  867 requests in 1.03s, 440.27KB read
  Non-2xx or 3xx responses: 867
  Socket errors: connect 0, read 2, write 0, timeout 3
Requests/sec:    843.55
Transfer/sec:    428.36KB
`

func TestParseWrk(t *testing.T) {
	r, err := parseWrk(wrkNotFound)
	if err != nil {
		t.Fatal(err)
	}
	want := wrkResult{requests: 867, non2xx: 867, socketErrors: 5, rps: 843.55, p50: "3.06ms", p99: "68.24ms"}
	if r != want {
		t.Fatalf("got %+v, want %+v", r, want)
	}
	if _, err := parseWrk("unable to connect to 127.0.0.1:1 Connection refused"); err == nil {
		t.Fatal("output without a request count was accepted")
	}
}

func TestParseStat(t *testing.T) {
	// A command name with spaces and a ')' must not shift the fields.
	stat := "4242 (lo) cal x) S 1 4242 4242 0 -1 4194560 2000 0 0 0 731 52 0 0 20 0 9 0 100 2000000 3000 18446744073709551615\n"
	got, err := parseStat(stat, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := 7830 * time.Millisecond; got != want {
		t.Fatalf("got %s, want %s (utime 731 + stime 52 ticks)", got, want)
	}
	if _, err := parseStat("4242 (x) S 1", 100); err == nil {
		t.Fatal("a short line was accepted")
	}
}
