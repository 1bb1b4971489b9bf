package inproc_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"cads/infra/listscale"
	"cads/infra/local"
	"cads/infra/schedule"
	"cads/infra/testenv"
)

// listScaleAdded is how many users and how many applications
// BenchmarkListPagesAtScale adds between its two measurements (the
// done-when of the scale work: 1,500 of each, as infra/cmd/listscale).
const listScaleAdded = 1500

// BenchmarkListPagesAtScale is infra/cmd/listscale in-process: the first
// page (limit=5) of users and of applications through the local gateway
// with the operator key, as `make run` serves it (authorizer warm path on),
// then 1,500 users and 1,500 applications added through the API, then the
// same pages again. Wall time on a shared machine moves with its load, so
// each sub-benchmark also reports what does not: the process's CPU time
// per request (cpu-ns/op, from getrusage, so time other processes take is
// not counted), allocations (-benchmem), and the garbage collector's share
// (gc/op: cycles per request; gc-scan-B/op: bytes the collector scans per
// request at the live heap of the moment, the part of GC cost that grows
// with the table; gc-cpu-ns/op: the collector's CPU per request, as the
// runtime estimates it). With LISTSCALE_PROFILE=dir each sub-benchmark writes
// the CPU profile of its loop alone to dir/<name>.cpu.pprof and the heap
// profiles at the loop's start and end to <name>.heap0.pprof and
// <name>.heap1.pprof (the adds stay out of them), so the sizes compare
// with a fixed -benchtime (say 3000x) and
// `go tool pprof -top -diff_base users-full.cpu.pprof users-large.cpu.pprof`,
// allocations with
// `go tool pprof -sample_index=alloc_space -diff_base X.heap0.pprof X.heap1.pprof`
// (LISTSCALE_MEMPROFILERATE=1 makes those counts exact, and the loop slow).
func BenchmarkListPagesAtScale(b *testing.B) {
	if r, err := strconv.Atoi(os.Getenv("LISTSCALE_MEMPROFILERATE")); err == nil {
		// 1 samples every allocation: the heap profiles' counts are
		// exact (and the loop much slower, so compare allocations only).
		runtime.MemProfileRate = r
	}
	p, err := local.Start(context.Background(), local.Options{
		Template: filepath.Join(testenv.Root(b), "template.yaml"),
		APIAddr:  "127.0.0.1:0",
		StateDir: b.TempDir(),
		// Nothing is logged: a line per request would measure the logger.
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		// No schedule fires while the loop runs and changes the table.
		Clock: schedule.NewManualClock(time.Now()),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close(context.Background()) })
	c := &scaleClient{listscale.Client{Base: p.URL, Key: p.Bootstrap.Secret, HTTP: &http.Client{Timeout: 30 * time.Second}}}
	paths := map[string]string{"users": "/v2/users?limit=5", "applications": "/v2/applications?limit=5"}

	measure := func(size string) {
		for _, name := range []string{"users", "applications"} {
			b.Run(name+"/"+size, func(b *testing.B) { c.benchPage(b, paths[name], name+"-"+size) })
		}
	}
	added := 0
	add := func(upTo int) {
		began := time.Now()
		// 8 workers, as listscale's creates.
		if err := c.Add(context.Background(), added, upTo, 8, ""); err != nil {
			b.Fatal(err)
		}
		b.Logf("added %d users and %d applications in %v", upTo-added, upTo-added, time.Since(began).Round(time.Millisecond))
		added = upTo
		// The adds leave garbage: each measurement starts from a
		// collected heap.
		runtime.GC()
	}
	// empty: a fresh installation (the operator, no application), as
	// listscale's "before"; full: 10 of each added, so the page is full
	// and has a next page, the same shape as at the large size (the
	// Query reads limit+1 items either way); large: 1,500 of each added.
	// full against large is the cost of the table's size alone; empty
	// against full, that of a full page.
	measure("empty")
	add(10)
	measure("full")
	add(listScaleAdded)
	measure("large")
}

// scaleClient measures pages through the shared listscale client.
type scaleClient struct{ listscale.Client }

// benchPage measures GET path, which must answer a page of at most 5
// (none: a fresh installation has no applications).
func (c *scaleClient) benchPage(b *testing.B, path, name string) {
	if _, err := c.Do(context.Background(), "GET", path, nil); err != nil { // warm the key's cache
		b.Fatal(err)
	}
	if dir := os.Getenv("LISTSCALE_PROFILE"); dir != "" {
		writeHeap(b, filepath.Join(dir, name+".heap0.pprof"))
		defer writeHeap(b, filepath.Join(dir, name+".heap1.pprof"))
		f, err := os.Create(filepath.Join(dir, name+".cpu.pprof"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	cycle := gcCycleCPU()
	gc0, cpu0 := readGC(), processCPU()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		body, err := c.Do(context.Background(), "GET", path, nil)
		if err != nil {
			b.Fatal(err)
		}
		var page []json.RawMessage
		if err := json.Unmarshal(body, &page); err != nil || len(page) > 5 {
			b.Fatalf("GET %s: not a page of at most 5: %v %.200s", path, err, body)
		}
		n++
	}
	cpu, gc1 := processCPU()-cpu0, readGC()
	cycles := gc1.cycles - gc0.cycles
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
	b.ReportMetric((gc1.cpu-gc0.cpu)*1e9/float64(n), "gc-cpu-ns/op")
	b.ReportMetric(float64(cycles)/float64(n), "gc/op")
	b.ReportMetric(float64(cycles)*float64(gc1.scan)/float64(n), "gc-scan-B/op")
	b.ReportMetric(float64(gc1.live)/(1<<20), "live-MiB")
	b.ReportMetric(float64(cycle.Nanoseconds()), "gc-cycle-cpu-ns")
	b.ReportMetric(float64(cycles)*float64(cycle.Nanoseconds())/float64(n), "gc-est-cpu-ns/op")
}

// writeHeap writes the heap profile as of a collection now.
func writeHeap(b *testing.B, path string) {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// gcCycleCPU is the CPU time of one collection of the heap as it is (the
// median of 7 forced ones): the cost of marking what the process holds,
// which the cycles a request's allocations trigger each pay. Unlike the
// runtime's own estimate it is CPU time, so a busy machine moves it less.
func gcCycleCPU() time.Duration {
	ds := make([]time.Duration, 7)
	for i := range ds {
		t := processCPU()
		runtime.GC()
		ds[i] = processCPU() - t
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

type gcStats struct {
	cycles, scan, live uint64
	cpu                float64
}

// readGC reads the collector's cycle count, the bytes a cycle scans
// (heap, stacks, globals), the live heap after the last cycle, and the
// runtime's estimate of the CPU seconds the collector has used (its
// workers, idle-time ones included, assists and pauses).
func readGC() gcStats {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/scan/total:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return gcStats{cycles: s[0].Value.Uint64(), scan: s[1].Value.Uint64(), live: s[2].Value.Uint64(), cpu: s[3].Value.Float64()}
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
