package logs

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's CPU time (user + system): on a shared machine
// it moves far less with the load than the wall time does.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRegexpWorkUnit measures what one filter work unit (a byte a
// regular expression reads times its program size, the Meter's unit)
// costs at worst: the largest program MaxRegexpProgram allows, with
// nested repetition, against a 32 KB field it never matches. WorkBudget
// is sized from its ns/unit (docs/hardening.md).
func BenchmarkRegexpWorkUnit(b *testing.B) {
	re, n, err := compileRegexp(`(.{20}){11}x`)
	if err != nil {
		b.Fatal(err)
	}
	if n > MaxRegexpProgram || n < MaxRegexpProgram*8/10 {
		b.Fatalf("program of %d instructions: want close to MaxRegexpProgram (%d)", n, MaxRegexpProgram)
	}
	text := strings.Repeat("a", 32<<10)
	b.SetBytes(int64(len(text)))
	began := cpuTime(b)
	for b.Loop() {
		if re.MatchString(text) {
			b.Fatal("matched")
		}
	}
	units := float64(b.N) * float64(len(text)*n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/units, "ns/unit")
	b.ReportMetric(float64((cpuTime(b)-began).Nanoseconds())/units, "cpu-ns/unit")
	b.ReportMetric(float64(n), "instructions")
}
