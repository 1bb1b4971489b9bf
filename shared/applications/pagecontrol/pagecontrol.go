// Package pagecontrol validates the conditions and actions of page
// controls against their field shapes (schema.json, taken from the
// reference document's PageControlConditions and PageControlAction), so a
// stored page control always has a shape the data plane understands.
package pagecontrol

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

//go:embed schema.json
var schemaJSON []byte

const schemaURL = "mem://cads/pagecontrol/schema.json"

// MaxActions bounds the actions of one page control.
const MaxActions = 50

type schemas struct {
	conditions *jsonschema.Schema
	actions    map[string]*jsonschema.Schema // by action type
	types      []string
}

var load = sync.OnceValues(compile)

func compile() (*schemas, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("page control schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("page control schema: %w", err)
	}
	s := &schemas{actions: map[string]*jsonschema.Schema{}}
	if s.conditions, err = c.Compile(schemaURL + "#/$defs/PageControlConditions"); err != nil {
		return nil, fmt.Errorf("page control schema: %w", err)
	}
	// Each member of PageControlAction's anyOf fixes its "type": validate
	// an action against its own member only, for a precise message.
	var raw struct {
		Defs map[string]struct {
			AnyOf []struct {
				Ref string `json:"$ref"`
			} `json:"anyOf"`
			Properties struct {
				Type struct {
					Enum []string `json:"enum"`
				} `json:"type"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(schemaJSON, &raw); err != nil {
		return nil, fmt.Errorf("page control schema: %w", err)
	}
	for _, m := range raw.Defs["PageControlAction"].AnyOf {
		name := strings.TrimPrefix(m.Ref, "#/$defs/")
		enum := raw.Defs[name].Properties.Type.Enum
		if len(enum) != 1 {
			return nil, fmt.Errorf("page control schema: action %s has no single type", name)
		}
		sch, err := c.Compile(schemaURL + m.Ref)
		if err != nil {
			return nil, fmt.Errorf("page control schema: %w", err)
		}
		s.actions[enum[0]] = sch
		s.types = append(s.types, enum[0])
	}
	sort.Strings(s.types)
	return s, nil
}

// ValidateConditions checks a conditions object; the error names the
// offending member.
func ValidateConditions(raw json.RawMessage) error {
	s, err := load()
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("conditions: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return errors.New("conditions must be an object whose members are conditions, like {\"country_is\": {...}}")
	}
	return describe("conditions", s.conditions.Validate(v))
}

// ValidateActions checks an array of actions.
func ValidateActions(raw json.RawMessage) error {
	s, err := load()
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("actions: %v", err)
	}
	list, ok := v.([]any)
	if !ok {
		return errors.New("actions must be an array of actions")
	}
	if len(list) > MaxActions {
		return fmt.Errorf("actions: at most %d", MaxActions)
	}
	for i, a := range list {
		obj, _ := a.(map[string]any)
		typ, _ := obj["type"].(string)
		sch, ok := s.actions[typ]
		if !ok {
			return fmt.Errorf("actions[%d].type must be one of %s", i, strings.Join(s.types, ", "))
		}
		if err := describe(fmt.Sprintf("actions[%d]", i), sch.Validate(a)); err != nil {
			return err
		}
	}
	return nil
}

// describe turns a validation error into one sentence: the first leaf
// cause, located by its path in the instance.
func describe(prefix string, err error) error {
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("%s: %v", prefix, err)
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := prefix
	for _, p := range ve.InstanceLocation {
		loc += "." + p
	}
	return fmt.Errorf("%s: %s", loc, ve.ErrorKind.LocalizedString(printer))
}
