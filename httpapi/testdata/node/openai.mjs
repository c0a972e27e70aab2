// openai.mjs: the official `openai` client, default settings (retries, timeouts), holding the
// conversation of lib.mjs through chat.completions.create and responses.create, each streamed
// and not. The script keeps the history itself and resends it whole on every call, the answers
// exactly as received.
//
// Variants: chat-plain, chat-stream, responses-plain, responses-stream.

import OpenAI from 'openai';
import {
  TOOL_NAME, TOOL_DESCRIPTION, TOOL_JSON_SCHEMA, TURN1, TURN2, WANT1, WANT2,
  Mismatch, expect, expectText, expectNotHidden, LocalTool, main,
} from './lib.mjs';

function client(ctx) {
  return new OpenAI({ baseURL: ctx.openaiBase, apiKey: ctx.apiKey, defaultHeaders: ctx.headers, fetch: ctx.wire.fetch });
}

// Chat completions.

const chatTools = [{ type: 'function', function: { name: TOOL_NAME, description: TOOL_DESCRIPTION, parameters: TOOL_JSON_SCHEMA } }];

async function chatPlain(c, ctx, messages, step) {
  const data = await c.chat.completions.create({ model: ctx.model, messages, tools: chatTools });
  expect(data.object === 'chat.completion', `${step}: object ${JSON.stringify(data.object)}, want "chat.completion"`);
  expect(data.choices?.length === 1, `${step}: ${data.choices?.length} choices, want 1`);
  const { message, finish_reason } = data.choices[0];
  expect(message?.role === 'assistant', `${step}: role ${JSON.stringify(message?.role)}`);
  return { message, finish: finish_reason };
}

