// Package names is the one rule by which the API compares names that
// people read: account names (unique across the installation) and role
// names (none may read as a built-in role). Two names are the same name
// when they have one of their Keys in common (Same); refusals say so in
// domain.NamesCompared.
//
// It is its own package, not part of shared/domain, because the Unicode
// confusables table it links is large (about 6,000 entries built at
// start-up): only the functions that compare names link it (accounts,
// roles, the notifier and the installer; shared/wire's TestFunctionDeps).
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"cads/shared/domain"
)

// MaxKeyBytes bounds a Key: a longer folded form is replaced by its
// SHA-256 (see Key). It keeps an account's name claim well inside
// DynamoDB's 2048-byte partition key and the account item small, whatever
// the 100 characters of a name expand to (NFKC and the confusable
// mappings both expand: U+FDFA is 18 characters after NFKC).
const MaxKeyBytes = domain.NameKeyMaxBytes

// hashedPrefix marks a hashed key. The last step of Key and Skeleton is
// case folding, which leaves no ASCII capital letter, so no folded form
// can start with it.
const hashedPrefix = "SHA256:"

// Keys are the forms under which a name is compared and claimed: its Key
// and, when it differs, its Skeleton. Two names are the same name when
// they have a key in common (Same).
func Keys(name string) []string {
	k, sk := KeyAndSkeleton(name)
	if sk == k {
		return []string{k}
	}
	return []string{k, sk}
}

// KeyAndSkeleton is a name's Key and Skeleton, as an account keeps them
// (NameKey, NameSkeleton) and the schema migration gives them
// (store.NameKeys).
func KeyAndSkeleton(name string) (key, skeleton string) { return Key(name), Skeleton(name) }

// Check refuses (a *domain.Error naming field) a name a reader would
// misread: one of nothing visible (Invisible) or one holding a character
// whose look is not what is compared (Unreadable).
func Check(field, name string) error {
	if Invisible(name) {
		return domain.NameInvisible(field, name)
	}
	if r, bad := Unreadable(name); bad {
		return domain.NameUnreadable(field, r)
	}
	return nil
}

// Invisible reports whether a reader would see nothing of name: it is
// made only of characters that render as nothing and white space (its Key
// is empty). Such names would all read alike, as nothing.
func Invisible(name string) bool { return Key(name) == "" }

// Unreadable returns the first character of name that a name may not
// hold, because what a reader sees is not what is compared: a
// bidirectional control (U+202E reverses the text after it, so a name
// spelled backwards displays as another's), a private-use character (its
// look is the font's), or U+FFFC and U+FFFD, which stand for something
// else. ok is false when there is none.
func Unreadable(name string) (r rune, ok bool) {
	for _, r := range name {
		if unicode.In(r, unicode.Bidi_Control, unicode.Co) || r == '\ufffc' || r == '\ufffd' {
			return r, true
		}
	}
	return 0, false
}

// Same reports whether a and b are the same name: a key in common.
func Same(a, b string) bool {
	for _, ka := range Keys(a) {
		for _, kb := range Keys(b) {
			if ka == kb {
				return true
			}
		}
	}
	return false
}

// Key is the form in which two names a reader cannot tell apart are
// equal, whatever their case:
//
//  1. Unicode compatibility normalisation (NFKC: full-width and other
//     compatibility forms, no-break and typographic spaces) and case
//     folding; folding can leave text unnormalised, so NFKC runs again;
//  2. removal of the characters that render as nothing
//     (Default_Ignorable_Code_Point: zero-width spaces and joiners, soft
//     hyphens, variation selectors, ...);
//  3. any run of white space as one space, none at either end;
//  4. each letter beyond ASCII that the skeleton would not make Latin
//     but whose capital is a look-alike of Latin text (Cyrillic "в": "В"
//     reads as "B") replaced by that text, folded (latinCapitals);
//  5. the confusable skeleton of Unicode's UTS #39 (Unicode's
//     confusables.txt: Cyrillic "е" and Latin "e" are one letter,
//     "rn" and "m", "1" and "l");
//  6. case folding again, as the skeleton maps some characters to
//     capitals ("0" to "O").
//
// Case folding comes first so that names differing in case only are one
// name; the skeleton alone would then miss capitals that look Latin while
// their small letters do not (Cyrillic "ВЕТА" folds to "вета", whose
// skeleton is small capitals): step 4 catches those, and as it is a
// function of the capital it keeps case out of the comparison. What
// folding first cannot see is a look-alike made of a capital and a small
// letter at once ("PayPaI" with a capital I against "PayPal"): Skeleton
// is the second key that does.
//
// A form longer than MaxKeyBytes is "SHA256:" and its hex SHA-256.
func Key(name string) string {
	s := norm.NFKC.String(cases.Fold().String(norm.NFKC.String(name)))
	s = cases.Fold().String(confusables.Skeleton(latinCapitals(plain(s))))
	return bounded(s)
}

