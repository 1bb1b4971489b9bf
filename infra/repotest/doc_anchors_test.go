package repotest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"cads/infra/testenv"
)

// slug is the anchor a Markdown renderer (GitHub's) gives a heading: lower
// case, punctuation dropped, spaces as hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var heading = regexp.MustCompile(`^#{1,6} (.*)$`)

// anchors returns the anchors of a Markdown file's headings; a repeated
// heading gets -1, -2, ... as the renderer numbers it.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		m := heading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		s := slug(m[1])
		if n, ok := seen[s]; ok {
			seen[s] = n + 1
			s += "-" + strconv.Itoa(n+1)
		} else {
			seen[s] = 0
		}
		out[s] = true
	}
	return out
}

var (
	// docRef is how code and docs point at a heading: docs/api.md#errors.
	docRef = regexp.MustCompile(`docs/([\w-]+\.md)#([\w-]+)`)
	// mdLink is a link between docs: [text](api.md#errors) or (#errors).
	mdLink = regexp.MustCompile(`\]\(([\w-]+\.md)?#([\w-]+)\)`)
)

// Every pointer into a doc's heading (docs/api.md#errors in a comment, a
// link between docs) names a heading that exists, so renaming a heading
// cannot silently break what the code points at.
func TestDocAnchorsResolve(t *testing.T) {
	root := testenv.Root(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs found: %v", err)
	}
	known := map[string]map[string]bool{}
	for _, d := range docs {
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		known[filepath.Base(d)] = anchors(string(b))
	}
	if !known["api.md"]["errors"] {
		t.Fatal(`docs/api.md has no "Errors" heading: the anchors are read wrong`)
	}
	checked := 0
	for _, name := range trackedFiles(t, root) {
		text, ok := readText(t, root, name)
		if !ok {
			continue
		}
		check := func(doc, anchor string) {
			checked++
			if !known[doc][anchor] {
				t.Errorf("%s: docs/%s has no heading with anchor #%s", name, doc, anchor)
			}
		}
		for _, m := range docRef.FindAllStringSubmatch(text, -1) {
			check(m[1], m[2])
		}
		if dir, base := filepath.Split(name); dir == "docs/" {
			for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
				doc := m[1]
				if doc == "" {
					doc = base
				}
				check(doc, m[2])
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d pointers: the file list looks wrong", checked)
	}
}
