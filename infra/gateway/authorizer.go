package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// authorizerOutput is the authorizer's response as API Gateway reads it from
// the Lambda's JSON output (more lenient than the Go type: Action and
// Resource may be a string or a list, as in IAM).
type authorizerOutput struct {
	PrincipalID    *string                    `json:"principalId"`
	PolicyDocument *policyDocument            `json:"policyDocument"`
	Context        map[string]json.RawMessage `json:"context"`
}

type policyDocument struct {
	Version   string            `json:"Version"`
	Statement []policyStatement `json:"Statement"`
}

type policyStatement struct {
	Effect   string     `json:"Effect"`
	Action   stringList `json:"Action"`
	Resource stringList `json:"Resource"`
}

// stringList decodes an IAM value that is a string or a list of strings.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*l = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = stringList{s}
		return nil
	}
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		return err
	}
	*l = ss
	return nil
}

// authorization is a validated authorizer response.
type authorization struct {
	principalID string
	policy      policyDocument
	// context holds the authorizer context as API Gateway passes it on:
	// strings, numbers and booleans stringified; JSON null kept as nil.
	context map[string]any
}

// parseAuthorizerOutput validates the authorizer's JSON output the way API
// Gateway does; an error means AUTHORIZER_FAILURE (whose status the
// template sets).
func parseAuthorizerOutput(b []byte) (*authorization, error) {
	var out authorizerOutput
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("invalid authorizer response: %w", err)
	}
	if out.PrincipalID == nil || *out.PrincipalID == "" {
		return nil, errors.New("invalid authorizer response: principalId is missing or empty")
	}
	if out.PolicyDocument == nil || len(out.PolicyDocument.Statement) == 0 {
		return nil, errors.New("invalid authorizer response: policyDocument is missing or has no Statement")
	}
	for i, st := range out.PolicyDocument.Statement {
		if !strings.EqualFold(st.Effect, "Allow") && !strings.EqualFold(st.Effect, "Deny") {
			return nil, fmt.Errorf("invalid authorizer response: statement %d: Effect %q is neither Allow nor Deny", i, st.Effect)
		}
		if len(st.Action) == 0 || len(st.Resource) == 0 {
			return nil, fmt.Errorf("invalid authorizer response: statement %d has no Action or no Resource", i)
		}
	}
	a := &authorization{principalID: *out.PrincipalID, policy: *out.PolicyDocument, context: map[string]any{}}
	for k, raw := range out.Context {
		v, err := stringifyContextValue(raw)
		if err != nil {
			return nil, fmt.Errorf("invalid authorizer response: context key %q: %w", k, err)
		}
		a.context[k] = v
	}
	return a, nil
}

// stringifyContextValue applies API Gateway's rule for context values: only
// strings, numbers and booleans are allowed, and they reach the integration
// as strings ("1", "true").
func stringifyContextValue(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, errors.New("empty value")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return s, nil
	case '{', '[':
		return nil, errors.New("objects and arrays are not allowed as authorizer context values")
	case 'n':
		return nil, nil
	default: // number, true, false
		return string(raw), nil
	}
}

// decision is the outcome of evaluating the authorizer's policy.
type decision int

const (
	implicitDeny decision = iota
	allow
	explicitDeny
)

// evaluate applies the IAM rules API Gateway uses: an explicit Deny matching
// the method ARN wins, otherwise a matching Allow allows, otherwise deny.
// A statement matches when one of its actions matches execute-api:Invoke and
// one of its resources matches methodArn (`*` and `?` wildcards).
func (p policyDocument) evaluate(methodArn string) decision {
	allowed := false
	for _, st := range p.Statement {
		if !anyMatch(st.Action, "execute-api:Invoke", true) || !anyMatch(st.Resource, methodArn, false) {
			continue
		}
		if strings.EqualFold(st.Effect, "Deny") {
			return explicitDeny
		}
		allowed = true
	}
	if allowed {
		return allow
	}
	return implicitDeny
}

func anyMatch(patterns []string, s string, fold bool) bool {
	for _, p := range patterns {
		if fold {
			if wildcardMatch(strings.ToLower(p), strings.ToLower(s)) {
				return true
			}
		} else if wildcardMatch(p, s) {
			return true
		}
	}
	return false
}

// wildcardMatch reports whether s matches pattern, where `*` matches any run
// of characters (including `/`) and `?` any one character, as in IAM.
func wildcardMatch(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
