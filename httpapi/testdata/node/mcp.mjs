// mcp.mjs drives Hippocam's MCP server with the official MCP TypeScript client
// (`@modelcontextprotocol/sdk`), as a desktop or IDE agent would: over stdio, starting
// `hippocam mcp` itself, or over Streamable HTTP at a serve's /mcp with an API key. It checks
// nothing of Hippocam's answers: it runs its scenario, prints every answer as one JSON line on
// stdout, and the Go test that runs it (internal/cli/mcp_test.go) judges them.
//
// Scenarios (the first argument):
//   owner     lists the tools, resources and templates and the sessions; searches the session
//             for the query and recalls the first hit's ref; gets the advisory for the task;
//             reports the outcome; reads the lessons file and the session's expansion; then the
//             faults: an unknown tool, an argument of the wrong type, a session that does not
//             exist.
//   stranger  as a tenant that does not own the session: lists sessions and resources, tries
//             to search, recall, end and read the session, reads the lessons file and searches
//             the lessons.
//
// Environment:
//   HIPPOCAM_MCP_COMMAND, HIPPOCAM_MCP_ARGS (a JSON array)   stdio: the server to start
//   HIPPOCAM_MCP_URL, HIPPOCAM_API_KEY (optional)            Streamable HTTP: the endpoint
//   HIPPOCAM_SESSION, HIPPOCAM_QUERY, HIPPOCAM_TASK, HIPPOCAM_FEEDBACK   what the scenario uses
//
// Exits 1 with the reason on stderr when a call that must answer throws, 2 when the environment
// is incomplete.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { versionOf } from './lib.mjs';

const scenario = process.argv[2];
const env = process.env;
const session = env.HIPPOCAM_SESSION;
if (!['owner', 'stranger'].includes(scenario) || !session || (!env.HIPPOCAM_MCP_COMMAND && !env.HIPPOCAM_MCP_URL)) {
  console.error('mcp.mjs owner|stranger: set HIPPOCAM_SESSION and HIPPOCAM_MCP_COMMAND (stdio) or HIPPOCAM_MCP_URL (HTTP)');
  process.exit(2);
}

function transport() {
  if (env.HIPPOCAM_MCP_COMMAND) {
    return new StdioClientTransport({ command: env.HIPPOCAM_MCP_COMMAND, args: JSON.parse(env.HIPPOCAM_MCP_ARGS || '[]'), stderr: 'inherit' });
  }
  const headers = env.HIPPOCAM_API_KEY ? { Authorization: `Bearer ${env.HIPPOCAM_API_KEY}` } : {};
  return new StreamableHTTPClientTransport(new URL(env.HIPPOCAM_MCP_URL), { requestInit: { headers } });
}

// text joins the text contents of a tool result.
function text(res) {
  return (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

// tool calls a tool and returns what it answered, a tool error included.
async function tool(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  return { isError: Boolean(res.isError), text: text(res), structured: res.structuredContent ?? null };
}

// attempt runs a call that may fail with a protocol error and returns its answer or its error.
async function attempt(fn) {
  try {
    return { answer: await fn() };
  } catch (err) {
    return { error: String(err.message || err), code: err.code ?? null };
  }
}

async function read(client, uri) {
  return attempt(async () => {
    const res = await client.readResource({ uri });
    return res.contents.map((c) => ({ uri: c.uri, mimeType: c.mimeType, text: c.text }));
  });
}

async function owner(client, out) {
  out.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, required: t.inputSchema.required || [], hasOutputSchema: Boolean(t.outputSchema) }));
  out.resources = (await client.listResources()).resources.map((r) => r.uri);
  out.templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
  out.sessions = await tool(client, 'list_sessions', {});
  out.search = await tool(client, 'search_memory', { session, query: env.HIPPOCAM_QUERY });
  const hit = out.search.structured?.hits?.[0];
  if (hit) {
    out.recall = await tool(client, 'recall_memory', { session, ref: hit.open });
  }
  out.advisory = await tool(client, 'get_advisory', { task: env.HIPPOCAM_TASK });
  out.outcome = await tool(client, 'report_outcome', { session, feedback: env.HIPPOCAM_FEEDBACK, success: false, reward: 0 });
  out.lessons = await read(client, 'hippocam://lessons.md');
  const listed = (out.sessions.structured?.sessions || []).find((s) => s.id === session);
  out.expand = listed ? await read(client, listed.resource) : null;
  out.faults = {
    unknownTool: await attempt(() => client.callTool({ name: 'forget_everything', arguments: {} })),
    wrongType: await tool(client, 'search_memory', { session: 5, query: env.HIPPOCAM_QUERY }),
    ghost: await tool(client, 'search_memory', { session: 'ghost', query: env.HIPPOCAM_QUERY }),
  };
}

async function stranger(client, out) {
  out.sessions = await tool(client, 'list_sessions', {});
  out.resources = (await client.listResources()).resources.map((r) => r.uri);
  out.search = await tool(client, 'search_memory', { session, query: env.HIPPOCAM_QUERY });
  out.recall = await tool(client, 'recall_memory', { session, ref: 'r1' });
  out.outcome = await tool(client, 'report_outcome', { session, feedback: env.HIPPOCAM_FEEDBACK || 'x' });
  out.ghost = await tool(client, 'search_memory', { session: 'ghost', query: env.HIPPOCAM_QUERY });
  out.expand = await read(client, `hippocam://sessions/${encodeURIComponent(session)}/expand`);
  out.lessons = await read(client, 'hippocam://lessons.md');
  out.searchLessons = await tool(client, 'search_lessons', { query: '' });
}

const out = { ok: false, sdk: versionOf('@modelcontextprotocol/sdk'), scenario, transport: env.HIPPOCAM_MCP_COMMAND ? 'stdio' : 'http' };
const client = new Client({ name: 'hippocam-mcp-driver', version: '1.0.0' });
try {
  await client.connect(transport());
  out.server = client.getServerVersion();
  await (scenario === 'owner' ? owner : stranger)(client, out);
  out.ok = true;
} catch (err) {
  out.error = String(err.stack || err);
  console.error(`mcp.mjs ${scenario}: ${out.error}`);
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(out));
process.exit(out.ok ? 0 : 1);
