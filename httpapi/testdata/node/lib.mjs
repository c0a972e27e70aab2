// lib.mjs is what the client scripts (openai.mjs, agents.mjs, aisdk.mjs, langchain.mjs,
// anthropic.mjs) share: the environment, the conversation they all hold, the checks, a fetch
// that watches the wire, and the one JSON line each prints.
//
// The conversation, in every client and format, in a session of its own:
//
//   turn 1  user:   "Read the notes.\n!call read_file {"path":"notes.txt"}"
//           model:  calls read_file with {"path":"notes.txt"}
//           tool:   the script runs read_file locally: "notes: the launch is on friday\n!say the notes are read"
//           model:  "the notes are read"
//   turn 2  user:   "!say all done"
//           model:  "all done"
//
// Environment:
//   HIPPOCAM_BASE_URL (or BASE_URL)   the endpoint's root or its /v1 URL, such as
//                                     http://127.0.0.1:8080 (required); OpenAI clients get
//                                     ROOT/v1, the Anthropic client ROOT
//   HIPPOCAM_SESSION (or SESSION)     session-name prefix (required); each variant uses
//                                     PREFIX-CLIENT-VARIANT in its Hippocam-Session header
//   HIPPOCAM_API_KEY                  optional; a placeholder key otherwise
//   HIPPOCAM_MODEL                    optional, default hippocam-sim
//
// Usage: node CLIENT.mjs [VARIANT…]   (no variant: all of the client's variants, in order)
//
// Exit status: 0 when every variant passed, 1 on any mismatch or error (the reason on stderr and
// in the JSON line's "error"), 2 when the environment or the arguments are wrong.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export const TOOL_NAME = 'read_file';
export const TOOL_DESCRIPTION = 'Read a text file of the workspace and return its content.';
export const TOOL_JSON_SCHEMA = {
  type: 'object',
  properties: { path: { type: 'string', description: 'the file to read' } },
  required: ['path'],
  additionalProperties: false,
};
export const TOOL_ARGS = { path: 'notes.txt' };
export const TURN1 = 'Read the notes.\n!call read_file {"path":"notes.txt"}';
export const TOOL_RESULT = 'notes: the launch is on friday\n!say the notes are read';
export const WANT1 = 'the notes are read';
export const TURN2 = '!say all done';
export const WANT2 = 'all done';

// HIDDEN are the tools that Hippocam answers itself: a call of one must never reach a client.
export const HIDDEN = new Set(['recall', 'search']);

// API_PATHS are the routes each format must use, as the end of the request path.
export const API_PATHS = { chat: '/chat/completions', responses: '/responses', messages: '/messages' };

// Mismatch is a failed check: the endpoint answered, but not as the conversation requires.
export class Mismatch extends Error {}

export function expect(cond, what) {
  if (!cond) throw new Mismatch(what);
}

// expectText checks a turn's final answer.
export function expectText(got, want, step) {
  expect(got === want, `${step}: answer ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

// expectNotHidden checks the names of the tool calls a client received.
export function expectNotHidden(names, step) {
  for (const n of names) {
    expect(!HIDDEN.has(n), `${step}: a call of Hippocam's internal tool "${n}" reached the client`);
  }
}

// expectReadFile checks one call's arguments (a JSON string or an object) and returns them.
export function expectReadFile(args, step) {
  let v = args;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch (e) {
      throw new Mismatch(`${step}: the arguments ${JSON.stringify(args)} are not JSON: ${e.message}`);
    }
  }
  expect(
    v !== null && typeof v === 'object' && v.path === TOOL_ARGS.path && Object.keys(v).length === 1,
    `${step}: read_file arguments ${JSON.stringify(args)}, want ${JSON.stringify(TOOL_ARGS)}`,
  );
  return v;
}

// LocalTool is read_file as every script runs it. SDKs that run tools themselves turn a tool's
// exception into a message for the model, so a failed check is also kept for check().
export class LocalTool {
  constructor() {
    this.runs = 0;
    this.failure = null;
  }

  run(args) {
    try {
      expectReadFile(args, `read_file call ${this.runs + 1}`);
    } catch (e) {
      this.failure ??= e;
      throw e;
    }
    this.runs++;
    return TOOL_RESULT;
  }

