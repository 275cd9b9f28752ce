package erpc_test

import (
	"go/build"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestRootImportsOnlyStdAndXSys: the root package, and every package of
// this module it imports, needs only the standard library and
// golang.org/x/sys (README: "only the standard library and x/sys");
// protobuf belongs in codec/protocodec. The non-test files' imports are
// read with go/build, for each system a build can target, so a file
// built only elsewhere counts too.
func TestRootImportsOnlyStdAndXSys(t *testing.T) {
	const module = "github.com/erpc-go/erpc"
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}, {"windows", "amd64"}, {"freebsd", "amd64"}} {
		ctx := build.Default
		ctx.GOOS, ctx.GOARCH = target[0], target[1]
		importedBy := map[string]string{module: ""}
		queue := []string{module}
		read := 0
		for len(queue) > 0 {
			path := queue[0]
			queue = queue[1:]
			dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(path, module), "/")))
			pkg, err := ctx.ImportDir(dir, 0)
			if err != nil {
				t.Fatalf("%s/%s: read %s: %v", target[0], target[1], path, err)
			}
			read++
			for _, imp := range pkg.Imports {
				if _, seen := importedBy[imp]; seen {
					continue
				}
				importedBy[imp] = path
				if imp == module || strings.HasPrefix(imp, module+"/") {
					queue = append(queue, imp)
				}
			}
		}
		var bad []string
		for imp, by := range importedBy {
			first, _, _ := strings.Cut(imp, "/")
			std := !strings.Contains(first, ".")
			own := imp == module || strings.HasPrefix(imp, module+"/")
			sys := imp == "golang.org/x/sys" || strings.HasPrefix(imp, "golang.org/x/sys/")
			if !std && !own && !sys {
				bad = append(bad, imp+" (imported by "+by+")")
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			t.Errorf("%s/%s: the root package depends on more than the standard library and x/sys:\n  %s",
				target[0], target[1], strings.Join(bad, "\n  "))
		}
		if read < 5 {
			t.Fatalf("%s/%s: read only %d packages of the module: the walk is broken", target[0], target[1], read)
		}
	}
}
