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

  const KINDS = {
    raw: 'raw',
    guidance: 'guidance',
    intent_memory: 'intent memory',
    prefix_memory: 'prefix memory',
  };
  const KIND_HINT = {
    raw: 'From the agent, the user or a tool',
    guidance: 'Written by JANUS (intent stack maintenance)',
    intent_memory: 'Written by PRECIP: a finished intent, consolidated',
    prefix_memory: 'Written by PALIM: an old prefix, consolidated',
  };
  const ROLE_ORDER = ['agent', 'janus', 'precip', 'palim'];
  const EVALUATIONS = ['good', 'bad', 'neutral'];

  const state = {
    key: readKey(),
    sessions: [],
    listLoaded: false,
    selected: undefined, // session id; null when none is selected, undefined before the first route
    detail: null, // the session as the API returned it
    detailError: null,
    view: 'context', // 'context' or 'transcript'
    transcript: null, // {version, messages}
    nodes: new Map(), // ref -> children, for the selected session (archived nodes never change)
    open: new Set(), // keys of opened nodes
    expanded: new Set(), // keys of expanded long contents
    traces: new Set(), // keys of opened recall traces
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

  async function api(path, method) {
    const headers = { Accept: 'application/json' };
    if (state.key) headers.Authorization = 'Bearer ' + state.key;
    let res;
    try {
      res = await fetch(path, { method: method || 'GET', headers, cache: 'no-store' });
    } catch (err) {
      throw new APIError(0, 'The server cannot be reached (' + err.message + ').');
    }
    if (res.status === 204) return null;
    let body = null;
    try { body = await res.json(); } catch { body = null; }
    if (!res.ok) {
      const e = (body && body.error) || {};
      const err = new APIError(res.status, e.message || res.status + ' ' + res.statusText, e.code);
      if (res.status === 401) askForKey(err);
      throw err;
    }
    return body;
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

  function renderSessions() {
    const list = $('session-list');
    const filter = $('session-filter').value.trim().toLowerCase();
    const shown = state.sessions.filter((s) => !filter || String(s.id).toLowerCase().includes(filter));
    // Rebuild only when something visible changed, so that polling does not churn the DOM.
    const sig = JSON.stringify([state.listLoaded, state.sessions.length, state.selected ?? null, shown, shown.map((s) => fmtAgo(s.updated_at))]);
    if (sig === state.listSig) return;
    state.listSig = sig;
    $('session-count').textContent = state.listLoaded ? String(state.sessions.length) : '';
    list.replaceChildren();
    if (state.listLoaded && shown.length === 0) {
      list.append(el('li', { class: 'empty', 'data-testid': 'sessions-empty',
        text: state.sessions.length ? 'No session matches the filter.' : 'No sessions yet. They appear as agents call the proxy.' }));
      return;
    }
    for (const s of shown) {
      const c = s.consolidations || {};
      const current = s.id === state.selected;
      list.append(el('li', {},
        el('button', {
          type: 'button', class: 'session' + (current ? ' current' : ''),
          'data-testid': 'session-item', 'data-session-id': s.id,
          'aria-current': current ? 'true' : null,
          onclick: () => select(s.id),
        },
        el('span', { class: 'session-id', text: s.id }),
        el('span', { class: 'session-meta' },
          el('span', { text: plural(s.messages || 0, 'msg') }),
          el('span', { text: 'depth ' + (s.depth || 0) }),
          el('span', { class: 'chip chip-intent', title: 'intent consolidations', text: '◇ ' + (c.intent || 0) }),
          el('span', { class: 'chip chip-prefix', title: 'prefix consolidations', text: '▤ ' + (c.prefix || 0) })),
        el('span', { class: 'session-time', title: fmtTime(s.updated_at), text: fmtAgo(s.updated_at) }))));
    }
  }

  // ---------- selection and routing ----------

  function hashSession() {
    const m = /^#\/session\/(.+)$/.exec(location.hash);
    if (!m) return null;
    try { return decodeURIComponent(m[1]); } catch { return null; }
  }

  function select(id) {
    const hash = id ? '#/session/' + encodeURIComponent(id) : '';
    if (location.hash !== hash) {
      if (hash) location.hash = hash;
      else history.replaceState(null, '', location.pathname + location.search);
    }
    route();
  }

  function route() {
    const id = hashSession();
    if (id === state.selected) return;
    state.selected = id;
    state.detail = null;
    state.detailError = null;
    state.transcript = null;
    state.view = 'context';
    state.nodes = new Map();
    state.open = new Set();
    state.expanded = new Set();
    state.traces = new Set();
    state.showAllLog = false;
    renderSessions();
    renderDetail();
    if (id) loadDetail();
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

  async function loadTranscript() {
    const id = state.selected;
    const d = state.detail;
    if (!d) return;
    if (state.transcript && state.transcript.version === d.version) return;
    const body = await api(sessionPath(id) + '/expand');
    if (state.selected !== id) return;
    state.transcript = { version: d.version, messages: (body && body.messages) || [] };
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
    main.append(
      renderHeader(d),
      renderSummary(d),
      el('div', { class: 'columns' },
        el('div', { class: 'col-main' }, renderContextCard(d)),
        el('div', { class: 'col-side' }, renderStack(d), renderUsage(d), renderStackLog(d))));
    sizeBars(main);
    window.scrollTo(0, scroll);
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
        el('h1', { id: 'session-title', 'data-testid': 'session-title', text: d.id }),
        el('div', { class: 'muted small' },
          el('span', { text: 'created ' + fmtTime(d.created_at) }), ' · ',
          el('span', { text: 'updated ' + fmtTime(d.updated_at) }), ' · ',
          el('span', { 'data-testid': 'session-version', text: 'version ' + (d.version ?? '–') }))),
      el('button', { type: 'button', class: 'btn btn-danger', id: 'delete-session', 'data-testid': 'delete-session',
        onclick: () => deleteSession(d.id), text: 'Delete session' }));
  }

  function renderSummary(d) {
    const ctx = Array.isArray(d.context) ? d.context : [];
    const win = d.context_window || 0;
    const used = typeof d.context_tokens === 'number' ? d.context_tokens : sumTokens(ctx);
    const pct = win > 0 ? Math.min(100, (used / win) * 100) : 0;
    const level = pct >= 80 ? 'high' : pct >= 60 ? 'mid' : 'low';
    const counts = {};
    for (const m of ctx) counts[kindOf(m)] = (counts[kindOf(m)] || 0) + 1;
    const c = d.consolidations || {};
    const t = d.totals || {};
    return el('div', { class: 'summary' },
      el('div', { class: 'card stat stat-window' },
        el('div', { class: 'stat-label', text: 'Context window' }),
        el('div', { class: 'stat-value' },
          el('span', { 'data-testid': 'context-tokens', text: fmtInt(used) }),
          el('span', { class: 'muted', text: ' / ' + (win ? fmtInt(win) : '–') + ' tokens' })),
        el('div', { class: 'bar bar-' + level, id: 'window-bar', 'data-testid': 'window-bar', role: 'progressbar',
          'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': Math.round(pct),
          title: Math.round(pct) + '% of the context window' },
        el('div', { class: 'bar-fill', 'data-pct': Math.round(pct) })),
        el('div', { class: 'stat-foot muted', text: win ? Math.round(pct) + '% used' : 'window unknown' })),
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
          el('ol', { class: 'messages', id: 'transcript', 'data-testid': 'transcript' },
            tr.messages.map((m, i) => el('li', {}, renderMessage(m, 'x', i)))))
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
    const art = el('article', {
      class: 'msg k-' + kind, 'data-testid': 'message',
      'data-id': m.id || '', 'data-kind': m.kind || '', 'data-role': m.role || '',
    },
    el('header', { class: 'msg-head' },
      kindBadge(kind),
      el('span', { class: 'role role-' + roleClass(m.role), 'data-testid': 'role', text: m.role || '?' }),
      m.id ? el('span', { class: 'msg-id mono', title: 'message id', text: m.id }) : null,
      m.tool_call_id ? el('span', { class: 'muted small mono', title: 'answers the tool call', text: '↳ ' + m.tool_call_id }) : null,
      el('span', { class: 'spacer' }),
      m.ref ? el('span', { class: 'ref mono', title: 'archive node of the originals', text: m.ref }) : null,
      el('span', { class: 'tokens', 'data-testid': 'tokens', title: 'tokens', text: fmtInt(m.tokens) + ' tok' })),
    renderContent(m.content, key),
    renderToolCalls(m.tool_calls),
    renderKnowledge(m.knowledge, key),
    renderTrace(m.trace, key),
    m.ref ? renderNode(m.ref, key) : null);
    return art;
  }

  function roleClass(role) {
    return ['system', 'user', 'assistant', 'tool'].includes(role) ? role : 'other';
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
  function renderNode(ref, key) {
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
        (open ? 'Hide originals' : 'Open originals') + ' ',
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
      box.append(el('div', { class: 'children-head muted small' },
        'Node ', el('span', { class: 'mono', text: ref }),
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
    if (!node) return;
    node.scrollIntoView({ behavior: 'smooth', block: 'center' });
    node.classList.remove('flash');
    void node.offsetWidth;
    node.classList.add('flash');
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

  // ---------- start ----------

  function start() {
    $('auth').addEventListener('submit', onKeySubmit);
    $('forget-key').addEventListener('click', onForgetKey);
    $('forget-key').hidden = !state.key;
    $('session-filter').addEventListener('input', renderSessions);
    $('auto-refresh').addEventListener('change', () => { if ($('auto-refresh').checked) refresh(false); });
    window.addEventListener('hashchange', route);
    document.addEventListener('visibilitychange', () => { if (!document.hidden) tick(); });
    route();
    refresh(false);
    setInterval(tick, POLL_MS);
  }

  start();
})();
