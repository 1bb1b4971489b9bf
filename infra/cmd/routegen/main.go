// Command routegen writes the route tables derived from the API's
// contract (infra/routegen): run it with `go generate ./...` after
// changing shared/openapi/openapi.json.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"cads/infra/routegen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "routegen:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	files, err := routegen.Files(root)
	if err != nil {
		return err
	}
	for rel, content := range files {
		path := filepath.Join(root, rel)
		if old, err := os.ReadFile(path); err == nil && string(old) == string(content) {
			continue
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
		fmt.Println("routegen: wrote", rel)
	}
	return nil
}

// moduleRoot is the folder of go.mod at or above the working directory
// (go generate runs in the package's folder).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
