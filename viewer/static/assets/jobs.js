// Hippocam memory viewer: the jobs page. It lists the tenant's queued background jobs
// (GET /api/jobs): the consolidations and learning updates still to run, how many times each
// ran, why its last run failed and when it is due again. A job that failed every retry stays
// queued with its error, so a failed update shows here until it runs again or its session goes.
//
// This file only defines window.hippocamJobs; app.js calls it with the viewer's helpers. Every
// value from the server reaches the page as text through kit.el, never as markup.
'use strict';

window.hippocamJobs = (kit) => {
  const { el, api, keyAccepted, fmtInt, fmtTime, fmtAgo, sessionLink } = kit;

  const js = {
    jobs: null, // GET /api/jobs: the list
    error: null,
    shown: '', // what the page shows, to skip identical redraws while polling
    loading: false,
  };

  const str = (x) => (typeof x === 'string' ? x : x === undefined || x === null ? '' : String(x));

  function open(page, fresh) {
    if (fresh) js.shown = '';
    load().catch(() => {});
  }

  async function load() {
    if (js.loading) return;
    js.loading = true;
    try {
      const body = await api('/api/jobs');
      keyAccepted();
      js.jobs = Array.isArray(body && body.jobs) ? body.jobs : [];
      js.error = null;
    } catch (err) {
      if (err.status !== 401) js.error = err.message;
    } finally {
      js.loading = false;
    }
    if (signature() !== js.shown) kit.rerender();
  }

  // signature is what the page shows, sessions that are listed (and so linked) included.
  function signature() {
    const linked = (js.jobs || []).map((j) => kit.isSession(j.session));
    return JSON.stringify([js.jobs, js.error, linked]);
  }

  // stateOf says where a job stands: running under a live lease, failed (its last run did) and
  // waiting to be retried, or queued.
  function stateOf(j) {
    if (j.running) return ['running', 'A worker holds it now'];
    if (j.last_error) return ['failed', 'Its last run failed; it runs again when due'];
    return ['queued', 'Waiting for a worker'];
  }

  // due says when a job may run next: a time in the past means now.
  function due(t) {
    const d = new Date(t);
    if (isNaN(d)) return '–';
    const secs = Math.floor((d.getTime() - Date.now()) / 1000); // a job due in 24 h is "in 23 h" a moment later
    if (secs <= 0) return 'now';
    if (secs < 60) return 'in ' + secs + ' s';
    if (secs < 3600) return 'in ' + Math.floor(secs / 60) + ' min';
    if (secs < 86400) return 'in ' + Math.floor(secs / 3600) + ' h';
    return fmtTime(t);
  }

  function render() {
    js.shown = signature();
    const jobs = js.jobs;
    let body;
    if (js.error && !jobs) body = el('p', { class: 'muted', 'data-testid': 'jobs-error', text: js.error });
    else if (!jobs) body = el('p', { class: 'muted', text: 'Loading jobs…' });
    else if (jobs.length === 0) {
      body = el('p', { class: 'muted', 'data-testid': 'jobs-empty', text: 'No job queued: every consolidation and update has run.' });
    } else {
      body = el('table', { class: 'learn-table', id: 'jobs', 'data-testid': 'jobs' },
        el('thead', {}, el('tr', {}, ['Session', 'Kind', 'State', 'Attempts', 'Due', 'Last error', 'Queued'].map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, jobs.map((j) => {
          const [state, hint] = stateOf(j);
          return el('tr', { 'data-testid': 'job-row', 'data-job-id': str(j.id), 'data-state': state },
            el('th', { scope: 'row' }, kit.isSession(j.session)
              ? sessionLink(str(j.session), null, { class: 'mono', 'data-testid': 'job-session' })
              : el('span', { class: 'mono', 'data-testid': 'job-session', text: str(j.session) })),
            el('td', { class: 'mono', 'data-testid': 'job-kind', text: str(j.kind) }),
            el('td', {}, el('span', { class: 'badge job-' + state, 'data-testid': 'job-state', title: hint, text: state })),
            el('td', { class: 'num', 'data-testid': 'job-attempts', text: fmtInt(j.attempts || 0) }),
            el('td', { class: 'when', 'data-testid': 'job-due', title: fmtTime(j.due_at), text: due(j.due_at) }),
            el('td', { 'data-testid': 'job-error', text: str(j.last_error) || '–' }),
            el('td', { class: 'when', title: fmtTime(j.created_at), text: fmtAgo(j.created_at) }));
        })));
    }
    return el('div', { class: 'learn-page', 'data-testid': 'jobs-page' },
      el('section', { class: 'card', 'aria-label': 'Jobs' },
        el('div', { class: 'card-head' },
          el('h2', {}, 'Jobs', el('span', { class: 'count', 'data-testid': 'job-count', text: jobs ? String(jobs.length) : '' })),
          el('span', { class: 'muted small', text: 'background work still queued · oldest first' })),
        body));
  }

  return { open, load, render };
};
