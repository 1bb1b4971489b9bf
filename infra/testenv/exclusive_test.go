//go:build unix

package testenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestExclusiveHoldsTheLockUntilTheTestEnds(t *testing.T) {
	name := "exclusive-test-" + filepath.Base(t.TempDir())
	path := filepath.Join(os.TempDir(), "cads-test-"+name+".lock")
	t.Cleanup(func() { os.Remove(path) })
	try := func() bool {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	}
	t.Run("holder", func(t *testing.T) {
		Exclusive(t, name)
		if try() {
			t.Error("another holder got the lock while the test held it")
		}
	})
	if !try() {
		t.Error("the lock is still held after the test that took it ended")
	}
}
