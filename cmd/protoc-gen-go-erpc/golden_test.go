package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The golden files are what the plug-in generates from testdata/proto:
// protoc and buf must both produce them, byte for byte. Regenerate them
// with go test -run Golden -update.

var goldenDir = filepath.Join("testdata", "golden")

func TestGoldenProtoc(t *testing.T) {
	protoc := needProtoc(t)
	p := buildPlugins(t)
	files, editions := protoFiles(t)
	ok, version := protocEditions(t, protoc)
	skipped := map[string]bool{}
	if !ok {
		var kept []string
		for _, f := range files {
			if editions[f] {
				skipped[f] = true
				t.Logf("%s reads no editions (27 or later does): %s is checked with buf only", version, f)
			} else {
				kept = append(kept, f)
			}
		}
		files = kept
	}
	out := t.TempDir()
	runProtoc(t, protoc, p, out, false, files)
	checkGolden(t, out, skipped)
}

func TestGoldenBuf(t *testing.T) {
	buf := needBuf(t)
	p := buildPlugins(t)
	out := t.TempDir()
	runBuf(t, buf, p, out, false)
	checkGolden(t, out, nil)
}

var sourceRE = regexp.MustCompile(`(?m)^// source: (\S+)$`)

// checkGolden compares the _erpc.pb.go files under out with the golden
// ones, but for those generated from the skipped .proto files.
func checkGolden(t *testing.T, out string, skipped map[string]bool) {
	t.Helper()
	got := erpcFiles(t, out)
	want := erpcFiles(t, goldenDir)
	if *update {
		for name, b := range got {
			path := filepath.Join(goldenDir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if len(skipped) == 0 {
			for name := range want {
				if got[name] == nil {
					os.Remove(filepath.Join(goldenDir, filepath.FromSlash(name)))
				}
			}
		}
		t.Logf("updated %d golden files", len(got))
		return
	}
	var names []string
	for name := range want {
		names = append(names, name)
	}
	for name := range got {
		if want[name] == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		g, w := got[name], want[name]
		switch {
		case w == nil:
			t.Errorf("%s: generated, but no golden file (go test -run Golden -update writes it)", name)
		case g == nil:
			if m := sourceRE.FindSubmatch(w); m != nil && skipped[string(m[1])] {
				continue
			}
			t.Errorf("%s: golden, but not generated", name)
		case !bytes.Equal(g, w):
			t.Errorf("%s differs from the golden file (go test -run Golden -update rewrites it):\n%s", name, firstDiff(g, w))
		}
	}
	if len(got) == 0 {
		t.Error("nothing generated")
	}
}

// erpcFiles reads the _erpc.pb.go files under dir, by slash path relative
// to it.
func erpcFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_erpc.pb.go") {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)], err = os.ReadFile(path)
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return files
}

func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  got:  %q\n  want: %q", i+1, gl, wl)
		}
	}
	return "(same lines)"
}
