package engine

// Traceability of the prompts. The role prompts in prompts/ are our own text:
// they state every rule of the Hippocam paper appendix B.2 (B.2.1 for JANUS, B.2.2 for PRECIP, B.2.3 for
// PALIM, B.2.4 for the memory instructions of the main model) in fresh wording, sharing no run of
// five words with the seed (checked with a five-word overlap scan). promptRules is the table
// that ties each B.2 rule to its place: the prompt file, the "# " heading of the section stating
// it, and a phrase of that section that carries it; TestPromptRules checks that every phrase is
// still where the table says. A rule is named by its B.2 part (that part's heading in the
// appendix) and a short description in our words. A few rows come from beyond B.2: the guidance
// JANUS writes (the Hippocam paper §2.2), recall exchanges reinforced by PRECIP, impressions and search
// (docs/architecture.md), and revisions that win visibly: a later statement supersedes an
// earlier one, and the memories say so.
//
// Deliberate departures from B.2, all of them of form, not of rules:
//   - Names: neither the trigger phrases nor the mythological role names are used; components
//     are addressed by role, and the stack operations are called "open" and "close".
//   - Output: each component answers with the JSON object of its contract (contract.go); the
//     appendix's final step (a call of gaze, ripple or the memory tool) maps to that object.
//   - The span: PRECIP and PALIM do not read "everything above the trigger" but the span their
//     instruction names by quoting its first and last message (SpanLine, contract.go).
//   - JANUS's material: not the whole conversation but a bounded view of it (engine/janus.go,
//     janusView): the stack with where each intent opened, each memory's first line, the user's
//     latest message, and the messages it has not reviewed yet.
//   - Anchors (B.2.4): stated for tools that address lines by content anchors, since the agent's
//     tools belong to its client.

// promptRule ties one rule of appendix B.2 to the section of our prompts that states it.
type promptRule struct {
	part    string // the B.2 part (or other source) the rule comes from
	rule    string // the rule, briefly, in our words
	file    string // the prompt file under prompts/
	section string // the "# " heading of the section that states it
	says    string // a phrase of that section that carries the rule
}

