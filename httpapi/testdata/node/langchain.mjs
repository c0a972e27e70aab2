// langchain.mjs: LangChain's ChatOpenAI (`@langchain/openai`, configuration: {baseURL,
// defaultHeaders}) with bindTools and a manual tool loop: the script invokes the model, runs each
// tool call through the LangChain tool (tool() with a zod schema), appends the ToolMessage and
// invokes again, resending the whole message list each time.
//
// Variants: invoke (invoke()), stream (stream(), the chunks concatenated).

import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { TOOL_NAME, TOOL_DESCRIPTION, TURN1, TURN2, WANT1, WANT2, expect, expectText, expectNotHidden, LocalTool, main } from './lib.mjs';

async function invoke(model, messages) {
  return model.invoke(messages);
}

async function stream(model, messages) {
  let full = null;
  let chunks = 0;
  for await (const chunk of await model.stream(messages)) {
    chunks++;
    full = full === null ? chunk : full.concat(chunk);
  }
  expect(chunks > 0, 'the stream carried no chunk');
  return full;
}

// text is an answer's text: LangChain keeps a string, or content blocks.
function text(msg) {
  if (typeof msg.content === 'string') return msg.content;
  return msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

async function conversation(ctx, complete) {
  const local = new LocalTool();
  const readFile = tool(async (args) => local.run(args), {
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    schema: z.object({ path: z.string().describe('the file to read') }),
  });
  const llm = new ChatOpenAI({
    model: ctx.model,
    apiKey: ctx.apiKey,
    configuration: { baseURL: ctx.openaiBase, defaultHeaders: ctx.headers, fetch: ctx.wire.fetch },
  });
  const model = llm.bindTools([readFile]);
  const names = (m) => [...(m.tool_calls ?? []).map((c) => c.name), ...(m.additional_kwargs?.tool_calls ?? []).map((c) => c.function?.name)];
  const messages = [new HumanMessage(TURN1)];

  let step = 'turn 1, call 1';
  let ai = await complete(model, messages);
  expectNotHidden(names(ai), step);
  expect(ai.tool_calls?.length === 1 && ai.tool_calls[0].name === TOOL_NAME, `${step}: tool calls ${JSON.stringify(ai.tool_calls)}, want one read_file`);
  expect(typeof ai.tool_calls[0].id === 'string' && ai.tool_calls[0].id !== '', `${step}: the call has no id`);
  messages.push(ai);
  for (const call of ai.tool_calls) messages.push(await readFile.invoke(call));

  step = 'turn 1, call 2 (after the tool result)';
  ai = await complete(model, messages);
  expectNotHidden(names(ai), step);
  local.check();
  expect(!(ai.tool_calls?.length > 0), `${step}: unexpected tool calls ${JSON.stringify(ai.tool_calls)}`);
  const t1 = text(ai);
  expectText(t1, WANT1, step);
  messages.push(ai, new HumanMessage(TURN2));

  step = 'turn 2';
  ai = await complete(model, messages);
  expectNotHidden(names(ai), step);
  expect(!(ai.tool_calls?.length > 0), `${step}: unexpected tool calls ${JSON.stringify(ai.tool_calls)}`);
  const t2 = text(ai);
  expectText(t2, WANT2, step);
  return { texts: [t1, t2] };
}

await main(
  'langchain',
  ['@langchain/openai', '@langchain/core', 'openai', 'zod'],
  {
    invoke: { api: 'chat', run: (ctx) => conversation(ctx, invoke) },
    stream: { api: 'chat', run: (ctx) => conversation(ctx, stream) },
  },
  (e) => (typeof e?.status === 'number' ? `the endpoint answered ${e.status}: ${e.message}` : null),
);
