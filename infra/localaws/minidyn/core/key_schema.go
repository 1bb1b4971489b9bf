package core

import (
	"errors"
	"fmt"

	"github.com/truora/minidyn/types"
)

// errInvalidKeyConditionCount matches DynamoDB ValidationException when the Key map
// does not contain exactly the expected number of attributes (hash + range if defined).
//
//nolint:stylecheck,staticcheck,ST1005 // AWS error message
var errInvalidKeyConditionCount = errors.New("The number of conditions on the keys is invalid")

type keySchema struct {
	HashKey   string
	RangeKey  string
	Secondary bool
}

// validatePrimaryKeyMap ensures Key-shaped maps (GetItem, DeleteItem, UpdateItem)
// contain exactly the hash key and, when applicable, the range key attribute names.
func (ks keySchema) validatePrimaryKeyMap(key map[string]*types.Item) error {
	if ks.Secondary {
		return nil
	}

	want := 1
	if ks.RangeKey != "" {
		want = 2
	}

	if len(key) != want {
		return fmt.Errorf("%w; expected %d keys, got %d", errInvalidKeyConditionCount, want, len(key))
	}

	if _, ok := key[ks.HashKey]; !ok {
		return fmt.Errorf("%w; missing hash key", errMissingField)
	}

	if ks.RangeKey != "" {
		if _, ok := key[ks.RangeKey]; !ok {
			return fmt.Errorf("%w; missing range key", errMissingField)
		}
	}

	return nil
}

func (ks keySchema) GetKey(attrs map[string]string, item map[string]*types.Item) (string, error) {
	if ks.Secondary && ks.lacksKey(attrs, item) {
		return "", nil
	}

	key, err := ks.getKeyValue(attrs, item)
	if ks.Secondary && errors.Is(err, errMissingField) {
		// secondary indexes are sparse
		err = nil
	}

	return key, err
}

// lacksKey reports whether getKeyValue would fail on item with
// errMissingField, which a sparse index takes as "not in the index": most
// items lack most indexes' keys, and every write asked each index, paying
// for an error message that GetKey then dropped.
func (ks keySchema) lacksKey(attrs map[string]string, item map[string]*types.Item) bool {
	hash, ok := item[ks.HashKey]
	if !ok {
		return true
	}

	if ks.RangeKey == "" {
		return false
	}

	if _, ok := item[ks.RangeKey]; ok {
		return false
	}

	// getKeyValue reads the hash key first: an invalid one is its error.
	_, valid := getGoValue(hash, attrs[ks.HashKey])

	return valid
}

func (ks keySchema) getKeyValue(attrs map[string]string, item map[string]*types.Item) (string, error) {
	hashKeyStr, err := keyPart(item, ks.HashKey, attrs[ks.HashKey])
	if err != nil {
		return "", err
	}

	if ks.RangeKey == "" {
		return hashKeyStr, nil
	}

	rangeKeyStr, err := keyPart(item, ks.RangeKey, attrs[ks.RangeKey])
	if err != nil {
		return "", err
	}

	return hashKeyStr + "." + rangeKeyStr, nil
}

// keyPart is fmt.Sprintf("%v") of the key attribute field's value. Every
// write computes the key of the table and of each index: string and
// number keys, the usual ones, are read directly instead of boxed and
// formatted through fmt's reflection.
func keyPart(item map[string]*types.Item, field, typ string) (string, error) {
	if v, ok := item[field]; ok {
		switch {
		case typ == "S" && v.S != nil:
			return *v.S, nil
		case typ == "N" && v.N != nil:
			return *v.N, nil
		}
	}

	val, err := getItemValue(item, field, typ)
	if err != nil {
		return "", err
	}

	return fmt.Sprintf("%v", val), nil
}

func (ks *keySchema) describe() []types.KeySchemaElement {
	desc := []types.KeySchemaElement{}

	keySchemaElement := types.KeySchemaElement{
		AttributeName: ks.HashKey,
		KeyType:       "HASH",
	}
	desc = append(desc, keySchemaElement)

	if ks.RangeKey != "" {
		keySchemaElement := types.KeySchemaElement{
			AttributeName: ks.RangeKey,
			KeyType:       "RANGE",
		}
		desc = append(desc, keySchemaElement)
	}

	return desc
}

func (ks *keySchema) getKeyItem(item map[string]*types.Item) map[string]*types.Item {
	keyItem := map[string]*types.Item{}

	if v, ok := item[ks.HashKey]; ok {
		keyItem[ks.HashKey] = v
	}

	if v, ok := item[ks.RangeKey]; ok && ks.RangeKey != "" {
		keyItem[ks.RangeKey] = v
	}

	return keyItem
}
