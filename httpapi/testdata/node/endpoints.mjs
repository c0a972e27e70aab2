// endpoints.mjs: the official `openai` and `@anthropic-ai/sdk` clients on the routes around the
// main ones, against the Hippocam proxy in front of the simulated model: a stored response read
// back (responses.retrieve), token counts (responses.inputTokens.count, messages.countTokens),
// compaction and the request after it (responses.compact), and routes passed through to the
// upstream (models.retrieve, embeddings.create, which asks for base64 by default).
//
// Environment: HIPPOCAM_BASE_URL (…/v1, required), HIPPOCAM_MODEL (optional, default
// hippocam-sim). Prints one JSON line; exits 1 with the reason on stderr on any failure, 2 when
// the environment is incomplete.

import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const baseURL = process.env.HIPPOCAM_BASE_URL;
const model = process.env.HIPPOCAM_MODEL || 'hippocam-sim';
if (!baseURL) {
  console.error('endpoints: set HIPPOCAM_BASE_URL (such as http://127.0.0.1:8080/v1)');
  process.exit(2);
}

function expect(ok, what) {
  if (!ok) throw new Error(what);
}

async function run() {
  const openai = new OpenAI({ baseURL, apiKey: 'hippocam-no-key' });
  const anthropic = new Anthropic({ baseURL: baseURL.replace(/\/v1\/?$/, ''), apiKey: 'hippocam-no-key' });
  const out = {};

  // A stored answer, read back.
  const { data: first, response } = await openai.responses.create({ model, input: 'fact: the key is 42.\n!say noted' }).withResponse();
  const session = response.headers.get('hippocam-session');
  expect(first.output_text === 'noted', `first answer ${JSON.stringify(first.output_text)}`);
  const again = await openai.responses.retrieve(first.id);
  expect(again.id === first.id && again.output_text === 'noted', `retrieve: ${JSON.stringify(again)}`);
  out.retrieve = again.status;

  // The history as the client keeps it, counted, then compacted.
  const history = [{ role: 'user', content: 'fact: the key is 42.\n!say noted' }, ...first.output];
  const count = await openai.responses.inputTokens.count({ model, input: [...history, { role: 'user', content: '!say next' }] });
  expect(count.object === 'response.input_tokens' && count.input_tokens > 0, `input tokens: ${JSON.stringify(count)}`);
  out.input_tokens = count.input_tokens;
  const compacted = await openai.responses.compact({ model, input: history });
  const last = compacted.output[compacted.output.length - 1];
  expect(compacted.object === 'response.compaction' && last.type === 'compaction' && last.encrypted_content, `compact: ${JSON.stringify(compacted)}`);
  out.compacted_items = compacted.output.length;
  const { data: after, response: afterResponse } = await openai.responses
    .create({ model, input: [...compacted.output, { role: 'user', content: '!say after' }] })
    .withResponse();
  expect(after.output_text === 'after', `after compaction: ${JSON.stringify(after.output_text)}`);
  expect(afterResponse.headers.get('hippocam-session') === session, `after compaction: session ${afterResponse.headers.get('hippocam-session')}, want ${session}`);
  out.session = session;

  // Anthropic's count.
  const counted = await anthropic.messages.countTokens({ model, system: 'Be brief.', messages: [{ role: 'user', content: '!say hi' }] });
  expect(counted.input_tokens > 0, `countTokens: ${JSON.stringify(counted)}`);
  out.count_tokens = counted.input_tokens;

  // Passed through to the upstream.
  const m = await openai.models.retrieve(model);
  expect(m.id === model, `models.retrieve: ${JSON.stringify(m)}`);
  const emb = await openai.embeddings.create({ model, input: ['a', 'b'] });
  expect(emb.data.length === 2 && emb.data[0].embedding.length === 8, `embeddings: ${JSON.stringify(emb).slice(0, 200)}`);
  out.embedding = emb.data[0].embedding.length;
  return out;
}

run().then(
  (out) => console.log(JSON.stringify({ ok: true, ...out })),
  (err) => {
    console.error(`endpoints: ${err.message}`);
    console.log(JSON.stringify({ ok: false, error: err.message }));
    process.exit(1);
  },
);
