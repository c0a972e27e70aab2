// Hippocam memory viewer. Plain JavaScript, no dependencies.
//
// Every piece of session data is untrusted text: it reaches the page only through textContent
// and attribute values (see el below), never as markup.
'use strict';

(() => {
  const KEY_STORAGE = 'hippocam.apiKey';
  const POLL_MS = 4000;
  const COLLAPSE_CHARS = 700;
  const COLLAPSE_LINES = 12;
  const STACK_LOG_SHOWN = 12;
  const KNOWLEDGE_SHOWN = 8;
  const FORKS_SHOWN = 3; // a session with more forks than this lists them folded, until asked
  const CONVERSATION_LINKS = 8; // a session's page links this many of its conversation's other sessions

  const KINDS = {
    raw: 'raw',
    guidance: 'guidance',
    intent_memory: 'intent memory',
    prefix_memory: 'prefix memory',
    advisory: 'advisory',
    framing: 'framing',
    branch: 'branch',
  };
  const KIND_HINT = {
    raw: 'From the agent, the user or a tool',
    guidance: 'Written by JANUS (intent stack maintenance)',
    intent_memory: 'Written by PRECIP: a finished intent, consolidated',
    prefix_memory: 'Written by PALIM: an old prefix, consolidated',
    advisory: 'Read out of the task’s cluster by the learning layer when the task started',
    framing: 'A mark where the agent’s framing (its system and developer messages) changed; it holds that version',
    branch: 'A mark where an answer was regenerated; it holds the earlier answer',
  };
  const ROLE_ORDER = ['agent', 'janus', 'precip', 'palim'];
  const EVALUATIONS = ['good', 'bad', 'neutral'];

  const state = {
    key: readKey(),
    sessions: [],
    listLoaded: false,
    selected: undefined, // session id; null when none is selected, undefined before the first route
    page: null, // another page instead of a session: {name: 'clusters', 'lessons' or 'jobs', id}
    detail: null, // the session as the API returned it
    detailError: null,
    view: 'context', // 'context' or 'transcript'
    transcript: null, // {version, messages}
    nodes: new Map(), // ref -> children, for the selected session (archived nodes never change)
    open: new Set(), // keys of opened nodes
    expanded: new Set(), // keys of expanded long contents
    traces: new Set(), // keys of opened recall traces
    raws: new Set(), // keys of messages whose raw wire form is shown
    framingOpen: false, // the current framing's card is open
    framingVersions: new Map(), // ref of a framing mark -> its version number (never changes)
    framingTried: null, // the session version whose expansion was fetched to number framing marks
    focusAt: null, // a divergence point (transcript messages) to scroll to in the transcript
    transcriptLoading: null, // {id, version, promise} of the expansion being fetched
    groupOpen: new Map(), // session id -> whether its forks are listed (when the user chose)
    showAllLog: false,
    polling: false,
    listSig: '', // what the session list shows, to skip identical rebuilds
    detailLoading: null, // id of the session whose detail is being fetched
    again: false, // a refresh was asked for while one was running
    lastRefresh: null,
  };

  // ---------- small DOM helpers ----------

  // el builds an element. attrs: class, text, title, on* handlers (functions), anything else as an
  // attribute. children: nodes, strings (as text), or null/false (skipped), possibly nested arrays.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === 'text') node.textContent = String(value);
      else if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? '' : String(value));
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      if (Array.isArray(child)) append(node, child);
      else if (child instanceof Node) node.appendChild(child);
      else node.appendChild(document.createTextNode(String(child)));
    }
  }

  const $ = (id) => document.getElementById(id);

  function readKey() {
    try { return localStorage.getItem(KEY_STORAGE) || ''; } catch { return ''; }
  }

  function writeKey(key) {
    try {
      if (key) localStorage.setItem(KEY_STORAGE, key);
      else localStorage.removeItem(KEY_STORAGE);
    } catch { /* storage may be disabled; the key then lives in memory only */ }
  }

  // ---------- formatting ----------

  const intFmt = new Intl.NumberFormat('en-US');
  const fmtInt = (n) => (typeof n === 'number' && isFinite(n) ? intFmt.format(Math.round(n)) : '–');

  function fmtCompact(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '–';
    const a = Math.abs(n);
    if (a >= 1e6) return (n / 1e6).toFixed(a >= 1e7 ? 0 : 1) + 'M';
    if (a >= 1e4) return Math.round(n / 1e3) + 'k';
    if (a >= 1e3) return (n / 1e3).toFixed(1) + 'k';
    return String(Math.round(n));
  }

  function fmtCost(usd) {
    if (typeof usd !== 'number' || !isFinite(usd)) return '–';
    if (usd === 0) return '$0';
    if (usd < 0.01) return '$' + usd.toFixed(4);
    if (usd < 100) return '$' + usd.toFixed(3);
    return '$' + intFmt.format(Math.round(usd));
  }

  // share accepts a fraction (0..1); a value above 1 is read as a percentage already.
  function fmtShare(x) {
    if (typeof x !== 'number' || !isFinite(x)) return '–';
    const pct = x > 1 ? x : x * 100;
    return (pct >= 10 || pct === 0 ? Math.round(pct) : pct.toFixed(1)) + '%';
  }

  function fmtTime(s) {
    const d = new Date(s);
    return isNaN(d) ? '' : d.toLocaleString();
  }

  function fmtAgo(s) {
    const d = new Date(s);
    if (isNaN(d)) return '';
    const secs = Math.round((Date.now() - d.getTime()) / 1000);
    if (secs < 5) return 'just now';
    if (secs < 60) return secs + ' s ago';
    if (secs < 3600) return Math.floor(secs / 60) + ' min ago';
    if (secs < 86400) return Math.floor(secs / 3600) + ' h ago';
    return d.toLocaleDateString();
  }

  const plural = (n, one, many) => fmtInt(n) + ' ' + (n === 1 ? one : (many || one + 's'));
  const kindOf = (m) => (Object.hasOwn(KINDS, m.kind) ? m.kind : 'raw');
  const sumTokens = (msgs) => msgs.reduce((t, m) => t + (typeof m.tokens === 'number' ? m.tokens : 0), 0);

  // ---------- the API ----------

  class APIError extends Error {
    constructor(status, message, code) {
      super(message);
      this.status = status;
      this.code = code || '';
    }
  }

  // call sends one request with the key and returns the response when it succeeded; an error
  // answer becomes an APIError (and a 401 asks for a key).
  async function call(path, method, accept) {
    const headers = { Accept: accept || 'application/json' };
    if (state.key) headers.Authorization = 'Bearer ' + state.key;
    let res;
    try {
      res = await fetch(path, { method: method || 'GET', headers, cache: 'no-store' });
    } catch (err) {
      throw new APIError(0, 'The server cannot be reached (' + err.message + ').');
    }
    if (res.ok) return res;
    let body = null;
    try { body = await res.json(); } catch { body = null; }
    const e = (body && body.error) || {};
    const err = new APIError(res.status, e.message || res.status + ' ' + res.statusText, e.code);
    if (res.status === 401) askForKey(err);
    throw err;
  }

  async function api(path, method) {
    const res = await call(path, method);
    if (res.status === 204) return null;
    try { return await res.json(); } catch { return null; }
  }

  // apiText fetches a text document (the lessons export) with the key.
  async function apiText(path, accept) {
    const res = await call(path, 'GET', accept || 'text/markdown, text/plain');
    const name = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') || '');
    return { text: await res.text(), type: res.headers.get('Content-Type') || 'text/plain', filename: name ? name[1] : '' };
  }

  const sessionPath = (id) => '/api/sessions/' + encodeURIComponent(id);

  // ---------- authentication ----------

  function askForKey(err) {
    const form = $('auth');
    const wasHidden = form.hidden;
    form.hidden = false;
    $('auth-message').textContent = state.key
      ? 'The server refused this API key (' + err.message + '). Enter another one.'
      : 'This server asks for an API key. It is kept in this browser only (localStorage) and sent as a bearer token.';
    if (wasHidden) $('api-key').focus();
  }

  function keyAccepted() {
    $('auth').hidden = true;
    $('forget-key').hidden = !state.key;
  }

  function onKeySubmit(ev) {
    ev.preventDefault();
    const key = $('api-key').value.trim();
    if (!key) return;
    state.key = key;
    writeKey(key);
    $('api-key').value = '';
    refresh(true);
  }

  function onForgetKey() {
    state.key = '';
    writeKey('');
    $('forget-key').hidden = true;
    refresh(true);
  }

  // ---------- errors ----------

  function showError(msg) {
    const b = $('error');
    b.textContent = msg;
    b.hidden = !msg;
  }

  // ---------- the session list ----------

  async function loadSessions() {
    const body = await api('/api/sessions');
    keyAccepted();
    state.sessions = (body && Array.isArray(body.sessions)) ? body.sessions : [];
    state.listLoaded = true;
    renderSessions();
  }

  const timeOf = (t) => {
    const x = new Date(t).getTime();
    return isNaN(x) ? -Infinity : x;
  };

  // sessionTree arranges the sessions as a forest of client conversations: a fork beneath the
  // session it forked from, a title request or a subagent beneath the session it serves (its
  // parent), and the other sessions of a conversation (its group) beneath the conversation's
  // main one, the one with the most messages; a session whose origin is not listed stays at the
  // top. Each level is sorted by its latest activity (a session's own update or any of its
  // kids'), newest first.
  function sessionTree(sessions) {
    const nodes = new Map();
    for (const s of sessions) {
      const id = String(s.id);
      if (!nodes.has(id)) nodes.set(id, { id, s, kids: [] });
    }
    const leads = new Map(); // group -> the node its other roots go beneath
    for (const n of nodes.values()) {
      const g = n.s.group ? String(n.s.group) : '';
      if (!g || n.s.fork || n.s.parent || n.s.kind) continue;
      const lead = leads.get(g);
      if (!lead || (n.s.messages || 0) > (lead.s.messages || 0)) leads.set(g, n);
    }
    const parentOf = (n) => {
      const from = n.s.fork && n.s.fork.from != null ? String(n.s.fork.from) : '';
      if (from) return from !== n.id && nodes.has(from) ? from : '';
      const parent = n.s.parent != null ? String(n.s.parent) : '';
      if (parent && parent !== n.id && nodes.has(parent)) return parent;
      const lead = n.s.group ? leads.get(String(n.s.group)) : null;
      return lead && lead.id !== n.id ? lead.id : '';
    };
    // A chain of origins that loops (it should not) is cut: its sessions stay at the top.
    const looped = (n) => {
      const seen = new Set([n.id]);
      for (let p = parentOf(n); p; p = parentOf(nodes.get(p))) {
        if (seen.has(p)) return true;
        seen.add(p);
      }
      return false;
    };
    const roots = [];
    for (const n of nodes.values()) {
      const p = looped(n) ? '' : parentOf(n);
      n.parent = p;
      if (p) nodes.get(p).kids.push(n); else roots.push(n);
    }
    const finish = (n) => {
      n.latest = timeOf(n.s.updated_at);
      n.total = 0; // sessions beneath, at any depth
      n.forks = 0; // the forks among them
      for (const k of n.kids) {
        finish(k);
        n.latest = Math.max(n.latest, k.latest);
        n.total += 1 + k.total;
        n.forks += (k.s.fork ? 1 : 0) + k.forks;
      }
      n.kids.sort(byLatest);
    };
    roots.forEach(finish);
    roots.sort(byLatest);
    return roots;
  }

  const byLatest = (a, b) => b.latest - a.latest || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

  // listModel is what the list shows: the visible part of the forest, filtered by id or title. A
  // session that does not match stays (dimmed) when one of its kids does, so a kid keeps its place.
  function listModel(roots, q) {
    let matches = 0;
    const walk = (n) => {
      const match = !q || n.id.toLowerCase().includes(q) || String(n.s.title || '').toLowerCase().includes(q);
      if (match) matches++;
      const kids = n.kids.map(walk).filter(Boolean);
      if (!match && kids.length === 0) return null;
      const chosen = state.groupOpen.get(n.id);
      const open = q ? true : chosen !== undefined ? chosen : n.total <= FORKS_SHOWN || holdsSelected(n);
      return { id: n.id, s: n.s, match, total: n.total, forks: n.forks, kids, open, parentListed: !!n.parent, ago: fmtAgo(n.s.updated_at) };
    };
    const rows = roots.map(walk).filter(Boolean);
    return { rows, matches };
  }

  function holdsSelected(n) {
    return n.kids.some((k) => k.id === state.selected || holdsSelected(k));
  }

  function renderSessions() {
    const list = $('session-list');
    const q = $('session-filter').value.trim().toLowerCase();
    const roots = sessionTree(state.sessions);
    const model = listModel(roots, q);
    const total = state.sessions.length;
    const forks = state.sessions.filter((s) => s.fork && s.fork.from).length;
    // Rebuild only when something visible changed, so that polling does not churn the DOM.
    const sig = JSON.stringify([state.listLoaded, total, state.selected ?? null, q, model]);
    if (sig === state.listSig) return;
    state.listSig = sig;
    $('session-count').textContent = state.listLoaded ? String(total) : '';
    $('session-summary').textContent = !state.listLoaded || total === 0 ? ''
      : q ? fmtInt(model.matches) + ' of ' + plural(total, 'session') + ' match'
        : plural(total, 'session') + (forks ? ', ' + plural(forks, 'fork') : '') + ' · latest first';
    list.replaceChildren();
    if (state.listLoaded && model.rows.length === 0) {
      list.append(el('li', { class: 'empty', 'data-testid': 'sessions-empty',
        text: total ? 'No session matches the filter.' : 'No sessions yet. They appear as agents call the proxy.' }));
      return;
    }
    for (const row of model.rows) list.append(renderSessionNode(row, 0, q));
  }

  function renderSessionNode(row, depth, q) {
    const s = row.s;
    const c = s.consolidations || {};
    const current = row.id === state.selected;
    const fork = s.fork && s.fork.from != null ? s.fork : null;
    const at = fork ? Number(fork.at) || 0 : 0;
    const li = el('li', { class: 'session-node', 'data-testid': 'session-node', 'data-session-id': row.id, 'data-depth': depth },
      el('button', {
        type: 'button', class: 'session' + (current ? ' current' : '') + (row.match ? '' : ' unmatched'),
        'data-testid': 'session-item', 'data-session-id': row.id, 'data-depth': depth,
        'data-fork-from': fork ? String(fork.from) : null,
        'aria-current': current ? 'true' : null,
        title: row.match ? null : 'listed for its forks: it does not match the filter',
        onclick: () => select(row.id),
      },
      s.title ? el('span', { class: 'session-name', 'data-testid': 'session-name', title: s.title, text: s.title })
        : el('span', { class: 'session-id', text: row.id }),
      el('span', { class: 'session-time', title: fmtTime(s.updated_at), text: row.ago }),
      s.title ? el('span', { class: 'session-id session-id-small', text: row.id }) : null,
      s.kind ? el('span', { class: 'conv-note', 'data-testid': 'kind-note', 'data-kind': s.kind,
        title: kindTitle(s, row.parentListed), text: '↳ ' + kindLabel(s.kind) }) : null,
      fork ? el('span', { class: 'fork-note', 'data-testid': 'fork-note', title: 'fork of ' + fork.from },
        '↳ ' + (row.parentListed ? '' : 'fork of ' + fork.from + ', ') + 'forked after ' + plural(at, 'message'),
        row.parentListed ? null : el('span', { class: 'muted', text: ' (origin not listed)' })) : null,
      el('span', { class: 'session-meta' },
        el('span', { text: plural(s.messages || 0, 'msg') }),
        el('span', { text: 'depth ' + (s.depth || 0) }),
        el('span', { class: 'chip chip-intent', title: 'intent consolidations', text: '◇ ' + (c.intent || 0) }),
        el('span', { class: 'chip chip-prefix', title: 'prefix consolidations', text: '▤ ' + (c.prefix || 0) }),
        row.forks ? el('span', { class: 'chip chip-fork', 'data-testid': 'fork-count', title: 'forks beneath this session, at any depth', text: plural(row.forks, 'fork') }) : null,
        row.total > row.forks ? el('span', { class: 'chip chip-conv', 'data-testid': 'related-count',
          title: 'other sessions of this client conversation beneath this one: title requests, subagents, side requests',
          text: plural(row.total - row.forks, 'related session') }) : null)));
    if (row.kids.length === 0) return li;
    if (!q) {
      li.append(el('button', {
        type: 'button', class: 'link fork-toggle', 'data-testid': 'toggle-forks', 'aria-expanded': String(row.open),
        text: (row.open ? '▾ Hide ' : '▸ Show ') + plural(row.total, row.forks === row.total ? 'fork' : 'session'),
        onclick: () => {
          state.groupOpen.set(row.id, !row.open);
          renderSessions();
        },
      }));
    }
    if (row.open) {
      li.append(el('ul', { class: 'forks', 'data-testid': 'forks', 'data-origin': row.id },
        row.kids.map((k) => renderSessionNode(k, depth + 1, q))));
    }
    return li;
  }

  // What a session is within its client conversation, in words.
  function kindLabel(kind) {
    if (kind === 'title') return 'title request';
    if (kind === 'subagent') return 'subagent';
    return String(kind) + ' request';
  }

  function kindTitle(s, parentListed) {
    const of = s.parent ? String(s.parent) : '';
    if (s.kind === 'title') return 'a request in which the client asks a model to title its conversation' + (of ? ' (' + of + ')' : '');
    if (s.kind === 'subagent') return 'an agent that ' + (of ? of : 'another agent') + ' started' + (of && !parentListed ? ' (not listed)' : '');
    return 'a side request of the client: ' + s.kind;
  }

  // ---------- selection and routing ----------

  // The hash names the session, and may name a divergence point to show in its transcript:
  // #/session/ID or #/session/ID/at/N (after N transcript messages). ID is URI-encoded. It may
  // name another page instead: #/clusters, #/clusters/ID (one cluster open), #/lessons or #/jobs.
  function hashRoute() {
    const none = { id: null, at: null, page: null };
    const p = /^#\/(clusters|lessons|jobs)(?:\/(.+))?$/.exec(location.hash);
    if (p) {
      try {
        return { id: null, at: null, page: { name: p[1], id: p[2] === undefined || p[1] !== 'clusters' ? null : decodeURIComponent(p[2]) } };
      } catch {
        return { id: null, at: null, page: { name: p[1], id: null } };
      }
    }
    const m = /^#\/session\/([^/]+)\/at\/([0-9]+)$/.exec(location.hash) || /^#\/session\/(.+)$/.exec(location.hash);
    if (!m) return none;
    try {
      return { id: decodeURIComponent(m[1]), at: m[2] === undefined ? null : Number(m[2]), page: null };
    } catch {
      return none;
    }
  }

  const sessionHash = (id, at) => '#/session/' + encodeURIComponent(id) + (at === undefined || at === null ? '' : '/at/' + at);

  function select(id, at) {
    const hash = id ? sessionHash(id, at) : '';
    if (location.hash !== hash) {
      if (hash) location.hash = hash;
      else history.replaceState(null, '', location.pathname + location.search);
    }
    route();
  }

  // link is an in-page link to a session (at a divergence point), followed even when the hash
  // already names it.
  function sessionLink(id, at, attrs, text) {
    return el('a', Object.assign({ href: sessionHash(id, at), text: text === undefined ? id : text,
      onclick: (ev) => {
        if (ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return; // a new tab or window
        ev.preventDefault();
        select(id, at);
      } }, attrs || {}));
  }

  function route() {
    const { id, at, page } = hashRoute();
    const wasPage = state.page;
    state.page = page;
    renderNav();
    if (page) {
      if (state.selected) clearSelection(null);
      state.selected = null;
      renderSessions();
      pageOf(page).open(page, !wasPage || wasPage.name !== page.name);
      renderDetail();
      return;
    }
    if (id === state.selected && !wasPage) {
      if (id && at !== null) showPoint(at);
      return;
    }
    clearSelection(id);
    if (at !== null) {
      state.view = 'transcript';
      state.focusAt = at;
    }
    renderSessions();
    renderDetail();
    if (id) loadDetail();
  }

  // clearSelection selects the session id (or none) with nothing of it loaded or opened yet.
  function clearSelection(id) {
    state.selected = id;
    state.detail = null;
    state.detailError = null;
    state.transcript = null;
    state.view = 'context';
    state.nodes = new Map();
    state.open = new Set();
    state.expanded = new Set();
    state.traces = new Set();
    state.raws = new Set();
    state.framingOpen = false;
    state.framingVersions = new Map();
    state.framingTried = null;
    state.focusAt = null;
    state.showAllLog = false;
  }

  // renderNav marks the part of the viewer shown: sessions, clusters or lessons.
  function renderNav() {
    const current = state.page ? state.page.name : 'sessions';
    for (const a of document.querySelectorAll('#nav [data-page]')) {
      const on = a.dataset.page === current;
      a.classList.toggle('active', on);
      if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
  }

  // showPoint shows the selected session's transcript at a divergence point.
  async function showPoint(at) {
    state.focusAt = at;
    state.view = 'transcript';
    renderDetail();
    try {
      await loadTranscript();
    } catch (err) {
      if (err.status !== 401) showError('Cannot load the transcript: ' + err.message);
    }
    renderDetail();
  }

  async function loadDetail() {
    const id = state.selected;
    if (!id || state.detailLoading === id) return;
    state.detailLoading = id;
    try {
      const body = await api(sessionPath(id));
      if (state.selected !== id) return;
      keyAccepted();
      state.detail = body;
      state.detailError = null;
    } catch (err) {
      if (state.selected !== id || err.status === 401) return;
      state.detail = null;
      state.detailError = err.status === 404 ? 'This session no longer exists.' : err.message;
    } finally {
      if (state.detailLoading === id) state.detailLoading = null;
    }
    if (state.detail && state.view === 'transcript') {
      try {
        await loadTranscript();
      } catch (err) {
        if (err.status !== 401) showError('Cannot load the transcript: ' + err.message);
      }
    }
    if (state.selected === id) renderDetail();
  }

  // loadTranscript fetches the expansion of the selected session at its current version, once:
  // callers that ask while it is on its way share the request.
  function loadTranscript() {
    const id = state.selected;
    const d = state.detail;
    if (!d || (state.transcript && state.transcript.version === d.version)) return Promise.resolve();
    const pending = state.transcriptLoading;
    if (pending && pending.id === id && pending.version === d.version) return pending.promise;
    const version = d.version;
    const job = { id, version, promise: null };
    job.promise = (async () => {
      try {
        const body = await api(sessionPath(id) + '/expand');
        if (state.selected !== id) return;
        state.transcript = { version, messages: (body && Array.isArray(body.messages)) ? body.messages : [] };
      } finally {
        if (state.transcriptLoading === job) state.transcriptLoading = null;
      }
    })();
    state.transcriptLoading = job;
    return job.promise;
  }

  // ---------- polling ----------

  async function refresh(force) {
    if (state.polling) {
      state.again = state.again || force;
      return;
    }
    state.polling = true;
    try {
      await loadSessions();
      if (state.page) await pageOf(state.page).load(force);
      showError('');
      const sel = state.selected && state.sessions.find((s) => s.id === state.selected);
      if (state.selected && (force || !state.detail || (sel && !sameInstant(sel.updated_at, state.detail.updated_at)))) {
        await loadDetail();
      }
      state.lastRefresh = new Date();
    } catch (err) {
      if (err.status !== 401) showError(err.message);
    } finally {
      state.polling = false;
      renderStatus();
    }
    if (state.again) {
      state.again = false;
      refresh(true);
    }
  }

  // sameInstant compares two timestamps as times, not as strings: the list and the session may
  // spell the same instant differently.
  function sameInstant(a, b) {
    const x = new Date(a).getTime();
    const y = new Date(b).getTime();
    return isNaN(x) || isNaN(y) ? a === b : x === y;
  }

  function renderStatus() {
    const s = $('status');
    s.textContent = state.lastRefresh ? 'Updated ' + state.lastRefresh.toLocaleTimeString() : '';
  }

  function tick() {
    if (document.hidden || !$('auto-refresh').checked || !$('auth').hidden) return;
    refresh(false);
  }

  // ---------- the session detail ----------

  function renderDetail() {
    const main = $('detail');
    const scroll = window.scrollY;
    if (state.page) {
      main.replaceChildren(pageOf(state.page).render(state.page));
      sizeBars(main);
      window.scrollTo(0, scroll);
      return;
    }
    main.replaceChildren();
    if (!state.selected) {
      main.append(renderWelcome());
      return;
    }
    if (state.detailError) {
      main.append(el('div', { class: 'card placeholder', 'data-testid': 'detail-error' },
        el('h2', { text: state.selected }), el('p', { class: 'muted', text: state.detailError })));
      return;
    }
    const d = state.detail;
    if (!d) {
      main.append(el('div', { class: 'card placeholder', 'data-testid': 'detail-loading', text: 'Loading session…' }));
      return;
    }
    const unnumbered = numberFramings(d);
    main.append(
      renderHeader(d),
      renderSummary(d),
      el('div', { class: 'columns' },
        el('div', { class: 'col-main' }, Array.isArray(d.framing) ? renderFraming(d) : null, renderContextCard(d)),
        el('div', { class: 'col-side' }, learning.sessionCard(d), renderStack(d), renderUsage(d), renderStackLog(d))));
    sizeBars(main);
    window.scrollTo(0, scroll);
    if (unnumbered) numberFramingsFromExpansion(d);
    if (state.focusAt !== null && state.view === 'transcript' && state.transcript) {
      const point = main.querySelector('[data-testid="fork-point"][data-at="' + state.focusAt + '"]');
      state.focusAt = null;
      if (point) flash(point);
    }
  }

  function renderWelcome() {
    return el('div', { class: 'card welcome', 'data-testid': 'welcome' },
      el('h2', { text: 'Select a session' }),
      el('p', { class: 'muted', text: 'A session’s context is the first layer of its message tree. Consolidated messages keep their originals beneath them; open them node by node.' }),
      el('ul', { class: 'legend' },
        Object.keys(KINDS).map((k) => el('li', {}, kindBadge(k), el('span', { class: 'muted', text: KIND_HINT[k] })))));
  }

  function renderHeader(d) {
    return el('div', { class: 'detail-head' },
      el('div', {},
        el('h1', { id: 'session-title', 'data-testid': 'session-title', 'data-session-id': d.id, text: d.title || d.id }),
        d.title ? el('div', { class: 'mono small session-id-line', 'data-testid': 'session-id', text: d.id }) : null,
        el('div', { class: 'muted small' },
          el('span', { text: 'created ' + fmtTime(d.created_at) }), ' · ',
          el('span', { text: 'updated ' + fmtTime(d.updated_at) }), ' · ',
          el('span', { 'data-testid': 'session-version', text: 'version ' + (d.version ?? '–') }),
          d.recording ? [' · ', renderRecordingLink(d)] : null),
        renderForkInfo(d), renderConversation(d)),
      el('button', { type: 'button', class: 'btn btn-danger', id: 'delete-session', 'data-testid': 'delete-session',
        onclick: () => deleteSession(d.id), text: 'Delete session' }));
  }

  // renderRecordingLink links the session's recorded exchanges with the upstream (serve
  // --record). With a key the file is fetched with it (a plain link could not carry it) and handed
  // to the browser as a download; without one the link itself downloads it.
  function renderRecordingLink(d) {
    const rec = d.recording;
    return el('a', {
      href: rec.url, download: '', class: 'link', 'data-testid': 'recording-link',
      title: 'Every exchange with the upstream model, one JSON line per call (hippocam check reads it)',
      text: 'recording (' + fmtBytes(rec.bytes) + ')',
      onclick: async (ev) => {
        if (!state.key) return;
        ev.preventDefault();
        try {
          const { text, filename } = await apiText(rec.url, 'application/x-ndjson');
          const url = URL.createObjectURL(new Blob([text], { type: 'application/x-ndjson' }));
          const a = el('a', { href: url, download: filename || 'recording.jsonl', hidden: true });
          document.body.append(a);
          a.click();
          a.remove();
          setTimeout(() => URL.revokeObjectURL(url), 60000);
        } catch (err) {
          if (err.status !== 401) showError('Cannot fetch the recording: ' + err.message);
        }
      },
    });
  }

  const fmtBytes = (n) => {
    n = Number(n) || 0;
    if (n < 1024) return n + ' B';
    if (n < 1 << 20) return (n / 1024).toFixed(1) + ' KiB';
    return (n / (1 << 20)).toFixed(1) + ' MiB';
  };

  const forksOf = (id) => state.sessions.filter((s) => s.fork && s.fork.from != null && String(s.fork.from) === String(id));
  const forkAt = (f) => Math.max(0, Math.floor(Number(f.at) || 0));

  // renderForkInfo says where a fork comes from (its origin and the divergence point, in either
  // session) and which forks this session has.
  function renderForkInfo(d) {
    const out = [];
    if (d.fork && d.fork.from != null) {
      const from = String(d.fork.from);
      const at = forkAt(d.fork);
      const listed = state.sessions.some((s) => String(s.id) === from);
      out.push(el('div', { class: 'fork-line', 'data-testid': 'fork-origin' },
        el('span', { class: 'fork-icon', text: '↳' }),
        'Fork of ', sessionLink(from, null, { class: 'mono', 'data-testid': 'fork-origin-link' }),
        state.listLoaded && !listed ? el('span', { class: 'muted', text: ' (no longer listed)' }) : null,
        ', diverging after ' + plural(at, 'transcript message') + ' in common: ',
        el('button', { type: 'button', class: 'link', 'data-testid': 'fork-divergence', onclick: () => select(d.id, at), text: 'show the point here' }),
        listed ? [' · ', sessionLink(from, at, { class: 'link', 'data-testid': 'fork-origin-point' }, 'in ' + from)] : null));
    }
    const forks = forksOf(d.id);
    if (forks.length) {
      out.push(el('div', { class: 'fork-line', 'data-testid': 'session-forks' },
        el('span', { class: 'fork-icon', text: '↳' }), plural(forks.length, 'fork') + ': ',
        forks.map((f, i) => [i ? ', ' : '',
          sessionLink(String(f.id), null, { class: 'mono', 'data-testid': 'fork-link' }),
          el('span', { class: 'muted', text: ' (' }),
          sessionLink(d.id, forkAt(f.fork), { class: 'link', title: 'where ' + f.id + ' diverged, in this transcript' }, 'after ' + plural(forkAt(f.fork), 'message')),
          el('span', { class: 'muted', text: ')' })])));
    }
    return out;
  }

  // renderConversation says which client conversation the session belongs to and what it is
  // there (a title request, a subagent, a side request), with links to the conversation's other
  // sessions.
  function renderConversation(d) {
    const group = d.group != null ? String(d.group) : '';
    const others = group ? state.sessions.filter((s) => String(s.group) === group && String(s.id) !== String(d.id)) : [];
    const parent = d.parent ? String(d.parent) : '';
    if (!d.kind && !parent && others.length === 0) return null;
    const client = d.client || {};
    return el('div', { class: 'fork-line conv-line', 'data-testid': 'conversation', 'data-group': group },
      el('span', { class: 'conv-icon', text: '◎' }),
      d.kind ? el('span', { 'data-testid': 'conversation-kind', text: kindLabel(d.kind) }) : 'Conversation',
      parent ? [d.kind === 'subagent' ? ' started by ' : d.kind ? ' of ' : ' beside ',
        sessionLink(parent, null, { class: 'mono', 'data-testid': 'conversation-parent' })] : null,
      client.conversation ? el('span', { class: 'muted', title: 'the client’s id of this conversation', text: ' · ' + client.conversation }) : null,
      others.length ? [' · ' + plural(others.length, 'other session') + ': ',
        others.slice(0, CONVERSATION_LINKS).map((o, i) => [i ? ', ' : '', sessionLink(String(o.id), null,
          { class: 'mono', 'data-testid': 'conversation-link', title: o.title || null }, String(o.id)),
        o.kind ? el('span', { class: 'muted', text: ' (' + kindLabel(o.kind) + ')' }) : null]),
        others.length > CONVERSATION_LINKS ? el('span', { class: 'muted', text: ', and ' + fmtInt(others.length - CONVERSATION_LINKS) + ' more in the list' }) : null] : null);
  }

  // The parts of a main request the context meter shows, in the order they are sent.
  const METER_PARTS = [
    ['system', 'Hippocam prompt', 'Hippocam’s own system prompt: its memory instructions'],
    ['framing', 'framing', 'the agent’s system and developer messages'],
    ['tools', 'tools', 'the schemas of the agent’s tools'],
    ['recall_tools', 'recall tools', 'the schemas of Hippocam’s recall and search tools'],
    ['memory', 'memory', 'what Hippocam put in the context: memories, guidance, advisories, recall exchanges'],
    ['messages', 'messages', 'the agent’s messages kept whole'],
  ];

  // renderMeter is the context window card: what the last main request carried, part by part,
  // against the window, with what the provider reported beside it. A session that has not
  // recorded one shows its context alone.
  function renderMeter(d, ctx) {
    const win = d.context_window || 0;
    const req = d.request && typeof d.request.total === 'number' ? d.request : null;
    const used = req ? req.total : typeof d.context_tokens === 'number' ? d.context_tokens : sumTokens(ctx);
    const pct = win > 0 ? Math.min(100, (used / win) * 100) : 0;
    const level = pct >= 80 ? 'high' : pct >= 60 ? 'mid' : 'low';
    const bar = el('div', { class: 'bar bar-' + level + (req ? ' bar-parts' : ''), id: 'window-bar', 'data-testid': 'window-bar', role: 'progressbar',
      'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': Math.round(pct),
      title: Math.round(pct) + '% of the context window' },
    req ? METER_PARTS.filter(([k]) => req[k] > 0).map(([k, label]) => el('div', {
      class: 'bar-fill bar-seg seg-' + k, 'data-testid': 'meter-segment', 'data-part': k,
      'data-pct': win > 0 ? Math.max(0.5, (req[k] / win) * 100).toFixed(2) : '0',
      title: label + ': ' + fmtInt(req[k]) + ' tokens' }))
      : el('div', { class: 'bar-fill', 'data-pct': Math.round(pct) }));
    return el('div', { class: 'card stat stat-window' },
      el('div', { class: 'stat-label', text: req ? 'Context window · last request' : 'Context window' }),
      el('div', { class: 'stat-value' },
        el('span', { 'data-testid': 'context-tokens', text: fmtInt(used) }),
        el('span', { class: 'muted', text: ' / ' + (win ? fmtInt(win) : '–') + ' tokens' }),
        req && req.reported > 0 ? el('span', { class: 'muted small reported', 'data-testid': 'reported-tokens',
          title: 'the input tokens the provider reported for that request' + (req.reported_cached ? ', ' + fmtInt(req.reported_cached) + ' of them from its cache' : ''),
          text: ' · provider: ' + fmtInt(req.reported) }) : null),
      bar,
      req ? el('ul', { class: 'meter-legend', 'data-testid': 'meter-legend' },
        METER_PARTS.map(([k, label, hint]) => el('li', { class: 'meter-part', 'data-testid': 'meter-part', 'data-part': k, title: hint },
          el('span', { class: 'dot seg-' + k }), el('span', { text: label + ' ' }),
          el('span', { class: 'meter-tokens', 'data-testid': 'meter-tokens', text: fmtInt(req[k] || 0) }))))
        : null,
      el('div', { class: 'stat-foot muted', text: win ? Math.round(pct) + '% used' : 'window unknown' }));
  }

  function renderSummary(d) {
    const ctx = Array.isArray(d.context) ? d.context : [];
    const counts = {};
    for (const m of ctx) counts[kindOf(m)] = (counts[kindOf(m)] || 0) + 1;
    const c = d.consolidations || {};
    const t = d.totals || {};
    return el('div', { class: 'summary' },
      renderMeter(d, ctx),
      el('div', { class: 'card stat' },
        el('div', { class: 'stat-label', text: 'Messages in context' }),
        el('div', { class: 'stat-value', text: fmtInt(ctx.length) }),
        el('div', { class: 'kind-counts' },
          Object.keys(KINDS).filter((k) => counts[k]).map((k) =>
            el('span', { class: 'kind-count k-' + k, title: KINDS[k] },
              el('span', { class: 'dot' }), counts[k] + ' ' + KINDS[k])))),
      el('div', { class: 'card stat' },
        el('div', { class: 'stat-label', text: 'Consolidations' }),
        el('div', { class: 'stat-value', 'data-testid': 'consolidations' },
          el('span', { text: fmtInt(c.intent || 0) }), el('span', { class: 'muted small', text: ' intent  ' }),
          el('span', { text: fmtInt(c.prefix || 0) }), el('span', { class: 'muted small', text: ' prefix' })),
        el('div', { class: 'stat-foot muted', text: plural((d.stack || []).length, 'open intent') })),
      el('div', { class: 'card stat' },
        el('div', { class: 'stat-label', text: 'Total cost' }),
        el('div', { class: 'stat-value', 'data-testid': 'total-cost', text: fmtCost(t.cost_usd) }),
        el('div', { class: 'stat-foot muted', text: plural(t.calls || 0, 'call') + ' · ' + fmtShare(cacheShare(t)) + ' cached' })));
  }

  // The bar's width is set here, not through a style attribute, so the CSP needs no 'unsafe-inline'.
  function sizeBars(root) {
    for (const fill of root.querySelectorAll('.bar-fill[data-pct]')) fill.style.width = fill.dataset.pct + '%';
  }

  function cacheShare(u) {
    if (!u) return NaN;
    if (typeof u.cache_share === 'number') return u.cache_share;
    return u.input > 0 ? (u.cached_input || 0) / u.input : NaN;
  }

  // ---------- the framing ----------

  // renderFraming shows the agent's current framing (its system and developer messages, which
  // are not part of the context), folded until asked for.
  function renderFraming(d) {
    const fr = d.framing;
    const version = currentFramingVersion(d);
    const det = el('details', { class: 'card framing', id: 'framing', 'data-testid': 'framing', open: state.framingOpen },
      el('summary', { 'data-testid': 'framing-toggle' },
        el('span', { class: 'framing-title', text: 'Framing' }),
        el('span', { class: 'muted small', text: ' · ' + (fr.length ? plural(fr.length, 'message') + ' · ' + fmtInt(sumTokens(fr)) + ' tokens' : 'none')
          + (version ? ' · version ' + version : '') + ' · the agent’s current system and developer messages, sent before the context' })),
      fr.length
        ? el('ol', { class: 'messages nested' }, fr.map((m, i) => el('li', {}, renderMessage(m, 'f', i))))
        : el('p', { class: 'muted small', text: 'The agent sends no system or developer message.' }));
    det.addEventListener('toggle', () => { state.framingOpen = det.open; });
    return det;
  }

  // The framing version of the last framing mark of the context, when it is known.
  function currentFramingVersion(d) {
    const ctx = Array.isArray(d.context) ? d.context : [];
    for (let i = ctx.length - 1; i >= 0; i--) {
      if (ctx[i].kind === 'framing') return ctx[i].ref ? state.framingVersions.get(ctx[i].ref) : undefined;
    }
    return undefined;
  }

  // Framing versions are numbered 1, 2… in tree order (the order of the expansion); a mark
  // with no node (the framing was removed) is not a version. numberFramings numbers the marks
  // of the tree as far as it is known: counting marks in order holds until a consolidated
  // message whose originals are not fetched (it may hold marks), and starts again at any mark
  // already numbered. It returns how many marks stay unnumbered.
  function numberFramings(d) {
    const known = state.framingVersions;
    let count = 0;
    let exact = true;
    let unknown = 0;
    const walk = (layer) => {
      for (const m of layer) {
        if (!m || !m.ref) continue;
        if (m.kind === 'framing') {
          if (known.has(m.ref)) {
            count = known.get(m.ref);
            exact = true;
          } else if (exact) {
            known.set(m.ref, ++count);
          } else {
            unknown++;
          }
        } else if (m.kind !== 'branch') { // a branch holds an answer, never a mark
          const kids = state.nodes.get(m.ref);
          if (kids) walk(kids); else exact = false;
        }
      }
    };
    walk(Array.isArray(d.context) ? d.context : []);
    return unknown;
  }

  // numberFramingsFromExpansion numbers the rest from the expansion (fetched once per session
  // version; versions, once numbered, never change): the expansion numbers every framing
  // version's messages, and a mark's messages stand in it right after the originals of the
  // message before the mark, and right before those of the message after it.
  function numberFramingsFromExpansion(d) {
    const tr = state.transcript;
    if (tr) {
      const E = tr.messages;
      const index = new Map();
      E.forEach((m, i) => { if (m && m.id) index.set(m.id, i); });
      // The known tree in order: {at: index in E} for a message found there, {mark} for an
      // unopened node, {} for what E lacks (it may be older than the context).
      const stream = [];
      const flatten = (layer) => {
        for (const m of layer) {
          if (!m) continue;
          if (!m.ref) {
            if (m.id && index.has(m.id)) stream.push({ at: index.get(m.id) });
            else if (m.kind !== 'framing' && m.kind !== 'branch') stream.push({}); // a mark with no node adds nothing to E
            continue;
          }
          const kids = state.nodes.get(m.ref);
          if (!kids) {
            stream.push({ mark: m });
            continue;
          }
          if (m.kind === 'framing' && kids[0] && index.has(kids[0].id)) {
            const v = E[index.get(kids[0].id)].framing;
            if (v > 0) state.framingVersions.set(m.ref, v);
          }
          flatten(kids);
        }
      };
      flatten(Array.isArray(d.context) ? d.context : []);
      stream.forEach((item, k) => {
        const m = item.mark;
        if (!m || m.kind !== 'framing' || state.framingVersions.has(m.ref)) return;
        const prev = stream[k - 1];
        const next = stream[k + 1];
        let v = prev && prev.at !== undefined ? (E[prev.at + 1] || {}).framing : k === 0 ? (E[0] || {}).framing : undefined;
        if (!(v > 0) && next && next.at !== undefined) v = (E[next.at - 1] || {}).framing;
        if (v > 0) state.framingVersions.set(m.ref, v);
      });
    }
    if (numberFramings(d) === 0) {
      if (tr) renderDetailSoon();
      return;
    }
    if (state.framingTried === d.version) return; // the expansion could not tell
    state.framingTried = d.version;
    const id = state.selected;
    loadTranscript().then(() => { if (state.selected === id) renderDetailSoon(); }, () => {});
  }

  // renderDetailSoon re-renders once the current rendering is done (numbering marks may ask
  // for it while a node is being painted).
  let renderQueued = false;
  function renderDetailSoon() {
    if (renderQueued) return;
    renderQueued = true;
    setTimeout(() => {
      renderQueued = false;
      renderDetail();
    }, 0);
  }

  // ---------- context and transcript ----------

  function renderContextCard(d) {
    const ctx = Array.isArray(d.context) ? d.context : [];
    const tabs = el('div', { class: 'tabs', role: 'tablist' },
      el('button', { type: 'button', role: 'tab', class: 'tab' + (state.view === 'context' ? ' active' : ''),
        'aria-selected': String(state.view === 'context'), 'data-testid': 'view-context',
        onclick: () => setView('context'), text: 'Context tree' }),
      el('button', { type: 'button', role: 'tab', class: 'tab' + (state.view === 'transcript' ? ' active' : ''),
        'aria-selected': String(state.view === 'transcript'), 'data-testid': 'view-transcript',
        onclick: () => setView('transcript'), text: 'Full transcript' }));
    let body;
    if (state.view === 'transcript') {
      const tr = state.transcript;
      body = tr
        ? el('div', {},
          el('p', { class: 'muted small hint', text: 'Every consolidated message expanded recursively: the original transcript, in order (' + plural(tr.messages.length, 'message') + ', ' + fmtInt(sumTokens(tr.messages)) + ' tokens).' }),
          el('ol', { class: 'messages', id: 'transcript', 'data-testid': 'transcript' }, transcriptItems(d, tr.messages)))
        : el('p', { class: 'muted', text: 'Loading the transcript…' });
    } else {
      body = ctx.length
        ? el('ol', { class: 'messages', id: 'context', 'data-testid': 'context' },
          ctx.map((m, i) => el('li', {}, renderMessage(m, 'c', i))))
        : el('p', { class: 'muted', 'data-testid': 'context-empty', text: 'The context is empty.' });
    }
    return el('section', { class: 'card', 'aria-label': 'Context' },
      el('div', { class: 'card-head' },
        el('h2', {}, state.view === 'context' ? 'Context' : 'Transcript',
          el('span', { class: 'count', text: state.view === 'context' ? String(ctx.length) : '' })),
        tabs),
      body);
  }

  // A transcript message is one the agent sent or received: raw, not a framing version, not a
  // regenerated answer. Forks count their divergence point in these.
  const isTranscript = (m) => (m.kind || 'raw') === 'raw' && !(m.framing > 0) && !m.regenerated;

  // transcriptItems lists the expansion with the divergence points of this session and of its
  // forks between the messages: after the Nth transcript message.
  function transcriptItems(d, msgs) {
    const points = new Map();
    const add = (at, ...content) => {
      if (!points.has(at)) points.set(at, []);
      points.get(at).push(el('div', { class: 'fork-point-line' }, content));
    };
    if (d.fork && d.fork.from != null) {
      const at = forkAt(d.fork);
      add(at, 'This fork diverges from ', sessionLink(String(d.fork.from), at, { class: 'mono' }),
        ' here: the ' + plural(at, 'transcript message') + ' above are shared.');
    }
    for (const f of forksOf(d.id)) {
      const at = forkAt(f.fork);
      add(at, sessionLink(String(f.id), null, { class: 'mono' }), ' diverged from this session here, after ' + plural(at, 'transcript message') + '.');
    }
    if (state.focusAt !== null && !points.has(state.focusAt)) add(state.focusAt, 'Divergence point: after ' + plural(state.focusAt, 'transcript message') + '.');
    const divider = (at) => {
      const content = points.get(at);
      points.delete(at);
      return el('li', { class: 'fork-point', 'data-testid': 'fork-point', 'data-at': at }, el('span', { class: 'fork-icon', text: '↳' }), el('div', {}, content));
    };
    const items = [];
    let n = 0;
    if (points.has(0)) items.push(divider(0));
    msgs.forEach((m, i) => {
      items.push(el('li', {}, renderMessage(m, 'x', i)));
      if (m && isTranscript(m) && points.has(++n)) items.push(divider(n));
    });
    for (const at of [...points.keys()].sort((a, b) => a - b)) items.push(divider(at)); // past the end
    return items;
  }

  function flash(node) {
    node.scrollIntoView({ behavior: 'smooth', block: 'center' });
    node.classList.remove('flash');
    void node.offsetWidth;
    node.classList.add('flash');
  }

  async function setView(view) {
    if (state.view === view) return;
    state.view = view;
    renderDetail();
    if (view === 'transcript') {
      try {
        await loadTranscript();
      } catch (err) {
        if (err.status !== 401) showError(err.message);
      }
      renderDetail();
    }
  }

  function kindBadge(kind) {
    return el('span', { class: 'badge kind-badge k-' + kind, 'data-testid': 'kind-badge', title: KIND_HINT[kind], text: KINDS[kind] });
  }

  // renderMessage draws one message. key identifies its place in the tree, so that opened nodes,
  // expanded texts and traces stay open when the page refreshes.
  function renderMessage(m, parentKey, index) {
    const kind = kindOf(m);
    const key = parentKey + '/' + (m.id || '#' + index);
    if (kind === 'framing' || kind === 'branch') return renderMark(m, kind, key);
    const raw = renderRaw(m.origin, key);
    const art = el('article', {
      class: 'msg k-' + kind + (m.regenerated ? ' superseded' : ''), 'data-testid': 'message',
      'data-id': m.id || '', 'data-kind': m.kind || '', 'data-role': m.role || '',
    },
    el('header', { class: 'msg-head' },
      kindBadge(kind),
      el('span', { class: 'role role-' + roleClass(m.role), 'data-testid': 'role', text: m.role || '?' }),
      m.id ? el('span', { class: 'msg-id mono', title: 'message id', text: m.id }) : null,
      m.tool_call_id ? el('span', { class: 'muted small mono', title: 'answers the tool call', text: '↳ ' + m.tool_call_id }) : null,
      m.framing > 0 ? el('span', { class: 'badge badge-framing', 'data-testid': 'framing-version', title: 'a message of framing version ' + m.framing, text: 'framing v' + m.framing }) : null,
      m.regenerated ? el('span', { class: 'badge badge-regenerated', 'data-testid': 'regenerated', title: 'an answer that was generated again; the agent no longer sees it', text: 'regenerated' }) : null,
      el('span', { class: 'spacer' }),
      raw ? raw.head : null,
      m.ref ? el('span', { class: 'ref mono', title: 'archive node of the originals', text: m.ref }) : null,
      el('span', { class: 'tokens', 'data-testid': 'tokens', title: 'tokens', text: fmtInt(m.tokens) + ' tok' })),
    renderContent(m.content, key),
    renderParts(m.parts),
    renderToolCalls(m.tool_calls),
    raw ? raw.body : null,
    renderKnowledge(m.knowledge, key),
    renderTrace(m.trace, key),
    m.ref ? renderNode(m.ref, key) : null);
    return art;
  }

  // renderMark draws a framing mark (the framing changed here; it opens that version) or a
  // branch mark (an answer was regenerated here; it opens the earlier answer). Neither is ever
  // sent to a model.
  function renderMark(m, kind, key) {
    const version = kind === 'framing' && m.ref ? state.framingVersions.get(m.ref) : undefined;
    const vname = version ? 'version ' + version : 'this version';
    const label = kind === 'branch' ? 'regenerated answer'
      : m.ref ? 'framing changed' + (version ? ' (version ' + version + ')' : '') : 'framing removed';
    const hint = kind === 'branch' ? 'The answer here was generated again; the earlier one is kept beneath.'
      : m.ref ? 'The agent’s system and developer messages changed here; ' + vname + ' took effect from this point.'
        : 'The agent stopped sending system and developer messages here.';
    return el('article', {
      class: 'msg mark k-' + kind, 'data-testid': 'message',
      'data-id': m.id || '', 'data-kind': m.kind || '', 'data-role': m.role || '', 'data-version': version || null,
    },
    el('header', { class: 'msg-head' },
      kindBadge(kind),
      el('span', { class: 'mark-label', 'data-testid': 'mark-label', text: label }),
      m.id ? el('span', { class: 'msg-id mono', title: 'message id', text: m.id }) : null,
      el('span', { class: 'spacer' }),
      m.ref ? el('span', { class: 'ref mono', title: kind === 'branch' ? 'archive node of the earlier answer' : 'archive node of the version', text: m.ref }) : null,
      el('span', { class: 'tokens muted', title: 'a mark is never sent to a model', text: 'not sent' })),
    el('div', { class: 'mark-hint muted small', title: m.content || null, text: hint }),
    m.ref ? renderNode(m.ref, key, kind === 'branch'
      ? { open: 'Show the earlier answer', hide: 'Hide the earlier answer', what: 'Earlier answer' }
      : { open: 'Show ' + vname, hide: 'Hide ' + vname, what: version ? 'Framing version ' + version : 'Framing version' }) : null);
  }

  function roleClass(role) {
    return ['system', 'developer', 'user', 'assistant', 'tool'].includes(role) ? role : 'other';
  }

  // renderRaw gives, for a message with an origin, its wire format and a toggle (in the header)
  // and the exact text the client sent (below), shown as text, never parsed or re-indented.
  function renderRaw(origin, key) {
    if (!origin || typeof origin !== 'object' || (!origin.format && typeof origin.raw !== 'string')) return null;
    const rkey = key + '#raw';
    const hasRaw = typeof origin.raw === 'string' && origin.raw !== '';
    const pre = hasRaw ? el('pre', { class: 'raw mono', 'data-testid': 'raw', text: origin.raw }) : null;
    const format = el('span', { class: 'origin mono', 'data-testid': 'origin-format', title: 'the wire format the message arrived in', text: origin.format || 'unknown format' });
    if (!hasRaw) return { head: format, body: null };
    const open = state.raws.has(rkey);
    pre.hidden = !open;
    const btn = el('button', {
      type: 'button', class: 'link raw-toggle' + (open ? ' active' : ''), 'data-testid': 'raw-toggle', 'aria-expanded': String(open),
      title: 'the exact JSON the client sent (' + fmtInt(origin.raw.length) + ' characters)', text: 'raw',
    });
    btn.addEventListener('click', () => {
      const now = !state.raws.has(rkey);
      if (now) state.raws.add(rkey); else state.raws.delete(rkey);
      pre.hidden = !now;
      btn.classList.toggle('active', now);
      btn.setAttribute('aria-expanded', String(now));
    });
    return { head: [format, btn], body: pre };
  }

  // renderParts labels the content that is not text (images, audio, files): its type and media
  // type, never the bytes themselves.
  function renderParts(parts) {
    if (!Array.isArray(parts) || parts.length === 0) return null;
    return el('div', { class: 'parts' }, parts.map((p) => {
      p = p || {};
      const label = '[' + [p.type || 'part', p.media_type, p.name].filter((x) => typeof x === 'string' && x).join(' ') + ']';
      const about = [];
      if (typeof p.url === 'string' && p.url) about.push(p.url.startsWith('data:') ? 'inline data URL, ' + fmtInt(p.url.length) + ' characters' : p.url);
      if (typeof p.data === 'string' && p.data) about.push('about ' + fmtInt(Math.floor(p.data.length * 3 / 4)) + ' bytes inline');
      if (p.file_id) about.push('file ' + p.file_id);
      if (p.detail) about.push('detail ' + p.detail);
      return el('span', { class: 'part mono', 'data-testid': 'part', 'data-type': p.type || '', title: about.join(' · ') || null, text: label });
    }));
  }

  function renderContent(text, key) {
    if (typeof text !== 'string' || text === '') return null;
    const long = text.length > COLLAPSE_CHARS || text.split('\n').length > COLLAPSE_LINES;
    const box = el('div', { class: 'content', 'data-testid': 'content', text });
    if (!long) return box;
    const ckey = key + '#content';
    const open = state.expanded.has(ckey);
    if (!open) box.classList.add('collapsed');
    const btn = el('button', {
      type: 'button', class: 'link more', 'data-testid': 'toggle-content', 'aria-expanded': String(open),
      text: open ? 'Show less' : 'Show more (' + fmtInt(text.length) + ' characters)',
    });
    btn.addEventListener('click', () => {
      const now = !state.expanded.has(ckey);
      if (now) state.expanded.add(ckey); else state.expanded.delete(ckey);
      box.classList.toggle('collapsed', !now);
      btn.setAttribute('aria-expanded', String(now));
      btn.textContent = now ? 'Show less' : 'Show more (' + fmtInt(text.length) + ' characters)';
    });
    return el('div', {}, box, btn);
  }

  function renderToolCalls(calls) {
    if (!Array.isArray(calls) || calls.length === 0) return null;
    return el('div', { class: 'tool-calls' },
      calls.map((c) => el('div', { class: 'tool-call', 'data-testid': 'tool-call' },
        el('span', { class: 'tool-name mono', text: '→ ' + (c.name || '?') }),
        c.id ? el('span', { class: 'muted small mono', text: c.id }) : null,
        el('pre', { class: 'tool-args mono', text: prettyArgs(c.arguments) }))));
  }

  function prettyArgs(s) {
    if (typeof s !== 'string') return '';
    try { return JSON.stringify(JSON.parse(s), null, 1).replace(/\n\s*/g, ' '); } catch { return s; }
  }

  function renderKnowledge(items, key) {
    if (!Array.isArray(items) || items.length === 0) return null;
    const counts = {};
    for (const k of items) counts[evalOf(k)] = (counts[evalOf(k)] || 0) + 1;
    const kkey = key + '#knowledge';
    const all = state.expanded.has(kkey) || items.length <= KNOWLEDGE_SHOWN + 2;
    const box = el('div', { class: 'knowledge', 'data-testid': 'knowledge' },
      el('div', { class: 'knowledge-head' },
        el('span', { class: 'section-label', text: 'Knowledge' }),
        EVALUATIONS.filter((e) => counts[e]).map((e) => el('span', { class: 'muted small', text: counts[e] + ' ' + e }))),
      el('ul', {}, (all ? items : items.slice(0, KNOWLEDGE_SHOWN)).map((k) => {
        const e = evalOf(k);
        return el('li', { class: 'knowledge-item', 'data-testid': 'knowledge-item', 'data-evaluation': e },
          el('span', { class: 'badge eval eval-' + e, 'data-testid': 'evaluation', text: e }),
          el('span', { class: 'fact', text: k.fact || '' }));
      })));
    if (items.length > KNOWLEDGE_SHOWN + 2) {
      box.append(el('button', {
        type: 'button', class: 'link more', 'data-testid': 'toggle-knowledge',
        text: all ? 'Show fewer' : 'Show all ' + items.length + ' items',
        onclick: () => {
          if (state.expanded.has(kkey)) state.expanded.delete(kkey); else state.expanded.add(kkey);
          box.replaceWith(renderKnowledge(items, key));
        },
      }));
    }
    return box;
  }

  const evalOf = (k) => (EVALUATIONS.includes(k.evaluation) ? k.evaluation : 'neutral');

  function renderTrace(trace, key) {
    if (!Array.isArray(trace) || trace.length === 0) return null;
    const tkey = key + '#trace';
    const det = el('details', { class: 'trace', 'data-testid': 'trace', open: state.traces.has(tkey) },
      el('summary', { 'data-testid': 'trace-toggle' },
        'Recall trace',
        el('span', { class: 'muted small', text: ' · ' + plural(trace.length, 'message') + ' · ' + fmtInt(sumTokens(trace)) + ' tokens · copies the model read before answering' })),
      el('ol', { class: 'messages nested' }, trace.map((m, i) => el('li', {}, renderMessage(m, tkey, i)))));
    det.addEventListener('toggle', () => {
      if (det.open) state.traces.add(tkey); else state.traces.delete(tkey);
    });
    return det;
  }

  // renderNode draws the button that opens a consolidated message's node and, when open, the
  // node's children, fetched once from /nodes/{ref} and kept for the session.
  function renderNode(ref, key, labels) {
    const l = labels || { open: 'Open originals', hide: 'Hide originals', what: 'Node' };
    const nkey = key + '@' + ref;
    const wrap = el('div', { class: 'node' });
    const btn = el('button', { type: 'button', class: 'btn btn-node', 'data-testid': 'open-node', 'data-ref': ref });
    const box = el('div', { class: 'children', 'data-testid': 'children', 'data-ref': ref });
    wrap.append(btn, box);

    const paint = () => {
      const open = state.open.has(nkey);
      const kids = state.nodes.get(ref);
      btn.replaceChildren();
      append(btn, [el('span', { class: 'caret', text: open ? '▾' : '▸' }),
        (open ? l.hide : l.open) + ' ',
        el('span', { class: 'mono muted', text: ref }),
        kids ? el('span', { class: 'muted', text: ' · ' + plural(kids.length, 'message') }) : null]);
      btn.setAttribute('aria-expanded', String(open));
      box.hidden = !open;
      box.replaceChildren();
      if (!open) return;
      if (!kids) {
        box.append(el('p', { class: 'muted small loading', text: 'Loading ' + ref + '…' }));
        return;
      }
      // The node may hold framing marks, and knowing it may number marks after it: number
      // what can be, and redraw only when a number was found (numbers only ever get added).
      if (state.detail) {
        const before = state.framingVersions.size;
        const unknown = numberFramings(state.detail);
        if (state.framingVersions.size > before) renderDetailSoon();
        else if (unknown) numberFramingsFromExpansion(state.detail);
      }
      box.append(el('div', { class: 'children-head muted small' },
        l.what + ' ', el('span', { class: 'mono', text: ref }),
        ' · ' + plural(kids.length, 'message') + ' · ' + fmtInt(sumTokens(kids)) + ' tokens'));
      box.append(el('ol', { class: 'messages nested' }, kids.map((m, i) => el('li', {}, renderMessage(m, nkey, i)))));
      sizeBars(box);
    };

    btn.addEventListener('click', async () => {
      if (state.open.has(nkey)) {
        state.open.delete(nkey);
        paint();
        return;
      }
      state.open.add(nkey);
      paint();
      if (state.nodes.has(ref)) return;
      const id = state.selected;
      try {
        const body = await api(sessionPath(id) + '/nodes/' + encodeURIComponent(ref));
        if (state.selected !== id) return;
        state.nodes.set(ref, (body && Array.isArray(body.children)) ? body.children : []);
        showError('');
      } catch (err) {
        if (state.selected !== id) return;
        state.open.delete(nkey);
        if (err.status !== 401) showError('Cannot open node ' + ref + ': ' + err.message);
      }
      paint();
    });
    paint();
    return wrap;
  }

  // ---------- the intent stack ----------

  function renderStack(d) {
    const stack = Array.isArray(d.stack) ? d.stack : [];
    const body = stack.length
      ? el('ol', { class: 'stack', id: 'stack', 'data-testid': 'stack' },
        stack.map((it, i) => el('li', {
          class: 'stack-item depth-' + Math.min(i, 6) + (i === stack.length - 1 ? ' top' : ''),
          'data-testid': 'stack-item', 'data-depth': i,
        },
        el('div', { class: 'stack-line' },
          el('span', { class: 'stack-depth', text: String(i + 1) }),
          el('span', { class: 'stack-label', 'data-testid': 'stack-label', text: it.label || '' }),
          i === stack.length - 1 ? el('span', { class: 'badge badge-top', text: 'top' }) : null),
        it.reason ? el('div', { class: 'stack-field' }, el('span', { class: 'field-name', text: 'Why' }), el('span', { text: it.reason })) : null,
        it.done ? el('div', { class: 'stack-field' }, el('span', { class: 'field-name', text: 'Done when' }), el('span', { text: it.done })) : null,
        it.start ? el('div', { class: 'stack-field' }, el('span', { class: 'field-name', text: 'Starts at' }),
          el('button', { type: 'button', class: 'link mono', title: 'show this message', onclick: () => reveal(it.start), text: it.start })) : null)))
      : el('p', { class: 'muted', 'data-testid': 'stack-empty', text: 'No open intent.' });
    return el('section', { class: 'card', 'aria-label': 'Intent stack' },
      el('div', { class: 'card-head' }, el('h2', {}, 'Intent stack', el('span', { class: 'count', text: String(stack.length) })),
        el('span', { class: 'muted small', text: 'broadest first' })),
      body);
  }

  function reveal(id) {
    const node = document.querySelector('#context [data-id="' + CSS.escape(id) + '"]');
    if (node) flash(node);
  }

  function renderStackLog(d) {
    const log = Array.isArray(d.stack_log) ? d.stack_log.slice().reverse() : [];
    const shown = state.showAllLog ? log : log.slice(0, STACK_LOG_SHOWN);
    const list = el('ol', { class: 'stack-log', id: 'stack-log', 'data-testid': 'stack-log' },
      shown.map((ev) => el('li', { class: 'stack-event', 'data-testid': 'stack-event', 'data-step': ev.step },
        el('span', { class: 'step mono', text: 'step ' + (ev.step ?? '?') }),
        el('div', { class: 'event-body' },
          el('div', { class: 'event-line' },
            (ev.closed || []).map((l) => el('span', { class: 'chip chip-closed', 'data-testid': 'closed', title: 'closed', text: '✓ ' + l })),
            (ev.opened || []).map((l) => el('span', { class: 'chip chip-opened', 'data-testid': 'opened', title: 'opened', text: '+ ' + l })),
            !(ev.closed || []).length && !(ev.opened || []).length ? el('span', { class: 'muted small', text: 'no change' }) : null),
          ev.guidance ? el('div', { class: 'event-guidance', text: ev.guidance }) : null))));
    return el('section', { class: 'card', 'aria-label': 'Stack history' },
      el('div', { class: 'card-head' }, el('h2', {}, 'Stack history', el('span', { class: 'count', text: String(log.length) })),
        el('span', { class: 'muted small', text: 'newest first' })),
      log.length ? list : el('p', { class: 'muted', text: 'The stack has not changed yet.' }),
      log.length > STACK_LOG_SHOWN ? el('button', {
        type: 'button', class: 'link', onclick: () => { state.showAllLog = !state.showAllLog; renderDetail(); },
        text: state.showAllLog ? 'Show fewer' : 'Show all ' + log.length + ' changes',
      }) : null);
  }

  // ---------- usage ----------

  function renderUsage(d) {
    const usage = d.usage || {};
    const roles = ROLE_ORDER.filter((r) => usage[r]).concat(Object.keys(usage).filter((r) => !ROLE_ORDER.includes(r)).sort());
    const totals = d.totals || {};
    const maxCost = Math.max(0, ...roles.map((r) => usage[r].cost_usd || 0));
    const row = (name, u, isTotal) => el('tr', { 'data-testid': isTotal ? 'usage-total' : 'usage-row', 'data-role': name, class: isTotal ? 'total' : null },
      el('th', { scope: 'row' }, isTotal ? 'total' : el('span', { class: 'call-role r-' + name, text: name })),
      el('td', { text: fmtInt(u.calls) }),
      el('td', { title: fmtInt(u.input) + ' input tokens', text: fmtCompact(u.input) }),
      el('td', { title: fmtInt(u.cached_input) + ' cached', text: fmtCompact(u.cached_input) }),
      el('td', { title: fmtInt(u.output) + ' output tokens', text: fmtCompact(u.output) }),
      el('td', { 'data-testid': 'cache-share', text: fmtShare(cacheShare(u)) }),
      el('td', { class: 'cost' },
        el('span', { 'data-testid': 'cost', text: fmtCost(u.cost_usd) }),
        !isTotal && maxCost > 0 ? el('div', { class: 'minibar' }, el('div', { class: 'bar-fill', 'data-pct': Math.round(((u.cost_usd || 0) / maxCost) * 100) })) : null));
    return el('section', { class: 'card', 'aria-label': 'Usage by role' },
      el('div', { class: 'card-head' }, el('h2', { text: 'Usage and cost' }), el('span', { class: 'muted small', text: 'by call role' })),
      roles.length
        ? el('table', { class: 'usage', id: 'usage', 'data-testid': 'usage' },
          el('thead', {}, el('tr', {}, ['Role', 'Calls', 'Input', 'Cached', 'Output', 'Cache', 'Cost'].map((h) => el('th', { scope: 'col', text: h })))),
          el('tbody', {}, roles.map((r) => row(r, usage[r], false))),
          el('tfoot', {}, row('total', totals, true)))
        : el('p', { class: 'muted', text: 'No model call yet.' }));
  }

  // ---------- deletion ----------

  async function deleteSession(id) {
    if (!window.confirm('Delete session “' + id + '”? Its context, archive and usage are removed for good.')) return;
    try {
      await api(sessionPath(id), 'DELETE');
      showError('');
      state.sessions = state.sessions.filter((s) => s.id !== id);
      select(null);
      refresh(false);
    } catch (err) {
      if (err.status !== 401) showError('Cannot delete ' + id + ': ' + err.message);
    }
  }

  // ---------- the learning pages (learning.js) ----------

  // learning draws the clusters and lessons pages and a session's routing; learning.js gives
  // it the viewer's own helpers. Without that file the pages say so and sessions show as ever.
  const learning = typeof window.hippocamLearning === 'function'
    ? window.hippocamLearning({
      el, append, api, apiText, showError, keyAccepted, fmtInt, fmtTime, fmtAgo, plural, sessionLink,
      renderContent, rerender: () => { if (state.page) renderDetail(); },
      isSession: (id) => state.sessions.some((s) => String(s.id) === String(id)),
    })
    : {
      open() {},
      async load() {},
      render: () => el('div', { class: 'card placeholder', text: 'This page did not load (assets/learning.js).' }),
      sessionCard: () => null,
    };

  // jobs draws the jobs page (jobs.js): the tenant's queued background jobs and their errors.
  const jobs = typeof window.hippocamJobs === 'function'
    ? window.hippocamJobs({
      el, api, keyAccepted, fmtInt, fmtTime, fmtAgo, sessionLink,
      rerender: () => { if (state.page) renderDetail(); },
      isSession: (id) => state.sessions.some((s) => String(s.id) === String(id)),
    })
    : {
      open() {},
      async load() {},
      render: () => el('div', { class: 'card placeholder', text: 'This page did not load (assets/jobs.js).' }),
    };

  // pageOf is the script that draws a page other than the sessions.
  const pageOf = (page) => (page.name === 'jobs' ? jobs : learning);

  // ---------- start ----------

  function start() {
    $('auth').addEventListener('submit', onKeySubmit);
    $('forget-key').addEventListener('click', onForgetKey);
    $('forget-key').hidden = !state.key;
    $('session-filter').addEventListener('input', renderSessions);
    $('session-filter').addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && ev.target.value) {
        ev.target.value = '';
        renderSessions();
      }
    });
    // "/" jumps to the search box from anywhere but a text field.
    document.addEventListener('keydown', (ev) => {
      const t = ev.target;
      if (ev.key !== '/' || ev.ctrlKey || ev.metaKey || ev.altKey || (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)))) return;
      ev.preventDefault();
      $('session-filter').focus();
    });
    $('auto-refresh').addEventListener('change', () => { if ($('auto-refresh').checked) refresh(false); });
    window.addEventListener('hashchange', route);
    document.addEventListener('visibilitychange', () => { if (!document.hidden) tick(); });
    route();
    refresh(false);
    setInterval(tick, POLL_MS);
  }

  start();
})();
