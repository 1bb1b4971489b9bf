package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"cads/shared/domain"
	"cads/shared/loadgen"
)

// ConfigFile is the name of the test configuration file: at the top of
// the archive, or in its only top-level directory. A JSON upload is that
// file by itself. docs/application-tests.md describes its format, the
// reference document's MainApplicationTestConfiguration.
const ConfigFile = "test.json"

// Limits of a configuration.
const (
	MaxConfigFileBytes = 1 << 20 // test.json and each session file
	MaxModels          = 100
	MaxRequests        = 100 // request templates of all sessions, constants included
	MaxURLBytes        = 1024
	MaxUsers           = 1000
	MaxSessionLength   = 10_000
	MaxWaitTimeMS      = 60_000
	maxNameLen         = 200
)

// Session types.
const (
	SessionRandom = "user.RandomSession"
	SessionStatic = "user.StaticSession"
)

var (
	methods        = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"}
	paramTypes     = []string{"string", "integer", "number", "boolean"}
	injectFrom     = []string{"formdata", "cookie", "header", "inserts", "forminject"}
	injectLocation = []string{"formdata", "cookie", "header", "forminject", "url", "body"}
	transformTypes = []string{"transform.DecodeBase64", "transform.MultiTransform", "transform.DecodeJSONandSelect"}
)

// configDoc is test.json.
type configDoc struct {
	Probabilities *float64                   `json:"probabilities"`
	Users         []User                     `json:"users"`
	Models        map[string]json.RawMessage `json:"models"`
	Parameters    map[string]Parameter       `json:"parameters"`
}

// User is a credential of the tested application.
type User struct {
	Name     string `json:"name,omitempty"`
	Username string `json:"username"`
	Password string `json:"password"`
}

// Parameter is a user-configured parameter of a test.
type Parameter struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// Session is one model: what a visitor does.
type Session struct {
	Name      string    `json:"name,omitempty"`
	Requests  []Request `json:"requests"`
	Constants []Request `json:"constants,omitempty"`
	Length    *float64  `json:"length,omitempty"`
	Type      string    `json:"type"`
	WaitTime  *int      `json:"wait-time,omitempty"` // milliseconds
}

// Request is one request template of a session.
type Request struct {
	Name          string              `json:"name"`
	Headers       map[string][]string `json:"headers,omitempty"`
	Method        string              `json:"method"`
	URL           string              `json:"url"`
	Probability   *float64            `json:"probability,omitempty"`
	Wait          bool                `json:"wait,omitempty"`
	Cookies       []Cookie            `json:"cookies,omitempty"`
	Injections    []Injection         `json:"injections,omitempty"`
	Scrape        []Scrape            `json:"scrape,omitempty"`
	CallConstants bool                `json:"call-constants,omitempty"`
	Encode        bool                `json:"encode,omitempty"`
}

// Cookie is sent with a request.
type Cookie struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	MaxAge *int   `json:"Max-Age,omitempty"`
	Path   string `json:"Path,omitempty"`
}

// Injection moves data from earlier responses into a request.
type Injection struct {
	From     string `json:"from"`
	Location string `json:"location"`
	Name     string `json:"name,omitempty"`
	FromName string `json:"from-name,omitempty"`
}

// Scrape extracts data from a response for later injections.
type Scrape struct {
	ID        string      `json:"id"`
	SepStart  string      `json:"sep-start"`
	SepEnd    string      `json:"sep-end"`
	InsertID  string      `json:"insertid"`
	Transform []Transform `json:"transform,omitempty"`
}

// Transform is applied to scraped data.
type Transform struct {
	Type   string            `json:"type"`
	Config map[string]string `json:"config,omitempty"`
}

// Model is a named session of a configuration; File is set when the
// session lives in its own file of the archive.
type Model struct {
	Name    string
	File    string
	Session Session
}

// Config is a parsed, valid configuration.
type Config struct {
	File          string // where test.json is in the archive
	Probabilities float64
	Models        []Model // by name
	Users         []User
	Parameters    map[string]Parameter
}

