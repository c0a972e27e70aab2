// Package params holds the machinery of the upstream adapters' parameter tables. An agent's
// request fields that Hippocam does not interpret travel with the conversation under the names
// of the agent's own format (hippocam.Request.Extra); each upstream adapter holds one Table per
// inbound format that says, field by field, whether it is kept, translated into the upstream's
// own fields, or left out. Nothing of one format reaches an upstream of another untranslated:
// a field a table does not list is kept only when the two formats are the same.
package params

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/hippocam/hippocam"
)

// Action is what becomes of one request field.
type Action string

// The actions of a Rule.
const (
	// Read fields are interpreted by Hippocam (messages, tools, the answer's token limit…): the
	// reader takes them into the conversation and the adapter writes them from there, so they
	// never travel in Extra.
	Read Action = "read"
	// Keep sends the field under its own name, its value byte for byte.
	Keep Action = "keep"
	// Translate sets the upstream's own fields from the value (Rule.Translate).
	Translate Action = "translate"
	// Drop leaves the field out.
	Drop Action = "drop"
)

// Fields are a request's fields by name, each value JSON text.
type Fields map[string]json.RawMessage

// Call is what a translation may depend on besides the value: the model the call goes to.
type Call struct {
	Model string
}

// Rule says what becomes of one field of the inbound format.
type Rule struct {
	Field  string
	Action Action
	// Becomes describes, for the docs, what a Read or Translate field turns into.
	Becomes string
	// Translate, for Action Translate, sets the upstream's fields from the value v and reports
	// whether it set any: a value with no equivalent sets none and counts as left out.
	Translate func(v json.RawMessage, out Fields, c Call) bool
}

// Table holds the rules for the fields of requests in format From sent to an upstream of format
// To. A field it does not list is kept when From is To (an unknown field of the agent's own
// format is the provider's to judge), and left out otherwise.
type Table struct {
	From, To hippocam.Format
	Rules    []Rule
}

// Rule returns the rule for field, and whether the table lists one.
func (t *Table) Rule(field string) (Rule, bool) {
	for _, r := range t.Rules {
		if r.Field == field {
			return r, true
		}
	}
	return Rule{}, false
}

// Unlisted is the action for a field the table does not list.
func (t *Table) Unlisted() Action {
	if t.From == t.To {
		return Keep
	}
	return Drop
}

// Apply turns extra, the fields of a request in format From, into the fields of an upstream
// request in format To, and returns them with the names of the fields it left out (in order).
// Null values are left out silently, as if absent. Fields are handled in name order, so a
// translation that sets a field another has set overwrites it the same way every time.
func (t *Table) Apply(extra Fields, c Call) (Fields, []string) {
	out := Fields{}
	var dropped []string
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := extra[k]
		if string(v) == "null" {
			continue
		}
		r, ok := t.Rule(k)
		if !ok {
			r.Action = t.Unlisted()
		}
		switch r.Action {
		case Keep:
			out[k] = v
		case Translate:
			if !r.Translate(v, out, c) {
				dropped = append(dropped, k)
			}
		default: // Read fields never belong in Extra; one found there is left out
			dropped = append(dropped, k)
		}
	}
	return out, dropped
}

// Markdown renders the table as a Markdown table of two columns, fields and what they become:
// the rules in the table's order, consecutive rules that read alike sharing a row, then a row
// for the fields the table does not list.
func (t *Table) Markdown() string {
	var fields, whats []string
	for _, r := range t.Rules {
		var what string
		switch r.Action {
		case Keep:
			what = "kept"
		case Drop:
			what = "left out"
		default:
			what = r.Becomes
		}
		if n := len(whats); n > 0 && whats[n-1] == what {
			fields[n-1] += ", `" + r.Field + "`"
			continue
		}
		fields, whats = append(fields, "`"+r.Field+"`"), append(whats, what)
	}
	var b strings.Builder
	b.WriteString("| fields | sent as |\n| --- | --- |\n")
	for i := range fields {
		fmt.Fprintf(&b, "| %s | %s |\n", fields[i], whats[i])
	}
	if t.Unlisted() == Keep {
		b.WriteString("| any other field | kept |\n")
	} else {
		b.WriteString("| any other field | left out |\n")
	}
	return b.String()
}

// Set stores v, encoded as JSON, as field k of out, and reports whether it could.
func Set(out Fields, k string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	out[k] = b
	return true
}

// Rename returns a translation that sends the value unchanged under another name.
func Rename(to string) func(json.RawMessage, Fields, Call) bool {
	return func(v json.RawMessage, out Fields, _ Call) bool { out[to] = v; return true }
}

// JSON writes the fields as one JSON object, keys in order, each value byte for byte. It fails
// when a value is not valid JSON.
func (f Fields) JSON() (json.RawMessage, error) {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := []byte{'{'}
	for i, k := range keys {
		if !json.Valid(f[k]) {
			return nil, fmt.Errorf("field %q is not valid JSON", k)
		}
		if i > 0 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(k)
		b = append(append(append(b, kb...), ':'), f[k]...)
	}
	return append(b, '}'), nil
}

// Kept returns a Keep rule for each field.
func Kept(fields ...string) []Rule { return each(Keep, fields) }

// Dropped returns a Drop rule for each field.
func Dropped(fields ...string) []Rule { return each(Drop, fields) }

func each(a Action, fields []string) []Rule {
	out := make([]Rule, len(fields))
	for i, f := range fields {
		out[i] = Rule{Field: f, Action: a}
	}
	return out
}

// Join returns the rules of the groups, in order.
func Join(groups ...[]Rule) []Rule {
	var out []Rule
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}
