// Package buildcache names where the binaries tests and make test build
// are kept between runs: under the user's cache directory, as Go's build
// cache is, so that a clean checkout (CI's) finds what the last run
// linked and the go command links again only what is out of date.
package buildcache

import (
	"fmt"
	"os"
	"path/filepath"
)

// Dir is the directory name, created if missing:
// <user cache directory>/cads/<name>.
func Dir(name string) (string, error) {
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory for %s: %w", name, err)
	}
	dir := filepath.Join(c, "cads", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}