  // check throws the first failed check of a run, then requires exactly one run.
  check() {
    if (this.failure) throw this.failure;
    expect(this.runs === 1, `read_file ran ${this.runs} times, want 1`);
  }
}

export function config() {
  const base = process.env.HIPPOCAM_BASE_URL || process.env.BASE_URL;
  const prefix = process.env.HIPPOCAM_SESSION || process.env.SESSION;
  if (!base || !prefix) {
    console.error('set HIPPOCAM_BASE_URL (such as http://127.0.0.1:8080 or http://127.0.0.1:8080/v1) and HIPPOCAM_SESSION');
    process.exit(2);
  }
  const root = base.replace(/\/+$/, '').replace(/\/v1$/, '');
  return {
    root,
    openaiBase: root + '/v1',
    anthropicBase: root,
    prefix,
    apiKey: process.env.HIPPOCAM_API_KEY || 'hippocam-no-key',
    model: process.env.HIPPOCAM_MODEL || 'hippocam-sim',
  };
}

// versionOf reads an installed package's version.
export function versionOf(pkg) {
  try {
    return JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url), 'utf8')).version;
  } catch {
    return null;
  }
}

// hiddenCalls returns the names of hidden-tool calls in one response body, JSON or server-sent
// events, in any of the three formats: an object named recall or search that carries arguments
// or input, or whose type is a call (function_call, tool_use…), or the function of a chat tool
// call. Tool definitions (parameters, input_schema) are not calls.
export function hiddenCalls(text) {
  const docs = [];
  try {
    docs.push(JSON.parse(text));
  } catch {
    for (const line of text.split('\n')) {
      const m = /^data:\s?(.*)$/.exec(line.trimEnd());
      if (!m || m[1] === '[DONE]') continue;
      try {
        docs.push(JSON.parse(m[1]));
      } catch {
        // not JSON: nothing to look at
      }
    }
  }
  const found = [];
  const callTypes = new Set(['function_call', 'tool_use', 'server_tool_use', 'custom_tool_call', 'mcp_call']);
  const walk = (v) => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (v === null || typeof v !== 'object') return;
    if (typeof v.name === 'string' && HIDDEN.has(v.name) && ('arguments' in v || 'input' in v || callTypes.has(v.type))) {
      found.push(v.name);
    }
    if (v.function && typeof v.function === 'object' && HIDDEN.has(v.function.name) && !('parameters' in v.function)) {
      found.push(v.function.name);
    }
    Object.values(v).forEach(walk);
  };
  docs.forEach(walk);
  return found;
}

// Wire watches one session's HTTP traffic through the fetch it hands to the SDK. The fetch
// changes nothing: it calls the global fetch with the SDK's own arguments and returns its
// response. It records each request (method, path, the Hippocam-Session header sent), the status,
// the Hippocam-Session header the endpoint answered with (the session it actually used), and it
// reads a copy of each body to find hidden-tool calls whatever the SDK does with them.
export class Wire {
  constructor(session) {
    this.session = session;
    this.requests = [];
    this.scans = [];
    this.fetch = async (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      const headers = new Headers(init?.headers ?? (typeof input === 'object' && 'headers' in input ? input.headers : undefined));
      const rec = {
        method: init?.method ?? (typeof input === 'object' && input.method) ?? 'GET',
        path: new URL(url).pathname,
        session_sent: headers.get('hippocam-session'),
      };
      this.requests.push(rec);
      const res = await globalThis.fetch(input, init);
      rec.status = res.status;
      rec.session_used = res.headers.get('hippocam-session');
      if (res.body) {
        this.scans.push(
          res
            .clone()
            .text()
            .then((t) => {
              const h = hiddenCalls(t);
              if (h.length > 0) rec.hidden_calls = h;
            })
            .catch(() => {}),
        );
      }
      return res;
    };
  }

  // leaks returns the hidden-tool calls seen on the wire so far, once every body has been read.
  async leaks() {
    await Promise.all(this.scans);
    return this.requests.flatMap((r) => r.hidden_calls ?? []);
  }