// ParseConfig finds test.json in the archive and checks it and the
// session files it names. Every problem is a 400 naming the file and the
// field.
func ParseConfig(a *Archive) (*Config, error) {
	files := map[string][]byte{}
	for _, f := range a.Files {
		files[f.Name] = f.Data
	}
	root, err := configRoot(a.Files)
	if err != nil {
		return nil, err
	}
	c := &Config{File: path.Join(root, ConfigFile)}
	var doc configDoc
	if err := decodeFile(c.File, files[c.File], &doc); err != nil {
		return nil, err
	}
	v := &validator{file: c.File}
	switch p := doc.Probabilities; {
	case p == nil:
		v.fail("probabilities", "is required: the probability that a virtual user runs a session, above 0 and at most 1")
	case !(*p > 0 && *p <= 1):
		v.fail("probabilities", "must be above 0 and at most 1, not %v", *p)
	default:
		c.Probabilities = *p
	}
	if len(doc.Models) == 0 {
		v.fail("models", "is required: at least one named session")
	}
	if len(doc.Models) > MaxModels {
		v.fail("models", "holds %d sessions; at most %d are accepted", len(doc.Models), MaxModels)
	}
	if len(doc.Users) > MaxUsers {
		v.fail("users", "holds %d users; at most %d are accepted", len(doc.Users), MaxUsers)
	}
	for i, u := range doc.Users {
		at := fmt.Sprintf("users[%d]", i)
		v.text(at+".username", u.Username, true)
		v.text(at+".password", u.Password, true)
		v.text(at+".name", u.Name, false)
	}
	for name, p := range doc.Parameters {
		at := "parameters." + name
		v.oneOf(at+".type", p.Type, paramTypes)
		v.text(at+".title", p.Title, true)
		v.text(at+".description", p.Description, true)
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	c.Users, c.Parameters = doc.Users, doc.Parameters

	names := make([]string, 0, len(doc.Models))
	for n := range doc.Models {
		names = append(names, n)
	}
	sort.Strings(names)
	requests := 0
	for _, name := range names {
		m := Model{Name: name}
		at := "models." + name
		if name == "" || utf8.RuneCountInString(name) > maxNameLen {
			return nil, domain.Errorf(domain.Invalid, "%s: models: session names must have 1 to %d characters", c.File, maxNameLen)
		}
		var ref struct {
			File *string `json:"file"`
		}
		raw := doc.Models[name]
		// Problems of an inline session are reported as "test.json: models.x: ...".
		sessionFile := c.File + ": " + at
		if json.Unmarshal(raw, &ref) == nil && ref.File != nil {
			if err := decodeFile(c.File, raw, &ref); err != nil { // only "file" may be set then
				return nil, domain.Errorf(domain.Invalid, "%s: %s: a session given by file holds only \"file\"", c.File, at)
			}
			p, err := sessionPath(root, *ref.File)
			if err != nil {
				return nil, domain.Errorf(domain.Invalid, "%s: %s.file: %s", c.File, at, err)
			}
			data, ok := files[p]
			if !ok {
				return nil, domain.Errorf(domain.Invalid, "%s: %s.file: the archive holds no file %q", c.File, at, p)
			}
			m.File, raw, sessionFile = p, data, p
		}
		if err := decodeFile(sessionFile, raw, &m.Session); err != nil {
			return nil, err
		}
		v := &validator{file: sessionFile}
		v.session("", m.Session)
		if err := v.err(); err != nil {
			return nil, err
		}
		requests += len(m.Session.Requests) + len(m.Session.Constants)
		c.Models = append(c.Models, m)
	}
	if requests > MaxRequests {
		return nil, domain.Errorf(domain.Invalid, "%s: the sessions hold %d requests and constants; at most %d are accepted", c.File, requests, MaxRequests)
	}
	return c, nil
}

// configRoot is "" when test.json is at the top of the archive, or the
// archive's only top-level directory when it is there.
func configRoot(files []File) (string, error) {
	var dirs = map[string]bool{}
	for _, f := range files {
		if f.Name == ConfigFile {
			return "", nil
		}
		dir, _, found := strings.Cut(f.Name, "/")
		if !found {
			dir = ""
		}
		dirs[dir] = true
	}
	if len(dirs) == 1 {
		for d := range dirs {
			if d == "" {
				break
			}
			for _, f := range files {
				if f.Name == d+"/"+ConfigFile {
					return d, nil
				}
			}
		}
	}
	return "", domain.Errorf(domain.Invalid, "the configuration holds no %s at its top level (or in its only top-level directory)", ConfigFile)
}

func sessionPath(root, p string) (string, error) {
	p = strings.TrimPrefix(p, "./")
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return "", errors.New("must be a relative path inside the archive")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", errors.New("must not leave the archive's directory")
		}
	}
	return path.Join(root, path.Clean(p)), nil
}

