// Package scenario reads scenario scripts (docs/sim.md, "Scenario scripts"): JSON Lines, one client
// message per line, {"role":"user","content":"…"} or {"role":"tool","content":"…"}. A run sends
// the lines in order; which tool calls a tool line answers depends on the model's answers and
// is decided by the runner, not here.
package scenario

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
)

// Line is one message of a scenario.
type Line struct {
	// Number is the line's 1-based position in the input, blank lines included, so that it
	// matches what an editor shows.
	Number int
	// Role is hippocam.RoleUser or hippocam.RoleTool.
	Role hippocam.Role
	// Content is the decoded "content" string, exactly as written: nothing is trimmed.
	Content string
}

// Parse reads a scenario from r. Lines that are empty or hold only spaces, tabs or a carriage
// return are skipped; a line may end in "\n" or "\r\n", and a UTF-8 byte order mark before the
// first line is ignored. Lines have no length limit. Every other line must be a JSON object
// with a "role" of "user" or "tool" and a string "content" (any other fields are ignored);
// otherwise Parse returns EINVALID with a message that starts "line N: ". An input with no
// message gives no lines and no error. A failing reader gives its error, wrapped.
func Parse(r io.Reader) ([]Line, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var lines []Line
	for n := 1; ; n++ {
		raw, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read scenario line %d: %w", n, err)
		}
		if n == 1 {
			raw = bytes.TrimPrefix(raw, []byte("\xEF\xBB\xBF"))
		}
		if len(bytes.Trim(raw, " \t\r\n")) > 0 {
			l, perr := parseLine(raw)
			if perr != nil {
				return nil, hippocam.Errorf(hippocam.EINVALID, "line %d: %s", n, perr)
			}
			l.Number = n
			lines = append(lines, l)
		}
		if err == io.EOF {
			return lines, nil
		}
	}
}

// ParseFile reads the scenario file at path. ENOTFOUND when the file does not exist, EINVALID
// when it cannot be read or breaks a rule of Parse; the message then starts with the path.
func ParseFile(path string) ([]Line, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %w", hippocam.Errorf(hippocam.ENOTFOUND, "scenario %s does not exist", path), err)
	} else if err != nil {
		return nil, fmt.Errorf("%w: %w", hippocam.Errorf(hippocam.EINVALID, "scenario %s cannot be opened", path), err)
	}
	defer f.Close()
	lines, err := Parse(f)
	var e *hippocam.Error
	switch {
	case err == nil:
		return lines, nil
	case errors.As(err, &e):
		return nil, &hippocam.Error{Code: e.Code, Message: path + ": " + e.Message}
	}
	return nil, fmt.Errorf("%w: %w", hippocam.Errorf(hippocam.EINVALID, "scenario %s cannot be read", path), err)
}

// parseLine decodes one non-blank line. Keys are matched exactly (encoding/json would match
// "Role" or "CONTENT" too).
func parseLine(raw []byte) (Line, error) {
	raw = bytes.TrimRight(raw, "\r\n")
	if t := bytes.TrimLeft(raw, " \t\r\n"); t[0] != '{' {
		return Line{}, errors.New("not a JSON object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Line{}, fmt.Errorf("invalid JSON: %v", err)
	}
	role, err := stringField(fields, "role")
	if err != nil {
		return Line{}, err
	}
	if r := hippocam.Role(role); r != hippocam.RoleUser && r != hippocam.RoleTool {
		return Line{}, fmt.Errorf("role %q: a scenario line is a user or a tool message", role)
	}
	content, err := stringField(fields, "content")
	if err != nil {
		return Line{}, err
	}
	return Line{Role: hippocam.Role(role), Content: content}, nil
}

// stringField returns the string value of key in fields.
func stringField(fields map[string]json.RawMessage, key string) (string, error) {
	v, ok := fields[key]
	if !ok {
		return "", fmt.Errorf("%q is missing", key)
	}
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", fmt.Errorf("%q must be a string, not %s", key, shortJSON(v))
	}
	return s, nil
}

// shortJSON shows a JSON value in an error message, cut to a readable length.
func shortJSON(v json.RawMessage) string {
	n := 40
	if len(v) <= n {
		return string(v)
	}
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return string(v[:n]) + "…"
}