// promptRules is the traceability table, in the order of appendix B.2.
var promptRules = []promptRule{
	// B.2.1 JANUS (janus.txt)
	{"B.2.1 Role", "an outside evaluator that keeps the assistant's stack of purposes and decides when focus moves", "janus.txt", "Your part", "as an evaluator"},
	{"B.2.1 Role", "the conversation is the user's and the assistant's; take no part in it", "janus.txt", "Your part", "The exchange belongs to the two of them"},
	{"B.2.1 Intention Stack", "last in first out, purposes rather than tasks, nested and never parallel", "janus.txt", "The intent stack", "last in first out; not a to-do list"},
	{"B.2.1 Intention Stack", "widest aim at the bottom, most immediate on top", "janus.txt", "The intent stack", "The widest aim lies at the bottom"},
	{"B.2.1 Intention Stack", "a high-level position, not a log of actions", "janus.txt", "The intent stack", "not each step taken"},
	{"B.2.1 Intention Stack", "a finished sub-goal pops; unforeseen problems may deepen the stack mid-task", "janus.txt", "The intent stack", "an unforeseen problem in the middle of a task may add a level"},
	{"B.2.1 Intention", "purposes, never actions; tools are only means", "janus.txt", "The intent stack", "An intent is a purpose, never an action"},
	{"B.2.1 Intention", "focus changes with the purpose, not with the means (the research/drafting example)", "janus.txt", "The intent stack", "since only the means differ"},
	{"B.2.1 Intention", "label, reason and exit condition", "janus.txt", "The intent stack", "a label (its aim), a reason (why it arises now) and an exit condition"},
	{"B.2.1 Intention", "success and failure exits, each a clear point of judgement that can trigger", "janus.txt", "The intent stack", "never an extreme so vague or so high that it is never reached"},
	{"B.2.1 Intention", "a setback is no exit: recovery nests beneath", "janus.txt", "The intent stack", "A setback is not an exit"},
	{"B.2.1 Evaluation", "the request shows the stack as an indented outline, outermost first", "janus.txt", "What you receive", "the stack as an indented outline, outermost first"},
	{"B.2.1 Evaluation", "earlier decisions are gone from the context; trust the stack shown", "janus.txt", "What you receive", "the stack shown is their result, so trust it"},
	{"B.2.1 Evaluation", "two operations, open (push) and close (pop), else skip", "janus.txt", "What you receive", "when neither is called for, skip"},
	{"B.2.1 Step 1", "read all that is shown before deciding", "janus.txt", "How to decide", "Read all you are shown before deciding"},
	{"B.2.1 Step 1", "[ref:] records are its own past work, settled as fact", "janus.txt", "How to decide", "what they say was seen or concluded is settled"},
	{"B.2.1 Step 2", "examine from the top down", "janus.txt", "How to decide", "Closing, from the top down"},
	{"B.2.1 Step 2", "every branch of the exit condition at its full breadth; either exit of an 'or' suffices; a sample is not completion", "janus.txt", "How to decide", "a sample of its scope is not enough"},
	{"B.2.1 Step 2", "only the assistant's own conclusions; unanalysed tool output is raw data", "janus.txt", "How to decide", "Tool output it has not yet examined is raw data"},
	{"B.2.1 Step 2", "decomposing is not completing", "janus.txt", "How to decide", "Breaking a broad intent into its next piece does not finish it"},
	{"B.2.1 Step 2", "cascade down to the first open intent", "janus.txt", "How to decide", "judge the next one down the same way"},
	{"B.2.1 Step 2", "single-reply rule", "janus.txt", "How to decide", "An intent whose only remaining work is giving the answer is finished"},
	{"B.2.1 Step 3", "shift: a same-level successor, checked not to be part of what closed", "janus.txt", "How to decide", "Check first that the new work is not a piece of what you closed"},
	{"B.2.1 Step 3", "deepen: a stage that can succeed or fail by itself is tracked, not folded into the current one", "janus.txt", "How to decide", "rather than treating it as more of the same"},
	{"B.2.1 Step 3", "neither: skip", "janus.txt", "How to decide", "Otherwise the stack already fits what comes next: skip"},
	{"B.2.1 Step 3", "single-action work needs no intent; work that may fail or surprise is not simple", "janus.txt", "How to decide", "needs no intent"},
	{"B.2.1 Step 3", "parallel parts are siblings: one broader intent or only the first", "janus.txt", "How to decide", "open one broader intent covering all of them, or open only the first"},
	{"B.2.1 Step 3", "only the levels visible now; no foreseen full path", "janus.txt", "How to decide", "Open only the levels plainly in sight"},
	{"B.2.1 Step 4 Operations", "openings broadest first; an empty stack starts from the goal exactly as the user gave it, once the work needs an intent at all", "janus.txt", "Rules of the operations", "at the user's own level of detail"},
	{"B.2.1 Step 4 Operations", "closings from the top, exact labels, no parent before its children", "janus.txt", "Rules of the operations", "each label copied exactly from the stack"},
	{"B.2.1 Step 4 Situations", "close the whole chain when all is done, else stop at the first open intent", "janus.txt", "Rules of the operations", "If the whole chain is finished, close it all"},
	{"B.2.1 Step 4 Situations", "a shift that turns out to be part of the closed work reopens nothing: keep the intent and deepen", "janus.txt", "How to decide", "keep it open and deepen under it instead"},
	{"B.2.1 after the prompt", "invalid operation sets are rejected for correction", "janus.txt", "Rules of the operations", "is refused as a whole"},
	{"B.2.1 Step 5", "give the decision in the contract (update_intents)", "janus.txt", "Guidance", "Give your decision as the JSON object"},
	{"B.2.1 Narrowing", "no answering or analysing of the request", "janus.txt", "Never", "Answer, explain, summarise or analyse what the user asked about"},
	{"B.2.1 Narrowing", "no intent for one-turn jobs", "janus.txt", "Never", "Open an intent for simple one-turn work"},
	{"B.2.1 Narrowing", "no plan of the whole future", "janus.txt", "Never", "Open a whole plan in advance"},
	{"B.2.1 Narrowing", "no duplicate of a stacked purpose, whatever its wording", "janus.txt", "Never", "Open a purpose the stack already holds"},
	{"B.2.1 Narrowing", "siblings are not nested", "janus.txt", "Never", "Stack parallel siblings as if nested"},
	{"B.2.1 Narrowing", "the goal is not widened", "janus.txt", "Never", "Widen the user's particular aim"},
	{"B.2.1 Narrowing", "no closing on partial progress", "janus.txt", "Never", "Close on partial progress"},
	{"B.2.1 Narrowing", "no closing on announcements", "janus.txt", "Never", "only results it delivered count"},
	// the Hippocam paper §2.2: guidance
	{"§2.2 guidance", "first-person guidance: what ended, what next, its exits; the evidence of each closure", "janus.txt", "Guidance", "write guidance as the assistant's own resolve"},
	// B.2.2 PRECIP (precip.txt)
	{"B.2.2 Role", "consolidate a finished episode into lasting memory, observing from outside", "precip.txt", "Your part", "into a memory that lasts"},
	{"B.2.2 Role", "never join, continue, extend or reply", "precip.txt", "Your part", "Never join it, carry it on, add to it or reply"},
	{"B.2.2 Telos", "an intent is a purpose; the chain runs from the broadest aim to the immediate focus", "precip.txt", "What you are given", "The chain nests"},
	{"B.2.2 Consolidation", "the chain's separator and its last element being the focus consolidated now", "precip.txt", "What you are given", "with \">\" between them"},
	{"B.2.2 Consolidation", "the context is gone afterwards: the memory is all that remains", "precip.txt", "What you are given", "your memory stands in its place"},
	{"B.2.2 Step 1", "read the whole span", "precip.txt", "Reading", "Go through the whole span"},
	{"B.2.2 Step 2 Keep", "impression of every opened source, carried forward and revised", "precip.txt", "What to keep", "An impression already in earlier memory is carried over"},
	{"B.2.2 Step 2 Keep", "state changes", "precip.txt", "What to keep", "Changes of state"},
	{"B.2.2 Step 2 Keep", "explicit conclusions", "precip.txt", "What to keep", "Conclusions: diagnoses, decisions and analyses the assistant stated outright"},
	{"B.2.2 Step 2 Keep", "supporting evidence, verbatim, with its source", "precip.txt", "What to keep", "copied exactly, never reworded"},
	{"B.2.2 Step 2 Keep", "unspent evidence the outer intents may need, uninterpreted", "precip.txt", "What to keep", "copy it as it stands, uninterpreted"},
	{"B.2.2 Step 2 Keep", "informative failures, not trivial slips", "precip.txt", "What to keep", "A slip fixed on the spot teaches nothing"},
	{"B.2.2 Step 2 Do not", "no summaries or headlines; bare tool output kept as it is", "precip.txt", "What to drop", "Summaries or headlines in place of content"},
	{"B.2.2 Step 2 Do not", "the route to a fact is not the fact", "precip.txt", "What to drop", "How a fact came to light"},
	{"B.2.2 Step 2 Do not", "no inference beyond the assistant", "precip.txt", "What to drop", "Inferences the assistant did not make"},
	{"beyond B.2 (dates)", "a relative date is resolved against its message's date", "precip.txt", "What to drop", "Resolving a relative date or time against the date of the message"},
	{"B.2.2 Step 2 Do not", "discard what serves no intent, and same-category material beyond the purpose", "precip.txt", "What to drop", "material of the right sort that goes beyond what the purpose called for"},
	{"B.2.2 Step 3", "generalise shared patterns into one insight", "precip.txt", "Merging", "state one combined insight instead of repeating each"},
	{"B.2.2 Step 4", "self-contained: each fact identified, each conclusion with its evidence", "precip.txt", "Writing", "it must stand alone"},
	{"B.2.2 Step 4", "first person", "precip.txt", "Writing", "Write as the assistant, first person"},
	{"B.2.2 Step 4", "prose, no headers or lists; no prose retelling unanalysed output", "precip.txt", "Writing", "never prose that retells tool output nobody analysed"},
	{"B.2.2 Step 4", "tool output and documents fenced or quoted with their source", "precip.txt", "Writing", "code fences or block quotes"},
	{"B.2.2 Step 4", "order: what was done, then a hard-won approach, then real mistakes with their lesson", "precip.txt", "Writing", "In this order"},
	{"B.2.2 Narrowing", "no next steps", "precip.txt", "Never", "Look ahead"},
	{"B.2.2 Narrowing", "the intents are not judged or changed", "precip.txt", "Never", "do not judge the intents or change them"},
	{"B.2.2 Narrowing", "no account of why the user asked, no rewording of the request", "precip.txt", "Never", "Tell why the user wanted something"},
	{"B.2.2 Narrowing", "no filler words of feeling", "precip.txt", "Never", "emotional filler"},
	{"B.2.2 Narrowing", "excerpts, not summaries, of concrete content", "precip.txt", "Never", "Summarise concrete content: excerpt it"},
	{"B.2.2 Narrowing", "every fact keeps its tie to the work it came from", "precip.txt", "Never", "State a fact apart from its origin"},
	{"B.2.2 Narrowing", "it writes the memory and does not take the assistant's turn", "precip.txt", "Never", "Take the assistant's turn"},
	// beyond B.2: Hippocam's own rules (docs/architecture.md)
	{"Use reinforces (docs/architecture.md)", "recall exchanges: keep only what the answer drew on, never a superseded value", "precip.txt", "Recalled material", "keep only what the answer to that question drew on"},
	// B.2.3 PALIM (palim.txt)
	{"B.2.3 Role", "free knowledge from its episode, observing from outside", "palim.txt", "Your part", "free of the episodes it was learned in"},
	{"B.2.3 Role", "never join, continue, extend or reply", "palim.txt", "Your part", "Never join it, carry it on, add to it or reply"},
	{"B.2.3 Instructions", "the span may sit inside ongoing work and mix every kind of message", "palim.txt", "What you are given", "a settled stretch inside work still under way"},
	{"B.2.3 Instructions", "narrative is sized by undertakings", "palim.txt", "What you are given", "at the scale of an undertaking"},
	{"B.2.3 Instructions", "knowledge is sized by single facts, with all identifying particulars", "palim.txt", "What you are given", "at the scale of a single fact"},
	{"B.2.3 Instructions", "particulars live in knowledge only; narrative decays, knowledge survives", "palim.txt", "What you are given", "Particulars live in knowledge alone"},
	// revisions win visibly
	{"Revisions win visibly", "later statements supersede earlier ones, across memories too", "palim.txt", "What you are given", "the later is current, even when both lie in earlier memories"},
	// B.2.3 PALIM (palim.txt)
	{"B.2.3 Step 1", "read the span as the memory now available, whatever produced it; consolidate earlier memory again", "palim.txt", "Reading", "are consolidated again together with it"},
	{"B.2.3 Step 2", "first-person narrative, related undertakings together", "palim.txt", "Narrative", "keeping related undertakings together"},
	{"B.2.3 Step 2", "older narrative coarsens: steps go first, then outcomes merge", "palim.txt", "Narrative", "retold at a coarser grain"},
	{"B.2.3 Step 3", "the test of worth", "palim.txt", "Knowledge", "The worth test"},
	{"B.2.3 Step 3", "earlier knowledge is not judged again and loses nothing; merge identical, revise by later", "palim.txt", "Knowledge", "is not tested again"},
	{"B.2.3 Step 3", "being carried in memory does not make narrative or quotes knowledge", "palim.txt", "Knowledge", "are not knowledge in every detail merely because memory carries them"},
	{"B.2.3 Step 3", "about the subject, not about learning it", "palim.txt", "Knowledge", "not about the assistant changing, finding out or learning it"},
	{"B.2.3 Step 3", "one subject, one thing true of it", "palim.txt", "Knowledge", "makes one claim about it, present or past"},
	{"B.2.3 Step 3", "cause, effect and fix apart; neighbouring facts apart", "palim.txt", "Knowledge", "Cause, effect and remedy are separate items"},
	{"B.2.3 Step 3", "items on one subject together", "palim.txt", "Knowledge", "Items on the same subject stand together"},
	{"B.2.3 Step 3", "one thing met in many cases is one item", "palim.txt", "Knowledge", "a single thing observed across several cases"},
	{"B.2.3 Step 3", "past states kept with their temporal status; updates shown", "palim.txt", "Knowledge", "mark it as past when that matters"},
	{"B.2.3 Step 3", "no learning narrative or prescriptive wording; the evaluation carries direction", "palim.txt", "Knowledge", "any advice-like phrasing"},
	{"B.2.3 Step 3", "what knowledge may hold; concrete forms are knowledge", "palim.txt", "Knowledge", "Concrete forms"},
	{"B.2.3 Step 3", "derive nothing new; no exhaustive catalogue", "palim.txt", "Knowledge", "rather than cataloguing the whole episode"},
	{"beyond B.2 (dates)", "a relative date is resolved against its message's date, not refused as a derivation", "palim.txt", "Knowledge", "Resolving a relative date or time against the date of the message"},
	{"beyond B.2 (fold cost)", "unchanged earlier items are kept by id, not rewritten", "palim.txt", "Carrying items forward", "is carried forward by listing it under keep"},
	{"beyond B.2 (recession)", "the size limit never asks to drop knowledge, but where the request says it no longer fits; the recession rule stated once", "palim.txt", "Size", "Only a request that says the knowledge no longer fits lets knowledge recede"},
	{"B.2.3 Step 3", "collections the user supplies are kept one entry at a time", "palim.txt", "Knowledge", "A collection of self-contained entries"},
	{"B.2.3 Step 3", "an entry's identifier stays with it", "palim.txt", "Knowledge", "belongs to that entry and never leaves it"},
	{"B.2.3 Step 3", "an account is kept through what it establishes", "palim.txt", "Knowledge", "A story of events is kept through what it establishes"},
	{"B.2.3 Step 3", "records stay records inside a story", "palim.txt", "Knowledge", "a record that sits inside a story remains a record"},
	{"B.2.3 Step 3", "first decide, then split into items", "palim.txt", "Knowledge", "First settle what is knowledge"},
	{"B.2.3 Step 3", "good, bad and neutral", "palim.txt", "Evaluations", "neutral: it points neither way"},
	{"B.2.3 Step 3", "describe, let the evaluation judge; not whether from a fix; neutral when unclear", "palim.txt", "Evaluations", "not whether a fix produced it"},
	{"B.2.3 after the prompt", "evaluation is direction, not confidence or priority", "palim.txt", "Evaluations", "never expresses confidence"},
	// beyond B.2: Hippocam's own rules (docs/architecture.md)
	{"Impressions (docs/architecture.md)", "what is left out is named with the ref that holds it", "palim.txt", "Where details went", "keep an impression of it"},
	// B.2.3 PALIM (palim.txt)
	{"B.2.3 Step 4", "give narrative and surviving knowledge (write_prefix_memory)", "palim.txt", "Where details went", "Give the narrative and the surviving knowledge"},
	// B.2.4 main model (agent.txt)
	{"B.2.4 Role", "humble, curious, grounded; hedge unverified outside knowledge", "agent.txt", "Who you are", "say how far it goes"},
	{"B.2.4 Memory", "memories tagged [ref:] are the model's own work and writing", "agent.txt", "Your memory", "condense your own earlier work in this conversation, and you wrote them"},
	{"B.2.4 Memory", "what memory holds is known: files read, edits applied, commands run", "agent.txt", "Your memory", "What one holds, you know"},
	{"B.2.4 Memory", "prose is as certain as tool output", "agent.txt", "Your memory", "Being prose makes them no less certain than tool output"},
	{"B.2.4 Memory", "narrative and knowledge registers", "agent.txt", "Your memory", "Narrative tells what you did"},
	{"B.2.4 Memory", "good, bad, neutral; bad is one's own attempt, not a caution", "agent.txt", "Your memory", "not a warning from others but your own attempt"},
	{"B.2.4 Memory", "tags are direction, not confidence", "agent.txt", "Your memory", "Tags give direction, not confidence"},
	// revisions win visibly
	{"Revisions win visibly", "a later memory's statement supersedes an earlier memory's", "agent.txt", "Your memory", "Later memories supersede earlier ones"},
	// B.2.4 main model (agent.txt)
	{"B.2.4 Learn from experience", "when to reflect: starting, resuming, choosing, surprises, stalls", "agent.txt", "Learn as you work", "When you start or resume an undertaking"},
	{"B.2.4 Learn from experience", "connect knowledge across experiences", "agent.txt", "Learn as you work", "Link knowledge across experiences"},
	{"B.2.4 Learn from experience", "check the conditions apply; deductions are hypotheses", "agent.txt", "Learn as you work", "hold new deductions as guesses"},
	{"B.2.4 Learn from experience", "use concrete shapes as written", "agent.txt", "Learn as you work", "instead of rediscovering it"},
	{"B.2.4 Learn from experience", "observation beats memory, and say so", "agent.txt", "Learn as you work", "what you see wins, and say so"},
	{"B.2.4 Learn from experience", "state a change of approach briefly, act, revise from the outcome; otherwise no reflection", "agent.txt", "Learn as you work", "go on without a separate reflection"},
	{"B.2.4 Recall with a purpose", "memory in view first; recall when a gap could change the answer", "agent.txt", "Recall and search", "Use the memory in view first"},
	{"B.2.4 Recall with a purpose", "after every recall, judge the gap anew; descend only while it matters; stop when enough", "agent.txt", "Recall and search", "go deeper only while a gap that matters remains"},
	{"B.2.4 Recall with a purpose", "when recall fails, other evidence or an admitted uncertainty", "agent.txt", "Recall and search", "seek other evidence or say what stays uncertain"},
	// beyond B.2: Hippocam's own rules (docs/architecture.md)
	{"Search (docs/architecture.md)", "search when nothing in view names the need, then recall the hit's ref", "agent.txt", "Recall and search", "search the session's archive"},
	// B.2.4 main model (agent.txt)
	{"B.2.4 Opening sources", "name the gap; memory is not a gap; edits update; untouched sources are unchanged", "agent.txt", "Before opening a source", "Name the gap it should fill"},
	{"B.2.4 Opening sources", "read just the gap; no confirming reads; the attempt reveals errors", "agent.txt", "Before opening a source", "never reopen a source just to confirm what you hold"},
	{"B.2.4 Anchors", "held anchors stay valid; edit directly; a stale edit is refused and changes nothing", "agent.txt", "Before opening a source", "Content-based line anchors"},
}
