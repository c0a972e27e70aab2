package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// flat-summary is the rolling-summary baseline (the recursive summary of Letta/MemGPT, HiAgent's
// summarized history): one summary of everything before a working tail, kept at the top of the
// context and rewritten whenever the context passes ρW again.
//
// Before each main call, when the request (system prompt, summary, conversation) exceeds ρW
// (0.8·W) and the messages before the working tail hold more than Δmin tokens (6.4 % of W, the
// engine's minimum saving of a fold, so that the summary is not rewritten for a handful of new
// tokens): those messages, together with the current summary, are summarized into ONE new
// summary that replaces them all. The working tail is the last K = 2 rounds (a round is an
// answer with the results of its tool calls) plus the round being answered; the cut falls on an
// answer, so a tool call never leaves without its results. If the request then exceeds W, the
// same is done once more keeping only the round being answered, whatever its size; if it still
// exceeds W (the summary itself has grown too large), the request is sent anyway and the Turn
// marked Overflow.
//
// The summarizer is called with role palim and the engine's PALIM contract (tool
// engine.PalimToolSpec, answer engine.PalimOutput); its system prompt is this package's own
// (the engine does not export PALIM's). Its request is that prompt, the old summary, the
// messages to summarize, and one final instruction. A summarizer request must fit the window
// with room for its answer (as the engine's components do): when the material is larger, it is
// summarized in order, in chunks of whole exchanges, each chunk folded into the summary so far
// (a chunk holds at least one exchange, so once the summary alone outgrows that room, summarizer
// requests exceed it too). An answer that breaks the contract is corrected up to twice; if it still breaks it, the
// messages stay as they were.
//
// The summary is a user message saying it summarizes the earlier conversation, rendered from the
// narrative and the knowledge items, one line each. There is no archive and no recall: what the
// summary leaves out is gone. That is the baseline's design, not a handicap added here. The main
// request has the baselines' plain system prompt and no tools.

// summarizerPrompt is the summarizer's system prompt.
const summarizerPrompt = `You summarize the earlier part of a conversation between a user and an assistant, so that the conversation can continue without those messages. You read them from the outside; you never answer or continue them.

The first message may be the summary written the last time: fold it into the new summary together with the messages after it.

Write two parts:
- narrative: what was asked and what the assistant did, briefly, in the first person of the assistant;
- knowledge: every fact worth keeping, one per item, with its exact names and values. A later value of the same thing replaces the earlier one. Give each item an evaluation: good, bad or neutral (the direction of the outcome, not your confidence).

Answer only by calling ` + engine.PalimTool + `.`

// summarizerInstruction is the final message of a summarizer request.
const summarizerInstruction = "Summarize every message above, the earlier summary included, into one new summary of the conversation so far. Call " + engine.PalimTool + "."

// summaryHeader begins the summary message.
const summaryHeader = "Summary of the earlier conversation (it replaces the older messages, which are no longer available)."

type summaryAgent struct {
	env     Env
	p       baselineParams
	log     *chatLog
	sys     hippocam.Message
	summary *hippocam.Message
	// summarizerFrame is the size of a summarizer request without its material.
	summarizerFrame int
}

func newFlatSummaryAgent(env Env) (Agent, error) {
	if err := checkEnv(env); err != nil {
		return nil, err
	}
	return &summaryAgent{
		env: env, p: paramsFor(env.Window), log: newChatLog(env.Tok), sys: systemMessage(env.Tok),
		summarizerFrame: frameTokens(env.Tok, summarizerPrompt, summarizerInstruction, engine.PalimToolSpec),
	}, nil
}

// frame returns the messages ahead of the conversation: system prompt and summary.
func (a *summaryAgent) frame() []hippocam.Message {
	if a.summary == nil {
		return []hippocam.Message{a.sys}
	}
	return []hippocam.Message{a.sys, *a.summary}
}

func (a *summaryAgent) requestTokens() int {
	return hippocam.RequestTokens(a.env.Tok, a.log.request(a.frame()...), nil)
}

