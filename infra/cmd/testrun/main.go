// Command testrun is `go test` for make test: it builds the test binaries
// with `go test -c` into a directory kept between runs, then runs them, N
// packages at once, each in its package's directory, and prints go test's
// "ok"/"FAIL" lines (with the CPU each binary used).
//
//	testrun [-p N] [-run RE] [-skip RE] [-timeout D] [-v] PACKAGES... [-- BUILD FLAGS...]
//
// Why not go test: go test links every test binary again on every run,
// into a temporary directory, even when nothing it links has changed. A
// race-enabled test binary takes about 1.7 CPU s to link, and make test
// ran 60-odd of them on two cores: about a quarter of the suite's CPU
// went to links whose output was byte for byte the last run's
// (docs/performance.md, "Test suite time"). `go test -c -o DIR/` keeps
// the binary in DIR and links it again only when its build ID changes
// (the go command's own up-to-date check, the one go install uses), so a
// package whose code and dependencies did not change costs its tests and
// nothing else. Tests run exactly as go test runs them: the same binary,
// flags, working directory and environment.
//
// `go test -c -o DIR/` names a binary for the last element of its import
// path, so two packages called alike (shared/roles, functions/roles) go to
// different subdirectories: the n-th package of that name in the module,
// in import-path order, to DIR/n, whatever else a run asks for, so that
// every run writes a package's binary to the same file.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"cads/infra/buildcache"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
	}
	os.Exit(code)
}

type options struct {
	parallel int
	run      string
	skip     string
	timeout  time.Duration
	verbose  bool
	binDir   string
	goCmd    string
	pkgs     []string
	build    []string
}

func parse(args []string) (options, error) {
	o := options{goCmd: "go"}
	fs := flag.NewFlagSet("testrun", flag.ContinueOnError)
	fs.IntVar(&o.parallel, "p", runtime.GOMAXPROCS(0), "test binaries run at once")
	fs.StringVar(&o.run, "run", "", "go test's -run")
	fs.StringVar(&o.skip, "skip", "", "go test's -skip")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "go test's -timeout, per binary")
	fs.BoolVar(&o.verbose, "v", false, "go test's -v: print every binary's output")
	fs.StringVar(&o.binDir, "bin", "", "where the test binaries are kept (default: buildcache.Dir(\"testbin\"))")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.pkgs = fs.Args()
	if i := slices.Index(o.pkgs, "--"); i >= 0 {
		o.pkgs, o.build = o.pkgs[:i], o.pkgs[i+1:]
	}
	if len(o.pkgs) == 0 {
		return o, errors.New("no packages")
	}
	for _, p := range o.pkgs {
		if strings.HasPrefix(p, "-") {
			return o, fmt.Errorf("%s: testrun's flags go before the packages, go test's build flags after --", p)
		}
	}
	if o.parallel < 1 {
		return o, fmt.Errorf("-p %d: want at least 1", o.parallel)
	}
	if o.binDir == "" {
		dir, err := buildcache.Dir("testbin")
		if err != nil {
			return o, fmt.Errorf("no -bin: %w", err)
		}
		o.binDir = dir
	}
	return o, nil
}

// pkg is one package to test.
type pkg struct {
	importPath string
	dir        string
	binary     string
}

func run(ctx context.Context, args []string, out io.Writer) (int, error) {
	o, err := parse(args)
	if err != nil {
		return 2, err
	}
	// Binaries built with other flags (the race detector or not) live
	// apart, or each run would link over the other's.
	sum := sha256.Sum256([]byte(strings.Join(o.build, "\x00")))
	binDir := filepath.Join(o.binDir, hex.EncodeToString(sum[:6]))

	pkgs, err := list(ctx, o)
	if err != nil {
		return 2, err
	}
	ranks, err := sameNameRanks(ctx, o)
	if err != nil {
		return 2, err
	}
	byRank := map[int][]string{}
	for i := range pkgs {
		r, ok := ranks[pkgs[i].importPath]
		if !ok {
			// Outside the main module: a rank of its own among the
			// run's packages.
			r = len(ranks) + i
		}
		dir := filepath.Join(binDir, strconv.Itoa(r))
		pkgs[i].binary = filepath.Join(dir, path.Base(pkgs[i].importPath)+".test")
		byRank[r] = append(byRank[r], pkgs[i].importPath)
	}
	if code, err := build(ctx, o, binDir, byRank, out); err != nil {
		return code, err
	}
	return test(ctx, o, pkgs, out), nil
}

