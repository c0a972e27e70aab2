package viewer_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests drive the viewer in headless Chromium (Debian's package at /usr/bin/chromium,
// or the binary HIPPOCAM_CHROMIUM names). Without a browser they skip, unless CI is set: CI
// installs one, so there a missing browser is a failure.

var update = flag.Bool("update", false, "write the viewer's screenshot to docs/viewer.png")

const (
	defaultChromium = "/usr/bin/chromium"
	stepTimeout     = 20 * time.Second
)

func TestViewerBrowser(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, "")
	api.conversation = true
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	b := newBrowser(t)

	b.do("open the page", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="welcome"]`)))
	b.do("wait for the session list", chromedp.WaitVisible(chromedp.CSS(`[data-testid="session-item"][data-session-id="billing-fix"]`)))
	if got := b.text(`#session-count`); got != "5" {
		t.Errorf("session count %q, want 5", got)
	}

	// The sessions of one client conversation are listed beneath its main session: its fork, its
	// title request and its subagent, the list newest first.
	order := evaluate[[]string](b, `[...document.querySelectorAll('[data-testid="session-item"]')].map(e => e.dataset.depth + ':' + e.dataset.sessionId)`)
	if want := []string{"0:billing-fix", "1:auto-9b1e0c4d2a77", "1:billing-fix~2", "1:auto-3f2a9c1b7e4d", "0:scratch"}; !reflect.DeepEqual(order, want) {
		t.Errorf("session list %v, want %v", order, want)
	}
	// Each is named by its title, with its id beneath; the title request and the subagent are
	// marked.
	if got := b.text(`[data-testid="session-item"][data-session-id="billing-fix"] [data-testid="session-name"]`); got != billingTitle {
		t.Errorf("billing-fix is listed as %q, want its title", got)
	}
	marks := evaluate[[]string](b, `[...document.querySelectorAll('[data-testid="kind-note"]')].map(e => e.closest('[data-testid="session-item"]').dataset.sessionId + ' ' + e.textContent)`)
	if want := []string{"auto-9b1e0c4d2a77 ↳ subagent", "auto-3f2a9c1b7e4d ↳ title request"}; !reflect.DeepEqual(marks, want) {
		t.Errorf("kind marks %v, want %v", marks, want)
	}
	if got := b.text(`[data-testid="session-item"][data-session-id="billing-fix"] [data-testid="related-count"]`); got != "2 related sessions" {
		t.Errorf("related count %q", got)
	}
	b.search("Invoice.Total")
	if got := b.listed(); !reflect.DeepEqual(got, []string{"billing-fix", "auto-9b1e0c4d2a77"}) {
		t.Errorf("searching a title lists %v", got)
	}
	b.search("")
	if got := evaluate[string](b, `document.querySelector('[data-testid="session-item"][data-session-id="billing-fix~2"]').closest('[data-testid="forks"]').closest('[data-testid="session-node"]').dataset.sessionId`); got != "billing-fix" {
		t.Errorf("billing-fix~2 is listed under %q, want billing-fix", got)
	}
	if got := b.text(`[data-testid="session-item"][data-session-id="billing-fix~2"] [data-testid="fork-note"]`); got != "↳ forked after 2 messages" {
		t.Errorf("fork note %q", got)
	}
	if got := b.text(`[data-testid="session-item"][data-session-id="billing-fix"] [data-testid="fork-count"]`); got != "1 fork" {
		t.Errorf("fork count %q", got)
	}

	// The search filters the list by id; a fork that matches keeps its origin, dimmed.
	b.search("scr")
	if got := b.listed(); !reflect.DeepEqual(got, []string{"scratch"}) {
		t.Errorf("searching scr lists %v", got)
	}
	if got := b.text(`#session-summary`); got != "1 of 5 sessions match" {
		t.Errorf("summary %q", got)
	}
	b.search("~2")
	if got := b.listed(); !reflect.DeepEqual(got, []string{"billing-fix", "billing-fix~2"}) {
		t.Errorf("searching ~2 lists %v", got)
	}
	if !evaluate[bool](b, `document.querySelector('[data-testid="session-item"][data-session-id="billing-fix"]').classList.contains('unmatched')`) {
		t.Error("the origin listed for its fork is not marked as unmatched")
	}
	b.search("nothing-like-this")
	b.do("see that nothing matches", chromedp.WaitVisible(chromedp.CSS(`[data-testid="sessions-empty"]`)))
	b.search("")
	if got := b.listed(); len(got) != 5 {
		t.Errorf("after clearing the search the list holds %v", got)
	}

	// Select the session: its context renders, each message with its kind.
	b.do("select the session",
		chromedp.Click(chromedp.CSS(`[data-testid="session-item"][data-session-id="billing-fix"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#context`)))
	// The page is titled by the session's first user line, its id beside it.
	if got := b.text(`#session-title`); got != billingTitle {
		t.Errorf("title %q, want %q", got, billingTitle)
	}
	if got := b.text(`[data-testid="session-id"]`); got != "billing-fix" || b.sessionShown() != "billing-fix" {
		t.Errorf("session id %q", got)
	}
	kinds := evaluate[[]string](b, `[...document.querySelectorAll('#context > li > [data-testid="message"]')].map(e => e.dataset.id + ':' + e.dataset.kind)`)
	wantKinds := []string{"m1:raw", "m2:raw", "m3:prefix_memory", "m9:guidance", "m10:intent_memory", "m12:guidance",
		"m13:raw", "m14:raw", "m15:raw", "m16:raw", "m17:raw"}
	if !reflect.DeepEqual(kinds, wantKinds) {
		t.Errorf("context messages %v, want %v", kinds, wantKinds)
	}
	badges := evaluate[[]string](b, `['m2','m3','m9','m10'].map(id => document.querySelector('#context [data-id="' + id + '"] [data-testid="kind-badge"]').textContent)`)
	if want := []string{"raw", "prefix memory", "guidance", "intent memory"}; !reflect.DeepEqual(badges, want) {
		t.Errorf("kind badges %v, want %v", badges, want)
	}
	// Each kind is visibly distinguished: four different accent colours.
	colours := evaluate[[]string](b, `['m2','m3','m9','m10'].map(id => getComputedStyle(document.querySelector('#context [data-id="' + id + '"]')).borderLeftColor)`)
	if distinct(colours) != 4 {
		t.Errorf("kind colours %v are not all different", colours)
	}
	if got := b.text(`#context [data-id="m13"] [data-testid="tool-call"]`); !strings.Contains(got, "edit_file") {
		t.Errorf("tool call %q", got)
	}
	if got := b.text(`#context [data-id="m3"] [data-testid="tokens"]`); got != "1,480 tok" {
		t.Errorf("tokens %q", got)
	}

	// Long content is collapsed, and expands.
	if !evaluate[bool](b, `document.querySelector('#context [data-id="m3"] [data-testid="content"]').classList.contains('collapsed')`) {
		t.Error("the long prefix memory is not collapsed")
	}
	b.do("expand the long content", chromedp.Click(chromedp.CSS(`#context [data-id="m3"] [data-testid="toggle-content"]`)))
	if evaluate[bool](b, `document.querySelector('#context [data-id="m3"] [data-testid="content"]').classList.contains('collapsed')`) {
		t.Error("the long prefix memory stays collapsed after Show more")
	}

	// Knowledge items with their evaluations.
	knowledge := evaluate[[]string](b, `[...document.querySelectorAll('#context [data-id="m3"] [data-testid="knowledge-item"]')].map(e => e.dataset.evaluation + '|' + e.querySelector('[data-testid="evaluation"]').textContent + '|' + getComputedStyle(e.querySelector('[data-testid="evaluation"]')).backgroundColor)`)
	if len(knowledge) != 4 {
		t.Fatalf("knowledge items %v, want 4", knowledge)
	}
	bg := map[string]string{}
	for i, want := range []string{"good", "bad", "neutral", "good"} {
		parts := strings.Split(knowledge[i], "|")
		if parts[0] != want || parts[1] != want {
			t.Errorf("knowledge item %d: %v, want %s", i, parts, want)
		}
		bg[parts[0]] = parts[2]
	}
	if distinct([]string{bg["good"], bg["bad"], bg["neutral"]}) != 3 {
		t.Errorf("evaluation badges share colours: %v", bg)
	}

	if got := b.text(`#context [data-testid="open-node"][data-ref="r4"]`); got != "▸Open originals r4" {
		t.Errorf("closed node button reads %q", got)
	}

	// The tree, node by node: r1 in the context, r2 inside r1, r3 inside r2.
	b.do("open node r1",
		chromedp.Click(chromedp.CSS(`#context [data-id="m3"] [data-testid="open-node"][data-ref="r1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="children"][data-ref="r1"] [data-id="m6"]`)))
	if api.Count("GET", "/api/sessions/billing-fix/nodes/r2") != 0 {
		t.Error("node r2 was fetched before it was opened")
	}
	b.do("open node r2 inside r1",
		chromedp.Click(chromedp.CSS(`[data-testid="children"][data-ref="r1"] [data-testid="open-node"][data-ref="r2"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="children"][data-ref="r2"] [data-id="m6b"]`)))
	b.do("open node r3 inside r2",
		chromedp.Click(chromedp.CSS(`[data-testid="children"][data-ref="r2"] [data-testid="open-node"][data-ref="r3"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="children"][data-ref="r3"] [data-id="m7b"]`)))
	path := evaluate[[]string](b, `(() => { const out = []; let n = document.querySelector('[data-id="m7b"]');
		while ((n = n.parentElement && n.parentElement.closest('[data-testid="children"]'))) out.push(n.dataset.ref); return out; })()`)
	if want := []string{"r3", "r2", "r1"}; !reflect.DeepEqual(path, want) {
		t.Errorf("m7b is nested in %v, want %v", path, want)
	}
	for _, ref := range []string{"r1", "r2", "r3"} {
		if n := api.Count("GET", "/api/sessions/billing-fix/nodes/"+ref); n != 1 {
			t.Errorf("node %s fetched %d times, want 1", ref, n)
		}
	}
	// Closing and reopening a node uses what was fetched, and keeps its open descendants.
	b.do("close node r1",
		chromedp.Click(chromedp.CSS(`#context [data-testid="open-node"][data-ref="r1"]`)),
		chromedp.WaitNotVisible(chromedp.CSS(`[data-testid="children"][data-ref="r1"]`)))
	b.do("reopen node r1",
		chromedp.Click(chromedp.CSS(`#context [data-testid="open-node"][data-ref="r1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="children"][data-ref="r3"] [data-id="m7b"]`)))
	if n := api.Count("GET", "/api/sessions/billing-fix/nodes/r1"); n != 1 {
		t.Errorf("node r1 fetched %d times after reopening, want 1", n)
	}

	// The intent stack and its history.
	labels := evaluate[[]string](b, `[...document.querySelectorAll('#stack [data-testid="stack-label"]')].map(e => e.textContent)`)
	if want := []string{"Fix the one-cent invoice rounding bug", "Round Invoice.Total once, on the exact sum"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("stack %v, want %v", labels, want)
	}
	if !evaluate[bool](b, `document.querySelector('#stack [data-testid="stack-item"]:last-child').classList.contains('top')`) {
		t.Error("the last intent is not marked as the top")
	}
	steps := evaluate[[]string](b, `[...document.querySelectorAll('#stack-log [data-testid="stack-event"]')].map(e => e.dataset.step)`)
	if want := []string{"9", "8", "5", "1"}; !reflect.DeepEqual(steps, want) {
		t.Errorf("stack log steps %v, want %v (newest first)", steps, want)
	}
	if got := b.text(`#stack-log [data-step="5"]`); !strings.Contains(got, "✓ Map the billing package") || !strings.Contains(got, "+ Reproduce the drift") {
		t.Errorf("stack event 5 reads %q", got)
	}

	// The recall trace of the answer is collapsed until asked for.
	if evaluate[bool](b, `document.querySelector('#context [data-id="m17"] [data-testid="trace"]').open`) {
		t.Error("the recall trace is open before it is asked for")
	}
	b.do("open the recall trace",
		chromedp.Click(chromedp.CSS(`#context [data-id="m17"] [data-testid="trace-toggle"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#context [data-id="m17"] [data-testid="trace"] [data-id="t2"]`)))

	// Tokens, cache share and cost by role, and the window bar.
	roles := evaluate[[]string](b, `[...document.querySelectorAll('#usage [data-testid="usage-row"]')].map(r => r.dataset.role + ' ' + r.querySelector('[data-testid="cache-share"]').textContent + ' ' + r.querySelector('[data-testid="cost"]').textContent)`)
	if want := []string{"agent 81% $0.049", "janus 81% $0.017", "precip 0% $0.0092", "palim 17% $0.013"}; !reflect.DeepEqual(roles, want) {
		t.Errorf("usage rows %v, want %v", roles, want)
	}
	if got := b.text(`#usage [data-testid="usage-total"] [data-testid="cost"]`); got != "$0.088" {
		t.Errorf("total cost %q", got)
	}
	// The context meter counts the last request the session sent, part by part, beside what
	// the provider reported for it.
	if got := evaluate[string](b, `document.getElementById('window-bar').getAttribute('aria-valuenow')`); got != "86" {
		t.Errorf("window bar at %s%%, want 86 (6,880 of 8,000 tokens)", got)
	}
	if got := b.text(`[data-testid="context-tokens"]`); got != "6,880" {
		t.Errorf("meter reads %q tokens, want the last request's 6,880", got)
	}
	if got := b.text(`[data-testid="reported-tokens"]`); got != "· provider: 6,912" {
		t.Errorf("reported %q", got)
	}
	parts := evaluate[[]string](b, `[...document.querySelectorAll('[data-testid="meter-part"]')].map(e => e.dataset.part + ' ' + e.querySelector('[data-testid="meter-tokens"]').textContent)`)
	if want := []string{"system 1,110", "framing 620", "tools 870", "recall_tools 240", "memory 2,300", "messages 1,740"}; !reflect.DeepEqual(parts, want) {
		t.Errorf("meter parts %v, want %v", parts, want)
	}
	widths := evaluate[[]float64](b, `[...document.querySelectorAll('[data-testid="meter-segment"]')].map(e => e.getBoundingClientRect().width / document.getElementById('window-bar').getBoundingClientRect().width)`)
	if len(widths) != 6 || widths[4] < 0.27 || widths[4] > 0.30 {
		t.Errorf("meter segments %v: six, memory's about 2,300/8,000 of the bar", widths)
	}
	colours = evaluate[[]string](b, `[...document.querySelectorAll('[data-testid="meter-segment"]')].map(e => getComputedStyle(e).backgroundColor)`)
	if distinct(colours) != 6 {
		t.Errorf("meter segment colours %v are not all different", colours)
	}
	// The session's client conversation: its other sessions, linked.
	links := evaluate[[]string](b, `[...document.querySelectorAll('[data-testid="conversation-link"]')].map(e => e.textContent)`)
	if want := []string{"auto-3f2a9c1b7e4d", "auto-9b1e0c4d2a77", "billing-fix~2"}; !reflect.DeepEqual(sortedCopy(links), want) {
		t.Errorf("conversation links %v, want %v", links, want)
	}

	// A change of the session refreshes it, and what was open stays open.
	api.Bump()
	b.waitUntil("the refresh to version 18", `document.querySelector('[data-testid="session-version"]').textContent === 'version 18'`)
	b.do("check what stays open",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="children"][data-ref="r3"] [data-id="m7b"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#context [data-id="m17"] [data-testid="trace"] [data-id="t2"]`)))

	b.screenshot()

	// The full transcript: every consolidated message expanded.
	want, err := expandFixture("billing-fix")
	if err != nil {
		t.Fatal(err)
	}
	b.do("show the full transcript",
		chromedp.Click(chromedp.CSS(`[data-testid="view-transcript"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#transcript`)))
	ids := evaluate[[]string](b, `[...document.querySelectorAll('#transcript > li > [data-testid="message"]')].map(e => e.dataset.id)`)
	if len(ids) != len(want) || ids[0] != "m1" || ids[2] != "m3a" || slices.Index(ids, "m7b") < 0 || slices.Index(ids, "m3") >= 0 {
		t.Errorf("transcript %v (%d messages, want %d)", ids, len(ids), len(want))
	}
	// Where the fork diverged, in the origin's transcript: after its second transcript message.
	if got := b.beforePoint(2); got != "m2" {
		t.Errorf("the divergence point of billing-fix~2 follows %q, want m2", got)
	}
	b.do("back to the context", chromedp.Click(chromedp.CSS(`[data-testid="view-context"]`)), chromedp.WaitVisible(chromedp.CSS(`#context`)))

	checkFork(t, api, b)

	// Untrusted text stays text.
	b.do("select the scratch session",
		chromedp.Click(chromedp.CSS(`[data-testid="session-item"][data-session-id="scratch"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#context [data-id="s1"]`)))
	if got := b.text(`#context [data-id="s1"] [data-testid="content"]`); !strings.HasPrefix(got, "<b>not bold</b><img") {
		t.Errorf("markup in content was not shown as text: %q", got)
	}
	if got := b.text(`#context [data-id="s2"] [data-testid="origin-format"]`); got != "anthropic.messages" {
		t.Errorf("origin format %q", got)
	}
	b.do("show the raw form of the markup",
		chromedp.Click(chromedp.CSS(`#context [data-id="s1"] [data-testid="raw-toggle"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#context [data-id="s1"] [data-testid="raw"]`)))
	if got := b.text(`#context [data-id="s1"] [data-testid="raw"]`); !strings.HasPrefix(got, `{"role":"user","content":"<b>not bold</b><img`) {
		t.Errorf("raw form %q", got)
	}
	if evaluate[bool](b, `document.querySelector('#detail img, #detail script, #detail b') !== null || window.__pwned !== undefined`) {
		t.Error("markup in content reached the DOM")
	}

	// Deleting asks first, then calls DELETE.
	b.do("decline the deletion",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => false`),
		chromedp.Click(chromedp.CSS(`#delete-session`)))
	if n := api.Count("DELETE", "/api/sessions/scratch"); n != 0 {
		t.Fatalf("DELETE sent %d times after the confirmation was declined", n)
	}
	b.do("delete the session",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(chromedp.CSS(`#delete-session`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="welcome"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="session-item"][data-session-id="scratch"]`)))
	if n := api.Count("DELETE", "/api/sessions/scratch"); n != 1 {
		t.Errorf("DELETE sent %d times, want 1", n)
	}
	b.checkNoExceptions()
}

// checkFork selects the fork billing-fix~2 and checks its origin, its framing, its framing and
// branch marks, origins, parts and divergence point; it ends on billing-fix's transcript.
func checkFork(t *testing.T, api *fakeAPI, b *browser) {
	t.Helper()
	b.do("select the fork",
		chromedp.Click(chromedp.CSS(`[data-testid="session-item"][data-session-id="billing-fix~2"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#context [data-id="f2"]`)))
	if got := b.text(`[data-testid="fork-origin"]`); !strings.Contains(got, "Fork of billing-fix, diverging after 2 transcript messages in common") {
		t.Errorf("fork origin reads %q", got)
	}
	if got := evaluate[string](b, `document.querySelector('[data-testid="fork-origin-link"]').getAttribute('href')`); got != "#/session/billing-fix" {
		t.Errorf("origin link %q", got)
	}
	kinds := evaluate[[]string](b, `[...document.querySelectorAll('#context > li > [data-testid="message"]')].map(e => e.dataset.id + ':' + e.dataset.kind)`)
	if want := []string{"p1:prefix_memory", "f2:raw", "f3:raw", "f4:raw", "fr2:framing", "f5:raw", "br1:branch", "f6:raw"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("fork context %v, want %v", kinds, want)
	}

	// The current framing, folded until asked for.
	if evaluate[bool](b, `document.getElementById('framing').open`) {
		t.Error("the framing is open before it is asked for")
	}
	b.do("open the framing", chromedp.Click(chromedp.CSS(`[data-testid="framing-toggle"]`)), chromedp.WaitVisible(chromedp.CSS(`#framing .messages`)))
	framing := evaluate[[]string](b, `[...document.querySelectorAll('#framing [data-testid="message"]')].map(e => e.dataset.role + ': ' + e.querySelector('[data-testid="content"]').textContent)`)
	if want := []string{"system: You are a careful coding agent working in the repository at /src/shop. Today is Monday 2 June.", "developer: Answer in two sentences at most."}; !reflect.DeepEqual(framing, want) {
		t.Errorf("framing %v, want %v", framing, want)
	}

	// A framing mark after an unopened memory is numbered from the expansion, and opens its version.
	b.waitUntil("the framing mark to be numbered", `document.querySelector('#context [data-id="fr2"] [data-testid="mark-label"]').textContent === 'framing changed (version 2)'`)
	if n := api.Count("GET", "/api/sessions/billing-fix~2/expand"); n != 1 {
		t.Errorf("the expansion was fetched %d times to number the framing marks, want 1", n)
	}
	if got := b.text(`#framing summary`); !strings.Contains(got, "version 2") {
		t.Errorf("framing summary %q lacks its version", got)
	}
	b.do("open framing version 2",
		chromedp.Click(chromedp.CSS(`#context [data-id="fr2"] [data-testid="open-node"][data-ref="r6"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="children"][data-ref="r6"] [data-id="v2b"]`)))
	if got := evaluate[[]string](b, `[...document.querySelectorAll('[data-testid="children"][data-ref="r6"] [data-testid="message"]')].map(e => e.dataset.id)`); !reflect.DeepEqual(got, []string{"v2a", "v2b"}) {
		t.Errorf("framing version 2 holds %v", got)
	}
	if got := b.text(`#context [data-id="fr2"] [data-testid="open-node"]`); !strings.HasPrefix(got, "▾Hide version 2") {
		t.Errorf("open framing mark button reads %q", got)
	}

	// A branch mark opens the earlier answer.
	if got := b.text(`#context [data-id="br1"] [data-testid="mark-label"]`); got != "regenerated answer" {
		t.Errorf("branch mark label %q", got)
	}
	b.do("open the earlier answer",
		chromedp.Click(chromedp.CSS(`#context [data-id="br1"] [data-testid="open-node"][data-ref="r7"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="children"][data-ref="r7"] [data-id="f6a"]`)))
	if got := b.text(`[data-testid="children"][data-ref="r7"] [data-id="f6a"] [data-testid="content"]`); !strings.HasPrefix(got, "Shipping rounds up (first answer)") {
		t.Errorf("the earlier answer reads %q", got)
	}

	// A framing mark inside a memory: numbered once the memory is opened, and opens version 1.
	b.do("open the prefix memory",
		chromedp.Click(chromedp.CSS(`#context [data-id="p1"] [data-testid="open-node"][data-ref="r8"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="children"][data-ref="r8"] [data-id="fr1"]`)))
	if got := b.text(`[data-testid="children"][data-ref="r8"] [data-id="fr1"] [data-testid="mark-label"]`); got != "framing changed (version 1)" {
		t.Errorf("the first framing mark reads %q", got)
	}
	b.do("open framing version 1",
		chromedp.Click(chromedp.CSS(`[data-id="fr1"] [data-testid="open-node"][data-ref="r5"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="children"][data-ref="r5"] [data-id="v1a"]`)))

	// Non-text parts are labelled; origins show their format and, on demand, the exact raw text.
	if got := b.text(`[data-id="f1"] [data-testid="part"]`); got != "[image image/png]" {
		t.Errorf("image part %q", got)
	}
	if got := b.text(`#context [data-id="f5"] [data-testid="part"]`); got != "[file application/pdf invoice-1042.pdf]" {
		t.Errorf("file part %q", got)
	}
	if got := b.text(`#context [data-id="f5"] [data-testid="origin-format"]`); got != "openai.chat" {
		t.Errorf("origin format %q", got)
	}
	if b.visible(`#context [data-id="f5"] [data-testid="raw"]`) {
		t.Error("the raw form is shown before it is asked for")
	}
	b.do("show the raw form",
		chromedp.Click(chromedp.CSS(`#context [data-id="f5"] [data-testid="raw-toggle"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#context [data-id="f5"] [data-testid="raw"]`)))
	raw := evaluate[string](b, `document.querySelector('#context [data-id="f5"] [data-testid="raw"]').textContent`)
	if want := fixtureRaw(t, "billing-fix~2", "f5"); raw != want {
		t.Errorf("raw form\n%s\nwant exactly\n%s", raw, want)
	}

	// The divergence point in the fork's own transcript, with framing versions and the
	// regenerated answer marked.
	b.do("show the divergence point",
		chromedp.Click(chromedp.CSS(`[data-testid="fork-divergence"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#transcript [data-testid="fork-point"][data-at="2"]`)))
	if got := b.beforePoint(2); got != "f1" {
		t.Errorf("the divergence point follows %q, want f1", got)
	}
	marked := evaluate[[]string](b, `[...document.querySelectorAll('#transcript > li > [data-testid="message"]')].map(e => e.dataset.id + (e.querySelector('[data-testid="framing-version"]') ? ' ' + e.querySelector('[data-testid="framing-version"]').textContent : '') + (e.querySelector('[data-testid="regenerated"]') ? ' regenerated' : ''))`)
	if want := []string{"v1a framing v1", "f0", "f1", "f2", "f3", "f4", "v2a framing v2", "v2b framing v2", "f5", "f6a regenerated", "f6"}; !reflect.DeepEqual(marked, want) {
		t.Errorf("fork transcript %v, want %v", marked, want)
	}

	// The same point in the origin.
	b.do("follow the divergence point to the origin",
		chromedp.Click(chromedp.CSS(`[data-testid="fork-origin-point"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#transcript [data-testid="fork-point"][data-at="2"]`)))
	if got := b.sessionShown(); got != "billing-fix" {
		t.Errorf("the origin link opened %q", got)
	}
	if got := b.text(`#transcript [data-testid="fork-point"][data-at="2"]`); !strings.Contains(got, "billing-fix~2 diverged from this session here") {
		t.Errorf("the origin's divergence point reads %q", got)
	}
	if got := b.text(`[data-testid="session-forks"]`); !strings.Contains(got, "billing-fix~2") {
		t.Errorf("the origin's forks read %q", got)
	}
}

// fixtureRaw returns the raw origin text of a context message of a fixture session.
func fixtureRaw(t *testing.T, session, id string) string {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", fixtureFiles[session]))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Context []struct {
			ID     string `json:"id"`
			Origin struct {
				Raw string `json:"raw"`
			} `json:"origin"`
		} `json:"context"`
	}
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	for _, m := range s.Context {
		if m.ID == id {
			return m.Origin.Raw
		}
	}
	t.Fatalf("no message %s in %s", id, session)
	return ""
}

// Hundreds of sessions: listed with forks beneath their origins (at any depth), many forks
// folded, an orphaned fork at the top, and found by search.
func TestViewerBrowserManySessions(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, "")
	api.extra = api.manySessions(300)
	total := 3 + len(api.extra)
	forks := 1 // billing-fix~2
	for _, s := range api.extra {
		if s.Fork != nil {
			forks++
		}
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	b := newBrowser(t)

	b.do("open the page", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="session-item"][data-session-id="agent-299"]`)))
	if got := b.text(`#session-count`); got != fmt.Sprint(total) {
		t.Errorf("session count %q, want %d", got, total)
	}
	if got := b.text(`#session-summary`); !strings.HasPrefix(got, fmt.Sprintf("%d sessions, %d forks", total, forks)) {
		t.Errorf("summary %q", got)
	}
	roots := evaluate[[]string](b, `[...document.querySelectorAll('[data-testid="session-item"][data-depth="0"]')].slice(0, 5).map(e => e.dataset.sessionId)`)
	if want := []string{"billing-fix", "orphan~2", "agent-000", "agent-001", "agent-002"}; !reflect.DeepEqual(roots, want) {
		t.Errorf("first roots %v, want %v (latest first)", roots, want)
	}
	if got := b.text(`[data-testid="session-item"][data-session-id="orphan~2"] [data-testid="fork-note"]`); got != "↳ fork of orphan, forked after 1 message (origin not listed)" {
		t.Errorf("orphan note %q", got)
	}
	path := evaluate[[]string](b, `(() => { const out = []; let n = document.querySelector('[data-testid="session-node"][data-session-id="agent-010~3"]');
		while (n) { out.push(n.dataset.sessionId); n = n.parentElement.closest('[data-testid="session-node"]'); } return out; })()`)
	if want := []string{"agent-010~3", "agent-010~2", "agent-010"}; !reflect.DeepEqual(path, want) {
		t.Errorf("agent-010~3 is nested in %v, want %v", path, want)
	}

	// A session with many forks lists them folded, until asked.
	if evaluate[bool](b, `document.querySelector('[data-session-id="agent-050~2"]') !== null`) {
		t.Error("the six forks of agent-050 are listed unfolded")
	}
	toggle := `[data-testid="session-node"][data-session-id="agent-050"] > [data-testid="toggle-forks"]`
	if got := b.text(toggle); got != "▸ Show 6 forks" {
		t.Errorf("fork toggle %q", got)
	}
	b.do("unfold the forks", chromedp.Click(chromedp.CSS(toggle)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="session-item"][data-session-id="agent-050~7"]`)))
	if n := evaluate[int](b, `document.querySelectorAll('[data-testid="session-node"][data-session-id="agent-050"] [data-testid="session-item"]').length`); n != 7 {
		t.Errorf("agent-050 unfolded lists %d sessions, want 7", n)
	}

	// Search.
	b.search("agent-05")
	listed := b.listed()
	if len(listed) != 16 {
		t.Errorf("searching agent-05 lists %d sessions (%v), want 16", len(listed), listed)
	}
	for _, id := range listed {
		if !strings.Contains(id, "agent-05") {
			t.Errorf("searching agent-05 lists %s", id)
		}
	}
	if got := b.text(`#session-summary`); got != fmt.Sprintf("16 of %d sessions match", total) {
		t.Errorf("summary %q", got)
	}
	b.search("agent-050~7")
	if got := b.listed(); !reflect.DeepEqual(got, []string{"agent-050", "agent-050~6", "agent-050~7"}) {
		t.Errorf("searching agent-050~7 lists %v", got)
	}
	if got := evaluate[[]string](b, `[...document.querySelectorAll('[data-testid="session-item"].unmatched')].map(e => e.dataset.sessionId)`); !reflect.DeepEqual(got, []string{"agent-050", "agent-050~6"}) {
		t.Errorf("listed for their forks: %v", got)
	}
	b.search("")
	if n := evaluate[int](b, `document.querySelectorAll('[data-testid="session-item"]').length`); n < 300 {
		t.Errorf("%d sessions listed after clearing the search", n)
	}
	b.checkNoExceptions()
}

func TestViewerBrowserAPIKey(t *testing.T) {
	t.Parallel()
	const key = "s3cret-key"
	api := newFakeAPI(t, key)
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	b := newBrowser(t)

	b.do("open the page: the API answers 401", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#api-key`)))
	if evaluate[int](b, `document.querySelectorAll('[data-testid="session-item"]').length`) != 0 {
		t.Error("sessions listed without a key")
	}

	b.do("try a wrong key",
		chromedp.SendKeys(chromedp.CSS(`#api-key`), "wrong"),
		chromedp.Click(chromedp.CSS(`#api-key-save`)))
	b.waitUntil("the key to be refused", `document.getElementById('auth-message').textContent.includes('refused')`)
	if !b.visible(`#auth`) {
		t.Error("the key form disappeared after a refused key")
	}

	b.do("enter the key",
		chromedp.SendKeys(chromedp.CSS(`#api-key`), key),
		chromedp.Click(chromedp.CSS(`#api-key-save`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="session-item"][data-session-id="billing-fix"]`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#auth`)))
	if got := evaluate[string](b, `localStorage.getItem('hippocam.apiKey')`); got != key {
		t.Errorf("localStorage holds %q", got)
	}

	b.do("open a node with the key",
		chromedp.Click(chromedp.CSS(`[data-testid="session-item"][data-session-id="billing-fix"]`)),
		chromedp.Click(chromedp.CSS(`#context [data-testid="open-node"][data-ref="r1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="children"][data-ref="r1"] [data-id="m6"]`)))

	// A reload keeps the key: the page never asks again and every call carries it.
	before := len(api.Requests())
	b.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#context`)))
	if b.visible(`#auth`) {
		t.Error("the key form is shown again after a reload")
	}

	reqs := api.Requests()
	var sawKey, sawNode bool
	for i, r := range reqs {
		switch r.Auth {
		case "Bearer " + key:
			sawKey = true
			sawNode = sawNode || r.Path == "/api/sessions/billing-fix/nodes/r1"
		case "", "Bearer wrong":
			if sawKey {
				t.Errorf("request %d (%s %s) after the key was entered has Authorization %q", i, r.Method, r.Path, r.Auth)
			}
		default:
			t.Errorf("request %d (%s %s) has Authorization %q", i, r.Method, r.Path, r.Auth)
		}
	}
	if !sawNode {
		t.Error("the node request did not carry the key")
	}
	if reqs[0].Auth != "" {
		t.Errorf("the first request had Authorization %q before any key was given", reqs[0].Auth)
	}
	if len(reqs) == before {
		t.Error("no API request after the reload")
	}
	b.checkNoExceptions()
}

// browser is a headless Chromium tab for one test.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu         sync.Mutex
	exceptions []string
}

