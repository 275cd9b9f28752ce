package erpc_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPackageDocsStartWithPackage: every package of the repository has a
// package comment, and every package comment starts "Package <name>", as
// go doc shows it. A blank line inside a long package comment cuts it
// silently: go doc then shows only the part after the gap (shm's did).
func TestPackageDocsStartWithPackage(t *testing.T) {
	docs := map[string][]string{} // directory -> package comments found
	names := map[string]string{}
	generated := map[string]bool{} // directory -> a generated file is there
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "." && (n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		names[dir] = f.Name.Name
		generated[dir] = generated[dir] || ast.IsGenerated(f)
		if f.Doc != nil {
			docs[dir] = append(docs[dir], f.Doc.Text())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 20 {
		t.Fatalf("found only %d packages", len(names))
	}
	for dir, name := range names {
		if name == "main" {
			continue // a command's doc says what the command does
		}
		if len(docs[dir]) == 0 && !generated[dir] { // protoc's output has none
			t.Errorf("%s: package %s has no package comment", dir, name)
		}
		for _, doc := range docs[dir] {
			if !strings.HasPrefix(doc, "Package "+name+" ") {
				first, _, _ := strings.Cut(doc, "\n")
				t.Errorf("%s: a package comment of %s starts %q, not \"Package %s\" (a blank line in it?)", dir, name, first, name)
			}
		}
	}
}

// TestDocMapNamesEveryFile: doc.go's "Where things are" names every
// non-test Go file of the root package and every package it points to
// exists, so a new contributor's map matches the tree.
func TestDocMapNamesEveryFile(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(src), "// # Where things are")
	if !ok {
		t.Fatal(`doc.go has no "Where things are" section`)
	}
	section, _, _ = strings.Cut(section, "\n// # ")
	section, _, _ = strings.Cut(section, "\npackage ")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`[a-z_]+\.go\b`).FindAllString(section, -1) {
		named[m] = true
		if _, err := os.Stat(m); err != nil {
			t.Errorf("doc.go's map names %s, which is not in the root package", m)
		}
	}
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") && f != "doc.go" && !named[f] {
			t.Errorf("doc.go's map does not name %s", f)
		}
	}
	for _, m := range regexp.MustCompile(`\b(?:internal|transport|codec)(?:/[a-z]+)*\b`).FindAllString(section, -1) {
		if st, err := os.Stat(m); err != nil || !st.IsDir() {
			t.Errorf("doc.go's map names package %s, which does not exist", m)
		}
	}
}

// TestReadmeForAdopters: the README's first screen keeps what an adopter
// needs to decide (the two commands first, then the install line, the Go
// version of go.mod, security and stability, the license), and LICENSE is
// there.
func TestReadmeForAdopters(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	module := regexp.MustCompile(`(?m)^module (\S+)`).FindSubmatch(gomod)
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if module == nil || goLine == nil {
		t.Fatal("go.mod has no module or go line")
	}
	top, _, ok := strings.Cut(string(readme), "## Quickstart")
	if !ok {
		t.Fatal("README.md has no Quickstart")
	}
	first := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(top)
	if first == nil || !strings.HasPrefix(first[1], "go run ./examples/echo ") || !strings.Contains(first[1], "\n./test.sh ") {
		t.Errorf("README.md's first block is not the demo and the tests")
	}
	for _, want := range []string{
		"go get " + string(module[1]) + "\n",
		"**Go** " + string(goLine[1]) + " or later",
		"## Security\n",
		"## Stability\n",
		"[LICENSE](LICENSE)",
	} {
		if !strings.Contains(top, want) {
			t.Errorf("README.md before the Quickstart lacks %q", want)
		}
	}
	if !strings.Contains(string(readme), "\n## License\n") {
		t.Error("README.md has no License section")
	}
	license, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(license), "Apache License\n                           Version 2.0, January 2004") ||
		!strings.Contains(string(license), "END OF TERMS AND CONDITIONS") {
		t.Error("LICENSE is not the Apache License 2.0")
	}
}

// TestEveryModuleHasLicense: a nested module's zip (what the module proxy
// and pkg.go.dev see) holds only its own directory, so each module's
// directory carries the root LICENSE, byte for byte.
func TestEveryModuleHasLicense(t *testing.T) {
	root, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	mods := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" || path == "go.mod" {
			return nil
		}
		mods++
		got, err := os.ReadFile(filepath.Join(filepath.Dir(path), "LICENSE"))
		if err != nil || !bytes.Equal(got, root) {
			t.Errorf("module %s: no copy of the root LICENSE (%v)", filepath.Dir(path), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if mods == 0 {
		t.Fatal("no nested module found: the walk checked nothing")
	}
}