// decodeFile decodes one JSON file strictly: unknown fields are errors, so
// a misspelt option is reported instead of silently ignored.
func decodeFile(name string, data []byte, v any) error {
	if len(data) > MaxConfigFileBytes {
		return domain.Errorf(domain.TooLarge, "%s is %d bytes; at most %d are accepted", name, len(data), MaxConfigFileBytes)
	}
	if !utf8.Valid(data) {
		return domain.Errorf(domain.Invalid, "%s is not UTF-8 JSON", name)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return domain.Errorf(domain.Invalid, "%s: %s", name, jsonError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return domain.Errorf(domain.Invalid, "%s: unexpected data after the JSON value", name)
	}
	return nil
}

func jsonError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		f := typ.Field
		if f == "" {
			f = "(top level)"
		}
		return fmt.Sprintf("%s must not be %s", f, typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON value is incomplete"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// validator collects the first problem of a file.
type validator struct {
	file  string
	first error
}

func (v *validator) fail(at, format string, args ...any) {
	if v.first == nil {
		v.first = domain.Errorf(domain.Invalid, "%s: %s %s", v.file, strings.TrimPrefix(at, "."), fmt.Sprintf(format, args...))
	}
}

func (v *validator) err() error { return v.first }

func (v *validator) text(at, s string, required bool) {
	switch {
	case required && s == "":
		v.fail(at, "is required")
	case utf8.RuneCountInString(s) > maxNameLen && !strings.HasSuffix(at, "password"):
		v.fail(at, "is longer than %d characters", maxNameLen)
	}
}

func (v *validator) oneOf(at, s string, allowed []string) {
	for _, a := range allowed {
		if s == a {
			return
		}
	}
	if s == "" {
		v.fail(at, "is required: one of %s", strings.Join(allowed, ", "))
		return
	}
	v.fail(at, "%q is not one of %s", s, strings.Join(allowed, ", "))
}

func (v *validator) session(at string, s Session) {
	v.oneOf(at+".type", s.Type, []string{SessionRandom, SessionStatic})
	v.text(at+".name", s.Name, false)
	if len(s.Requests) == 0 {
		v.fail(at+".requests", "is required: at least one request")
	}
	if l := s.Length; l != nil && (*l < 0 || *l != math.Trunc(*l) || *l > MaxSessionLength) {
		v.fail(at+".length", "must be a whole number from 0 to %d", MaxSessionLength)
	}
	if w := s.WaitTime; w != nil && (*w < 1 || *w > MaxWaitTimeMS) {
		v.fail(at+".wait-time", "must be from 1 to %d milliseconds", MaxWaitTimeMS)
	}
	for i, r := range s.Requests {
		v.request(fmt.Sprintf("%s.requests[%d]", at, i), r)
	}
	for i, r := range s.Constants {
		v.request(fmt.Sprintf("%s.constants[%d]", at, i), r)
	}
}

func (v *validator) request(at string, r Request) {
	v.text(at+".name", r.Name, true)
	v.oneOf(at+".method", r.Method, methods)
	u, err := url.Parse(r.URL)
	switch {
	case r.URL == "":
		v.fail(at+".url", "is required: an absolute http or https URL")
	case len(r.URL) > MaxURLBytes:
		v.fail(at+".url", "is longer than %d bytes", MaxURLBytes)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil:
		v.fail(at+".url", "%q is not an absolute http or https URL without credentials", r.URL)
	}
	if p := r.Probability; p != nil && (*p < 0 || *p > 1) {
		v.fail(at+".probability", "must be from 0 to 1")
	}
	for k, vals := range r.Headers {
		if !validHeaderName(k) {
			v.fail(at+".headers", "%q is not a valid header name", k)
		}
		for _, val := range vals {
			if strings.ContainsAny(val, "\r\n\x00") {
				v.fail(at+".headers."+k, "values must not contain line breaks")
			}
		}
	}
	for i, c := range r.Cookies {
		cat := fmt.Sprintf("%s.cookies[%d]", at, i)
		if c.Name == "" || !validHeaderName(c.Name) {
			v.fail(cat+".name", "is required: a cookie name")
		}
		if strings.ContainsAny(c.Value, ";\r\n\x00\" ") {
			v.fail(cat+".value", "must not contain ';', quotes, spaces or line breaks")
		}
	}
	for i, in := range r.Injections {
		iat := fmt.Sprintf("%s.injections[%d]", at, i)
		v.oneOf(iat+".from", in.From, injectFrom)
		v.oneOf(iat+".location", in.Location, injectLocation)
	}
	for i, s := range r.Scrape {
		sat := fmt.Sprintf("%s.scrape[%d]", at, i)
		v.text(sat+".id", s.ID, true)
		v.text(sat+".sep-start", s.SepStart, true)
		v.text(sat+".sep-end", s.SepEnd, true)
		v.text(sat+".insertid", s.InsertID, true)
		for j, t := range s.Transform {
			v.oneOf(fmt.Sprintf("%s.transform[%d].type", sat, j), t.Type, transformTypes)
		}
	}
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", c) {
			return false
		}
	}
	return true
}

