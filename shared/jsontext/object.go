package jsontext

import (
	"bytes"
	"encoding/json"
)

// MarshalObject writes keys[i]: values[i] as one JSON object with its
// members in the given order, which a map would lose: bodies whose keys
// follow the request (metrics by name, log fields) use it.
func MarshalObject(keys []string, values []any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(values[i])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
