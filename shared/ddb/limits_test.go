package ddb

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type av = map[string]types.AttributeValue

func TestItemSize(t *testing.T) {
	cases := []struct {
		name string
		item av
		want int
	}{
		// Strings: UTF-8 bytes of name + value.
		{"string", av{"name": s("Alice")}, 4 + 5},
		{"utf8 string", av{"ü": s("日本")}, 2 + 6},
		{"empty string", av{"a": s("")}, 1},
		// Numbers: 1 + 1 per two significant digits (+1 when the pairs
		// straddle the decimal point, +1 if negative); zero is 1.
		{"zero", av{"n": n("0")}, 1 + 1},
		{"one digit", av{"n": n("7")}, 1 + 2},
		{"trailing zeros trimmed", av{"n": n("1000000")}, 1 + 2},
		{"leading zeros trimmed", av{"n": n("0.001")}, 1 + 2},
		{"two digits", av{"n": n("12")}, 1 + 2},
		{"three digits", av{"n": n("123")}, 1 + 3},
		{"four digits", av{"n": n("1234")}, 1 + 3},
		{"straddles point", av{"n": n("1.5")}, 1 + 3},
		{"even digits odd alignment", av{"n": n("123.4")}, 1 + 4},
		{"negative", av{"n": n("-1")}, 1 + 3},
		{"exponent", av{"n": n("1.5E3")}, 1 + 2},
		{"38 digits", av{"n": n("12345678901234567890123456789012345678")}, 1 + 20},
		// Binary: raw bytes.
		{"binary", av{"bin": b([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})}, 3 + 10},
		// BOOL and NULL: 1 byte.
		{"bool", av{"ok": &types.AttributeValueMemberBOOL{Value: true}}, 2 + 1},
		{"null", av{"x": &types.AttributeValueMemberNULL{Value: true}}, 1 + 1},
		// Sets: sum of elements.
		{"string set", av{"ss": &types.AttributeValueMemberSS{Value: []string{"a", "bc"}}}, 2 + 3},
		{"number set", av{"ns": &types.AttributeValueMemberNS{Value: []string{"1", "10", "123"}}}, 2 + 2 + 2 + 3},
		{"binary set", av{"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {1, 2}}}}, 2 + 3},
		// Lists and maps: 3 bytes + 1 per element (+ element names for maps).
		{"empty list", av{"l": &types.AttributeValueMemberL{}}, 1 + 3},
		{"empty map", av{"m": &types.AttributeValueMemberM{}}, 1 + 3},
		{"list", av{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("ab"), n("1")}}}, 1 + 3 + (1 + 2) + (1 + 2)},
		{"map", av{"m": &types.AttributeValueMemberM{Value: av{"x": s("ab")}}}, 1 + 3 + (1 + 1 + 2)},
		{"nested", av{"m": &types.AttributeValueMemberM{Value: av{
			"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: av{}}}},
		}}}, 1 + 3 + (1 + 1 + (3 + (1 + 3)))},
		// Whole item: names and values of every attribute.
		{"item", av{"pk": s("USER#1"), "sk": s("PROFILE"), "age": n("42"), "tags": &types.AttributeValueMemberSS{Value: []string{"a"}}},
			(2 + 6) + (2 + 7) + (3 + 2) + (4 + 1)},
		{"empty item", av{}, 0},
	}
	for _, tc := range cases {
		if got := ItemSize(tc.item); got != tc.want {
			t.Errorf("%s: ItemSize = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestCheckItem(t *testing.T) {
	// Name "d" (1 byte) + value: exactly the limit is fine, one byte more is not.
	atLimit := av{"d": s(strings.Repeat("x", MaxItemBytes-1))}
	if err := CheckItem(atLimit); err != nil {
		t.Errorf("item of exactly %d bytes refused: %v", MaxItemBytes, err)
	}
	over := av{"d": s(strings.Repeat("x", MaxItemBytes))}
	err := CheckItem(over)
	if !errors.Is(err, ErrItemTooLarge) {
		t.Fatalf("CheckItem(%d bytes) = %v, want ErrItemTooLarge", MaxItemBytes+1, err)
	}
	if !strings.Contains(err.Error(), "409601") {
		t.Errorf("error %q does not carry the size", err)
	}
	// Sizes add up across attributes and nesting.
	nested := av{
		"a": s(strings.Repeat("x", 300*1024)),
		"m": &types.AttributeValueMemberM{Value: av{"b": b(make([]byte, 100*1024))}},
	}
	if !errors.Is(CheckItem(nested), ErrItemTooLarge) {
		t.Error("nested item over 400 KB accepted")
	}
}

func TestCheckKey(t *testing.T) {
	good := []av{
		{"pk": s("a")},
		{"pk": s("a"), "sk": n("1")},
		{"pk": b([]byte{1})},
	}
	for _, k := range good {
		if err := CheckKey(k); err != nil {
			t.Errorf("CheckKey(%v) = %v", k, err)
		}
	}
	bad := []av{
		nil,
		{"pk": s("")},
		{"pk": s("a"), "sk": s("")},
		{"pk": b(nil)},
		{"pk": s("a"), "sk": s("b"), "x": s("c")},
		{"pk": &types.AttributeValueMemberBOOL{Value: true}},
		{"pk": n("abc")},
		{"pk": s(strings.Repeat("x", MaxKeyValueBytes+1))},
	}
	for _, k := range bad {
		if err := CheckKey(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("CheckKey(%v) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestKeyIDNormalisesNumbers(t *testing.T) {
	if keyID(av{"k": n("1")}) != keyID(av{"k": n("1.0")}) || keyID(av{"k": n("1")}) != keyID(av{"k": n("10e-1")}) {
		t.Error("equal numbers give different key ids")
	}
	if keyID(av{"k": n("1")}) == keyID(av{"k": n("-1")}) || keyID(av{"k": s("1")}) == keyID(av{"k": n("1")}) {
		t.Error("different keys give equal ids")
	}
	if keyID(av{"a": s("x"), "b": s("y")}) != keyID(av{"b": s("y"), "a": s("x")}) {
		t.Error("key id depends on map order")
	}
}
