package costtour_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// scaleWorkerEnv, set in a worker process's environment, is the directory
// its jobs are claimed in and its rows written to; it makes
// TestCostListsAtScale a worker and TestCostPerEndpoint (measured by the
// process that started the workers) a skip.
const scaleWorkerEnv = "COSTTOUR_SCALE_WORKER_DIR"

// scaleJob is one subtest of TestCostListsAtScale, run by a worker.
type scaleJob struct {
	name string // the subtest's name
	key  string // its rows' key in the worker's output
	run  func(t *testing.T) []string
}

// runScaleWorkers runs n worker processes of this test binary, with the
// test's -run and -skip patterns (so that the same subtests run as would
// in this process), and returns their rows by job key. A worker that fails
// fails t with its output; with -v its output is logged.
func runScaleWorkers(t *testing.T, n int) map[string][]string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{"-test.v=true", "-test.count=1", "-test.run=" + flag.Lookup("test.run").Value.String()}
	if skip := flag.Lookup("test.skip").Value.String(); skip != "" {
		args = append(args, "-test.skip="+skip)
	}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	name := exe
	outs := make([]bytes.Buffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cmd := exec.CommandContext(t.Context(), name, args...)
			cmd.Env = append(os.Environ(), scaleWorkerEnv+"="+dir)
			cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
			errs[i] = cmd.Run()
		})
	}
	wg.Wait()
	for i := range n {
		switch {
		case errs[i] != nil:
			t.Errorf("worker %d of %d: %v:\n%s", i+1, n, errs[i], outs[i].String())
		case testing.Verbose():
			t.Logf("worker %d of %d:\n%s", i+1, n, outs[i].String())
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "rows-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != n && !t.Failed() {
		t.Fatalf("%d of %d workers wrote their rows", len(files), n)
	}
	rows := map[string][]string{}
	for _, f := range files {
		var got map[string][]string
		raw, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(raw, &got)
		}
		if err != nil {
			t.Fatalf("rows of a worker: %v", err)
		}
		maps.Copy(rows, got)
	}
	return rows
}

// scaleWorker runs, one after the other, the jobs of cases that no other
// worker has claimed (a file created exclusively in dir), each as a
// subtest, and writes the rows of those that passed to dir.
func scaleWorker(t *testing.T, dir string, cases []scaleCase) {
	rows := map[string][]string{}
	for i, job := range scaleJobs(cases) {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("job-%02d", i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue // another worker's
		}
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		t.Run(job.name, func(t *testing.T) { rows[job.key] = job.run(t) })
	}
	raw, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rows-%d.json", os.Getpid())), raw, 0o600); err != nil {
		t.Fatal(err)
	}
}