  // check verifies the whole session's traffic: exactly `count` POSTs, all to the format's route
  // and answered 200, each naming the session, none answered under another session (a fork:
  // the endpoint did not take the resent history as a continuation), no hidden-tool call.
  async check(api, count) {
    const leaks = await this.leaks();
    expect(leaks.length === 0, `a call of Hippocam's internal tool "${leaks[0]}" reached the client on the wire`);
    const seen = this.requests.map((r) => `${r.method} ${r.path} ${r.status}`).join(', ');
    expect(this.requests.length === count, `${this.requests.length} requests, want ${count} (retries or extra calls?): ${seen}`);
    for (const [i, r] of this.requests.entries()) {
      expect(r.method === 'POST' && r.path.endsWith(API_PATHS[api]), `request ${i + 1} is ${r.method} ${r.path}, want POST …${API_PATHS[api]}`);
      expect(r.status === 200, `request ${i + 1} answered ${r.status}`);
      expect(r.session_sent === this.session, `request ${i + 1} sent Hippocam-Session ${JSON.stringify(r.session_sent)}, want ${JSON.stringify(this.session)}`);
      expect(
        r.session_used === null || r.session_used === this.session,
        `request ${i + 1} was answered in session "${r.session_used}", not "${this.session}": the endpoint did not take the resent history as a continuation`,
      );
    }
  }
}

// main runs the chosen variants of one client and prints the JSON line. variants maps each name
// to { api, run(ctx) }; run returns what it saw (texts and the like) and throws on a mismatch.
// ctx holds the config, the variant's session name, its Wire and its headers. Each variant runs
// in a process of its own, as a separate agent would: SDKs keep process-wide defaults (the
// Agents SDK's default client, for one), so with several variants this process runs each as a
// child, `node SCRIPT VARIANT`, and merges their lines.
export async function main(client, sdks, variants, describeError = () => null) {
  const cfg = config();
  const names = process.argv.slice(2);
  for (const n of names) {
    if (!(n in variants)) {
      console.error(`${client}: unknown variant ${JSON.stringify(n)}; the variants are ${Object.keys(variants).join(', ')}`);
      process.exit(2);
    }
  }
  const chosen = names.length > 0 ? names : Object.keys(variants);
  const summary = { ok: false, client, sdks: Object.fromEntries(sdks.map((p) => [p, versionOf(p)])), node: process.version, base_url: cfg.root, variants: [] };
  let failure = null;
  if (chosen.length > 1) {
    for (const name of chosen) {
      const r = spawnSync(process.execPath, [process.argv[1], name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
      let child = null;
      try {
        child = JSON.parse(r.stdout);
      } catch {
        failure = `${client} ${name}: the variant's process printed no result (status ${r.status}): ${r.stdout}`;
      }
      if (child) {
        summary.variants.push(...child.variants);
        if (!child.ok) failure = child.error ?? `${client} ${name}: failed`;
      }
      if (failure) break;
    }
  } else {
    failure = await runVariant(client, cfg, chosen[0], variants[chosen[0]], summary, describeError);
  }
  summary.ok = failure === null;
  if (failure) summary.error = failure;
  console.log(JSON.stringify(summary));
  if (failure) {
    if (chosen.length === 1) console.error(failure);
    process.exit(1);
  }
}

// runVariant runs one variant, adds its result to summary and returns its failure, or null.
async function runVariant(client, cfg, name, { api, run }, summary, describeError) {
  const session = `${cfg.prefix}-${client}-${name}`;
  const wire = new Wire(session);
  const result = { variant: name, api, session, ok: false };
  summary.variants.push(result);
  let failure = null;
  try {
    Object.assign(result, await run({ ...cfg, session, wire, headers: { 'Hippocam-Session': session } }));
    await wire.check(api, 3);
    result.ok = true;
  } catch (e) {
    // A leak explains the failures it causes (an SDK that cannot run an unknown tool, say).
    const leaks = await wire.leaks();
    if (leaks.length > 0) {
      failure = `mismatch: a call of Hippocam's internal tool "${leaks[0]}" reached the client (then: ${e?.message ?? e})`;
    } else if (e instanceof Mismatch) {
      failure = `mismatch: ${e.message}`;
    } else {
      failure = describeError(e) ?? `error: ${e?.stack ?? e}`;
    }
    failure = `${client} ${name} (${api}, session ${session}): ${failure}`;
    result.error = failure;
  } finally {
    result.requests = wire.requests;
  }
  return failure;
}
