package ids

import "testing"

func TestNewAndSecretAreValidAndDistinct(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id, sec := New(), Secret()
		if !Valid(id) || len(id) != 16 {
			t.Fatalf("bad id %q", id)
		}
		if !Valid(sec) || len(sec) != 32 {
			t.Fatalf("bad secret %q", sec)
		}
		if seen[id] || seen[sec] {
			t.Fatalf("duplicate %q/%q", id, sec)
		}
		seen[id], seen[sec] = true, true
	}
}

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{"abc123": true, "": false, "ABC": false, "a-b": false, "a/b": false, "ä": false} {
		if Valid(s) != want {
			t.Errorf("Valid(%q) = %v", s, !want)
		}
	}
}
