package buildcache

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDirIsUnderTheUserCacheDirectory(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("HOME", home)
	dir, err := Dir("probe")
	if err != nil {
		t.Fatal(err)
	}
	c, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(c, "cads", "probe") {
		t.Errorf("Dir(probe) = %s, want %s", dir, filepath.Join(c, "cads", "probe"))
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Errorf("%s was not created: %v", dir, err)
	}
}
