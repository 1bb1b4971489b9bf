package rbacadmin

import "testing"

// readsAs makes equal exactly the names a reader cannot tell apart.
func TestReadsAs(t *testing.T) {
	n, err := loadBuiltinNames()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, clash string // clash "": the name is free
	}{
		{"Account owner", "Account owner"},
		{"Account\u00a0owner", "Account owner"},   // no-break space
		{"Account\u2003owner", "Account owner"},   // em space
		{"Account\u3000owner", "Account owner"},   // ideographic space
		{"account  OWNER", "Account owner"},       // case, doubled space
		{" Account owner\u200a", "Account owner"}, // hair space at the end
		{"Account\u200b owner", "Account owner"},  // zero-width space beside a space
		{"Editor\u200b", "Editor"},                // zero-width space
		{"Edi\u200dtor", "Editor"},                // zero-width joiner
		{"Editor\u00ad", "Editor"},                // soft hyphen
		{"Editor\ufe0f", "Editor"},                // variation selector
		{"\ufeffEditor", "Editor"},                // byte order mark
		{"Edit\u2060or", "Editor"},                // word joiner
		{"ＲＥＡＤＥＲ", "Reader"},                      // full-width
		{"ℝeader", "Reader"},                      // double-struck capital R (compatibility)
		{"READER", "Reader"},                      //
		{"Reaſer", ""},                            // long s folds to s: "reaser", not reader
		{"Entitlement administrator", "Entitlement administrator"},
		{"ENTITLEMENT\u00a0Administrator", "Entitlement administrator"},
		// Legitimate names, which only resemble a built-in one.
		{"Editors", ""},
		{"Reader 2", ""},
		{"Account owners", ""},
		{"Account-owner", ""},
		{"Editor\u0600", ""}, // a prepended concatenation mark is visible
		{"Owner", ""},
		{"Maintainer", ""},
	} {
		b, ok := n.clash(c.name)
		if c.clash == "" && ok {
			t.Errorf("%q clashes with %q; want free", c.name, b)
		}
		if c.clash != "" && (!ok || b != c.clash) {
			t.Errorf("%q: clash %q, %v; want %q", c.name, b, ok, c.clash)
		}
	}
}

func TestDefaultIgnorable(t *testing.T) {
	for r, want := range map[rune]bool{
		0x00ad: true, 0x034f: true, 0x115f: true, 0x180e: true, 0x200b: true, 0x200c: true, 0x200d: true,
		0x2060: true, 0x3164: true, 0xfe00: true, 0xfeff: true, 0xffa0: true, 0x1d173: true, 0xe0001: true, 0xe01ef: true,
		' ': false, 'a': false, 0x00a0: false, 0x2003: false, 0xfff9: false, 0xfffb: false, 0x0600: false, 0x13430: false,
	} {
		if got := defaultIgnorable(r); got != want {
			t.Errorf("defaultIgnorable(U+%04X) = %v, want %v", r, got, want)
		}
	}
}
