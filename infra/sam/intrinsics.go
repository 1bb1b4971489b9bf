package sam

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/awslabs/goformation/v7/intrinsics"
)

// processMu serialises intrinsics.ProcessYAML: on every call it re-registers
// its YAML tag resolvers in a package-level map, and each resolver rewrites a
// captured variable, so concurrent calls are a data race inside goformation.
var processMu sync.Mutex

// Values for pseudo parameters; the local platform pretends to run in
// us-east-1 of a fixed account, like the SDK clients in infra/localaws.
var pseudoParameters = map[string]string{
	"AWS::AccountId":        "123456789012",
	"AWS::Partition":        "aws",
	"AWS::Region":           "us-east-1",
	"AWS::StackId":          "arn:aws:cloudformation:us-east-1:123456789012:stack/local/00000000-0000-0000-0000-000000000000",
	"AWS::StackName":        "local",
	"AWS::URLSuffix":        "amazonaws.com",
	"AWS::NoValue":          "",
	"AWS::NotificationARNs": "",
}

// resolve turns YAML into JSON with intrinsics replaced by plain values:
// Ref of a resource -> its logical id, Ref of a parameter -> its value in
// params, else its Default, Fn::GetAtt X.Attr -> "X.Attr", Fn::Sub -> the
// string with those substitutions; conditions are evaluated, so Fn::If
// picks its branch. Every other intrinsic keeps goformation's behaviour.
func resolve(yaml []byte, params map[string]string) ([]byte, error) {
	opts := &intrinsics.ProcessorOptions{
		IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{
			"Ref": func(name string, input, template any) any {
				return refHandler(name, input, withParams(template, params))
			},
			"Fn::GetAtt": getAttHandler,
			"Fn::Sub": func(name string, input, template any) any {
				return subHandler(name, input, withParams(template, params))
			},
		},
		EvaluateConditions: true,
	}
	processMu.Lock()
	defer processMu.Unlock()
	j, err := intrinsics.ProcessYAML(yaml, opts)
	if err != nil {
		return nil, fmt.Errorf("process SAM template: %w", err)
	}
	return j, nil
}

// paramTemplate is the template with parameter values given at load time,
// as a deployment's parameter overrides.
type paramTemplate struct {
	template any
	params   map[string]string
}

func withParams(template any, params map[string]string) any {
	if len(params) == 0 {
		return template
	}
	return paramTemplate{template, params}
}

func refHandler(_ string, input, template any) any {
	name, ok := input.(string)
	if !ok {
		return nil
	}
	return refValue(name, template)
}

func refValue(name string, template any) any {
	if name == "AWS::NoValue" {
		return nil
	}
	if v, ok := pseudoParameters[name]; ok {
		return v
	}
	if pt, ok := template.(paramTemplate); ok {
		if v, ok := pt.params[name]; ok {
			return v
		}
		template = pt.template
	}
	tm, _ := template.(map[string]any)
	if params, ok := tm["Parameters"].(map[string]any); ok {
		if p, ok := params[name].(map[string]any); ok {
			if d, ok := p["Default"]; ok {
				return d
			}
			return ""
		}
	}
	// A resource, or something SAM generates (e.g. ServerlessRestApi):
	// the logical id is what the local platform keys everything by.
	return name
}

func getAttHandler(_ string, input, _ any) any {
	switch v := input.(type) {
	case string: // !GetAtt X.Arn
		return v
	case []any: // Fn::GetAtt: [X, Arn]
		parts := make([]string, 0, len(v))
		for _, p := range v {
			s, ok := p.(string)
			if !ok {
				return nil
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ".")
	}
	return nil
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

func subHandler(_ string, input, template any) any {
	var (
		src  string
		vars map[string]any
	)
	switch v := input.(type) {
	case string:
		src = v
	case []any:
		if len(v) != 2 {
			return nil
		}
		s, ok := v[0].(string)
		if !ok {
			return nil
		}
		src = s
		vars, _ = v[1].(map[string]any)
	default:
		return nil
	}
	return subVar.ReplaceAllStringFunc(src, func(m string) string {
		name := m[2 : len(m)-1]
		if strings.HasPrefix(name, "!") { // ${!Literal} is the escape for a literal ${Literal}
			return "${" + name[1:] + "}"
		}
		if v, ok := vars[name]; ok {
			return scalarString(v)
		}
		if strings.Contains(name, ".") && !strings.HasPrefix(name, "AWS::") {
			return name // GetAtt form
		}
		return scalarString(refValue(name, template))
	})
}
