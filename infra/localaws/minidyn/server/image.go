package server

// This file is not in upstream minidyn v0.8.2 (see PATCHES.md, 10): it lets
// infra/localaws copy items from one server to another (a lagging replica)
// in-process, as stored, without the wire protocol or the meter.

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/truora/minidyn/types"
)

// Image is one item of a table as stored at one moment, or its absence:
// what a write left behind, to be applied to another server.
type Image struct {
	Table string
	// Key is the item's primary key as text (the table's own key string).
	Key  string
	key  map[string]*types.Item
	item map[string]*types.Item // nil: no item
}

// KeyOf is the primary key, as text, of the item of tableName that attrs
// (a key, or a whole item) names.
func (s *Server) KeyOf(tableName string, attrs map[string]*AttributeValue) (string, error) {
	c := s.client
	c.mu.Lock()
	defer c.mu.Unlock()

	table, err := c.getTable(tableName)
	if err != nil {
		return "", err
	}

	key, err := table.KeySchema.GetKey(table.AttributesDef, mapAttributeValueMapToTypes(attrs))
	if err != nil {
		return "", mapKnownError(err)
	}

	return key, nil
}

// Snapshot is the item of tableName that attrs (a key, or a whole item)
// names, as stored now. The image is a copy: later writes do not change it.
func (s *Server) Snapshot(tableName string, attrs map[string]*AttributeValue) (Image, error) {
	c := s.client
	c.mu.Lock()
	defer c.mu.Unlock()

	table, err := c.getTable(tableName)
	if err != nil {
		return Image{}, err
	}

	keyMap := mapAttributeValueMapToTypes(attrs)

	key, err := table.KeySchema.GetKey(table.AttributesDef, keyMap)
	if err != nil {
		return Image{}, mapKnownError(err)
	}

	img := Image{Table: tableName, Key: key, key: map[string]*types.Item{}}

	for _, name := range []string{table.KeySchema.HashKey, table.KeySchema.RangeKey} {
		if v, ok := keyMap[name]; ok && name != "" {
			img.key[name] = v
		}
	}

	if stored, ok := table.Data[key]; ok {
		// Through the wire types and back: a deep copy.
		img.item = mapAttributeValueMapToTypes(mapTypesMapToAttributeValue(stored))
	}

	return img, nil
}

// Apply makes the item img names what it was when img was taken: a put of
// the item without a condition, or a delete. The table's indexes follow as
// on any write; no capacity is counted.
func (s *Server) Apply(ctx context.Context, img Image) error {
	if img.item != nil {
		return s.client.putLoaded(ctx, img.Table, img.item)
	}

	c := s.client
	c.mu.Lock()
	defer c.mu.Unlock()

	table, err := c.getTable(img.Table)
	if err != nil {
		return err
	}

	if _, err := table.Delete(&types.DeleteItemInput{TableName: aws.String(img.Table), Key: img.key}); err != nil {
		return mapKnownError(err)
	}

	return nil
}
