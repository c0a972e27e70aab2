// aisdk.mjs: the AI SDK (`ai` with `@ai-sdk/openai`), provider made with createOpenAI({baseURL,
// apiKey, headers}), runs the conversation with generateText and streamText: openai(model), the
// provider's default (the Responses API), and openai.chat(model) (chat completions). The tool has
// an execute function, so the SDK runs it and takes a second step (stopWhen: stepCountIs(3));
// turn 2 resends turn 1's messages and the SDK's response messages, as an app keeping the
// conversation would.
//
// Variants: responses-generate, responses-stream, chat-generate, chat-stream.

import { generateText, streamText, tool, stepCountIs, APICallError } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';
import { TOOL_NAME, TOOL_DESCRIPTION, TURN1, TURN2, WANT1, WANT2, Mismatch, expect, expectText, expectNotHidden, LocalTool, main } from './lib.mjs';

// generate runs one turn with generateText and returns what the checks read.
async function generate(opts) {
  const r = await generateText(opts);
  return { text: r.text, steps: r.steps, messages: r.response.messages, finish: r.finishReason };
}

// stream runs one turn with streamText, reading the text stream, and returns what the checks
// read; the streamed text must be the final step's text plus the earlier steps' text.
async function stream(opts) {
  let failure = null;
  const r = streamText({ ...opts, onError: ({ error }) => (failure ??= error) });
  let streamed = '';
  for await (const piece of r.textStream) streamed += piece;
  if (failure) throw failure;
  const [text, steps, response, finish] = await Promise.all([r.text, r.steps, r.response, r.finishReason]);
  const all = steps.map((s) => s.text).join('');
  if (streamed !== all) throw new Mismatch(`the text stream says ${JSON.stringify(streamed)}, the steps ${JSON.stringify(all)}`);
  return { text, steps, messages: response.messages, finish };
}

async function conversation(ctx, format, turn) {
  const provider = createOpenAI({ baseURL: ctx.openaiBase, apiKey: ctx.apiKey, headers: ctx.headers, fetch: ctx.wire.fetch });
  const model = format === 'chat' ? provider.chat(ctx.model) : provider(ctx.model);
  const local = new LocalTool();
  const tools = {
    [TOOL_NAME]: tool({
      description: TOOL_DESCRIPTION,
      inputSchema: z.object({ path: z.string().describe('the file to read') }),
      execute: async (args) => local.run(args),
    }),
  };
  const calls = (r) => r.steps.flatMap((s) => s.toolCalls.map((c) => c.toolName));

  let step = 'turn 1';
  const history = [{ role: 'user', content: TURN1 }];
  const r1 = await turn({ model, tools, stopWhen: stepCountIs(3), messages: history });
  expectNotHidden(calls(r1), step);
  local.check();
  expect(r1.steps.length === 2, `${step}: ${r1.steps.length} steps, want 2 (the call, the answer)`);
  const [s1, s2] = r1.steps;
  expect(s1.toolCalls.length === 1 && s1.toolCalls[0].toolName === TOOL_NAME, `${step}: step 1 calls ${JSON.stringify(s1.toolCalls)}, want one read_file`);
  expect(s1.finishReason === 'tool-calls', `${step}: step 1 finished with ${JSON.stringify(s1.finishReason)}, want "tool-calls"`);
  expect(s1.toolResults.length === 1, `${step}: step 1 has ${s1.toolResults.length} tool results, want 1`);
  expect(s2.toolCalls.length === 0, `${step}: step 2 calls ${JSON.stringify(s2.toolCalls)}`);
  expectText(r1.text, WANT1, step);
  expect(r1.finish === 'stop', `${step}: finished with ${JSON.stringify(r1.finish)}, want "stop"`);

  step = 'turn 2';
  history.push(...r1.messages, { role: 'user', content: TURN2 });
  const r2 = await turn({ model, tools, stopWhen: stepCountIs(3), messages: history });
  expectNotHidden(calls(r2), step);
  expect(r2.steps.length === 1, `${step}: ${r2.steps.length} steps, want 1`);
  expectText(r2.text, WANT2, step);
  local.check();
  return { texts: [r1.text, r2.text] };
}

await main(
  'aisdk',
  ['ai', '@ai-sdk/openai', 'zod'],
  {
    'responses-generate': { api: 'responses', run: (ctx) => conversation(ctx, 'responses', generate) },
    'responses-stream': { api: 'responses', run: (ctx) => conversation(ctx, 'responses', stream) },
    'chat-generate': { api: 'chat', run: (ctx) => conversation(ctx, 'chat', generate) },
    'chat-stream': { api: 'chat', run: (ctx) => conversation(ctx, 'chat', stream) },
  },
  (e) => {
    const api = APICallError.isInstance(e) ? e : APICallError.isInstance(e?.lastError) ? e.lastError : null;
    return api ? `the endpoint answered ${api.statusCode ?? '(no status)'}: ${api.message} ${api.responseBody ?? ''}`.trim() : null;
  },
);
