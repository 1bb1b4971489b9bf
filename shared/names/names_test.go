package names

import (
	"strings"
	"testing"
)

// Same makes equal exactly the names a reader cannot tell apart.
func TestSame(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		// Case, compatibility forms, invisible characters, white space.
		{"beta", "BETA", true},
		{"beta-906", "ｂｅｔａ-906", true},       // full-width
		{"beta-906", "beta\u200b-906", true}, // zero-width space
		{"beta", "\ufeffbe\u200dta\u00ad", true},
		{"Acme Corp", "acme\u00a0\u2003corp ", true},
		{"Acme Corp", " Acme  Corp", true},
		{"ℝeader", "reader", true},
		{"Straße", "STRASSE", true}, // full case folding
		{"Éxito", "E\u0301xito", true},
		// Confusables (UTS #39), after case folding.
		{"beta", "betа", true},                                     // Cyrillic а
		{"Exito", "Еxito", true},                                   // Cyrillic Е
		{"Acme", "Асmе", true},                                     // Cyrillic А, с, е
		{"paypal", "pаypаl", true},                                 // Cyrillic а
		{"Omega", "Οmega", true},                                   // Greek Ο
		{"modern", "rnodern", true},                                // m against r n
		{"beta-1", "beta-l", true},                                 // digit one against small L
		{"beta-0", "beta-O", true},                                 // digit zero against capital O
		{"Reader", "Rеаdеr", true},                                 // Cyrillic е, а
		{"Hello", "Hеllο", true},                                   // Cyrillic е, Greek ο
		{"BETA", "ВЕТА", true},                                     // Cyrillic capitals В, Е, Т, А
		{"beta", "ВЕТА", true},                                     // compared without regard to case
		{"Mike", "МIKE", true},                                     // Cyrillic М
		{"Reader", "Ꭱeader", true},                                 // Cherokee Ꭱ
		{"Hello", "Ηello", true},                                   // Greek Η
		{"beta", "\U0001d41b\U0001d41e\U0001d42d\U0001d41a", true}, // mathematical bold
		// Names that only resemble each other stay apart.
		{"beta-1", "beta-2", false},
		{"beta", "betas", false},
		{"Acme", "Acne", false},
		{"Éxito", "Exito", false}, // an accent is visible
		{"Acme Corp", "AcmeCorp", false},
		{"Acme Corp", "Acme-Corp", false},
		{"Editor", "Editor\u0600", false}, // a prepended concatenation mark is visible
		{"Reaſer", "Reader", false},       // long s folds to s
		{"日本", "中国", false},
		{"Iowa", "iowa", true},  // case only
		{"bill", "bіll", true},  // Ukrainian і
		{"Ali", "All", false},   // i is not l
		{"Café", "Cafe", false}, // é has no ASCII look-alike
		{"Straße", "Strasze", false},
		// A capital and a small letter at once (Skeleton, UTS #39 on the
		// name as written): a capital I reads as a small l.
		{"PayPal", "PayPaI", true},
		{"paypal", "PaypaI", true}, // and case is no difference
		{"PAYPAL", "PayPaI", true},
		{"Application administrator", "AppIication administrator", true},
		{"Illinois", "lllinois", true},
		{"AlI", "All", true},
		{"TAIL", "tall", true}, // the price: "TAIL" is "TAlL", a spelling of "tall"
		{"tail", "tall", false},
		{"Mail Group", "Mall Group", false},
		{"PAYPAL", "PAYPAI", true}, // the same price: "PAYPAl" is a spelling of "paypal"
		{"PAYPAL", "PAYPAT", false},
	} {
		if got := Same(c.a, c.b); got != c.same {
			t.Errorf("Same(%q, %q) = %v, want %v (keys %q and %q)", c.a, c.b, got, c.same, Keys(c.a), Keys(c.b))
		}
	}
}

// Key alone cannot see a look-alike that needs a capital and a small
// letter at once; Skeleton is the key that does, and the one Keys adds.
func TestSkeletonIsTheSecondKey(t *testing.T) {
	if Key("PayPaI") == Key("PayPal") {
		t.Fatalf("Key(PayPaI) = Key(PayPal) = %q: the skeleton would be redundant", Key("PayPal"))
	}
	if Skeleton("PayPaI") != Skeleton("PayPal") {
		t.Errorf("Skeleton(PayPaI) = %q, Skeleton(PayPal) = %q; want equal", Skeleton("PayPaI"), Skeleton("PayPal"))
	}
	if got := Keys("PayPaI"); len(got) != 2 || got[0] != Key("PayPaI") || got[1] != Skeleton("PayPaI") {
		t.Errorf("Keys(PayPaI) = %q; want Key then Skeleton", got)
	}
	if got := Keys("beta-906"); len(got) != 1 {
		t.Errorf("Keys(beta-906) = %q; want one key when Skeleton equals Key", got)
	}
}

// A Key keeps to MaxKeyBytes however far a name expands, still telling
// names apart, and a hashed form can be no folded form.
func TestKeyBounded(t *testing.T) {
	long := strings.Repeat("\ufdfa", 100) // 18 characters each after NFKC
	k := Key(long)
	if len(k) > MaxKeyBytes || !strings.HasPrefix(k, hashedPrefix) {
		t.Fatalf("Key of 100 x U+FDFA: %d bytes %q; want a hashed key", len(k), k)
	}
	if Key(long) != k || Key(long+"\u200b") != k {
		t.Errorf("a hashed key is not stable across look-alike forms")
	}
	if Key(strings.Repeat("\ufdfa", 99)+"x") == k {
		t.Errorf("two different long names hash alike")
	}
	if Key(strings.ToUpper(hashedPrefix)+"00") == hashedPrefix+"00" {
		t.Errorf("a name folds to the hashed prefix")
	}
	if sk := Skeleton(long); len(sk) > MaxKeyBytes || !strings.HasPrefix(sk, hashedPrefix) {
		t.Errorf("Skeleton of 100 x U+FDFA: %d bytes %q; want a hashed key", len(sk), sk)
	}
	if Skeleton(strings.ToUpper(hashedPrefix)+"00") == hashedPrefix+"00" {
		t.Errorf("a skeleton folds to the hashed prefix")
	}
}

// Invisible finds the names of nothing a reader sees, and only those.
func TestInvisible(t *testing.T) {
	for name, want := range map[string]bool{
		"\u200b": true, "\u200b\u200b": true, "\u00ad": true, "\u3164": true, "\uffa0": true, "\u115f": true,
		"\u2060 \u200d": true, "\U000e0001": true, "\ufe0f": true,
		"x": false, "\u2060x": false, ".": false, "\u0600": false, "日": false, "\u00a0a": false,
	} {
		if got := Invisible(name); got != want {
			t.Errorf("Invisible(%q) = %v, want %v", name, got, want)
		}
	}
}

// Unreadable finds the characters whose look is not what is compared.
func TestUnreadable(t *testing.T) {
	for name, want := range map[string]rune{
		"\u202e91435 laPyaP\u202c": 0x202e, "a\u2066b": 0x2066, "Acme\ue000": 0xe000, "Acme\ufffc": 0xfffc, "x\U000F0000": 0xf0000,
		"Acme": 0, "Café 日本": 0, "a\u200bb": 0,
	} {
		r, ok := Unreadable(name)
		if ok != (want != 0) || r != want {
			t.Errorf("Unreadable(%q) = U+%04X %v, want U+%04X", name, r, ok, want)
		}
	}
	if !Same("PayPal Modern", "PayPal\u2800Modern") {
		t.Error("the blank Braille pattern is not read as a space")
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
