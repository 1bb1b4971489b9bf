package gateway

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"regexp"
	"strings"
)

// methods API Gateway accepts on a resource; ANY serves every method the
// resource does not declare itself.
var validMethods = map[string]bool{
	"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true,
	"HEAD": true, "OPTIONS": true, "ANY": true,
}

var paramNameRe = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// route is a compiled Route.
type route struct {
	method     string // as configured, upper case; may be ANY
	resource   string // template path, e.g. /v2/users/{id}
	resourceID string // stable fake API Gateway resource id
	function   string
	authorized bool
	handler    ProxyHandler
	mock       *Mock
}

func (rt *route) String() string { return rt.method + " " + rt.resource }

// node is one resource of the API's resource tree.
type node struct {
	resource   string
	literals   map[string]*node
	param      *node // {name}
	paramName  string
	greedy     *node // {name+}, always a leaf
	greedyName string
	methods    map[string]*route
}

func newNode(resource string) *node {
	return &node{resource: resource, literals: map[string]*node{}, methods: map[string]*route{}}
}

// segment kinds of a template path.
const (
	segLiteral = iota
	segParam
	segGreedy
)

func parseSegment(s string) (kind int, name string, err error) {
	if s == "" {
		return 0, "", errors.New("empty path segment")
	}
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		name = s[1 : len(s)-1]
		kind = segParam
		if strings.HasSuffix(name, "+") {
			name, kind = strings.TrimSuffix(name, "+"), segGreedy
		}
		if !paramNameRe.MatchString(name) {
			return 0, "", fmt.Errorf("invalid path parameter %q", s)
		}
		return kind, name, nil
	}
	if strings.ContainsAny(s, "{}?#%") || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return 0, "", fmt.Errorf("invalid path part %q", s)
	}
	return segLiteral, s, nil
}

// splitTemplate validates a template path and returns its segments.
func splitTemplate(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("path %q must start with /", p)
	}
	if p == "/" {
		return nil, nil
	}
	if strings.HasSuffix(p, "/") {
		return nil, fmt.Errorf("path %q must not end with /", p)
	}
	return strings.Split(p[1:], "/"), nil
}

// add inserts rt under the template path, refusing what API Gateway refuses
// when it imports such a template.
func (root *node) add(rt *route) error {
	segs, err := splitTemplate(rt.resource)
	if err != nil {
		return err
	}
	n := root
	prefix := ""
	for i, s := range segs {
		kind, name, err := parseSegment(s)
		if err != nil {
			return fmt.Errorf("path %q: %w", rt.resource, err)
		}
		prefix += "/" + s
		switch kind {
		case segLiteral:
			c := n.literals[name]
			if c == nil {
				c = newNode(prefix)
				n.literals[name] = c
			}
			n = c
		case segParam:
			if n.greedy != nil {
				return fmt.Errorf("path %q: {%s} would be a sibling of {%s+} under %q; API Gateway allows one variable path part per level", rt.resource, name, n.greedyName, parentOf(prefix))
			}
			if n.param != nil && n.paramName != name {
				return fmt.Errorf("path %q: {%s} would be a sibling of {%s} under %q; API Gateway requires sibling path parameters to share one name", rt.resource, name, n.paramName, parentOf(prefix))
			}
			if n.param == nil {
				n.param, n.paramName = newNode(prefix), name
			}
			n = n.param
		case segGreedy:
			if i != len(segs)-1 {
				return fmt.Errorf("path %q: greedy parameter {%s+} must be the last path part", rt.resource, name)
			}
			if n.param != nil {
				return fmt.Errorf("path %q: {%s+} would be a sibling of {%s} under %q; API Gateway allows one variable path part per level", rt.resource, name, n.paramName, parentOf(prefix))
			}
			if n.greedy != nil && n.greedyName != name {
				return fmt.Errorf("path %q: {%s+} would be a sibling of {%s+} under %q", rt.resource, name, n.greedyName, parentOf(prefix))
			}
			if n.greedy == nil {
				n.greedy, n.greedyName = newNode(prefix), name
			}
			n = n.greedy
		}
	}
	if old := n.methods[rt.method]; old != nil {
		return fmt.Errorf("duplicate route %s %s (also declared as %s)", rt.method, rt.resource, old)
	}
	rt.resourceID = resourceID(n.resource)
	n.methods[rt.method] = rt
	return nil
}

func parentOf(p string) string {
	i := strings.LastIndex(p, "/")
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// resourceID derives a stable API-Gateway-like resource id from the path.
func resourceID(p string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(p))
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	v := h.Sum32()
	b := make([]byte, 6)
	for i := range b {
		b[i] = alphabet[v%36]
		v /= 36
	}
	return string(b)
}

// methodFor returns the node's route for method: its own method first, ANY
// otherwise.
func (n *node) methodFor(method string) *route {
	if rt := n.methods[method]; rt != nil {
		return rt
	}
	return n.methods["ANY"]
}

type binding struct{ name, raw string }

// find resolves a request the way the REST API does (as measured on AWS):
// the most specific resource that has the request's method (or ANY) wins;
// at each level a literal part beats {param}, which beats {proxy+}, and a
// more specific resource that lacks the method falls back to the next
// candidate. segs are the raw, still percent-encoded path segments.
func (n *node) find(method string, segs []string) (*route, []binding) {
	if len(segs) == 0 {
		return n.methodFor(method), nil
	}
	s := segs[0]
	if c := n.literals[s]; c != nil {
		if rt, b := c.find(method, segs[1:]); rt != nil {
			return rt, b
		}
	}
	if n.param != nil && s != "" {
		if rt, b := n.param.find(method, segs[1:]); rt != nil {
			return rt, append(b, binding{n.paramName, s})
		}
	}
	if n.greedy != nil {
		if rest := strings.Join(segs, "/"); rest != "" {
			if rt := n.greedy.methodFor(method); rt != nil {
				return rt, []binding{{n.greedyName, rest}}
			}
		}
	}
	return nil, nil
}

// match finds the route for method and the raw (encoded) request path and
// returns the URL-decoded path parameters, or nil when none.
func (root *node) match(method, rawPath string) (*route, map[string]string) {
	if !strings.HasPrefix(rawPath, "/") {
		return nil, nil
	}
	var segs []string
	if rawPath != "/" {
		segs = strings.Split(rawPath[1:], "/")
	}
	rt, bs := root.find(method, segs)
	if rt == nil {
		return nil, nil
	}
	var params map[string]string
	for _, b := range bs {
		if params == nil {
			params = map[string]string{}
		}
		v, err := url.PathUnescape(b.raw)
		if err != nil {
			v = b.raw
		}
		params[b.name] = v
	}
	return rt, params
}