// chromium is the one headless Chromium the browser tests share, started by the first test
// that needs it and stopped by TestMain. Starting a browser takes seconds; a tab in a browser
// context of its own (the CDP's incognito profile: no cookies, storage or cache shared with
// another tab) is as fresh as a new browser's, and opens in milliseconds.
var chromium struct {
	once sync.Once
	ctx  context.Context // the browser's first tab, whose context holds the browser
	err  error
	out  lockedBuffer
	stop func()
}

// startChromium starts the shared browser, once, with a profile in a temporary directory.
func startChromium(exe string) (context.Context, error) {
	chromium.once.Do(func() {
		profile, err := os.MkdirTemp("", "hippocam-viewer-chromium-")
		if err != nil {
			chromium.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(exe),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.UserDataDir(profile),
			chromedp.WindowSize(1440, 900),
			chromedp.CombinedOutput(&chromium.out),
		)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelBrowser := chromedp.NewContext(actx)
		chromium.stop = func() {
			cancelBrowser()
			cancelAlloc()
			os.RemoveAll(profile)
		}
		if err := chromedp.Do(ctx); err != nil {
			chromium.err = fmt.Errorf("start %s: %w\n%s", exe, err, chromium.out.String())
			return
		}
		chromium.ctx = ctx
	})
	return chromium.ctx, chromium.err
}

