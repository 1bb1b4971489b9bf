package ddb

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Limits DynamoDB enforces and the local stand-ins (minidyn) do not, or not
// all of them. The helpers in this package enforce them client-side so a
// local run fails the same way production would.
const (
	MaxItemBytes     = 400 * 1024      // maximum item size (names + values), bytes
	MaxBatchWrite    = 25              // requests per BatchWriteItem call
	MaxBatchGet      = 100             // keys per BatchGetItem call
	MaxTransactItems = 100             // actions per TransactWriteItems call
	MaxTransactBytes = 4 * 1024 * 1024 // aggregate item size per transaction, bytes
	MaxKeyValueBytes = 2048            // a partition key value (sort keys: 1024), bytes
)

var (
	// ErrItemTooLarge is returned (wrapped, with the size) for an item over MaxItemBytes.
	ErrItemTooLarge = errors.New("ddb: item exceeds the 400 KB DynamoDB item size limit")
	// ErrTooManyItems is returned (wrapped) when a single request would carry
	// more items than DynamoDB accepts, e.g. a transaction of more than
	// MaxTransactItems actions or over MaxTransactBytes.
	ErrTooManyItems = errors.New("ddb: too many items for one DynamoDB request")
	// ErrInvalidKey is returned (wrapped) for a key DynamoDB would refuse:
	// empty, more than two attributes, a non-scalar attribute type, an empty
	// string or binary value, or a value over MaxKeyValueBytes.
	ErrInvalidKey = errors.New("ddb: invalid key")
	// ErrInvalidRequest is returned (wrapped) for a malformed write request or
	// transaction action (none or several of Put/Update/Delete/ConditionCheck set).
	ErrInvalidRequest = errors.New("ddb: invalid request")
)

// ItemSize returns the size of an item as DynamoDB computes it for the 400 KB
// limit and for capacity units, following the documented rules
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
//
//   - every attribute: UTF-8 bytes of its name + the size of its value;
//   - S: UTF-8 bytes; B: raw (decoded) bytes; BOOL, NULL: 1 byte;
//   - N: 1 byte + 1 byte per pair of significant digits (leading and trailing
//     zeros trimmed, pairs aligned on the decimal point) + 1 byte if
//     negative; zero is 1 byte. DynamoDB documents this as approximate; the
//     model is the one dynalite uses to mirror DynamoDB's 400 KB check;
//   - SS, NS, BS: sum of the element sizes;
//   - L: 3 bytes + for each element 1 byte + its size;
//   - M: 3 bytes + for each entry 1 byte + UTF-8 bytes of its name + its size.
//
// Nil values count 0.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + len(v.Value) + ItemSize(v.Value)
	}
	return 0
}

// parsedNumber is a DynamoDB number in normalised form:
// value = sign 0.d1d2d3... × 10^(exp+1), i.e. exp is the power of ten of the
// first significant digit.
type parsedNumber struct {
	neg    bool
	digits string // significant digits, no leading/trailing zeros; "" for zero
	exp    int
}

func parseNumber(s string) (parsedNumber, bool) {
	var p parsedNumber
	s = strings.TrimSpace(s)
	if s == "" {
		return p, false
	}
	switch s[0] {
	case '-':
		p.neg = true
		s = s[1:]
	case '+':
		s = s[1:]
	}
	mant, expPart := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, expPart = s[:i], s[i+1:]
	}
	e := 0
	if expPart != "" {
		var err error
		if e, err = strconv.Atoi(expPart); err != nil {
			return p, false
		}
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	if intPart == "" && frac == "" {
		return p, false
	}
	for _, r := range intPart + frac {
		if r < '0' || r > '9' {
			return p, false
		}
	}
	all := intPart + frac
	lead := len(all) - len(strings.TrimLeft(all, "0"))
	digits := strings.TrimRight(all[lead:], "0")
	if digits == "" {
		return parsedNumber{}, true // zero, sign irrelevant
	}
	p.digits = digits
	p.exp = len(intPart) - 1 - lead + e
	return p, true
}

func numberSize(s string) int {
	p, ok := parseNumber(s)
	if !ok {
		return len(s) // not a valid number; DynamoDB would reject it anyway
	}
	nd := len(p.digits)
	if nd == 0 {
		return 1
	}
	n := 1 + (nd+1)/2
	if nd%2 == 0 && p.exp%2 == 0 {
		n++ // digit pairs straddle the decimal point
	}
	if p.neg {
		n++
	}
	return n
}

// CheckItem returns nil if the item fits DynamoDB's item size limit, and
// otherwise ErrItemTooLarge wrapped with the computed size.
//
// It checks size only: which attributes are keys depends on the table, so
// empty key values are not detected here (use CheckKey on key maps).
func CheckItem(item map[string]types.AttributeValue) error {
	if n := ItemSize(item); n > MaxItemBytes {
		return fmt.Errorf("%w: %d bytes (max %d)", ErrItemTooLarge, n, MaxItemBytes)
	}
	return nil
}

// CheckKey validates a primary-key map (as used in GetItem, DeleteItem,
// UpdateItem, BatchGetItem, ...) the way DynamoDB does, independent of the
// table's schema: one or two attributes, each S, N or B, strings and
// binaries non-empty and at most MaxKeyValueBytes. It returns ErrInvalidKey
// (wrapped) or nil. Sort-key values over 1024 bytes are not detected (which
// attribute is the sort key depends on the table).
func CheckKey(key map[string]types.AttributeValue) error {
	if len(key) == 0 || len(key) > 2 {
		return fmt.Errorf("%w: %d key attributes", ErrInvalidKey, len(key))
	}
	for _, name := range slices.Sorted(maps.Keys(key)) {
		var size int
		switch v := key[name].(type) {
		case *types.AttributeValueMemberS:
			size = len(v.Value)
		case *types.AttributeValueMemberB:
			size = len(v.Value)
		case *types.AttributeValueMemberN:
			if _, ok := parseNumber(v.Value); !ok {
				return fmt.Errorf("%w: attribute %q: malformed number %q", ErrInvalidKey, name, v.Value)
			}
			continue
		default:
			return fmt.Errorf("%w: attribute %q: key values must be S, N or B, got %T", ErrInvalidKey, name, v)
		}
		if size == 0 {
			return fmt.Errorf("%w: attribute %q: empty value", ErrInvalidKey, name)
		}
		if size > MaxKeyValueBytes {
			return fmt.Errorf("%w: attribute %q: %d bytes (max %d)", ErrInvalidKey, name, size, MaxKeyValueBytes)
		}
	}
	return nil
}

// keyID returns a canonical string for a key map, equal for keys DynamoDB
// considers the same item (numbers are normalised: 1 == 1.0 == 10e-1).
func keyID(key map[string]types.AttributeValue) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(key)) {
		b.WriteString(strconv.Quote(name))
		switch v := key[name].(type) {
		case *types.AttributeValueMemberS:
			b.WriteString("S")
			b.WriteString(strconv.Quote(v.Value))
		case *types.AttributeValueMemberB:
			b.WriteString("B")
			b.WriteString(strconv.Quote(string(v.Value)))
		case *types.AttributeValueMemberN:
			if p, ok := parseNumber(v.Value); ok {
				fmt.Fprintf(&b, "N%t.%s.%d", p.neg, p.digits, p.exp)
			} else {
				b.WriteString("N?")
				b.WriteString(strconv.Quote(v.Value))
			}
		default:
			fmt.Fprintf(&b, "%T%v", v, v)
		}
		b.WriteByte(';')
	}
	return b.String()
}
