package repotest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"

	"cads/infra/testenv"
)

const patternsFile = "infra/repotest/testdata/outside-refs.txt"

type rule struct {
	re      *regexp.Regexp
	needle  string
	example string
}

// rules reads the patterns file: the rules, and the look-alikes no rule may
// match.
func rules(t *testing.T, root string) ([]rule, []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, patternsFile))
	if err != nil {
		t.Fatal(err)
	}
	var rs []rule
	var clean []string
	for n, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		expr, example, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("%s:%d: want a pattern, a tab and an example", patternsFile, n+1)
		}
		if expr == "!" {
			clean = append(clean, example)
			continue
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			t.Fatalf("%s:%d: %v", patternsFile, n+1, err)
		}
		nd, err := needle(re)
		if err != nil || len(nd) < 4 {
			t.Fatalf("%s:%d: %s needs a literal part of at least 4 characters (got %q, %v)", patternsFile, n+1, expr, nd, err)
		}
		rs = append(rs, rule{re: re, needle: nd, example: strings.ReplaceAll(example, `\n`, "\n")})
	}
	return rs, clean
}

// unlead returns line without its indentation and comment leader, as it
// reads when it continues the line before.
func unlead(line string) string {
	line = strings.TrimLeft(line, " \t")
	for _, l := range []string{"//", "#", "*", "<!--"} {
		if rest, ok := strings.CutPrefix(line, l); ok {
			return strings.TrimLeft(rest, " \t")
		}
	}
	return line
}

// needle is the longest literal text rule's expression requires, lower
// case: a file whose lower-case text lacks it cannot match, so most files
// are passed over without running the expression (running every rule over
// every file takes over a second).
func needle(re *regexp.Regexp) (string, error) {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return "", err
	}
	best := ""
	var walk func(*syntax.Regexp)
	walk = func(n *syntax.Regexp) {
		switch n.Op {
		case syntax.OpLiteral:
			if len(string(n.Rune)) > len(best) {
				best = string(n.Rune)
			}
		case syntax.OpConcat, syntax.OpCapture:
			run := ""
			for _, c := range n.Sub {
				if c.Op == syntax.OpLiteral {
					run += string(c.Rune)
					continue
				}
				if len(run) > len(best) {
					best = run
				}
				run = ""
				walk(c) // only literals, concatenations and groups are required text
			}
			if len(run) > len(best) {
				best = run
			}
		}
	}
	walk(tree)
	return strings.ToLower(best), nil
}

// suspect reports whether a rule matches text, wrapped references
// included.
func suspect(rs []rule, text string) bool {
	j := joined(text)
	lower := strings.ToLower(j)
	for _, r := range rs {
		if strings.Contains(lower, r.needle) && r.re.MatchString(j) {
			return true
		}
	}
	return false
}

// joined is text with every line break and the next line's comment leader
// turned into one space: a reference wrapped across comment lines reads as
// one.
func joined(text string) string {
	lines := strings.Split(text, "\n")
	for i := 1; i < len(lines); i++ {
		lines[i] = unlead(lines[i])
	}
	return strings.Join(lines, " ")
}

// findings returns "line: text" for every line of text where a rule
// matches, in the line itself or starting in it and running on into the
// next line (a reference wrapped in a comment).
func findings(rs []rule, text string) []string {
	lines := strings.Split(text, "\n")
	var out []string
	for i, line := range lines {
		pair := line
		if i+1 < len(lines) {
			pair += " " + unlead(lines[i+1])
		}
		for _, r := range rs {
			loc := r.re.FindStringIndex(pair)
			if loc != nil && loc[0] < len(line) {
				out = append(out, fmt.Sprintf("%d: %s (matches %s)", i+1, strings.TrimSpace(line), r.re))
				break
			}
		}
	}
	return out
}

// The rules find what they are meant to find, and leave alone the
// repository's own names that look like them.
func TestRulesMatchTheirExamples(t *testing.T) {
	root := testenv.Root(t)
	rs, clean := rules(t, root)
	if len(rs) == 0 {
		t.Fatal("no rules read")
	}
	for _, r := range rs {
		text := r.example
		if len(findings([]rule{r}, text)) == 0 {
			t.Errorf("rule %s does not match its example %q", r.re, text)
		}
		if !suspect([]rule{r}, text) {
			t.Errorf("rule %s (needle %q) passes over its example %q", r.re, r.needle, text)
		}
	}
	for _, c := range clean {
		if f := findings(rs, c); len(f) > 0 {
			t.Errorf("look-alike %q is reported: %v", c, f)
		}
	}
}

// No file of the repository names a document outside it: a reader of the
// repository alone must be able to follow every reference. State the rule in
// docs/api.md (or the doc that owns the topic) and point at its heading.
func TestNoReferencesOutsideTheRepository(t *testing.T) {
	root := testenv.Root(t)
	rs, _ := rules(t, root)
	files := trackedFiles(t, root)
	scanned := 0
	for _, name := range files {
		if name == patternsFile {
			continue
		}
		text, ok := readText(t, root, name)
		if !ok {
			continue
		}
		scanned++
		if !suspect(rs, text) {
			continue
		}
		for _, f := range findings(rs, text) {
			t.Errorf("%s:%s", name, f)
		}
	}
	if scanned < 100 {
		t.Fatalf("scanned only %d files of %d: the file list looks wrong", scanned, len(files))
	}
}

// binary reports whether b looks like a binary file: a NUL byte in its
// first 8 KB, as git decides.
func binary(b []byte) bool {
	head := b
	if len(head) > 8000 {
		head = head[:8000]
	}
	return bytes.IndexByte(head, 0) >= 0
}

// trackedFiles lists the repository's files as git sees them: tracked, and
// new ones not ignored (so a file is checked before it is added).
func trackedFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	list, err := cmd.Output()
	if err != nil {
		t.Skipf("not a git checkout (git ls-files: %v): nothing to scan", err)
	}
	var out []string
	for _, name := range strings.Split(string(list), "\x00") {
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// readText reads a file of the list; ok is false for a binary file or one
// deleted in the working tree but not yet in the index.
func readText(t *testing.T, root, name string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	if binary(b) {
		return "", false
	}
	return string(b), true
}
