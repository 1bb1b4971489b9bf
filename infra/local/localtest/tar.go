package localtest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestTar is an application test configuration as an uncompressed tar, as
// PUT /v2/tests/{id} takes it: one session of GET requests to base, and a
// README (which makes two uploads with different readmes differ).
func TestTar(t testing.TB, base, readme string) []byte {
	t.Helper()
	cfg, _ := json.Marshal(map[string]any{"probabilities": 1, "models": map[string]any{
		"home": map[string]any{"type": "user.StaticSession", "requests": []map[string]any{{"name": "home", "method": "GET", "url": base + "/"}}},
	}})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, f := range []struct{ name, body string }{{"test.json", string(cfg)}, {"README", readme}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: mt, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
