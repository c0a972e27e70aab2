// sdk_exchange.mjs drives an OpenAI-compatible endpoint (the Hippocam proxy, or the simulated
// model alone) with the official `openai` npm client, as an ordinary agent would: it names its
// session with the Hippocam-Session header (through the SDK's defaultHeaders) and resends its
// whole history, the answers it received included, on every call.
//
// Two exchanges, each in its own session:
//   plain   (SESSION-plain):  non-streamed;
//   stream  (SESSION-stream): streamed with the SDK's iterator, stream_options.include_usage set.
// Each sends `!call get_weather {"city":"Paris"}` with a get_weather tool, expects one call of
// get_weather with {"city":"Paris"}, sends the tool result `temperature := 18`, takes the answer,
// then asks `!ask temperature` and expects `temperature := 18`.
//
// Environment: HIPPOCAM_BASE_URL (…/v1, required), HIPPOCAM_SESSION (required),
// HIPPOCAM_API_KEY (optional; without it a placeholder key is sent, as agents do for local
// servers), HIPPOCAM_MODEL (optional, default hippocam-sim).
//
// Prints a JSON summary on stdout. Exits 1 on any mismatch or error, with a message on stderr,
// and 2 when the environment is incomplete.

import OpenAI from 'openai';
import { VERSION } from 'openai/version';

const baseURL = process.env.HIPPOCAM_BASE_URL;
const session = process.env.HIPPOCAM_SESSION;
const apiKey = process.env.HIPPOCAM_API_KEY || 'hippocam-no-key';
const model = process.env.HIPPOCAM_MODEL || 'hippocam-sim';

if (!baseURL || !session) {
  console.error('sdk_exchange: set HIPPOCAM_BASE_URL (such as http://127.0.0.1:8080/v1) and HIPPOCAM_SESSION');
  process.exit(2);
}

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather of a city.',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
      },
    },
  },
];

const callLine = '!call get_weather {"city":"Paris"}';
const toolResult = 'temperature := 18';
const question = '!ask temperature';
const wantAnswer = 'temperature := 18';

class Mismatch extends Error {}

function expect(cond, what) {
  if (!cond) throw new Mismatch(what);
}

function clientFor(name) {
  return new OpenAI({
    baseURL,
    apiKey,
    maxRetries: 0, // a conformance check wants the first failure, not a retried success
    timeout: 60_000,
    defaultHeaders: { 'Hippocam-Session': name },
  });
}

// sessionUsed checks the Hippocam-Session response header, when the endpoint sends one: the proxy
// names the session it actually used, and another name means it took the history for a fork.
function sessionUsed(response, name, step) {
  const used = response.headers.get('hippocam-session');
  if (used !== null) {
    expect(used === name, `${step}: the endpoint used session "${used}", not "${name}": it did not take the resent history as a continuation`);
  }
  return used;
}

// completePlain makes one non-streamed call and returns the assistant message as received.
async function completePlain(client, name, messages, step) {
  const { data, response } = await client.chat.completions
    .create({ model, messages, tools })
    .withResponse();
  expect(data.object === 'chat.completion', `${step}: object is ${JSON.stringify(data.object)}, want "chat.completion"`);
  expect(Array.isArray(data.choices) && data.choices.length > 0, `${step}: no choices`);
  const choice = data.choices[0];
  expect(choice.message && choice.message.role === 'assistant', `${step}: the answer's role is ${JSON.stringify(choice.message?.role)}`);
  return {
    message: choice.message,
    finish_reason: choice.finish_reason,
    usage: data.usage ?? null,
    session_header: sessionUsed(response, name, step),
  };
}