// list resolves the packages, in the order asked and without repeats,
// keeping those that have tests.
func list(ctx context.Context, o options) ([]pkg, error) {
	args := append([]string{"list", "-e", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{len .TestGoFiles}}\t{{len .XTestGoFiles}}\t{{if .Error}}{{.Error}}{{end}}"}, o.build...)
	lines, err := goOutput(ctx, o, append(args, o.pkgs...)...)
	if err != nil {
		return nil, err
	}
	var pkgs []pkg
	seen := map[string]bool{}
	for _, l := range lines {
		f := strings.SplitN(l, "\t", 5)
		if len(f) != 5 {
			return nil, fmt.Errorf("go list: unexpected line %q", l)
		}
		if f[4] != "" {
			return nil, fmt.Errorf("go list %s: %s", f[0], f[4])
		}
		if seen[f[0]] || (f[2] == "0" && f[3] == "0") {
			continue
		}
		seen[f[0]] = true
		pkgs = append(pkgs, pkg{importPath: f[0], dir: f[1]})
	}
	return pkgs, nil
}

// sameNameRanks gives every package of the main module its place among
// the module's packages with the same last import-path element.
func sameNameRanks(ctx context.Context, o options) (map[string]int, error) {
	all, err := goOutput(ctx, o, "list", "-e", "-f", "{{.ImportPath}}", "./...")
	if err != nil {
		return nil, err
	}
	slices.Sort(all)
	ranks := map[string]int{}
	seen := map[string]int{}
	for _, p := range all {
		b := path.Base(p)
		ranks[p] = seen[b]
		seen[b]++
	}
	return ranks, nil
}

// build runs one go test -c per rank. The go command links a binary only
// when the one in the directory is out of date.
func build(ctx context.Context, o options, binDir string, byRank map[int][]string, out io.Writer) (int, error) {
	for _, r := range slices.Sorted(maps.Keys(byRank)) {
		dir := filepath.Join(binDir, strconv.Itoa(r))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 2, err
		}
		// No vet here: make test runs go vet, with every analyzer go
		// test would run and more.
		args := append([]string{"test", "-c", "-vet=off", "-o", dir + string(filepath.Separator)}, o.build...)
		cmd := exec.CommandContext(ctx, o.goCmd, append(args, byRank[r]...)...)
		var msg bytes.Buffer
		cmd.Stdout, cmd.Stderr = &msg, &msg
		if err := cmd.Run(); err != nil {
			out.Write(msg.Bytes())
			fmt.Fprintf(out, "FAIL\t[build failed]\t%s\n", strings.Join(byRank[r], " "))
			return 1, fmt.Errorf("go test -c: %w", err)
		}
	}
	return 0, nil
}

// test runs the binaries, o.parallel at once, started in the order given.
func test(ctx context.Context, o options, pkgs []pkg, out io.Writer) int {
	var (
		mu     sync.Mutex
		failed bool
		wg     sync.WaitGroup
		slots  = make(chan struct{}, o.parallel)
	)
	for _, p := range pkgs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			report, ok := runOne(ctx, o, p)
			mu.Lock()
			defer mu.Unlock()
			out.Write(report)
			failed = failed || !ok
		})
	}
	wg.Wait()
	if failed {
		fmt.Fprintln(out, "FAIL")
		return 1
	}
	return 0
}

// runOne runs one test binary as go test would: in the package's
// directory, with -test.paniconexit0 and the timeout.
func runOne(ctx context.Context, o options, p pkg) ([]byte, bool) {
	args := []string{"-test.paniconexit0", "-test.timeout=" + o.timeout.String()}
	if o.run != "" {
		args = append(args, "-test.run="+o.run)
	}
	if o.skip != "" {
		args = append(args, "-test.skip="+o.skip)
	}
	if o.verbose {
		args = append(args, "-test.v=true")
	}
	// A binary that outlives its own timeout (a deadlock the testing
	// package cannot report) is made to dump its goroutines, as go test
	// does.
	ctx, cancel := context.WithTimeout(ctx, o.timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.binary, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "PWD="+p.dir)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start).Seconds()
	var cpu float64
	if cmd.ProcessState != nil {
		cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	var report bytes.Buffer
	if err != nil || o.verbose {
		report.Write(output.Bytes())
	}
	if err != nil {
		if !bytes.HasSuffix(output.Bytes(), []byte("\n")) && output.Len() > 0 {
			report.WriteString("\n")
		}
		fmt.Fprintf(&report, "FAIL\t%s\t%.3fs (%v)\n", p.importPath, took, err)
		return report.Bytes(), false
	}
	fmt.Fprintf(&report, "ok  \t%s\t%.3fs\tcpu %.1fs\n", p.importPath, took, cpu)
	return report.Bytes(), true
}

func goOutput(ctx context.Context, o options, args ...string) ([]string, error) {
	cmd := exec.CommandContext(ctx, o.goCmd, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w: %s", args[0], err, stderr.Bytes())
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n"), nil
}
