package anthropic

import (
	"encoding/json"
	"strings"

	"github.com/hippocam/hippocam"
)

// decodeResponse reads a non-streamed answer. EUNAVAILABLE when it is not a usable one.
func decodeResponse(raw []byte) (*hippocam.Response, error) {
	var resp Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, unreadable(err.Error())
	}
	if resp.Type == errorType {
		return nil, unreadable("error in a success answer: " + parseErrorBody(raw).Error.Message)
	}
	if resp.Type != messageType {
		return nil, unreadable("the answer is not a message")
	}
	// The exact bytes of every block, for the parts that keep them.
	var blocks struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil || len(blocks.Content) != len(resp.Content) {
		return nil, unreadable("content blocks")
	}
	stop := ""
	if resp.StopReason != nil {
		stop = *resp.StopReason
	}
	return answerOf(resp.Content, blocks.Content, stop, resp.Usage)
}

// answerOf converts the blocks of an answer (raws[i] the bytes of blocks[i]) into a raw
// assistant message: text blocks concatenated (the blocks of one answer are pieces of one text,
// cut for citations), tool_use blocks as tool calls, every other block as a Part with its bytes.
// An answer with the blocks of a server tool also keeps all its blocks, as its Origin.
func answerOf(blocks []Block, raws []json.RawMessage, stop string, u Usage) (*hippocam.Response, error) {
	msg := hippocam.Message{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw}
	var text strings.Builder
	for i, b := range blocks {
		switch b.Type {
		case BlockText:
			text.WriteString(b.Text)
		case BlockToolUse:
			if b.ID == "" || b.Name == "" {
				return nil, unreadable("a tool_use block without id or name")
			}
			args := string(b.Input)
			if args == "" {
				args = emptyInput
			}
			msg.ToolCalls = append(msg.ToolCalls, hippocam.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		default:
			msg.Parts = append(msg.Parts, opaquePart(b.Type, raws[i]))
		}
	}
	msg.Content = text.String()
	if serverBlocks(msg.Parts) {
		// The blocks of a server tool: the answer keeps its blocks as sent, so that it goes back
		// upstream in their order, with the citations of its text (serverTurn).
		var b strings.Builder
		b.WriteString(`{"role":"assistant","content":[`)
		for i, raw := range raws {
			if len(raw) == 0 { // a streamed text or tool_use block, assembled
				raw, _ = marshal(blocks[i])
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(raw)
		}
		b.WriteString("]}")
		msg.Origin = &hippocam.Origin{Format: hippocam.FormatAnthropic, Raw: b.String()}
	}
	return &hippocam.Response{Message: msg, FinishReason: FinishReason(stop), Usage: CallUsageOf(u)}, nil
}

// FinishReason maps Anthropic's stop reason to the chat vocabulary the domain uses: tool_use to
// "tool_calls", end_turn and stop_sequence to "stop", max_tokens to "length", refusal to
// "content_filter"; any other reason (pause_turn…) is kept as it is.
func FinishReason(stop string) string {
	switch stop {
	case StopToolUse:
		return "tool_calls"
	case StopEndTurn, StopSequence:
		return "stop"
	case StopMaxTokens:
		return "length"
	case StopRefusal:
		return "content_filter"
	}
	return stop
}

// CallUsageOf converts Anthropic's usage: Input is the whole prompt (uncached input, cache
// reads and cache writes), CachedInput the cache reads.
func CallUsageOf(u Usage) hippocam.CallUsage {
	return hippocam.CallUsage{
		Input:       u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		CachedInput: u.CacheReadInputTokens,
		Output:      u.OutputTokens,
	}
}
