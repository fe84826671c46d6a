/*
Copyright The appservice-controller Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package docscheck reads the repository's Markdown the way the docs tests
// check it: the headings and code blocks a translation must keep, and the
// names a reader could look for — files, functions, library identifiers,
// flags, metrics, make targets and commands. It decides what a name is; the
// tests (test/docs, test/e2e) decide whether it exists.
//
// It imports nothing of this repository.
package docscheck

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Files lists the Markdown a user reads, relative to the repository's root:
// the top level's and everything under docs/.
func Files(root string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(root, "*.md"))
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(path string, _ os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for i, f := range files {
		if files[i], err = filepath.Rel(root, f); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// Heading is a Markdown ATX heading.
type Heading struct {
	Level int
	Text  string
}

// Block is a fenced code block: its info string's language and its lines.
type Block struct {
	Lang  string
	Lines []string
	// Line is the line number of the opening fence.
	Line int
}

// Doc is what the checks read from one Markdown file.
type Doc struct {
	Path     string
	Headings []Heading
	Blocks   []Block
	// Spans are the inline code spans outside code blocks, in order.
	Spans []string
	// Links are the targets of inline links, in order.
	Links []string
}

var (
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*)$`)
	spanRE    = regexp.MustCompile("`([^`]+)`")
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// Read parses the Markdown file at path.
func Read(path string) (*Doc, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := Parse(string(data))
	d.Path = path
	return d, nil
}

// Parse reads headings, fenced blocks, code spans and links from Markdown.
func Parse(md string) *Doc {
	d := &Doc{}
	var open *Block
	fence := ""
	sc := bufio.NewScanner(strings.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if open != nil {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				d.Blocks = append(d.Blocks, *open)
				open = nil
				continue
			}
			open.Lines = append(open.Lines, line)
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			rest := strings.TrimLeft(trimmed, trimmed[:1])
			fence = trimmed[:len(trimmed)-len(rest)]
			open = &Block{Lang: strings.TrimSpace(rest), Line: n}
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			d.Headings = append(d.Headings, Heading{Level: len(m[1]), Text: strings.TrimSpace(m[2])})
		}
		for _, m := range spanRE.FindAllStringSubmatch(line, -1) {
			d.Spans = append(d.Spans, strings.TrimSpace(m[1]))
		}
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			d.Links = append(d.Links, m[1])
		}
	}
	if open != nil {
		d.Blocks = append(d.Blocks, *open)
	}
	return d
}

// commentStyles are the languages whose blocks a translation must keep line
// for line, and how a comment starts in each.
var commentStyles = map[string]string{"sh": "#", "bash": "#", "console": "#", "yaml": "#", "go": "//", "text": ""}

// Kept reports whether a translation must keep the block's lines.
func (b Block) Kept() bool {
	_, ok := commentStyles[b.Lang]
	return ok
}

// Code returns the block's lines without comments and surrounding space,
// empty lines dropped: what a translation must keep.
func (b Block) Code() []string {
	marker := commentStyles[b.Lang]
	var out []string
	for _, line := range b.Lines {
		if marker != "" {
			line = stripComment(line, marker)
		}
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// stripComment cuts a comment that starts the line or follows whitespace,
// outside quotes.
func stripComment(line, marker string) string {
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case strings.HasPrefix(line[i:], marker) && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// CompareTranslation lists how a translation differs from the original where
// it must not: the headings' levels and order, the number of code blocks,
// and the code of the blocks whose lines are kept.
func CompareTranslation(orig, tr *Doc) []string {
	var problems []string
	levels := func(d *Doc) string {
		var b strings.Builder
		for _, h := range d.Headings {
			b.WriteString(strings.Repeat("#", h.Level) + " ")
		}
		return b.String()
	}
	if lo, lt := levels(orig), levels(tr); lo != lt {
		problems = append(problems, fmt.Sprintf("headings differ: %s has levels %q, %s %q (%s)",
			orig.Path, lo, tr.Path, lt, firstHeadingDifference(orig, tr)))
	}
	if len(orig.Blocks) != len(tr.Blocks) {
		problems = append(problems, fmt.Sprintf("%s has %d code blocks, %s %d", orig.Path, len(orig.Blocks), tr.Path, len(tr.Blocks)))
		return problems
	}
	for i, bo := range orig.Blocks {
		bt := tr.Blocks[i]
		if bo.Lang != bt.Lang {
			problems = append(problems, fmt.Sprintf("code block %d: %s:%d is %q, %s:%d %q", i+1, orig.Path, bo.Line, bo.Lang, tr.Path, bt.Line, bt.Lang))
			continue
		}
		if !bo.Kept() {
			continue
		}
		co, ct := bo.Code(), bt.Code()
		for j := 0; j < len(co) || j < len(ct); j++ {
			var lo, lt string
			if j < len(co) {
				lo = co[j]
			}
			if j < len(ct) {
				lt = ct[j]
			}
			if lo != lt {
				problems = append(problems, fmt.Sprintf("code block %d (%s:%d, %s:%d): line %q, translated %q",
					i+1, orig.Path, bo.Line, tr.Path, bt.Line, lo, lt))
				break
			}
		}
	}
	return problems
}

func firstHeadingDifference(orig, tr *Doc) string {
	for i := 0; i < len(orig.Headings) || i < len(tr.Headings); i++ {
		switch {
		case i >= len(orig.Headings):
			return fmt.Sprintf("extra heading %q", tr.Headings[i].Text)
		case i >= len(tr.Headings):
			return fmt.Sprintf("missing a heading for %q", orig.Headings[i].Text)
		case orig.Headings[i].Level != tr.Headings[i].Level:
			return fmt.Sprintf("%q against %q", orig.Headings[i].Text, tr.Headings[i].Text)
		}
	}
	return ""
}

// Kind is what a code span names.
type Kind int

// The kinds of name a span can hold.
const (
	// Other: prose in code style (a field, a value, a label); not checked.
	Other Kind = iota
	// File: a path from the repository's root, or a file's base name.
	File
	// Func: a function or method of this repository: `syncHandler()`,
	// `Controller.Run()`.
	Func
	// Ident: a package-qualified identifier: `cache.DeltaFIFO`,
	// `workqueue.NewTypedRateLimitingQueueWithConfig()`.
	Ident
	// Flag: one of the controller's flags: `-workers`, `-install-crd=false`.
	Flag
	// Metric: a metric's full name or, after a full one, its suffix (`_adds_total`).
	Metric
	// Make: a make command: `make test-e2e`.
	Make
	// Kubectl: a kubectl command.
	Kubectl
)

var (
	funcRE   = regexp.MustCompile(`^(?:([A-Z]\w*)\.)?(\w+)\(\)$`)
	identRE  = regexp.MustCompile(`^([a-z][a-z0-9]*)\.([A-Z]\w*)(?:\.(\w+))?(?:\(\))?$`)
	flagRE   = regexp.MustCompile(`^--?([a-z][a-z0-9-]*)(?:=\S*)?$`)
	metricRE = regexp.MustCompile(`^((?:workqueue|rest_client|controller_runtime|leader_election|appservice_controller|go|process)_[a-z0-9_]+)(?:\{[^}]*\})?$`)
	suffixRE = regexp.MustCompile(`^_[a-z0-9_]+$`)
	pathRE   = regexp.MustCompile(`^[\w.\-]+(?:/[\w.\-]+)*/?$`)
	fileExts = []string{".go", ".md", ".yaml", ".yml", ".sh", ".json", ".txt", ".mod", ".tpl"}
)

// Name is a classified span: its kind and the parts the checks need.
type Name struct {
	Kind Kind
	Span string
	// Parts: File: the path; Func: receiver type (may be empty), name;
	// Ident: package, name, method (may be empty); Flag: the flag's name;
	// Metric: the name or suffix; Make: the targets; Kubectl: the arguments.
	Parts []string
}

// Classify tells what a code span names. root is the repository's root: a
// span is a path when its first element is there (so `apps/v1` is not).
func Classify(span, root string) Name {
	n := Name{Span: span}
	switch fields := strings.Fields(span); {
	case len(fields) > 1 && fields[0] == "make":
		n.Kind, n.Parts = Make, MakeTargets(fields[1:])
	case len(fields) > 1 && fields[0] == "kubectl":
		n.Kind, n.Parts = Kubectl, fields[1:]
	case len(fields) != 1:
	case funcRE.MatchString(span):
		m := funcRE.FindStringSubmatch(span)
		n.Kind, n.Parts = Func, m[1:]
	case identRE.MatchString(span):
		m := identRE.FindStringSubmatch(span)
		n.Kind, n.Parts = Ident, m[1:]
	case flagRE.MatchString(span):
		n.Kind, n.Parts = Flag, []string{flagRE.FindStringSubmatch(span)[1]}
	case metricRE.MatchString(span):
		n.Kind, n.Parts = Metric, []string{metricRE.FindStringSubmatch(span)[1]}
	case suffixRE.MatchString(span):
		n.Kind, n.Parts = Metric, []string{span}
	case isPath(span, root):
		n.Kind, n.Parts = File, []string{span}
	}
	return n
}

// generated are the folders builds write to: named in the docs, never in git.
var generated = []string{"_output/", "dist/", "bin/"}

func isPath(span, root string) bool {
	if !pathRE.MatchString(span) {
		return false
	}
	for _, g := range generated {
		if strings.HasPrefix(span, g) {
			return false
		}
	}
	first, _, nested := strings.Cut(span, "/")
	if nested {
		_, err := os.Stat(filepath.Join(root, first))
		return err == nil
	}
	for _, ext := range fileExts {
		if strings.HasSuffix(span, ext) {
			return true
		}
	}
	return span == "Makefile" || span == "Dockerfile"
}

// MakeTargets are the targets in make's arguments: up to the first variable
// assignment or option.
func MakeTargets(args []string) []string {
	var targets []string
	for _, a := range args {
		if strings.Contains(a, "=") || strings.HasPrefix(a, "-") || strings.HasPrefix(a, "#") {
			break
		}
		targets = append(targets, a)
	}
	return targets
}

// Commands returns a shell block's commands: comments cut, continued lines
// joined, program output (lines not starting a known command) left out, and
// each command split at && ; | into simple commands of fields.
func Commands(b Block) [][]string {
	if b.Lang != "sh" && b.Lang != "bash" {
		return nil
	}
	var out [][]string
	var cur string
	for _, line := range b.Lines {
		line = strings.TrimSpace(stripComment(line, "#"))
		if strings.HasSuffix(line, `\`) {
			cur += strings.TrimSuffix(line, `\`) + " "
			continue
		}
		cur += line
		for _, simple := range separatorRE.Split(cur, -1) {
			fields := ShellFields(simple)
			for len(fields) > 0 && assignmentRE.MatchString(fields[0]) {
				fields = fields[1:] // VAR=value command
			}
			if len(fields) > 0 && isCommand(fields[0]) {
				out = append(out, fields)
			}
		}
		cur = ""
	}
	return out
}

var (
	separatorRE  = regexp.MustCompile(`&&|;|\||&\s*$`)
	assignmentRE = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)
)

// commandWords start the commands the docs show; other lines in a shell
// block are a command's output.
var commandWords = map[string]bool{
	"make": true, "kubectl": true, "go": true, "helm": true, "curl": true, "export": true,
	"git": true, "cd": true, "cat": true,
}

func isCommand(word string) bool {
	return commandWords[word] || strings.HasPrefix(word, "./")
}

// ShellFields splits a simple command into words as a POSIX shell would
// without expansions: whitespace separates, single quotes keep everything,
// double quotes keep all but a backslash before " or \\, and a backslash
// outside quotes keeps the next character.
func ShellFields(s string) []string {
	var fields []string
	var word strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				fields = append(fields, word.String())
				word.Reset()
				inWord = false
			}
			continue
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				end = len(s) - i - 1
			}
			word.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				word.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			i++
			word.WriteByte(s[i])
		default:
			word.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		fields = append(fields, word.String())
	}
	return fields
}