// chatStream assembles the message from the chunks: content concatenated, tool-call deltas
// merged by index.
async function chatStream(c, ctx, messages, step) {
  const stream = await c.chat.completions.create({ model: ctx.model, messages, tools: chatTools, stream: true });
  let role = null;
  let content = null;
  let finish = null;
  let chunks = 0;
  const calls = new Map();
  for await (const chunk of stream) {
    chunks++;
    expect(chunk.object === 'chat.completion.chunk', `${step}: chunk ${chunks} object ${JSON.stringify(chunk.object)}`);
    for (const ch of chunk.choices ?? []) {
      const d = ch.delta ?? {};
      if (d.role) role = d.role;
      if (typeof d.content === 'string') content = (content ?? '') + d.content;
      for (const tc of d.tool_calls ?? []) {
        let call = calls.get(tc.index);
        if (!call) calls.set(tc.index, (call = { id: '', type: 'function', function: { name: '', arguments: '' } }));
        if (tc.id) call.id = tc.id;
        if (tc.function?.name) call.function.name += tc.function.name;
        if (tc.function?.arguments) call.function.arguments += tc.function.arguments;
      }
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  expect(chunks > 0 && role === 'assistant' && finish !== null, `${step}: ${chunks} chunks, role ${role}, finish ${finish}`);
  const toolCalls = [...calls.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v);
  const message = { role: 'assistant', content: toolCalls.length > 0 && content === '' ? null : content };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return { message, finish, chunks };
}

async function chatConversation(ctx, complete) {
  const c = client(ctx);
  const tool = new LocalTool();
  const messages = [{ role: 'user', content: TURN1 }];
  const texts = [];

  let step = 'turn 1, call 1';
  let r = await complete(c, ctx, messages, step);
  const calls = r.message.tool_calls ?? [];
  expectNotHidden(calls.map((x) => x.function?.name), step);
  expect(calls.length === 1 && calls[0].function?.name === TOOL_NAME, `${step}: tool calls ${JSON.stringify(calls)}, want one read_file`);
  expect(typeof calls[0].id === 'string' && calls[0].id !== '', `${step}: the call has no id`);
  expect(r.finish === 'tool_calls', `${step}: finish_reason ${JSON.stringify(r.finish)}, want "tool_calls"`);
  messages.push(r.message, { role: 'tool', tool_call_id: calls[0].id, content: tool.run(calls[0].function.arguments) });

  step = 'turn 1, call 2 (after the tool result)';
  r = await complete(c, ctx, messages, step);
  expectNotHidden((r.message.tool_calls ?? []).map((x) => x.function?.name), step);
  expect(!(r.message.tool_calls?.length > 0), `${step}: unexpected tool calls ${JSON.stringify(r.message.tool_calls)}`);
  expectText(r.message.content, WANT1, step);
  expect(r.finish === 'stop', `${step}: finish_reason ${JSON.stringify(r.finish)}, want "stop"`);
  texts.push(r.message.content);
  messages.push(r.message, { role: 'user', content: TURN2 });

  step = 'turn 2';
  r = await complete(c, ctx, messages, step);
  expectNotHidden((r.message.tool_calls ?? []).map((x) => x.function?.name), step);
  expect(!(r.message.tool_calls?.length > 0), `${step}: unexpected tool calls ${JSON.stringify(r.message.tool_calls)}`);
  expectText(r.message.content, WANT2, step);
  texts.push(r.message.content);
  tool.check();
  return { texts };
}

// Responses.

const responsesTools = [{ type: 'function', name: TOOL_NAME, description: TOOL_DESCRIPTION, parameters: TOOL_JSON_SCHEMA, strict: false }];

async function responsesPlain(c, ctx, input, step) {
  const resp = await c.responses.create({ model: ctx.model, input, tools: responsesTools });
  expect(resp.object === 'response', `${step}: object ${JSON.stringify(resp.object)}, want "response"`);
  return { resp };
}

// responsesStream reads the events: text deltas concatenated and compared with the completed
// response's text, each output item announced and done, response.completed last.
async function responsesStream(c, ctx, input, step) {
  const stream = await c.responses.create({ model: ctx.model, input, tools: responsesTools, stream: true });
  let completed = null;
  let text = '';
  let events = 0;
  const added = new Set();
  const done = new Set();
  const types = [];
  for await (const ev of stream) {
    events++;
    types.push(ev.type);
    expect(completed === null, `${step}: event ${ev.type} after response.completed`);
    switch (ev.type) {
      case 'response.output_text.delta':
        text += ev.delta;
        break;
      case 'response.output_item.added':
        added.add(ev.output_index);
        break;
      case 'response.output_item.done':
        expect(added.has(ev.output_index), `${step}: output item ${ev.output_index} done but never added`);
        done.add(ev.output_index);
        break;
      case 'response.completed':
        completed = ev.response;
        break;
      case 'response.failed':
      case 'error':
        throw new Mismatch(`${step}: the stream reported ${ev.type}: ${JSON.stringify(ev)}`);
    }
  }
  expect(types[0] === 'response.created', `${step}: the first event is ${types[0]}, want response.created`);
  expect(completed !== null, `${step}: the stream ended without response.completed (events: ${types.join(' ')})`);
  expect(done.size === completed.output.length && added.size === done.size, `${step}: ${added.size} items added, ${done.size} done, ${completed.output.length} in the response`);
  const final = outputText(completed);
  expect(text === final, `${step}: the text deltas say ${JSON.stringify(text)}, the completed response ${JSON.stringify(final)}`);
  return { resp: completed, events };
}

function outputText(resp) {
  return resp.output
    .filter((i) => i.type === 'message')
    .flatMap((i) => i.content)
    .filter((p) => p.type === 'output_text')
    .map((p) => p.text)
    .join('');
}

function functionCalls(resp) {
  return resp.output.filter((i) => i.type === 'function_call');
}

async function responsesConversation(ctx, complete) {
  const c = client(ctx);
  const tool = new LocalTool();
  const input = [{ role: 'user', content: TURN1 }];
  const texts = [];
  const check = (resp, step) => {
    expect(resp.status === 'completed', `${step}: status ${JSON.stringify(resp.status)}, want "completed"`);
    expectNotHidden(resp.output.map((i) => i.name).filter(Boolean), step);
  };

  let step = 'turn 1, call 1';
  let { resp } = await complete(c, ctx, input, step);
  check(resp, step);
  const calls = functionCalls(resp);
  expect(calls.length === 1 && calls[0].name === TOOL_NAME, `${step}: output ${JSON.stringify(resp.output)}, want one read_file call`);
  expect(typeof calls[0].call_id === 'string' && calls[0].call_id !== '', `${step}: the call has no call_id`);
  input.push(...resp.output, { type: 'function_call_output', call_id: calls[0].call_id, output: tool.run(calls[0].arguments) });

  step = 'turn 1, call 2 (after the tool result)';
  ({ resp } = await complete(c, ctx, input, step));
  check(resp, step);
  expect(functionCalls(resp).length === 0, `${step}: unexpected calls ${JSON.stringify(functionCalls(resp))}`);
  expectText(outputText(resp), WANT1, step);
  expectText(resp.output_text ?? outputText(resp), WANT1, `${step} (output_text)`);
  texts.push(outputText(resp));
  input.push(...resp.output, { role: 'user', content: TURN2 });

  step = 'turn 2';
  ({ resp } = await complete(c, ctx, input, step));
  check(resp, step);
  expect(functionCalls(resp).length === 0, `${step}: unexpected calls ${JSON.stringify(functionCalls(resp))}`);
  expectText(outputText(resp), WANT2, step);
  texts.push(outputText(resp));
  tool.check();
  return { texts };
}

await main(
  'openai',
  ['openai'],
  {
    'chat-plain': { api: 'chat', run: (ctx) => chatConversation(ctx, chatPlain) },
    'chat-stream': { api: 'chat', run: (ctx) => chatConversation(ctx, chatStream) },
    'responses-plain': { api: 'responses', run: (ctx) => responsesConversation(ctx, responsesPlain) },
    'responses-stream': { api: 'responses', run: (ctx) => responsesConversation(ctx, responsesStream) },
  },
  (e) => (e instanceof OpenAI.APIError ? `the endpoint answered ${e.status ?? '(no status)'}: ${e.message}` : null),
);
