// Hippocam memory viewer: what the learning layer keeps. The clusters page lists the clusters
// tasks were routed to and opens one to show its state as its memory system keeps it; the
// lessons page lists every lesson, in force or not, with why it changed and what it was learned
// from, and exports them as Markdown; a session's card says how its task was routed, what
// advisory it read and how it ended.
//
// This file only defines window.hippocamLearning; app.js calls it with the viewer's helpers.
// Every value from the server is untrusted text and reaches the page through kit.el (text and
// attributes only), never as markup.
'use strict';

window.hippocamLearning = (kit) => {
  const { el, api, apiText, showError, keyAccepted, fmtInt, fmtTime, fmtAgo, plural, sessionLink, renderContent } = kit;

  const DECISION_HINT = {
    reuse: 'The router chose an existing cluster',
    create: 'The router made a new cluster for this kind of task',
    pinned: 'The client named the cluster (Hippocam-Cluster)',
    global: 'The server keeps one cluster for every task (--learn global)',
    match: "The task's text names this cluster's scope: routed without asking the router",
    pending: 'Not routed yet: the router was still deciding (or failed) when the task answered; the next request or the outcome routes it',
    stateless: 'No cluster: the task ran without learned experience',
  };
  const LESSON_FILTERS = [['all', 'All'], ['active', 'Active'], ['superseded', 'Superseded']];

  const ls = {
    page: null, // {name, id} as app.js routed it
    clusters: null, // GET /api/clusters: the list
    clustersError: null,
    cluster: null, // GET /api/clusters/{id}: the open cluster
    clusterError: null,
    lessons: null, // GET /api/lessons
    lessonsError: null,
    filter: 'all',
    opened: new Set(), // keys of <details> the user opened (histories, trajectories)
    shown: '', // what the page shows, to skip identical redraws while polling
    loading: false,
    again: false,
  };

  const clusterHash = (id) => '#/clusters/' + encodeURIComponent(id);
  const clusterPath = (id) => '/api/clusters/' + encodeURIComponent(id);
  const list = (x) => (Array.isArray(x) ? x : []);
  const str = (x) => (typeof x === 'string' ? x : x === undefined || x === null ? '' : String(x));

  // ---------- loading ----------

  // open is called when the hash names a learning page: fresh when the page itself changed.
  function open(page, fresh) {
    const before = ls.page;
    ls.page = page;
    if (page.name === 'clusters' && (!before || before.id !== page.id || fresh)) {
      ls.cluster = null;
      ls.clusterError = null;
    }
    if (fresh) ls.shown = '';
    load().catch(() => {});
  }

  // load fetches what the current page shows; a call made while one runs runs once more after.
  async function load() {
    if (ls.loading) {
      ls.again = true;
      return;
    }
    ls.loading = true;
    try {
      const page = ls.page;
      if (!page) return;
      if (page.name === 'clusters') await loadClusters(page);
      else await loadLessons();
    } finally {
      ls.loading = false;
    }
    if (ls.again) {
      ls.again = false;
      await load();
    }
    redrawIfChanged();
  }

  async function loadClusters(page) {
    try {
      const body = await api('/api/clusters');
      keyAccepted();
      ls.clusters = list(body && body.clusters);
      ls.clustersError = null;
    } catch (err) {
      if (err.status === 401) return;
      ls.clustersError = err.message;
    }
    if (!page.id) return;
    try {
      const body = await api(clusterPath(page.id));
      if (ls.page !== page) return;
      ls.cluster = body;
      ls.clusterError = null;
    } catch (err) {
      if (err.status === 401 || ls.page !== page) return;
      ls.cluster = null;
      ls.clusterError = err.status === 404 ? 'This cluster no longer exists.' : err.message;
    }
  }

  async function loadLessons() {
    try {
      const body = await api('/api/lessons');
      keyAccepted();
      ls.lessons = list(body && body.lessons);
      ls.lessonsError = null;
    } catch (err) {
      if (err.status === 401) return;
      ls.lessonsError = err.message;
    }
  }

  function signature() {
    const p = ls.page || {};
    return JSON.stringify(p.name === 'clusters'
      ? [p.name, p.id, ls.clusters, ls.clustersError, ls.cluster, ls.clusterError]
      : [p.name, ls.lessons, ls.lessonsError, ls.filter]);
  }

  function redrawIfChanged() {
    if (signature() !== ls.shown) kit.rerender();
  }

  // ---------- shared pieces ----------

  function render(page) {
    ls.page = page;
    ls.shown = signature();
    return page.name === 'clusters' ? renderClustersPage(page) : renderLessonsPage();
  }

  function systemBadge(system, testid) {
    return el('span', { class: 'badge sys sys-' + cssName(system), 'data-testid': testid || null, text: system || '?' });
  }

  const cssName = (s) => str(s).toLowerCase().replace(/[^a-z0-9_-]/g, '') || 'other';

  function clusterLink(id, attrs) {
    return el('a', Object.assign({ href: clusterHash(id), class: 'mono', text: id }, attrs || {}));
  }

  // attemptLink links a trajectory to its session when the session is still listed.
  function attemptLink(id) {
    return kit.isSession(id)
      ? sessionLink(String(id), null, { class: 'mono', 'data-testid': 'attempt-link' })
      : el('span', { class: 'mono muted', title: 'the session is no longer listed', text: id });
  }

  function field(name, ...value) {
    return el('div', { class: 'stack-field' }, el('span', { class: 'field-name', text: name }), el('span', { class: 'field-value' }, value));
  }

  // folded is a <details> that stays open across redraws once the user opened it.
  function folded(key, attrs, summary, ...body) {
    const det = el('details', Object.assign({ open: ls.opened.has(key) }, attrs), el('summary', {}, summary), body);
    det.addEventListener('toggle', () => {
      if (det.open) ls.opened.add(key); else ls.opened.delete(key);
    });
    return det;
  }

  function text(value, key) {
    const s = str(value);
    return s ? renderContent(s, key) : el('span', { class: 'muted', text: '–' });
  }

  function errorCard(title, message, testid) {
    return el('div', { class: 'card placeholder', 'data-testid': testid }, el('h2', { text: title }), el('p', { class: 'muted', text: message }));
  }

  // ---------- the clusters page ----------

  function renderClustersPage(page) {
    const out = [];
    if (page.id) out.push(renderCluster(page.id));
    out.push(renderClusterList(page.id));
    return el('div', { class: 'learn-page', 'data-testid': 'clusters-page' }, out);
  }

  function renderClusterList(current) {
    const clusters = ls.clusters;
    let body;
    if (ls.clustersError && !clusters) body = el('p', { class: 'muted', 'data-testid': 'clusters-error', text: ls.clustersError });
    else if (!clusters) body = el('p', { class: 'muted', text: 'Loading clusters…' });
    else if (clusters.length === 0) {
      body = el('p', { class: 'muted', 'data-testid': 'clusters-empty',
        text: 'No cluster yet. Tasks make them when the server learns (hippocam serve --learn global or routed).' });
    } else {
      const rows = clusters.slice().sort((a, b) => timeOf(b.updated_at) - timeOf(a.updated_at) || (a.id < b.id ? -1 : 1));
      body = el('table', { class: 'learn-table', id: 'clusters', 'data-testid': 'clusters' },
        el('thead', {}, el('tr', {}, ['Cluster', 'System', 'Scope', 'Trajectories', 'Updated'].map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, rows.map((c) => el('tr', {
          class: c.id === current ? 'current' : null, 'data-testid': 'cluster-row', 'data-cluster-id': c.id,
          'aria-current': c.id === current ? 'true' : null,
        },
        el('th', { scope: 'row' }, clusterLink(c.id, { 'data-testid': 'cluster-link' })),
        el('td', {}, systemBadge(c.system, 'cluster-system')),
        el('td', { class: 'scope', 'data-testid': 'cluster-scope', text: str(c.description) || '–' }),
        el('td', { class: 'num', 'data-testid': 'cluster-trajectories', text: fmtInt(c.trajectories || 0) }),
        el('td', { class: 'when', title: fmtTime(c.updated_at), text: fmtAgo(c.updated_at) })))));
    }
    return el('section', { class: 'card', 'aria-label': 'Clusters' },
      el('div', { class: 'card-head' },
        el('h2', {}, 'Clusters', el('span', { class: 'count', 'data-testid': 'cluster-count', text: clusters ? String(clusters.length) : '' })),
        el('span', { class: 'muted small', text: 'a task’s first request is routed to one · latest update first' })),
      body);
  }

  const timeOf = (t) => {
    const x = new Date(t).getTime();
    return isNaN(x) ? -Infinity : x;
  };

  function renderCluster(id) {
    if (ls.clusterError) return errorCard(id, ls.clusterError, 'cluster-error');
    const c = ls.cluster;
    if (!c || c.id !== id) return el('div', { class: 'card placeholder', 'data-testid': 'cluster-loading', text: 'Loading cluster…' });
    const entries = typeof c.entries === 'number' ? c.entries : Array.isArray(c.entries) ? c.entries.length : null;
    return el('div', { class: 'learn-cluster', 'data-testid': 'cluster-detail', 'data-cluster-id': c.id },
      el('div', { class: 'detail-head' },
        el('div', {},
          el('h1', { 'data-testid': 'cluster-title', text: c.id }),
          el('div', { class: 'muted small' },
            systemBadge(c.system, 'cluster-detail-system'), ' ',
            el('span', { 'data-testid': 'cluster-detail-scope', text: c.description ? 'scope: ' + c.description : 'no scope' }), ' · ',
            el('span', { text: 'created ' + fmtTime(c.created_at) }), ' · ',
            el('span', { text: 'updated ' + fmtTime(c.updated_at) }))),
        el('button', { type: 'button', class: 'btn btn-danger', 'data-testid': 'delete-cluster', onclick: () => deleteCluster(c.id), text: 'Delete cluster' })),
      el('div', { class: 'summary summary-3' },
        stat('Trajectories', fmtInt(c.trajectories || 0), 'learned from', 'cluster-detail-trajectories'),
        stat('Entries', entries === null ? '–' : fmtInt(entries), 'kept in its state', 'cluster-entries'),
        stat('Version', fmtInt(c.version || 0), 'updates committed', null)),
      el('section', { class: 'card', 'aria-label': 'Cluster state', 'data-testid': 'cluster-state', 'data-system': c.system || '' },
        el('div', { class: 'card-head' }, el('h2', { text: 'State' }), el('span', { class: 'muted small', text: 'as ' + (c.system || 'its system') + ' keeps it' })),
        renderState(c)));
  }

  function stat(label, value, foot, testid) {
    return el('div', { class: 'card stat' },
      el('div', { class: 'stat-label', text: label }),
      el('div', { class: 'stat-value', 'data-testid': testid, text: value }),
      el('div', { class: 'stat-foot muted', text: foot }));
  }

  async function deleteCluster(id) {
    if (!window.confirm('Delete cluster “' + id + '”? What it learned is removed for good; the sessions stay.')) return;
    try {
      await api(clusterPath(id), 'DELETE');
      showError('');
      ls.clusters = list(ls.clusters).filter((c) => c.id !== id);
      location.hash = '#/clusters';
    } catch (err) {
      if (err.status !== 401) showError('Cannot delete ' + id + ': ' + err.message);
    }
  }

  // renderState draws a cluster's state by its shape: each memory system's REST view has its
  // own lists (lessons, trajectories, records, the cluster session's context).
  function renderState(c) {
    const st = c.state;
    const key = 'cluster/' + c.id;
    if (st === undefined || st === null) return el('p', { class: 'muted', 'data-testid': 'state-empty', text: 'Nothing learned yet.' });
    if (typeof st === 'string') return renderContent(st, key) || el('p', { class: 'muted', 'data-testid': 'state-empty', text: 'Nothing learned yet.' });
    if (Array.isArray(st.lessons)) return renderLessonsState(st, c);
    if (Array.isArray(st.records)) return renderRecords(st.records, key);
    if (Array.isArray(st.trajectories)) return renderTrajectories(st.trajectories, key);
    if (Array.isArray(st.context)) return renderClusterSession(st, key);
    if (typeof st.status === 'string' && Array.isArray(st.refused)) return renderNumeric(st);
    return el('pre', { class: 'raw mono', 'data-testid': 'state-json', text: JSON.stringify(st, null, 2) });
  }

  // renderNumeric draws a numeric cluster (regression, hazard, entities): where its
  // configuration stands and why, the frozen bindings, the batches it refused, and its data.
  function renderNumeric(st) {
    const refused = list(st.refused);
    return el('div', { class: 'state-numeric', 'data-testid': 'state-numeric' },
      el('p', {},
        el('span', { class: 'badge', 'data-testid': 'numeric-status', text: st.status }),
        ' ', st.status === 'warming' ? 'waiting for its first reuse to be configured from warm-up ' + (st.warmup || '') :
          fmtInt(st.events || 0) + ' events learned from'),
      st.problem ? el('p', { class: 'error', 'data-testid': 'numeric-problem', text: 'Configuration failed: ' + st.problem }) : null,
      st.bindings ? el('div', {},
        el('div', { class: 'section-label', text: 'Bindings (frozen)' }),
        el('pre', { class: 'raw mono', 'data-testid': 'numeric-bindings', text: JSON.stringify(st.bindings, null, 2) })) : null,
      refused.length ? el('div', { 'data-testid': 'numeric-refused' },
        el('div', { class: 'section-label', text: 'Refused batches (never learned from)' }),
        el('ul', {}, refused.map((r) => el('li', {}, el('span', { class: 'mono', text: r.source }), ': ' + r.error)))) : null,
      st.data ? el('details', {},
        el('summary', { text: 'Data' }),
        el('pre', { class: 'raw mono', 'data-testid': 'numeric-data', text: JSON.stringify(st.data, null, 2) })) : null);
  }

  function renderLessonsState(st, c) {
    const waiting = list(st.waiting);
    return el('div', { class: 'state-lessons' },
      st.lessons.length
        ? el('ol', { class: 'lessons', 'data-testid': 'state-lessons' }, st.lessons.map((l) => el('li', {}, lessonCard(Object.assign({ cluster: c.id }, l), false))))
        : el('p', { class: 'muted', 'data-testid': 'state-empty', text: 'No lesson yet.' }),
      waiting.length ? el('div', { class: 'waiting', 'data-testid': 'waiting' },
        el('div', { class: 'section-label', text: 'Waiting for the rest of their attempts' }),
        el('ul', {}, waiting.map((w) => el('li', { 'data-testid': 'waiting-key' },
          el('span', { class: 'mono', text: w.key }), ': ', joined(list(w.attempts).map(attemptLink)))))) : null);
  }

  function renderTrajectories(trajs, key) {
    if (trajs.length === 0) return el('p', { class: 'muted', 'data-testid': 'state-empty', text: 'No trajectory kept yet.' });
    return el('ol', { class: 'entries', 'data-testid': 'state-trajectories' }, trajs.map((t, i) => el('li', { class: 'entry', 'data-testid': 'state-trajectory' },
      el('div', { class: 'entry-head' }, el('span', { class: 'step mono', text: '#' + (i + 1) }), attemptLink(t.id)),
      field('Request', text(t.request, key + '/' + i + '/request')),
      field('Answer', text(t.answer, key + '/' + i + '/answer')),
      field('Feedback', text(t.feedback, key + '/' + i + '/feedback')))));
  }

  function renderRecords(records, key) {
    if (records.length === 0) return el('p', { class: 'muted', 'data-testid': 'state-empty', text: 'No trajectory learned from yet.' });
    return el('ol', { class: 'entries', 'data-testid': 'state-records' }, records.map((r, i) => el('li', { class: 'entry', 'data-testid': 'state-record' },
      el('div', { class: 'entry-head' },
        el('span', { class: 'step mono', text: '#' + (i + 1) }), attemptLink(r.trajectory),
        r.outcome ? el('span', { class: 'badge outcome-' + cssName(r.outcome), text: r.outcome }) : null),
      field('Request', text(r.request, key + '/' + i + '/request')),
      r.rationale ? field('Judged', el('span', { text: r.rationale })) : null,
      list(r.items).length ? el('ul', { class: 'items' }, list(r.items).map((it) => el('li', { class: 'item', 'data-testid': 'state-item' },
        el('div', { class: 'item-title', text: str(it.title) }),
        it.description ? el('div', { class: 'muted small', text: it.description }) : null,
        it.content ? el('div', { class: 'item-content', text: it.content }) : null))) : null)));
  }

  function renderClusterSession(st, key) {
    const ctx = list(st.context);
    return el('div', { class: 'state-session' },
      el('p', { class: 'muted small hint', text: 'The cluster session’s context (an advisory is read from it): ' + plural(ctx.length, 'message') + ', '
        + fmtInt(st.context_tokens || 0) + ' tokens; ' + plural(st.archived || 0, 'message') + ' archived beneath.' }),
      list(st.stack).length ? field('Intents', list(st.stack).map((it, i) => el('span', { class: 'chip chip-intent', text: (i + 1) + ' ' + str(it.label) }))) : null,
      list(st.absorbed).length ? el('div', { class: 'absorbed', 'data-testid': 'state-absorbed' },
        el('div', { class: 'section-label', text: 'Trajectories absorbed' }),
        el('ul', {}, list(st.absorbed).map((a) => el('li', {}, attemptLink(a.id), ' ', el('span', { text: str(a.label) }),
          el('span', { class: 'muted small', text: ' · ' + plural(a.messages || 0, 'message') }))))) : null,
      ctx.length ? el('ol', { class: 'messages', 'data-testid': 'state-context' }, ctx.map((m, i) => el('li', {},
        el('article', { class: 'msg k-' + cssName(m.kind || 'raw'), 'data-testid': 'state-message' },
          el('header', { class: 'msg-head' },
            el('span', { class: 'badge kind-badge', text: str(m.kind || 'raw').replace('_', ' ') }),
            el('span', { class: 'role', text: str(m.role) || '?' }),
            el('span', { class: 'spacer' }),
            el('span', { class: 'tokens', text: fmtInt(m.tokens) + ' tok' })),
          renderContent(str(m.content), key + '/ctx/' + i))))) : null);
  }

  function joined(nodes) {
    return nodes.length ? nodes.map((n, i) => [i ? ', ' : '', n]) : el('span', { class: 'muted', text: 'none' });
  }

  // ---------- the lessons page ----------

  // A lesson is in force (active), replaced or withdrawn (superseded: withdrawn when nothing
  // replaced it), or anything else the server says.
  const statusOf = (l) => (l.status === 'active' ? 'active' : l.status === 'superseded' ? 'superseded' : cssName(l.status));

  function renderLessonsPage() {
    if (ls.lessonsError && !ls.lessons) return errorCard('Lessons', ls.lessonsError, 'lessons-error');
    const all = ls.lessons;
    const active = list(all).filter((l) => statusOf(l) === 'active');
    const other = list(all).filter((l) => statusOf(l) !== 'active');
    const review = list(all).filter((l) => l.review).length;
    const clusters = new Set(list(all).map((l) => l.cluster).filter(Boolean));
    const head = el('div', { class: 'detail-head' },
      el('div', {},
        el('h1', { text: 'Lessons' }),
        el('div', { class: 'muted small', 'data-testid': 'lessons-summary', text: !all ? 'Loading…'
          : plural(active.length, 'active lesson') + ' · ' + fmtInt(other.length) + ' superseded'
            + (review ? ' · ' + fmtInt(review) + ' for review' : '') + ' · from ' + plural(clusters.size, 'cluster') })),
      el('button', { type: 'button', class: 'btn', id: 'export-lessons', 'data-testid': 'export-lessons', onclick: exportLessons,
        title: 'download every lesson as the Markdown lessons file (GET /api/lessons/export)', text: 'Export Markdown' }));
    if (!all) return el('div', { class: 'learn-page', 'data-testid': 'lessons-page' }, head, el('div', { class: 'card placeholder', text: 'Loading lessons…' }));
    const tabs = el('div', { class: 'tabs', role: 'tablist' }, LESSON_FILTERS.map(([f, label]) => el('button', {
      type: 'button', role: 'tab', class: 'tab' + (ls.filter === f ? ' active' : ''), 'aria-selected': String(ls.filter === f),
      'data-testid': 'lessons-filter-' + f, text: label + ' (' + (f === 'all' ? all.length : f === 'active' ? active.length : other.length) + ')',
      onclick: () => { ls.filter = f; kit.rerender(); },
    })));
    const section = (title, hint, lessons, testid) => el('section', { class: 'card', 'aria-label': title, 'data-testid': testid },
      el('div', { class: 'card-head' }, el('h2', {}, title, el('span', { class: 'count', text: String(lessons.length) })), el('span', { class: 'muted small', text: hint })),
      lessons.length
        ? el('ol', { class: 'lessons' }, lessons.map((l) => el('li', {}, lessonCard(l, true))))
        : el('p', { class: 'muted', text: testid === 'lessons-active' ? 'No lesson in force.' : 'No lesson was superseded.' }));
    const out = [head];
    if (all.length === 0) {
      out.push(el('div', { class: 'card placeholder', 'data-testid': 'lessons-empty',
        text: 'No lesson yet. A lessons cluster learns them from the outcomes of its tasks’ attempts.' }));
    } else {
      out.push(el('div', { class: 'lessons-tabs' }, tabs));
      if (ls.filter !== 'superseded') out.push(section('Active', 'in force: read into the advisories of new tasks', active, 'lessons-active'));
      if (ls.filter !== 'active') out.push(section('Superseded', 'kept with what replaced them and why', other, 'lessons-superseded'));
    }
    return el('div', { class: 'learn-page', 'data-testid': 'lessons-page' }, out);
  }

  // lessonCard draws one lesson: its decision and conditions, its evidence and provenance, why
  // it is no longer in force, and its history (folded).
  function lessonCard(l, withCluster) {
    const status = statusOf(l);
    const withdrawn = status === 'superseded' && list(l.superseded_by).length === 0;
    const prov = l.provenance || {};
    const id = str(l.id);
    const ckey = (l.cluster || '') + '/' + id;
    const history = list(l.history);
    return el('article', {
      class: 'lesson st-' + status + (l.review ? ' review' : ''), 'data-testid': 'lesson',
      'data-lesson-id': id, 'data-cluster-id': l.cluster || null, 'data-status': l.status || '',
    },
    el('header', { class: 'lesson-head' },
      l.kind ? el('span', { class: 'badge lesson-kind kind-' + cssName(l.kind), 'data-testid': 'lesson-kind', text: l.kind }) : null,
      el('span', { class: 'mono lesson-id', text: id }),
      l.rule || l.key ? el('span', { class: 'mono lesson-rule', 'data-testid': 'lesson-rule', text: l.rule || l.key + ' = ' + str(l.value) }) : null,
      el('span', { class: 'spacer' }),
      l.review ? el('span', { class: 'badge badge-review', 'data-testid': 'lesson-review', title: 'every attempt it rested on was deleted: confirm or delete it', text: 'for review' }) : null,
      el('span', { class: 'badge lesson-status status-' + status, 'data-testid': 'lesson-status', text: withdrawn ? 'withdrawn' : str(l.status) || '?' }),
      withCluster && l.cluster ? clusterLink(l.cluster, { class: 'mono small', 'data-testid': 'lesson-cluster', title: 'the cluster that keeps it' }) : null),
    l.decision ? el('div', { class: 'lesson-decision', 'data-testid': 'lesson-decision', text: l.decision }) : null,
    status !== 'active' ? el('div', { class: 'lesson-why', 'data-testid': 'lesson-why' },
      el('span', { class: 'field-name', text: withdrawn ? 'Withdrawn' : 'Superseded by' }),
      withdrawn ? null : joined(list(l.superseded_by).map((to) => el('button', { type: 'button', class: 'link mono', 'data-testid': 'superseded-by',
        title: 'show the lesson that replaced it', onclick: () => showLesson(l.cluster, to), text: to }))),
      l.reason ? el('span', { class: 'why', 'data-testid': 'lesson-reason', text: (withdrawn ? '' : ' · ') + l.reason }) : null) : null,
    field('When', conditions(l.when, 'always')),
    list(l.not_when).length ? field('Not when', conditions(l.not_when, '')) : null,
    l.evidence ? field('Evidence', el('span', { 'data-testid': 'lesson-evidence', text: l.evidence })) : null,
    field('Learned from', el('span', { 'data-testid': 'lesson-provenance' },
      list(prov.tasks).length ? [plural(list(prov.tasks).length, 'task') + ' ', list(prov.tasks).map((t) => el('span', { class: 'chip chip-task mono', text: t })), ' · '] : null,
      list(prov.attempts).length ? [plural(list(prov.attempts).length, 'attempt') + ': ', joined(list(prov.attempts).map(attemptLink))]
        : el('span', { class: 'muted', text: 'no attempt on record' }))),
    history.length ? folded('history' + ckey, { class: 'lesson-history', 'data-testid': 'lesson-history' },
      ['History', el('span', { class: 'muted small', text: ' · ' + plural(history.length, 'change') })],
      el('ol', {}, history.map((h) => el('li', { 'data-testid': 'lesson-change', 'data-event': h.event || '' },
        el('span', { class: 'step mono', text: 'update ' + (h.update ?? '?') }),
        el('span', { class: 'chip event-' + cssName(h.event), text: h.event || '?' }),
        h.note ? el('span', { class: 'note', text: h.note }) : null)))) : null);
  }

  function conditions(cs, none) {
    const xs = list(cs);
    if (xs.length === 0) return el('span', { class: 'muted', text: none || '–' });
    return xs.map((c) => el('span', { class: 'chip chip-cond', 'data-testid': 'lesson-condition', text: c }));
  }

  // showLesson scrolls to a lesson of the same cluster on this page, after showing every lesson.
  function showLesson(cluster, id) {
    const find = () => [...document.querySelectorAll('[data-testid="lesson"]')]
      .find((n) => n.dataset.lessonId === id && (!cluster || !n.dataset.clusterId || n.dataset.clusterId === cluster));
    if (!find() && ls.filter !== 'all') {
      ls.filter = 'all';
      kit.rerender();
    }
    const node = find();
    if (!node) return;
    node.scrollIntoView({ behavior: 'smooth', block: 'center' });
    node.classList.remove('flash');
    void node.offsetWidth;
    node.classList.add('flash');
  }

  // exportLessons downloads the Markdown lessons file. It is fetched with the API key (a plain
  // link could not carry it) and handed to the browser as a file.
  async function exportLessons() {
    try {
      const { text: md, filename } = await apiText('/api/lessons/export');
      showError('');
      const url = URL.createObjectURL(new Blob([md], { type: 'text/markdown;charset=utf-8' }));
      const a = el('a', { href: url, download: filename || 'lessons.md', hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } catch (err) {
      if (err.status !== 401) showError('Cannot export the lessons: ' + err.message);
    }
  }

  // ---------- a session's task ----------

  // sessionCard says how the session's task was routed, what advisory it read and how it ended;
  // nothing for a session that learning never saw.
  function sessionCard(d) {
    const t = d && d.learning;
    if (!t || typeof t !== 'object') return null;
    const decision = str(t.decision) || 'stateless';
    const key = 'learning/' + d.id;
    return el('section', { class: 'card learning', 'aria-label': 'Learning', 'data-testid': 'session-learning' },
      el('div', { class: 'card-head' },
        el('h2', { text: 'Learning' }),
        el('span', { class: 'muted small', 'data-testid': 'learning-task', title: 'the task key groups the attempts of one problem (Hippocam-Task)',
          text: 'task ' + (t.key || d.id) + (t.attempts > 1 ? ' · ' + plural(t.attempts, 'attempt') : '') })),
      el('div', { class: 'learning-route' },
        field('Decision', el('span', { class: 'badge decision decision-' + cssName(decision), 'data-testid': 'learning-decision', title: DECISION_HINT[decision] || null, text: decision })),
        field('Cluster', t.cluster ? clusterLink(t.cluster, { 'data-testid': 'learning-cluster' }) : el('span', { class: 'muted', 'data-testid': 'learning-cluster', text: 'none' })),
        t.system ? field('System', systemBadge(t.system, 'learning-system')) : null,
        t.reason ? field('Reason', el('span', { 'data-testid': 'learning-reason', text: t.reason })) : null),
      el('div', { class: 'learning-part' },
        el('div', { class: 'learning-part-head' },
          el('span', { class: 'section-label', text: 'Advisory' }),
          t.advisory ? el('span', { class: 'muted small', 'data-testid': 'advisory-tokens', text: fmtInt(t.advisory_tokens || 0) + ' tokens' }) : null),
        t.advisory
          ? el('div', { class: 'advisory', 'data-testid': 'advisory' }, renderContent(t.advisory, key + '/advisory'))
          : el('p', { class: 'muted small', 'data-testid': 'advisory-none',
            text: t.cluster ? 'None: the cluster held nothing for this task yet.' : 'None: the task ran without a cluster.' })),
      el('div', { class: 'learning-part' },
        el('div', { class: 'learning-part-head' },
          el('span', { class: 'section-label', text: 'Outcome' }),
          t.ended && t.ended_at ? el('span', { class: 'muted small', title: fmtTime(t.ended_at), text: 'ended ' + fmtAgo(t.ended_at) }) : null),
        t.ended ? [
          el('div', { class: 'outcome-line' },
            typeof t.success === 'boolean' ? el('span', { class: 'badge outcome-' + (t.success ? 'success' : 'failure'), 'data-testid': 'outcome-success',
              title: 'as the client reported it; never shown to a learning component', text: t.success ? 'success' : 'failure' }) : null,
            typeof t.reward === 'number' ? el('span', { class: 'muted small', 'data-testid': 'outcome-reward', text: 'reward ' + t.reward }) : null),
          el('div', { class: 'outcome-feedback', 'data-testid': 'outcome-feedback' }, renderContent(str(t.feedback), key + '/feedback')),
        ] : el('p', { class: 'muted small', 'data-testid': 'outcome-open', text: 'The task is open: its outcome (POST /api/sessions/{id}/outcome) ends it.' })));
  }

  return { open, load, render, sessionCard };
};