// Plan turns the configuration into a load generator plan.
func (c *Config) Plan(loadID string, duration time.Duration, users int) loadgen.Plan {
	p := loadgen.Plan{LoadID: loadID, Duration: duration, VirtualUsers: users, SessionProbability: c.Probabilities}
	for _, u := range c.Users {
		p.Users = append(p.Users, loadgen.Credential{Username: u.Username, Password: u.Password})
	}
	for _, m := range c.Models {
		s := loadgen.Session{Name: m.Name, Random: m.Session.Type == SessionRandom, Length: len(m.Session.Requests)}
		if m.Session.Length != nil {
			s.Length = int(*m.Session.Length)
		}
		if m.Session.WaitTime != nil {
			s.WaitTime = time.Duration(*m.Session.WaitTime) * time.Millisecond
		}
		for _, r := range m.Session.Requests {
			s.Requests = append(s.Requests, planRequest(r))
		}
		for _, r := range m.Session.Constants {
			s.Constants = append(s.Constants, planRequest(r))
		}
		p.Sessions = append(p.Sessions, s)
	}
	return p
}

func planRequest(r Request) loadgen.Request {
	h := http.Header{}
	for k, vs := range r.Headers {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	if len(r.Cookies) > 0 {
		parts := make([]string, 0, len(r.Cookies))
		for _, c := range r.Cookies {
			parts = append(parts, c.Name+"="+c.Value)
		}
		h.Add("Cookie", strings.Join(parts, "; "))
	}
	w := 1.0
	if r.Probability != nil {
		w = *r.Probability
	}
	return loadgen.Request{Name: r.Name, Method: r.Method, URL: r.URL, Header: h, Weight: w, Wait: r.Wait, CallConstants: r.CallConstants}
}
