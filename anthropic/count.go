package anthropic

import (
	"encoding/json"

	"github.com/hippocam/hippocam"
)

var _ hippocam.RequestCounter = (*Client)(nil)

// RequestTokens counts req as this client will send it: the Messages request it encodes, read
// back as a conversation (the system blocks become one system prompt, turns are grouped as the
// API requires), then counted with hippocam.RequestTokens and t. A request the client cannot
// encode is counted as it stands.
func (c *Client) RequestTokens(t hippocam.Tokenizer, req *hippocam.Request) int {
	wr, err := c.buildRequest(req)
	if err != nil {
		return hippocam.RequestTokens(t, req.Messages, req.Tools)
	}
	body, err := json.Marshal(wr)
	if err != nil {
		return hippocam.RequestTokens(t, req.Messages, req.Tools)
	}
	conv, err := ReadRequest(body)
	if err != nil {
		return hippocam.RequestTokens(t, req.Messages, req.Tools)
	}
	msgs := append(append([]hippocam.Message(nil), conv.Framing...), conv.Messages...)
	return hippocam.RequestTokens(t, msgs, conv.Tools)
}
