package sessions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sessions"
)

// A response id names an answer of a session: previous_response_id resolves to the session's
// transcript up to that answer, an output item's id to the answer it came from, and anything
// else, another tenant's response included, to ENOTFOUND.
func TestResponseContinuation(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, 8000)
	ask := func(text string, history []hippocam.Message) *sessions.Result {
		t.Helper()
		msgs := append(append([]hippocam.Message{}, history...), hippocam.Message{Role: hippocam.RoleUser, Content: text})
		res, err := svc.Continue(ctx, &sessions.Request{Tenant: "t", Name: "s1", Received: time.Now(),
			Conversation: &hippocam.Conversation{Format: hippocam.FormatResponses, Messages: msgs}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := ask("What is the capital of France?", nil)
	before := []hippocam.Message{{Role: hippocam.RoleUser, Content: "What is the capital of France?"}, first.Answer}
	second := ask("And of Italy?", before)

	for _, key := range []string{first.Answer.ID, "@1"} {
		id := sessions.ResponseID("s1", key)
		session, msgs, err := svc.PreviousResponse(ctx, "t", id)
		if err != nil || session != "s1" || len(msgs) != 2 || msgs[1].ID != first.Answer.ID || msgs[1].Role != hippocam.RoleAssistant {
			t.Fatalf("previous_response_id %s: %q, %d messages, %v", id, session, len(msgs), err)
		}
	}
	if _, msgs, err := svc.PreviousResponse(ctx, "t", sessions.ResponseID("s1", second.Answer.ID)); err != nil || len(msgs) != 4 {
		t.Fatalf("the second answer: %d messages, %v", len(msgs), err)
	}
	for _, id := range []string{"resp_nothing", "chatcmpl-1", sessions.ResponseID("s1", "@0"), sessions.ResponseID("s1", "m999"), sessions.ResponseID("s2", first.Answer.ID)} {
		if _, _, err := svc.PreviousResponse(ctx, "t", id); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
			t.Fatalf("previous_response_id %s: %v, want ENOTFOUND", id, err)
		}
	}
	if _, _, err := svc.PreviousResponse(ctx, "other", sessions.ResponseID("s1", first.Answer.ID)); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		t.Fatalf("another tenant's response: %v", err)
	}

	id := sessions.ResponseID("s1", second.Answer.ID)
	sess, m, err := svc.Response(ctx, "t", id)
	if err != nil || sess.ID != "s1" || m.ID != second.Answer.ID {
		t.Fatalf("GET the response: %v", err)
	}
	if s, a, ok := sessions.ParseResponseID(id); !ok || s != "s1" || a != second.Answer.ID {
		t.Fatalf("ParseResponseID(%s) = %q, %q, %v", id, s, a, ok)
	}
	userID := sessions.ResponseID("s1", "@0") // the user's message: no answer
	if _, _, err := svc.Response(ctx, "t", userID); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		t.Fatalf("a response id naming the user's message: %v", err)
	}

	tail := strings.TrimPrefix(id, "resp_")
	if resp, a, call, err := svc.ReferencedItem(ctx, "t", "msg_"+tail); err != nil || resp != id || a.ID != second.Answer.ID || call != -1 {
		t.Fatalf("the message item: %q, %d, %v", resp, call, err)
	}
	if resp, _, call, err := svc.ReferencedItem(ctx, "t", "fc_"+tail+"_2"); err != nil || resp != id || call != 2 {
		t.Fatalf("a call item: %q, %d, %v", resp, call, err)
	}
	for _, item := range []string{"fc_" + tail, "fc_" + tail + "_x", "rs_" + tail, "msg_nothing"} {
		if _, _, _, err := svc.ReferencedItem(ctx, "t", item); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
			t.Fatalf("item %s: %v, want ENOTFOUND", item, err)
		}
	}
	if _, _, _, err := svc.ReferencedItem(ctx, "other", "msg_"+tail); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		t.Fatalf("another tenant's item: %v", err)
	}
}
