package authz

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Seeds live in testdata/fuzz/<FuzzName>/; run e.g.
//
//	go test -run XXX -fuzz FuzzCheckPath -fuzztime 20s ./shared/authz/

func FuzzNormalizePattern(f *testing.F) {
	for _, s := range []string{"/v2/applications/*", "/applications**", "/v2/**", "/v2/{id}", "/v2/../x", "/v2//x", "/v2/***", "/v2/a*b", "/v2/**/x", "", "/", "/v2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		n, err := NormalizePattern(p)
		if err != nil {
			var pe *PatternError
			if !errors.As(err, &pe) || pe.Reason == "" || pe.Index >= len(p) || err.Error() == "" {
				t.Fatalf("NormalizePattern(%q): bad error %#v", p, err)
			}
			return
		}
		if again, err := NormalizePattern(n); err != nil || again != n {
			t.Fatalf("NormalizePattern(%q) = %q, which re-normalises to %q, %v", p, n, again, err)
		}
		if !strings.HasPrefix(n, "/v2") || strings.Contains(n, "//") || strings.Contains(n, "***") {
			t.Fatalf("NormalizePattern(%q) = %q", p, n)
		}
		c, err := Compile(Role{ID: "r", AccountID: "a", Permissions: []Permission{{Method: "GET", Spec: []string{n}, Effect: EffectPermit}}})
		if err != nil {
			t.Fatalf("accepted pattern %q does not compile: %v", n, err)
		}
		// The pattern matches its own instance: "*" -> "x", "**" -> nothing.
		inst := strings.ReplaceAll(strings.TrimSuffix(n, "**"), "*", "x")
		if CheckPath(inst) == nil {
			if d := Decide([]*CompiledRole{c}, "GET", inst); !d.Allowed || specMatch(n, inst) != true {
				t.Fatalf("%q does not match its instance %q", n, inst)
			}
		}
	})
}

func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"/v2/accounts/a1", "/v2//x", "/v2/./x", "/v2/../x", "/v2/x/", "/v2/%2e%2e/x", "/v2/a%2Fb", "/", "", "/v2/\u0430", "/v2/a\\b", "/v2/a;b"} {
		f.Add(s)
	}
	c, err := Compile(Role{ID: "r", AccountID: "a", Permissions: []Permission{
		{Method: "GET", Spec: []string{"/v2/**", "/v2/accounts/*"}, Effect: EffectPermit},
		{Method: "GET", Spec: []string{"/v2/accounts/a1/**"}, Effect: EffectDeny},
	}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path string) {
		err := CheckPath(path)
		d := Decide([]*CompiledRole{c}, "GET", path)
		_ = d.Explain()
		_ = SelfService("GET", path, "u1")
		if got := compose([]*CompiledRole{c, c}, true).Decide("GET", path); !reflect.DeepEqual(got, Decide([]*CompiledRole{c, c}, "GET", path)) {
			t.Fatalf("RoleSet.Decide(%q) = %+v, Decide says %+v", path, got, d)
		}
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) || pe.Reason == "" || pe.Index >= len(path) {
				t.Fatalf("CheckPath(%q): bad error %#v", path, err)
			}
			if d.Allowed || d.Status != 400 || canonical(path) {
				t.Fatalf("non-canonical %q decided: %+v", path, d)
			}
			return
		}
		for _, bad := range []string{"//", "/./", "/../", "%", "\\", ";"} {
			if strings.Contains(path, bad) {
				t.Fatalf("CheckPath accepted %q containing %q", path, bad)
			}
		}
		if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.HasSuffix(path, "/.") || strings.HasSuffix(path, "/..") {
			t.Fatalf("CheckPath accepted %q", path)
		}
		for i := 0; i < len(path); i++ {
			if path[i] <= ' ' || path[i] >= 0x7f {
				t.Fatalf("CheckPath accepted %q with byte %#x", path, path[i])
			}
		}
		if want := strings.HasPrefix(path, "/v2/") && !strings.HasPrefix(path, "/v2/accounts/a1/"); d.Allowed != want {
			t.Fatalf("Decide(%q) = %v, want %v: %s", path, d.Allowed, want, d.Explain())
		}
	})
}
