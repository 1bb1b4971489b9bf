package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The wrk mode measures what `make run` costs per request as a server on
// its own: the platform binary runs as a separate process, wrk loads it,
// and the figure is that process's CPU time (kernel accounting, nothing of
// the client's) divided by the requests answered.

// serverCPUGoal is the warm path's goal for an authorized
// GET /v2/accounts/{id}: server CPU per request.
const serverCPUGoal = 750 * time.Microsecond

type wrkOptions struct {
	duration    time.Duration
	threads     int
	connections int
	// staleness is passed to the platform's -authz-staleness ("" keeps
	// make run's default).
	staleness string
}

func runWrk(ctx context.Context, o wrkOptions) error {
	wrkPath, err := exec.LookPath("wrk")
	if err != nil {
		fmt.Println("wrk run skipped: wrk is not installed (Debian/Ubuntu: sudo apt-get install -y wrk; macOS: brew install wrk).")
		return nil
	}
	if o.threads > o.connections {
		o.threads = o.connections
	}
	dir, err := os.MkdirTemp("", "cads-wrk")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The binary and the way it starts are make run's.
	bin := filepath.Join(".build", "local")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./infra/cmd/local")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build %s: %w", bin, err)
	}
	srv, err := startServer(ctx, bin, dir, o.staleness)
	if err != nil {
		return err
	}
	defer srv.stop()

	key, err := os.ReadFile(filepath.Join(dir, "state", "operator.key"))
	if err != nil {
		return fmt.Errorf("operator key (the platform writes it only when it creates the installation: is AWS_ENDPOINT_URL_DYNAMODB set?): %w", err)
	}
	bearer := "Bearer " + strings.TrimSpace(string(key))
	var who struct {
		Account *string `json:"account"`
	}
	if err := getJSON(ctx, srv.url+"/v2/users/self/authorization", bearer, &who); err != nil {
		return err
	}
	if who.Account == nil || !strings.HasPrefix(*who.Account, "/v2/accounts/") {
		return fmt.Errorf("the operator key names no account: %v", who.Account)
	}
	url := srv.url + *who.Account

	// Warm up: connections, the authorizer's per-key inputs, the runtime's heap.
	// A load that is not all 2xx would measure something else: stop here.
	warmOut, err := wrk(ctx, wrkPath, o.threads, o.connections, 2*time.Second, bearer, url)
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if r, err := parseWrk(warmOut); err != nil {
		return fmt.Errorf("warm-up: %w:\n%s", err, warmOut)
	} else if r.non2xx > 0 || r.socketErrors > 0 {
		return fmt.Errorf("warm-up: %d non-2xx answers and %d socket errors:\n%s\nlast platform log lines:\n%s", r.non2xx, r.socketErrors, warmOut, strings.Join(srv.tail(), "\n"))
	}
	tck := clockTicks(ctx)
	load0 := loadAvg()
	cpu0, err := procCPU(srv.cmd.Process.Pid, tck)
	if err != nil {
		return err
	}
	out, err := wrk(ctx, wrkPath, o.threads, o.connections, o.duration, bearer, url)
	if err != nil {
		return err
	}
	cpu1, err := procCPU(srv.cmd.Process.Pid, tck)
	if err != nil {
		return err
	}
	load1 := loadAvg()
	r, err := parseWrk(out)
	if err != nil {
		return fmt.Errorf("%w; wrk printed:\n%s", err, out)
	}
	if r.requests == 0 {
		return fmt.Errorf("wrk completed no request:\n%s", out)
	}
	perReq := (cpu1 - cpu0) / time.Duration(r.requests)
	warm := "warm path on (make run's default)"
	if o.staleness != "" {
		warm = "-authz-staleness " + o.staleness
	}
	fmt.Printf("\nwrk run: `wrk -t%d -c%d -d%s --latency -H 'Authorization: Bearer <operator key>' %s/v2/accounts/<root>` against `%s` (make run's binary, its own process, %s)\n\n",
		o.threads, o.connections, o.duration, srv.url, bin, warm)
	fmt.Println("| requests | req/s | p50 | p99 | non-2xx | socket errors | server CPU | server CPU per request | load average before / after |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	fmt.Printf("| %d | %.0f | %s | %s | %d | %d | %s | %s | %s / %s |\n", r.requests, r.rps, r.p50, r.p99, r.non2xx, r.socketErrors,
		(cpu1 - cpu0).Round(time.Millisecond), perReq.Round(time.Microsecond), load0, load1)
	verdict := "met"
	if perReq > serverCPUGoal {
		verdict = "missed"
	}
	fmt.Printf("\nServer CPU is /proc/%d/stat utime+stime (clock tick %s) over the run, divided by the requests; goal %s per request: %s.\n",
		srv.cmd.Process.Pid, time.Second/time.Duration(tck), serverCPUGoal, verdict)
	if r.non2xx > 0 || r.socketErrors > 0 {
		return fmt.Errorf("%d non-2xx answers and %d socket errors (platform log: %d lines kept below)\n%s", r.non2xx, r.socketErrors, len(srv.tail()), strings.Join(srv.tail(), "\n"))
	}
	return nil
}