// Skeleton is the UTS #39 skeleton of the name as it is written (steps 1
// to 3 of Key without the case folding, then the confusables mapping),
// case folded afterwards. Names whose skeletons are equal read alike in
// the letters as they are cased: a capital I is a small l ("PayPaI" and
// "PayPal", "AppIication"), and since names differing in case only are
// one name, the fold makes "PayPaI" read as "paypal" too. The price of
// that fold: a capital I among capitals still reads as l ("TAIL" as a
// spelling of "tall"), so such a pair is one name.
//
// A form longer than MaxKeyBytes is "SHA256:" and its hex SHA-256.
func Skeleton(name string) string {
	return bounded(cases.Fold().String(confusables.Skeleton(plain(norm.NFKC.String(name)))))
}

// plain removes the characters that render as nothing from s and
// collapses its white space (steps 2 and 3 of Key).
func plain(s string) string {
	s = strings.Map(func(r rune) rune {
		if defaultIgnorable(r) {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		// U+2800, the Braille pattern without dots, renders as a space
		// but is no White_Space.
		return unicode.Is(unicode.White_Space, r) || r == '\u2800'
	}), " ")
}

// bounded is s, or its hashed form when longer than MaxKeyBytes.
func bounded(s string) string {
	if len(s) > MaxKeyBytes {
		sum := sha256.Sum256([]byte(s))
		return hashedPrefix + hex.EncodeToString(sum[:])
	}
	return s
}

// latinCapitals replaces each non-ASCII small letter of s (s is case
// folded) that the confusables data does not map to ASCII but whose
// capital it does (Cyrillic "в", as "В" reads as "B"; Greek "η";
// Cherokee) with that text in small letters. ASCII letters are left to
// the skeleton: "i" is not "I", whose skeleton is "l".
func latinCapitals(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf {
			b.WriteRune(r)
			continue
		}
		// A small letter the skeleton maps to Latin already stays so
		// (Ukrainian "і" is "i", though its capital reads as "l").
		if c := unicode.ToUpper(r); c != r && !ascii(confusables.Skeleton(string(r))) {
			if sk := confusables.Skeleton(string(c)); ascii(sk) {
				b.WriteString(strings.ToLower(sk))
				continue
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return s != ""
}

// defaultIgnorable is Unicode's derived property Default_Ignorable_Code_Point,
// which the standard library does not carry as a table. It is derived here
// from the tables it does carry, by the property's own definition
// (DerivedCoreProperties.txt): Other_Default_Ignorable_Code_Point + Cf +
// Variation_Selector - White_Space - FFF9..FFFB (interlinear annotation) -
// 13430..13440 (Egyptian hieroglyph format controls) -
// Prepended_Concatenation_Mark. The two ranges are the only hand-written
// part: they are named ranges of the definition, not a property Go exports.
func defaultIgnorable(r rune) bool {
	if !unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector) {
		return false
	}
	switch {
	case unicode.In(r, unicode.White_Space, unicode.Prepended_Concatenation_Mark):
		return false
	case r >= 0xfff9 && r <= 0xfffb, r >= 0x13430 && r <= 0x13440:
		return false
	}
	return true
}
