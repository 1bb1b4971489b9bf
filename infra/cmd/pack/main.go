// Command pack zips a function's bootstrap binary for Lambda
// (provided.al2023 wants an executable named "bootstrap" at the zip's root).
// It is Go so that `make build` needs nothing beyond the Go toolchain.
package main

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: pack BOOTSTRAP_BINARY OUT.zip")
		os.Exit(2)
	}
	if err := pack(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "pack:", err)
		os.Exit(1)
	}
}

func pack(bin, out string) error {
	in, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	// A fixed time keeps the zip byte-identical for an identical binary.
	h.Modified = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, in); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}
