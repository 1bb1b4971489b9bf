package access

import (
	"strings"
	"testing"
)

func TestSecretRoundTrip(t *testing.T) {
	s := NewSecret("p1", "k1")
	p, k, ok := ParseSecret(s)
	if !ok || p != "p1" || k != "k1" {
		t.Fatalf("ParseSecret(%q) = %q %q %v", s, p, k, ok)
	}
	if !secretMatches(s, HashSecret(s)) {
		t.Fatal("secret does not match its own hash")
	}
	if secretMatches(s+"x", HashSecret(s)) || secretMatches(strings.ToUpper(s), HashSecret(s)) {
		t.Fatal("a different secret matched")
	}
	if strings.Contains(HashSecret(s), s) {
		t.Fatal("hash contains the secret")
	}
}

func TestParseSecretRefusesMalformed(t *testing.T) {
	for _, s := range []string{"", "cads", "cads_p_k", "xx_p_k_r", "cads_p_k_r_extra", "cads__k_r", "cads_P_k_r", "cads_p_k_r/../x", "cads_p#x_k_r"} {
		if _, _, ok := ParseSecret(s); ok {
			t.Errorf("ParseSecret(%q) accepted", s)
		}
	}
}
