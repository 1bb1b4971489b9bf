package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The stand-in really drives a bootstrap through the Runtime API: the
// authorizer initialises, takes its invocation and answers it.
func TestMeasureDrivesARealBootstrap(t *testing.T) {
	if err := os.Chdir(filepath.Join("..", "..", "..")); err != nil {
		t.Fatal(err)
	}
	r, err := Measure(context.Background(), "authorizer", t.TempDir(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Init <= 0 || r.First < r.Init || r.Binary == 0 {
		t.Fatalf("implausible measurement: %+v", r)
	}
}
