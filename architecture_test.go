package hippocam_test

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The seam between the memory systems and the rest (docs/learning.md, "Adding a memory system"):
// the transports and the session service know memory systems only through memory/library and
// the optional interfaces of the root package, never by importing a system's package. These
// tests read the imports of the production files (test files may build states of a particular
// system) and fail on any that crosses the seam.

const module = "github.com/hippocam/hippocam"

// seamed are the folders (with everything beneath them) that may import memory/library but no
// other package under memory/.
var seamed = []string{"httpapi", "sessions", "mcp", "viewer", "cmd/hippocam", "internal/cli", "openai", "anthropic"}

// seamExceptions are the (file, import) pairs allowed to cross the seam for now. Each must still
// be needed: an exception no file uses any more fails the test, so that it is removed.
var seamExceptions = map[[2]string]string{}

func TestTransportsImportNoMemorySystem(t *testing.T) {
	used := map[[2]string]bool{}
	for _, root := range seamed {
		for _, p := range packagesUnder(t, root) {
			for _, imp := range p.Imports {
				if !strings.HasPrefix(imp, module+"/memory/") || imp == module+"/memory/library" {
					continue
				}
				for _, pos := range p.ImportPos[imp] {
					file := filepath.ToSlash(filepath.Join(p.Dir, filepath.Base(pos.Filename)))
					if _, ok := seamExceptions[[2]string{file, imp}]; ok {
						used[[2]string{file, imp}] = true
						continue
					}
					t.Errorf("%s imports %s: ask memory/library, or type-assert an interface of the root package", pos, imp)
				}
			}
		}
	}
	for e := range seamExceptions {
		if !used[e] {
			t.Errorf("%s no longer imports %s: remove its entry from seamExceptions", e[0], e[1])
		}
	}
}

// TestMemoryTestNeedsNoStoreOrModel checks that the conformance suite takes its stores and its
// model from the caller: it imports no store implementation and not the simulated model, so that
// a system's test chooses them.
func TestMemoryTestNeedsNoStoreOrModel(t *testing.T) {
	banned := []string{"inmem", "sqlite", "postgres", "sim"}
	for _, p := range packagesUnder(t, "memory/memorytest") {
		for _, imp := range p.Imports {
			if name, ok := strings.CutPrefix(imp, module+"/"); ok && slices.Contains(banned, name) {
				t.Errorf("%s imports %s: take it from the caller", p.Dir, imp)
			}
		}
	}
}

// packagesUnder returns the packages in root and the folders beneath it (root relative to the
// module), as go/build reads their production files. Folders without Go files are left out.
func packagesUnder(t *testing.T, root string) []*build.Package {
	t.Helper()
	var out []*build.Package
	err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); dir != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		p, err := build.Default.ImportDir(dir, 0)
		if err != nil {
			if _, none := err.(*build.NoGoError); none {
				return nil
			}
			return err
		}
		p.Dir = filepath.ToSlash(dir)
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no Go package under %s", root)
	}
	return out
}
