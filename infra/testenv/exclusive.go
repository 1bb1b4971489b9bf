//go:build unix

package testenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Exclusive holds a lock shared by every test process on the machine,
// named name, until the test ends, waiting for it while another process
// holds it. make test runs several test binaries at once on two cores;
// the tests that race eight clients on one item against a request's
// deadline (every PATCH must answer 200) ran out of time when two
// binaries raced at the same moment, each slowing the other's
// functions: a 429 after 4.3 s, at 546419b. They take turns; everything
// else still runs beside them.
func Exclusive(t testing.TB, name string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "cads-test-"+name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("lock %s: %v", name, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		t.Fatalf("lock %s: %v", name, err)
	}
	// Closing the file releases the lock, as does the process's end.
	t.Cleanup(func() { f.Close() })
}
