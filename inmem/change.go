package inmem

import (
	"encoding/json"
	"slices"

	"github.com/hippocam/hippocam"
)

// pending is a commit being applied: a new context and the messages and archive nodes it adds,
// kept apart from the stored session until every op has been checked.
type pending struct {
	ss       *session
	context  []string
	messages map[string]hippocam.Message
	children map[string][]string
	order    []string // the ids of messages, in the order they were added
}

func (p *pending) hasMessage(id string) bool {
	_, old := p.ss.messages[id]
	_, added := p.messages[id]
	return old || added
}

func (p *pending) hasRef(ref string) bool {
	_, old := p.ss.children[ref]
	_, added := p.children[ref]
	return old || added
}

// apply checks op i and applies it to p. EINVALID if op is malformed or names a message that is
// not in the context.
func (p *pending) apply(i int, op hippocam.Op) error {
	switch {
	case op.Append != nil && (op.Memory != nil || len(op.Span) > 0):
		return hippocam.Errorf(hippocam.EINVALID, "op %d: an op either appends or replaces, not both", i)
	case op.Append != nil:
		return p.append(i, *op.Append)
	case op.Memory == nil && len(op.Span) == 0:
		return hippocam.Errorf(hippocam.EINVALID, "op %d is empty", i)
	}
	return p.replace(i, op.Span, op.Memory)
}

func (p *pending) append(i int, m hippocam.Message) error {
	switch {
	case m.ID == "":
		return hippocam.Errorf(hippocam.EINVALID, "op %d: append: the message has no id", i)
	case m.Ref != "":
		return hippocam.Errorf(hippocam.EINVALID, "op %d: append %s: a message with a ref enters the context only by a replace", i, m.ID)
	case p.hasMessage(m.ID):
		return hippocam.Errorf(hippocam.EINVALID, "op %d: append %s: the session already has a message with this id", i, m.ID)
	}
	p.messages[m.ID] = cloneMessage(m)
	p.order = append(p.order, m.ID)
	p.context = append(p.context, m.ID)
	return nil
}

func (p *pending) replace(i int, span []string, mem *hippocam.Message) error {
	switch {
	case mem == nil:
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: no memory", i)
	case len(span) == 0:
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the span is empty", i)
	case mem.ID == "" || mem.Ref == "":
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the memory needs an id and a ref", i)
	case p.hasMessage(mem.ID):
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the session already has a message %s", i, mem.ID)
	case p.hasRef(mem.Ref):
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the session already has a ref %s", i, mem.Ref)
	}
	start := slices.Index(p.context, span[0])
	if start < 0 {
		return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: message %s is not in the context", i, span[0])
	}
	for k, id := range span {
		if start+k >= len(p.context) || p.context[start+k] != id {
			if !slices.Contains(p.context, id) {
				return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: message %s is not in the context", i, id)
			}
			return hippocam.Errorf(hippocam.EINVALID, "op %d: replace: the span is not a run of the context in order (at %s)", i, id)
		}
	}
	p.children[mem.Ref] = slices.Clone(span)
	p.messages[mem.ID] = cloneMessage(*mem)
	p.order = append(p.order, mem.ID)
	p.context = slices.Concat(p.context[:start], []string{mem.ID}, p.context[start+len(span):])
	return nil
}

// snapshot returns a deep copy of s's stored fields, without its context.
func snapshot(s *hippocam.Session) hippocam.Session {
	c := *s
	c.Context = nil
	c.Stack = slices.Clone(s.Stack)
	c.StackLog = slices.Clone(s.StackLog)
	for i, e := range c.StackLog {
		c.StackLog[i].Closed = slices.Clone(e.Closed)
		c.StackLog[i].Opened = slices.Clone(e.Opened)
	}
	c.Rounds = slices.Clone(s.Rounds)
	if s.Usage != nil {
		c.Usage = s.Usage.Clone()
	}
	c.Transcript = cloneTranscript(s.Transcript)
	c.Pending = clonePending(s.Pending)
	return c
}

// clonePending returns a deep copy of p, made through its JSON: that is what the SQL stores
// keep of it, and it cannot miss a field that Pending gains.
func clonePending(p *hippocam.Pending) *hippocam.Pending {
	if p == nil {
		return nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	var c hippocam.Pending
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	return &c
}

// cloneTranscript returns a deep copy of t.
func cloneTranscript(t hippocam.Transcript) hippocam.Transcript {
	if t.Framing != nil {
		f := make([]hippocam.Message, len(t.Framing))
		for i, m := range t.Framing {
			f[i] = cloneMessage(m)
		}
		t.Framing = f
	}
	if t.Fork != nil {
		f := *t.Fork
		t.Fork = &f
	}
	if t.Learning != nil {
		l := *t.Learning
		t.Learning = &l
	}
	if t.Client != nil {
		c := *t.Client
		t.Client = &c
	}
	if t.Request != nil {
		r := *t.Request
		t.Request = &r
	}
	return t
}

// cloneMessage returns a deep copy of m; nil and empty slices stay as they were.
func cloneMessage(m hippocam.Message) hippocam.Message {
	m.ToolCalls = slices.Clone(m.ToolCalls)
	m.Knowledge = slices.Clone(m.Knowledge)
	m.Extra = json.RawMessage(slices.Clone([]byte(m.Extra)))
	m.Parts = slices.Clone(m.Parts)
	if m.Origin != nil {
		o := *m.Origin
		m.Origin = &o
	}
	if m.Trace != nil {
		trace := make([]hippocam.Message, len(m.Trace))
		for i, t := range m.Trace {
			trace[i] = cloneMessage(t)
		}
		m.Trace = trace
	}
	return m
}