// server is the platform running as a child process.
type server struct {
	cmd    *exec.Cmd
	url    string
	done   chan struct{} // closed when the process has exited
	logs   chan []string // the last log lines, once stderr closes
	recent *ring
}

func startServer(ctx context.Context, bin, dir, staleness string) (*server, error) {
	args := []string{"-state-dir", filepath.Join(dir, "state")}
	if staleness != "" {
		args = append(args, "-authz-staleness", staleness)
	}
	cmd := exec.Command(bin, args...)
	// As make run, with a port of its own; the log level stays the caller's
	// (INFO by default: one gateway line per request, as make run pays).
	cmd.Env = append(os.Environ(), "API_ADDR=127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "platform.log"))
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, done: make(chan struct{}), recent: &ring{max: 6}}
	ready := make(chan string, 1)
	go func() {
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Bytes()
			_, _ = logFile.Write(append(line, '\n'))
			s.recent.add(string(line))
			var l struct{ Msg, API string }
			if json.Unmarshal(line, &l) == nil && l.Msg == "ready" && l.API != "" {
				select {
				case ready <- l.API:
				default:
				}
			}
		}
		// Drain whatever a too-long line left, so the child never blocks.
		_, _ = io.Copy(logFile, stderr)
	}()
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	select {
	case s.url = <-ready:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("%s exited before ready:\n%s", bin, strings.Join(s.tail(), "\n"))
	case <-time.After(60 * time.Second):
		s.stop()
		return nil, fmt.Errorf("%s not ready after 60s:\n%s", bin, strings.Join(s.tail(), "\n"))
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
}

// stop ends the platform as Ctrl-C does, so it closes its servers itself;
// it is killed only if that takes longer than its own 5 s budget and more.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

func (s *server) tail() []string { return s.recent.lines() }

// ring keeps the last lines of the platform's log for error messages.
type ring struct {
	max int
	mu  sync.Mutex
	buf []string
}

func (r *ring) add(l string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, l)
	if len(r.buf) > r.max {
		r.buf = r.buf[len(r.buf)-r.max:]
	}
}

func (r *ring) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.buf...)
}

func wrk(ctx context.Context, path string, threads, conns int, d time.Duration, bearer, url string) (string, error) {
	secs := int(d.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	cmd := exec.CommandContext(ctx, path, "-t"+strconv.Itoa(threads), "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(secs)+"s",
		"--latency", "-H", "Authorization: "+bearer, url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("wrk: %w: %s", err, out)
	}
	return string(out), nil
}

type wrkResult struct {
	requests, non2xx, socketErrors int
	rps                            float64
	p50, p99                       string
}

var (
	reRequests = regexp.MustCompile(`(?m)^\s*(\d+) requests in `)
	reRPS      = regexp.MustCompile(`(?m)^Requests/sec:\s+([\d.]+)`)
	reNon2xx   = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses:\s+(\d+)`)
	reSocket   = regexp.MustCompile(`(?m)^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	rePct      = regexp.MustCompile(`(?m)^\s*(50|99)%\s+(\S+)`)
)

// parseWrk reads wrk 4's summary. The non-2xx and socket-error lines are
// printed only when their counts are not zero.
func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	m := reRequests.FindStringSubmatch(out)
	if m == nil {
		return r, errors.New("no \"N requests in\" line in wrk's output")
	}
	r.requests, _ = strconv.Atoi(m[1])
	if m := reRPS.FindStringSubmatch(out); m != nil {
		r.rps, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := reNon2xx.FindStringSubmatch(out); m != nil {
		r.non2xx, _ = strconv.Atoi(m[1])
	}
	if m := reSocket.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.Atoi(s)
			r.socketErrors += n
		}
	}
	r.p50, r.p99 = "–", "–"
	for _, m := range rePct.FindAllStringSubmatch(out, -1) {
		if m[1] == "50" {
			r.p50 = m[2]
		} else {
			r.p99 = m[2]
		}
	}
	return r, nil
}

// procCPU is a process's user plus system time from /proc/<pid>/stat.
func procCPU(pid int, ticksPerSecond int64) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("server CPU: %w", err)
	}
	return parseStat(string(b), ticksPerSecond)
}

// parseStat reads utime and stime (fields 14 and 15) of a stat line. The
// command name (field 2) may hold spaces and parentheses, so fields are
// counted after its last ')'.
func parseStat(stat string, ticksPerSecond int64) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("unreadable /proc stat line %q", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat line %q", stat)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc stat times: %w", err)
	}
	return time.Duration(utime+stime) * time.Second / time.Duration(ticksPerSecond), nil
}

// clockTicks is the unit of /proc stat times (USER_HZ), 100 on Linux
// unless getconf says otherwise.
func clockTicks(ctx context.Context) int64 {
	out, err := exec.CommandContext(ctx, "getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 100
}

// loadAvg is the 1, 5 and 15-minute load averages, so a figure can be
// read against what else the machine was doing.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func getJSON(ctx context.Context, url, bearer string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}
