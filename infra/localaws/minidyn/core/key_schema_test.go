package core

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/truora/minidyn/types"
)

func TestValidatePrimaryKeyMap(t *testing.T) {
	t.Parallel()

	hashOnly := keySchema{HashKey: "id", RangeKey: "", Secondary: false}
	composite := keySchema{HashKey: "pk", RangeKey: "sk", Secondary: false}

	t.Run("hash_only_empty", func(t *testing.T) {
		t.Parallel()
		err := hashOnly.validatePrimaryKeyMap(map[string]*types.Item{})
		require.ErrorIs(t, err, errInvalidKeyConditionCount)
	})

	t.Run("hash_only_ok", func(t *testing.T) {
		t.Parallel()
		err := hashOnly.validatePrimaryKeyMap(map[string]*types.Item{
			"id": {S: new("1")},
		})
		require.NoError(t, err)
	})

	t.Run("hash_only_wrong_name_same_len", func(t *testing.T) {
		t.Parallel()
		err := hashOnly.validatePrimaryKeyMap(map[string]*types.Item{
			"wrong": {S: new("1")},
		})
		require.ErrorIs(t, err, errMissingField)
	})

	t.Run("hash_only_extra_attr", func(t *testing.T) {
		t.Parallel()
		err := hashOnly.validatePrimaryKeyMap(map[string]*types.Item{
			"id":    {S: new("1")},
			"extra": {S: new("x")},
		})
		require.ErrorIs(t, err, errInvalidKeyConditionCount)
	})

	t.Run("composite_missing_range", func(t *testing.T) {
		t.Parallel()
		err := composite.validatePrimaryKeyMap(map[string]*types.Item{
			"pk": {S: new("a")},
		})
		require.ErrorIs(t, err, errInvalidKeyConditionCount)
	})

	t.Run("composite_ok", func(t *testing.T) {
		t.Parallel()
		err := composite.validatePrimaryKeyMap(map[string]*types.Item{
			"pk": {S: new("a")},
			"sk": {S: new("b")},
		})
		require.NoError(t, err)
	})

	t.Run("composite_wrong_range_attr_name_same_len", func(t *testing.T) {
		t.Parallel()
		err := composite.validatePrimaryKeyMap(map[string]*types.Item{
			"pk":    {S: new("a")},
			"wrong": {S: new("b")},
		})
		require.ErrorIs(t, err, errMissingField)
	})

	t.Run("secondary_skipped", func(t *testing.T) {
		t.Parallel()
		gsi := keySchema{HashKey: "g", RangeKey: "", Secondary: true}
		err := gsi.validatePrimaryKeyMap(map[string]*types.Item{})
		require.NoError(t, err)
	})
}

// A secondary index's key, with its attributes missing, present or of the
// wrong type: the shortcut for items outside a sparse index (lacksKey)
// answers as getKeyValue's errors did.
func TestSecondaryGetKey(t *testing.T) {
	t.Parallel()

	attrs := map[string]string{"g": "S", "r": "N"}
	composite := keySchema{HashKey: "g", RangeKey: "r", Secondary: true}
	hashOnly := keySchema{HashKey: "g", Secondary: true}

	for _, tc := range []struct {
		name    string
		ks      keySchema
		item    map[string]*types.Item
		key     string
		invalid bool
	}{
		{name: "both", ks: composite, item: map[string]*types.Item{"g": {S: new("a")}, "r": {N: new("7")}}, key: "a.7"},
		{name: "no_hash", ks: composite, item: map[string]*types.Item{"r": {N: new("7")}}},
		{name: "no_range", ks: composite, item: map[string]*types.Item{"g": {S: new("a")}}},
		{name: "neither", ks: composite, item: map[string]*types.Item{"x": {S: new("a")}}},
		{name: "invalid_hash_no_range", ks: composite, item: map[string]*types.Item{"g": {N: new("1")}}, invalid: true},
		{name: "invalid_range", ks: composite, item: map[string]*types.Item{"g": {S: new("a")}, "r": {S: new("7")}}, invalid: true},
		{name: "hash_only", ks: hashOnly, item: map[string]*types.Item{"g": {S: new("a")}}, key: "a"},
		{name: "hash_only_missing", ks: hashOnly, item: map[string]*types.Item{}},
		{name: "hash_only_invalid", ks: hashOnly, item: map[string]*types.Item{"g": {BOOL: new(true)}}, invalid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			key, err := tc.ks.GetKey(attrs, tc.item)
			if tc.invalid {
				require.ErrorIs(t, err, ErrInvalidAtrributeValue)

				return
			}

			require.NoError(t, err)
			require.Equal(t, tc.key, key)
		})
	}
}