// Step appends the step's messages, summarizes when the request is over ρW, and asks the main
// model.
func (a *summaryAgent) Step(ctx context.Context, in []hippocam.Message) (*Turn, error) {
	m := newStepMeter(a.env)
	if err := a.log.add(in); err != nil {
		return nil, err
	}
	if a.requestTokens() > a.p.target {
		if tail := a.tailStart(); a.log.size(a.log.pinned(), tail) > a.p.minSaving {
			if err := a.summarize(ctx, m, tail); err != nil {
				return nil, err
			}
		}
		if a.requestTokens() > a.p.window {
			if err := a.summarize(ctx, m, a.log.roundStart); err != nil {
				return nil, err
			}
		}
	}
	resp, err := m.mainCall(ctx, a.log.request(a.frame()...))
	if err != nil {
		return nil, err
	}
	return m.finish(a.log.answer(resp)), nil
}

// tailStart is the index of the working tail's first message: the K-th answer before the round
// being answered, or the start of the conversation when there are fewer.
func (a *summaryAgent) tailStart() int {
	lo := a.log.pinned()
	i, rounds := a.log.roundStart, 0
	for i > lo && rounds < a.p.tailRounds {
		i--
		if a.log.msgs[i].Role == hippocam.RoleAssistant {
			rounds++
		}
	}
	if rounds < a.p.tailRounds {
		return lo
	}
	return i
}

// summarize replaces the messages before upto (after a pinned system message) and the current
// summary by one new summary, in chunks that fit the summarizer's window. A chunk whose summary
// cannot be obtained stays in the conversation, with everything after it.
func (a *summaryAgent) summarize(ctx context.Context, m *stepMeter, upto int) error {
	lo := a.log.pinned()
	room := a.p.window - a.summarizerFrame - a.p.answerRoom
	for lo < upto {
		material := []hippocam.Message{}
		used := 0
		if a.summary != nil {
			material = append(material, *a.summary)
			used = a.summary.Tokens
		}
		end := lo
		for end < upto {
			next := a.log.unitEnd(end)
			if next > upto {
				break
			}
			n := a.log.size(end, next)
			if end > lo && used+n > room {
				break
			}
			used += n
			end = next
		}
		if end == lo {
			return nil // the next exchange reaches into the tail
		}
		material = append(material, a.log.msgs[lo:end]...)
		out, err := a.summarizer(ctx, m, material)
		if errors.Is(err, errBrokenContract) {
			return nil
		}
		if err != nil {
			return err
		}
		s := sized(a.env.Tok, hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: renderSummary(out)})
		a.summary = &s
		a.log.remove(lo, end)
		upto -= end - lo
	}
	return nil
}

// summarizer makes one summarizer call over material.
func (a *summaryAgent) summarizer(ctx context.Context, m *stepMeter, material []hippocam.Message) (*engine.PalimOutput, error) {
	msgs := make([]hippocam.Message, 0, len(material)+2)
	msgs = append(msgs, hippocam.Message{Role: hippocam.RoleSystem, Content: summarizerPrompt})
	msgs = append(msgs, material...)
	msgs = append(msgs, hippocam.Message{Role: hippocam.RoleUser, Content: summarizerInstruction})
	var out engine.PalimOutput
	err := m.contractAnswer(ctx, hippocam.CallPalim, msgs, engine.PalimToolSpec, func(args string) error {
		out = engine.PalimOutput{}
		if err := strictDecode(args, &out); err != nil {
			return err
		}
		return out.Validate()
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// renderSummary is the text of the summary message: the header, the narrative, and one line per
// knowledge item with its evaluation.
func renderSummary(out *engine.PalimOutput) string {
	var b strings.Builder
	b.WriteString(summaryHeader + "\n")
	if n := strings.TrimSpace(out.Narrative); n != "" {
		b.WriteString("Narrative:\n" + n + "\n")
	}
	if len(out.Knowledge) > 0 {
		b.WriteString("Knowledge:\n")
		for _, k := range out.Knowledge {
			fmt.Fprintf(&b, "- [%s] %s\n", k.Evaluation, strings.Join(strings.Fields(k.Fact), " "))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// strictDecode reads a tool call's JSON arguments into v: malformed JSON, a value of the wrong
// shape or trailing values are errors.
func strictDecode(args string, v any) error {
	dec := json.NewDecoder(strings.NewReader(args))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments are not valid JSON for the schema: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("arguments hold more than one JSON value")
	}
	return nil
}
