// agents.mjs: the OpenAI Agents SDK (`@openai/agents`) runs an Agent with one function tool
// (tool() with zod parameters) through its default model provider, the Responses API, on an
// `openai` client whose baseURL is the endpoint (setDefaultOpenAIClient, setOpenAIAPI('responses'),
// tracing off). The SDK runs the tool itself and loops until the model answers; turn 2 is a run
// on the first run's history plus the new user message.
//
// Variants: run (run()), stream (run() with stream: true, the events consumed).

import OpenAI from 'openai';
import { z } from 'zod';
import { Agent, run, tool, user, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from '@openai/agents';
import { TOOL_NAME, TOOL_DESCRIPTION, TURN1, TURN2, WANT1, WANT2, expect, expectText, expectNotHidden, LocalTool, main } from './lib.mjs';

setTracingDisabled(true);
setOpenAIAPI('responses');

// names returns the names of every call the run saw: its items and the raw model responses.
function names(result) {
  const fromItems = result.newItems.map((i) => i.rawItem?.name).filter(Boolean);
  const fromResponses = result.rawResponses.flatMap((r) => r.output.map((o) => o.name).filter(Boolean));
  return [...fromItems, ...fromResponses];
}

async function conversation(ctx, streamed) {
  setDefaultOpenAIClient(new OpenAI({ baseURL: ctx.openaiBase, apiKey: ctx.apiKey, defaultHeaders: ctx.headers, fetch: ctx.wire.fetch }));
  const local = new LocalTool();
  const readFile = tool({
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    parameters: z.object({ path: z.string().describe('the file to read') }),
    execute: async (args) => local.run(args),
  });
  const agent = new Agent({ name: 'notes', instructions: 'You help with the notes.', model: ctx.model, tools: [readFile] });

  const go = async (input, step) => {
    if (!streamed) return run(agent, input);
    const result = await run(agent, input, { stream: true });
    let text = '';
    let events = 0;
    for await (const ev of result) {
      events++;
      if (ev.type === 'raw_model_stream_event' && ev.data?.type === 'output_text_delta') text += ev.data.delta;
    }
    await result.completed;
    expect(result.error == null, `${step}: the streamed run failed: ${result.error}`);
    expect(events > 0, `${step}: the streamed run had no events`);
    expect(text.endsWith(String(result.finalOutput)), `${step}: the streamed text ${JSON.stringify(text)} does not end with the final output ${JSON.stringify(result.finalOutput)}`);
    return result;
  };

  let step = 'turn 1';
  const r1 = await go(TURN1, step);
  local.check();
  expectNotHidden(names(r1), step);
  const types = r1.newItems.map((i) => i.type);
  expect(
    JSON.stringify(types) === JSON.stringify(['tool_call_item', 'tool_call_output_item', 'message_output_item']),
    `${step}: run items ${JSON.stringify(types)}, want a read_file call, its output and a message`,
  );
  expect(r1.newItems[0].rawItem.name === TOOL_NAME, `${step}: the call is ${JSON.stringify(r1.newItems[0].rawItem)}`);
  expectText(r1.finalOutput, WANT1, step);

  step = 'turn 2';
  const r2 = await go([...r1.history, user(TURN2)], step);
  expectNotHidden(names(r2), step);
  expect(
    r2.newItems.length === 1 && r2.newItems[0].type === 'message_output_item',
    `${step}: run items ${JSON.stringify(r2.newItems.map((i) => i.type))}, want one message`,
  );
  expectText(r2.finalOutput, WANT2, step);
  local.check();
  return { texts: [r1.finalOutput, r2.finalOutput] };
}

await main(
  'agents',
  ['@openai/agents', 'openai', 'zod'],
  {
    run: { api: 'responses', run: (ctx) => conversation(ctx, false) },
    stream: { api: 'responses', run: (ctx) => conversation(ctx, true) },
  },
  (e) => (e instanceof OpenAI.APIError ? `the endpoint answered ${e.status ?? '(no status)'}: ${e.message}` : null),
);