// completeStreamed makes one streamed call, iterates the chunks with the SDK's async iterator,
// and assembles the message: content concatenated, tool-call deltas merged by index.
async function completeStreamed(client, name, messages, step) {
  const { data: stream, response } = await client.chat.completions
    .create({ model, messages, tools, stream: true, stream_options: { include_usage: true } })
    .withResponse();
  let role = null;
  let content = null;
  let finish = null;
  let usage = null;
  let chunks = 0;
  const calls = new Map();
  for await (const chunk of stream) {
    chunks++;
    expect(chunk.object === 'chat.completion.chunk', `${step}: chunk ${chunks} object is ${JSON.stringify(chunk.object)}`);
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices ?? []) {
      if (choice.index !== 0) continue;
      const d = choice.delta ?? {};
      if (d.role) role = d.role;
      if (typeof d.content === 'string') content = (content ?? '') + d.content;
      for (const tc of d.tool_calls ?? []) {
        expect(Number.isInteger(tc.index), `${step}: a tool-call delta without an index: ${JSON.stringify(tc)}`);
        let c = calls.get(tc.index);
        if (!c) {
          c = { id: '', type: 'function', function: { name: '', arguments: '' } };
          calls.set(tc.index, c);
        }
        if (tc.id) c.id = tc.id;
        if (tc.type) c.type = tc.type;
        if (tc.function?.name) c.function.name += tc.function.name;
        if (tc.function?.arguments) c.function.arguments += tc.function.arguments;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  expect(chunks > 0, `${step}: the stream carried no chunk`);
  expect(role === 'assistant', `${step}: the streamed role is ${JSON.stringify(role)}`);
  expect(finish !== null, `${step}: the stream ended without a finish reason`);
  expect(usage !== null, `${step}: stream_options.include_usage was set but no chunk carried usage`);
  const toolCalls = [...calls.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c);
  const message = { role: 'assistant', content: content === '' && toolCalls.length > 0 ? null : content };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return { message, finish_reason: finish, usage, chunks, session_header: sessionUsed(response, name, step) };
}

// exchange runs the three calls of one session and returns what it saw.
async function exchange(kind, streamed) {
  const name = `${session}-${kind}`;
  const client = clientFor(name);
  const complete = streamed ? completeStreamed : completePlain;
  const steps = [];
  const messages = [{ role: 'user', content: callLine }];

  // 1. The call.
  let step = `${kind} step 1 (tool call)`;
  let r = await complete(client, name, messages, step);
  steps.push(r);
  const calls = r.message.tool_calls ?? [];
  expect(calls.length === 1, `${step}: ${calls.length} tool calls, want 1: ${JSON.stringify(r.message)}`);
  const call = calls[0];
  expect(call.type === 'function' && call.function?.name === 'get_weather', `${step}: the call is ${JSON.stringify(call)}, want get_weather`);
  expect(typeof call.id === 'string' && call.id !== '', `${step}: the call has no id`);
  let args;
  try {
    args = JSON.parse(call.function.arguments);
  } catch (e) {
    throw new Mismatch(`${step}: the arguments ${JSON.stringify(call.function.arguments)} are not JSON: ${e.message}`);
  }
  expect(args?.city === 'Paris' && Object.keys(args).length === 1, `${step}: arguments ${call.function.arguments}, want {"city":"Paris"}`);
  expect(r.finish_reason === 'tool_calls', `${step}: finish_reason ${JSON.stringify(r.finish_reason)}, want "tool_calls"`);

  // 2. The tool result, after the answer exactly as received.
  messages.push(r.message, { role: 'tool', tool_call_id: call.id, content: toolResult });
  step = `${kind} step 2 (tool result)`;
  r = await complete(client, name, messages, step);
  steps.push(r);
  expect(!(r.message.tool_calls?.length > 0), `${step}: unexpected tool calls ${JSON.stringify(r.message.tool_calls)}`);
  expect(typeof r.message.content === 'string', `${step}: the answer has no text: ${JSON.stringify(r.message)}`);

  // 3. The question.
  messages.push(r.message, { role: 'user', content: question });
  step = `${kind} step 3 (${question})`;
  r = await complete(client, name, messages, step);
  steps.push(r);
  expect(r.message.content === wantAnswer, `${step}: answer ${JSON.stringify(r.message.content)}, want ${JSON.stringify(wantAnswer)}`);
  expect(r.finish_reason === 'stop', `${step}: finish_reason ${JSON.stringify(r.finish_reason)}, want "stop"`);
  messages.push(r.message);

  return { kind, session: name, streamed, steps, transcript: messages };
}

const summary = { ok: false, sdk: `openai ${VERSION}`, node: process.version, base_url: baseURL, exchanges: [] };
let failure = null;
try {
  summary.exchanges.push(await exchange('plain', false));
  summary.exchanges.push(await exchange('stream', true));
  summary.ok = true;
} catch (e) {
  if (e instanceof Mismatch) {
    failure = `mismatch: ${e.message}`;
  } else if (e instanceof OpenAI.APIError) {
    failure = `the endpoint answered ${e.status ?? '(no status)'}: ${e.message}`;
  } else {
    failure = `error: ${e?.stack ?? e}`;
  }
  summary.error = failure;
}
console.log(JSON.stringify(summary, null, 2));
if (failure) {
  console.error(`sdk_exchange: ${failure}`);
  process.exit(1);
}