// stopChromium stops the shared browser if a test started it.
func stopChromium() {
	if chromium.stop != nil {
		chromium.stop()
	}
}

// newBrowser opens a tab in a fresh browser context of the shared Chromium, or skips the test
// when there is no browser and CI is not set. The tab closes, and its browser context goes, when
// the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := os.Getenv("HIPPOCAM_CHROMIUM")
	if exe == "" {
		exe = defaultChromium
	}
	if _, err := os.Stat(exe); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no browser at %s (CI must install chromium): %v", exe, err)
		}
		t.Skipf("no browser at %s: install Debian's chromium (or set HIPPOCAM_CHROMIUM) to run this test", exe)
	}
	bctx, err := startChromium(exe)
	if err != nil {
		t.Fatal(err)
	}
	root, cancelRoot := context.WithTimeout(bctx, 3*time.Minute)
	ctx, cancelTab := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	t.Cleanup(func() {
		cancelTab()
		cancelRoot()
		if t.Failed() {
			t.Logf("browser output:\n%s", chromium.out.String())
		}
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab in %s: %v\n%s", exe, err, chromium.out.String())
	}
	b := &browser{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() {
				b.mu.Lock()
				b.exceptions = append(b.exceptions, m.Text)
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// do runs the actions, each step bounded, and fails the test with what it was doing.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// waitUntil polls the JavaScript predicate until it holds.
func (b *browser) waitUntil(what, predicate string) {
	b.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for !evaluate[bool](b, "!!("+predicate+")") {
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// search types q into the session search box (replacing what it held).
func (b *browser) search(q string) {
	b.t.Helper()
	b.do("search "+q, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const f = document.getElementById('session-filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()`)))
	if q != "" {
		b.do("type "+q, chromedp.SendKeys(chromedp.CSS(`#session-filter`), q))
	}
}

// listed returns the ids of the sessions listed, in order.
func (b *browser) listed() []string {
	b.t.Helper()
	return evaluate[[]string](b, `[...document.querySelectorAll('[data-testid="session-item"]')].map(e => e.dataset.sessionId)`)
}

// beforePoint returns the id of the transcript message just before the divergence point at.
func (b *browser) beforePoint(at int) string {
	b.t.Helper()
	return evaluate[string](b, fmt.Sprintf(`(() => { const p = document.querySelector('#transcript [data-testid="fork-point"][data-at="%d"]');
		const m = p && p.previousElementSibling && p.previousElementSibling.querySelector(':scope > [data-testid="message"]'); return m ? m.dataset.id : ''; })()`, at))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func (b *browser) visible(sel string) bool {
	b.t.Helper()
	return evaluate[bool](b, fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.offsetParent !== null; })()`, sel))
}

func evaluate[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// sessionShown returns the id of the session the page shows.
func (b *browser) sessionShown() string {
	b.t.Helper()
	return evaluate[string](b, `document.getElementById('session-title').dataset.sessionId`)
}

// screenshot saves a full-page PNG: to docs/viewer.png with -update, to a temporary file
// otherwise.
func (b *browser) screenshot() {
	b.t.Helper()
	b.do("scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(b.t.TempDir(), "viewer.png")
	if *update {
		path = filepath.Join("..", "docs", "viewer.png")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

func (b *browser) checkNoExceptions() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.exceptions {
		b.t.Errorf("page exception: %s", e)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func distinct(xs []string) int {
	seen := map[string]bool{}
	for _, x := range xs {
		seen[x] = true
	}
	return len(seen)
}
