package scenario_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/scenario"
)

const example = `{"role":"user","content":"#open Prepare the invoice report | the report is sent\n#open Read the exports | both exports are read\nStart with the exports."}
{"role":"user","content":"!call read_file {\"path\":\"exports/shop.csv\"}\n!call read_file {\"path\":\"exports/market.csv\"}"}

{"role":"tool","content":"  revenue_shop := 1200\ndetail shop_owner := Dana\n\n"}
   
{"role":"tool","content":"revenue_market := 800","note":"extra fields are ignored"}
{"role":"user","content":""}
`

func TestParse(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		lines, err := scenario.Parse(strings.NewReader(example))
		if err != nil {
			t.Fatal(err)
		}
		want := []scenario.Line{
			{1, hippocam.RoleUser, "#open Prepare the invoice report | the report is sent\n#open Read the exports | both exports are read\nStart with the exports."},
			{2, hippocam.RoleUser, "!call read_file {\"path\":\"exports/shop.csv\"}\n!call read_file {\"path\":\"exports/market.csv\"}"},
			{4, hippocam.RoleTool, "  revenue_shop := 1200\ndetail shop_owner := Dana\n\n"},
			{6, hippocam.RoleTool, "revenue_market := 800"},
			{7, hippocam.RoleUser, ""},
		}
		assertLines(t, lines, want)
	})

	t.Run("OKNoFinalNewline", func(t *testing.T) {
		lines, err := scenario.Parse(strings.NewReader("{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\"content\":\"b \"}"))
		if err != nil {
			t.Fatal(err)
		}
		assertLines(t, lines, []scenario.Line{{1, hippocam.RoleUser, "a"}, {2, hippocam.RoleUser, "b "}})
	})

	t.Run("OKCRLF", func(t *testing.T) {
		in := "\xEF\xBB\xBF{\"role\":\"user\",\"content\":\"one\\r\\ntwo \"}\r\n\r\n{\"role\":\"tool\",\"content\":\"x\\r\"}\r\n"
		lines, err := scenario.Parse(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		assertLines(t, lines, []scenario.Line{{1, hippocam.RoleUser, "one\r\ntwo "}, {3, hippocam.RoleTool, "x\r"}})
	})

	t.Run("OKEmpty", func(t *testing.T) {
		lines, err := scenario.Parse(strings.NewReader("\n \n\t\r\n"))
		if err != nil || len(lines) != 0 {
			t.Fatalf("lines %v, err %v; want none", lines, err)
		}
	})

	t.Run("OKLongLine", func(t *testing.T) {
		// Several MB on one line, then a short line, read in uneven pieces.
		big := strings.Repeat("row 1234567890 ü\\n", 300_000) // about 5.4 MB
		in := `{"role":"tool","content":"` + big + `"}` + "\n" + `{"role":"user","content":"next"}` + "\n"
		lines, err := scenario.Parse(iotest.HalfReader(strings.NewReader(in)))
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != 2 || lines[1].Number != 2 || lines[1].Content != "next" {
			t.Fatalf("lines = %d, want 2 with the short one second", len(lines))
		}
		if want := strings.Repeat("row 1234567890 ü\n", 300_000); lines[0].Content != want {
			t.Errorf("long content has %d bytes, want %d", len(lines[0].Content), len(want))
		}
	})

	for _, tt := range []struct {
		name, line, want string
	}{
		{"ErrInvalidJSON", `{"role":"user","content":"x"`, "invalid JSON"},
		{"ErrTrailingData", `{"role":"user","content":"x"} {}`, "invalid JSON"},
		{"ErrNotObject", `["user","x"]`, "not a JSON object"},
		{"ErrNull", `null`, "not a JSON object"},
		{"ErrPlainText", `hello there`, "not a JSON object"},
		{"ErrRoleAssistant", `{"role":"assistant","content":"x"}`, `role "assistant"`},
		{"ErrRoleSystem", `{"role":"system","content":"x"}`, `role "system"`},
		{"ErrRoleMissing", `{"content":"x"}`, `"role" is missing`},
		{"ErrRoleCase", `{"Role":"user","content":"x"}`, `"role" is missing`},
		{"ErrRoleNotString", `{"role":1,"content":"x"}`, `"role" must be a string`},
		{"ErrContentMissing", `{"role":"user"}`, `"content" is missing`},
		{"ErrContentNull", `{"role":"user","content":null}`, `"content" must be a string, not null`},
		{"ErrContentNumber", `{"role":"tool","content":42}`, `"content" must be a string, not 42`},
		{"ErrContentParts", `{"role":"user","content":[{"type":"text","text":"x"}]}`, `"content" must be a string`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Three good lines and a blank one come first, so the bad line is line 5.
			in := "{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":\"user\",\"content\":\"b\"}\r\n" +
				"{\"role\":\"tool\",\"content\":\"c\"}\n" + tt.line + "\n{\"role\":\"user\",\"content\":\"d\"}\n"
			lines, err := scenario.Parse(strings.NewReader(in))
			if hippocam.ErrorCode(err) != hippocam.EINVALID {
				t.Fatalf("err = %v, want invalid", err)
			}
			if lines != nil {
				t.Errorf("lines = %v, want none with an error", lines)
			}
			msg := hippocam.ErrorMessage(err)
			if !strings.HasPrefix(msg, "line 5: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("message = %q, want it to start %q and mention %q", msg, "line 5: ", tt.want)
			}
		})
	}

	t.Run("ErrRead", func(t *testing.T) {
		boom := errors.New("disk on fire")
		_, err := scenario.Parse(io.MultiReader(strings.NewReader("{\"role\":\"user\",\"content\":\"a\"}\n"), iotest.ErrReader(boom)))
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want the reader's error", err)
		}
	})
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("OK", func(t *testing.T) {
		lines, err := scenario.ParseFile(write("ok.jsonl", example))
		if err != nil || len(lines) != 5 {
			t.Fatalf("lines %d, err %v; want 5", len(lines), err)
		}
	})

	t.Run("ErrBadLine", func(t *testing.T) {
		p := write("bad.jsonl", "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"bot\",\"content\":\"b\"}\n")
		_, err := scenario.ParseFile(p)
		if msg := hippocam.ErrorMessage(err); hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.HasPrefix(msg, p+": line 2: ") {
			t.Errorf("err = %v, want invalid starting with the path and line 2", err)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := scenario.ParseFile(filepath.Join(dir, "missing.jsonl"))
		if hippocam.ErrorCode(err) != hippocam.ENOTFOUND || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("err = %v, want not found", err)
		}
	})

	t.Run("ErrDirectory", func(t *testing.T) {
		if _, err := scenario.ParseFile(dir); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("err = %v, want invalid", err)
		}
	})
}

// assertLines compares parsed lines with the expected ones.
func assertLines(tb testing.TB, got, want []scenario.Line) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d lines %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			tb.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
