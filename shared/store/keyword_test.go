package store

import (
	"cads/shared/domain"
	"testing"
)

func TestKeyword(t *testing.T) {
	for in, want := range map[string]string{
		"Éxito S.A.":        "exito-s-a",
		"Platform operator": "platform-operator",
		"  ACME  Corp!!":    "acme-corp",
		"日本":                "",
		"a--b":              "a-b",
	} {
		if got := domain.Keyword(in); got != want {
			t.Errorf("Keyword(%q) = %q, want %q", in, got, want)
		}
	}
}
