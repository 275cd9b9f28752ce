package erpc_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPromisesPageNamesRealTests: every test PROMISES.md names as an
// attack exists somewhere in the repository, so the page cannot point at
// a test that was renamed or deleted.
func TestPromisesPageNamesRealTests(t *testing.T) {
	page, err := os.ReadFile("PROMISES.md")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(page), -1)
	if len(named) < 20 {
		t.Fatalf("PROMISES.md names only %d tests", len(named))
	}
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range named {
		if !defined[m[1]] {
			t.Errorf("PROMISES.md names %s, which no test file defines", m[1])
		}
	}
}
