package wire

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// ChunkAssembler builds the first choice's whole message from the chunks of a streamed chat
// completion, as every reader of such a stream needs it: the model client, the replay client
// and the benchmarks. Content deltas are joined; tool-call deltas are merged by their index
// (for servers that leave the index out, a new id starts a new call and a delta without an id
// continues the last one), each call keeping the first id, type and name it was given and
// joining its arguments; the last finish reason and the last usage are kept. Choices other than
// the first are ignored. The zero value is ready to use.
type ChunkAssembler struct {
	// RequireIndex makes Add refuse a tool-call delta without an index, as a reader of a stream
	// that must carry them does.
	RequireIndex bool

	role    string
	content strings.Builder
	calls   []*partialCall
	finish  string
	usage   *Usage
}

// partialCall is a tool call being assembled from deltas.
type partialCall struct {
	index int
	call  ToolCall
	args  strings.Builder
}

// ErrNoIndex is Add's error for a tool-call delta without an index when RequireIndex is set.
var ErrNoIndex = errors.New("a tool-call delta without an index")

// Add takes in one chunk. Its only error is ErrNoIndex; the chunk is then not taken in.
func (a *ChunkAssembler) Add(ch ChatChunk) error {
	if a.RequireIndex {
		for _, cc := range ch.Choices {
			for _, tc := range cc.Delta.ToolCalls {
				if cc.Index == 0 && tc.Index == nil {
					return ErrNoIndex
				}
			}
		}
	}
	if ch.Usage != nil {
		a.usage = ch.Usage
	}
	for _, cc := range ch.Choices {
		if cc.Index != 0 {
			continue
		}
		d := cc.Delta
		if d.Role != "" {
			a.role = d.Role
		}
		if d.Content != nil {
			a.content.WriteString(*d.Content)
		}
		for _, tc := range d.ToolCalls {
			a.addCall(tc)
		}
		if cc.FinishReason != nil && *cc.FinishReason != "" {
			a.finish = *cc.FinishReason
		}
	}
	return nil
}

// addCall merges one tool-call delta.
func (a *ChunkAssembler) addCall(tc ToolCall) {
	var p *partialCall
	switch {
	case tc.Index != nil:
		p = a.call(*tc.Index)
		if p == nil {
			p = a.newCall(*tc.Index)
		}
	case tc.ID != "":
		for _, q := range a.calls {
			if q.call.ID == tc.ID {
				p = q
			}
		}
		if p == nil {
			p = a.newCall(a.nextIndex())
		}
	case len(a.calls) > 0:
		p = a.calls[len(a.calls)-1]
	default:
		p = a.newCall(0)
	}
	if p.call.ID == "" {
		p.call.ID = tc.ID
	}
	if p.call.Type == "" {
		p.call.Type = tc.Type
	}
	if p.call.Function.Name == "" {
		p.call.Function.Name = tc.Function.Name
	}
	p.args.WriteString(tc.Function.Arguments)
}

// call returns the call with the given index, nil if none.
func (a *ChunkAssembler) call(index int) *partialCall {
	for _, p := range a.calls {
		if p.index == index {
			return p
		}
	}
	return nil
}

// newCall starts the call with the given index.
func (a *ChunkAssembler) newCall(index int) *partialCall {
	p := &partialCall{index: index}
	a.calls = append(a.calls, p)
	return p
}

// nextIndex is an index above every index seen so far.
func (a *ChunkAssembler) nextIndex() int {
	n := 0
	for _, p := range a.calls {
		n = max(n, p.index+1)
	}
	return n
}

// Role is the role the stream announced, "" if none.
func (a *ChunkAssembler) Role() string { return a.role }

// Finish is the last finish reason the stream gave, "" if none.
func (a *ChunkAssembler) Finish() string { return a.finish }

// Usage is the last usage the stream gave, nil if none.
func (a *ChunkAssembler) Usage() *Usage { return a.usage }

// Message returns the assembled message: role assistant, the content as a string (null when
// the answer only calls tools), the tool calls in index order without their index.
func (a *ChunkAssembler) Message() ChatMessage {
	calls := slices.Clone(a.calls)
	slices.SortStableFunc(calls, func(p, q *partialCall) int { return p.index - q.index })
	m := ChatMessage{Role: "assistant", Content: StringContent(a.content.String())}
	for _, p := range calls {
		tc := p.call
		tc.Function.Arguments = p.args.String()
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	if a.content.Len() == 0 && len(m.ToolCalls) > 0 {
		m.Content = json.RawMessage("null")
	}
	return m
}
