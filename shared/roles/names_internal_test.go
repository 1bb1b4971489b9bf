package roles

import "testing"

// clash finds the built-in role a name reads as (names.Same), and leaves
// names that only resemble one free.
func TestClash(t *testing.T) {
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
		{"Rеаdеr", "Reader"},                      // Cyrillic е and а
		{"Еditor", "Editor"},                      // Cyrillic Е
		{"Accоunt оwner", "Account owner"},        // Cyrillic о
		{"Entitlement administrator", "Entitlement administrator"},
		{"ENTITLEMENT\u00a0Administrator", "Entitlement administrator"},
		{"EditorI", ""},                                             // a capital I more is another name
		{"Entitlement adrninistrator", "Entitlement administrator"}, // rn for m
		{"AccountOwner", ""},
		{"Account owner", "Account owner"},
		{"Entit\u006cement administrator", "Entitlement administrator"},
		{"EntitIement administrator", "Entitlement administrator"}, // capital I for l (the skeleton key)
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
