// anthropic.mjs: the official Anthropic client (`@anthropic-ai/sdk`), baseURL the endpoint's root
// (the SDK appends /v1/messages), holding the conversation with messages.create and
// messages.stream, a tool_use answered by a tool_result, the history resent whole every time.
//
// Variants: create (messages.create), stream (messages.stream: events read, then finalMessage()).

import Anthropic from '@anthropic-ai/sdk';
import { TOOL_NAME, TOOL_DESCRIPTION, TOOL_JSON_SCHEMA, TURN1, TURN2, WANT1, WANT2, expect, expectText, expectNotHidden, LocalTool, main } from './lib.mjs';

const tools = [{ name: TOOL_NAME, description: TOOL_DESCRIPTION, input_schema: TOOL_JSON_SCHEMA }];
const maxTokens = 1024;

async function create(c, ctx, messages) {
  return c.messages.create({ model: ctx.model, max_tokens: maxTokens, tools, messages });
}

// stream reads the events, checks their order and that the text deltas make the final text.
async function stream(c, ctx, messages) {
  const s = c.messages.stream({ model: ctx.model, max_tokens: maxTokens, tools, messages });
  const types = [];
  let text = '';
  let open = 0;
  for await (const ev of s) {
    types.push(ev.type);
    if (ev.type === 'content_block_start') open++;
    if (ev.type === 'content_block_stop') open--;
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
  }
  const msg = await s.finalMessage();
  expect(types[0] === 'message_start' && types.at(-1) === 'message_stop', `events ${types.join(' ')}: want message_start first and message_stop last`);
  expect(open === 0, `events ${types.join(' ')}: content blocks started and stopped do not match`);
  const final = textOf(msg);
  expect(text === final, `the text deltas say ${JSON.stringify(text)}, the final message ${JSON.stringify(final)}`);
  return msg;
}

function textOf(msg) {
  return msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

async function conversation(ctx, complete) {
  const c = new Anthropic({ baseURL: ctx.anthropicBase, apiKey: ctx.apiKey, defaultHeaders: ctx.headers, fetch: ctx.wire.fetch });
  const local = new LocalTool();
  const messages = [{ role: 'user', content: TURN1 }];
  const check = (msg, step) => {
    expect(msg.type === 'message' && msg.role === 'assistant', `${step}: type ${JSON.stringify(msg.type)}, role ${JSON.stringify(msg.role)}`);
    expectNotHidden(msg.content.map((b) => b.name).filter(Boolean), step);
  };
  const uses = (msg) => msg.content.filter((b) => b.type === 'tool_use');

  let step = 'turn 1, call 1';
  let msg = await complete(c, ctx, messages);
  check(msg, step);
  const calls = uses(msg);
  expect(calls.length === 1 && calls[0].name === TOOL_NAME, `${step}: content ${JSON.stringify(msg.content)}, want one read_file tool_use`);
  expect(msg.stop_reason === 'tool_use', `${step}: stop_reason ${JSON.stringify(msg.stop_reason)}, want "tool_use"`);
  expect(typeof calls[0].id === 'string' && calls[0].id !== '', `${step}: the tool_use has no id`);
  messages.push(
    { role: 'assistant', content: msg.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: calls[0].id, content: local.run(calls[0].input) }] },
  );

  step = 'turn 1, call 2 (after the tool result)';
  msg = await complete(c, ctx, messages);
  check(msg, step);
  expect(uses(msg).length === 0, `${step}: unexpected tool_use ${JSON.stringify(uses(msg))}`);
  expect(msg.stop_reason === 'end_turn', `${step}: stop_reason ${JSON.stringify(msg.stop_reason)}, want "end_turn"`);
  const t1 = textOf(msg);
  expectText(t1, WANT1, step);
  messages.push({ role: 'assistant', content: msg.content }, { role: 'user', content: TURN2 });

  step = 'turn 2';
  msg = await complete(c, ctx, messages);
  check(msg, step);
  expect(uses(msg).length === 0, `${step}: unexpected tool_use ${JSON.stringify(uses(msg))}`);
  const t2 = textOf(msg);
  expectText(t2, WANT2, step);
  local.check();
  return { texts: [t1, t2] };
}

await main(
  'anthropic',
  ['@anthropic-ai/sdk'],
  {
    create: { api: 'messages', run: (ctx) => conversation(ctx, create) },
    stream: { api: 'messages', run: (ctx) => conversation(ctx, stream) },
  },
  (e) => (e instanceof Anthropic.APIError ? `the endpoint answered ${e.status ?? '(no status)'}: ${e.message}` : null),
);
