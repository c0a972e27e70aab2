package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite testdata/contract.txtar from what the server answers")

// The contract MCP clients see, as a golden file (testdata/contract.txtar): the initialize
// result (server, capabilities, instructions), every tool with its schemas and annotations, the
// resources and the template. A change shows up as a diff to review; go test -update rewrites
// the file.
func TestContractGolden(t *testing.T) {
	w := newWorld(t)
	cs := w.client("acme")
	ctx := context.Background()
	var files []txtar.File
	add := func(name string, v any) {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, txtar.File{Name: name, Data: append(b, '\n')})
	}
	init := cs.InitializeResult()
	add("initialize.json", map[string]any{"serverInfo": init.ServerInfo, "capabilities": init.Capabilities, "instructions": init.Instructions})
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		add("tools/"+tool.Name+".json", tool)
	}
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	add("resources.json", res.Resources)
	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	add("templates.json", tmpl.ResourceTemplates)
	got := txtar.Format(&txtar.Archive{
		Comment: []byte("What Hippocam's MCP server tells its clients (mcp/golden_test.go; go test ./mcp -run Golden -update rewrites it).\n"),
		Files:   files})
	const path = "testdata/contract.txtar"
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./mcp -run Golden -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		wantArchive := txtar.Parse(want)
		byName := map[string][]byte{}
		for _, f := range wantArchive.Files {
			byName[f.Name] = f.Data
		}
		for _, f := range files {
			if !bytes.Equal(byName[f.Name], f.Data) {
				t.Errorf("%s differs from %s:\n%s", f.Name, path, f.Data)
			}
			delete(byName, f.Name)
		}
		for name := range byName {
			t.Errorf("%s holds %s, which the server no longer answers", path, name)
		}
		if !t.Failed() {
			t.Errorf("%s differs (its comment or order); run go test ./mcp -run Golden -update and review the diff", path)
		}
	}
}
