// benchctl view's page: attempts and runs with filters, one attempt as a
// timeline, two attempts side by side, the scorecard.
//
// Everything it shows comes from benchd and may be an agent's: it is put
// in the page as text nodes and attribute values, never parsed as HTML.
// Links are built only from the page's own routes, their values escaped.
// The page's Content-Security-Policy requires Trusted Types with no
// policy, so that any use of an HTML sink would throw.
'use strict';

// ---- building the DOM: text only ----

const ATTRS = new Set(['class', 'id', 'title', 'type', 'name', 'value', 'placeholder', 'for', 'colspan',
  'min', 'max', 'alt', 'open', 'checked', 'disabled', 'role', 'aria-label', 'data-region', 'data-kind',
  'data-state', 'data-seq', 'data-id', 'data-nav', 'list']);

// el makes an element: attrs from ATTRS (on* names take functions, as
// listeners; href takes a route), children as nodes or text.
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k === 'href') e.setAttribute('href', routeHref(v));
    else if (ATTRS.has(k)) e.setAttribute(k, v === true ? '' : String(v));
    else throw new Error('attribute not allowed: ' + k);
  }
  add(e, kids);
  return e;
}

function add(parent, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k === undefined || k === null || k === false) continue;
    parent.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return parent;
}

// routeHref is the href of one of the page's routes: "#" and the route.
function routeHref(route) {
  if (typeof route !== 'string' || !route.startsWith('/')) throw new Error('not a route: ' + route);
  return '#' + route;
}

const enc = encodeURIComponent;
const routes = {
  attempts: (q) => '/attempts' + qs(q),
  runs: (q) => '/runs' + qs(q),
  attempt: (id) => '/attempt/' + enc(id),
  compare: (a, b) => '/compare/' + enc(a) + '/' + enc(b),
  scorecard: (q) => '/scorecard' + qs(q),
};

function qs(q) {
  const s = q ? q.toString() : '';
  return s ? '?' + s : '';
}

// ids benchd gives (attempts, runs): anything else is never fetched.
const ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

// ---- talking to the viewer ----

class FetchError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function get(path, as) {
  const r = await fetch(path, { credentials: 'same-origin', cache: 'no-store' });
  const text = await r.text();
  if (!r.ok) {
    let msg = text.trim();
    try { msg = JSON.parse(text).message || msg; } catch (e) { /* not JSON */ }
    throw new FetchError(r.status, msg || r.statusText);
  }
  return as === 'text' ? text : JSON.parse(text);
}

const api = {
  config: () => get('/view/config'),
  status: () => get('/api/v1/status'),
  attempts: (q) => get('/view/attempts' + qs(q)),
  attempt: (id) => get('/view/attempt?attempt=' + enc(id)),
  log: (id) => get('/view/log?attempt=' + enc(id)),
  diff: (id) => get('/view/diff?attempt=' + enc(id)),
  transcript: (id) => get('/api/v1/attempts/' + enc(id) + '/transcript'),
  model: (id) => get('/api/v1/attempts/' + enc(id) + '/model'),
  modelPart: (id, seq, part) => get('/api/v1/attempts/' + enc(id) + '/model/' + enc(seq) + '/' + part, 'text'),
  runStatus: (id) => get('/api/v1/runs/' + enc(id) + '/status'),
  scorecard: (q) => get('/view/scorecard' + qs(q)),
};

// ---- formatting ----

const nf = new Intl.NumberFormat('en-US');
const num = (n) => nf.format(n || 0);
function ms(n) {
  if (n < 1000) return n + 'ms';
  if (n < 60000) return (n / 1000).toFixed(1) + 's';
  return Math.floor(n / 60000) + 'm' + String(Math.floor(n / 1000) % 60).padStart(2, '0') + 's';
}
function usd(c) { return c === undefined || c === null ? null : '$' + c.toFixed(c < 1 ? 4 : 2); }
function bytes(n) {
  if (n < 1024) return n + ' B';
  let v = n, i = -1;
  while (v >= 1024 && i < 4) { v /= 1024; i++; }
  return v.toFixed(1) + ' ' + 'KMGTP'[i] + 'iB';
}
function pct(r) { return r === null || r === undefined ? 'n/a' : (r * 100).toFixed(1) + '%'; }
function interval(i) { return i ? (i.lo * 100).toFixed(1) + '–' + (i.hi * 100).toFixed(1) + '%' : 'n/a'; }
function short(s, n) { s = String(s || ''); return s.length > n ? s.slice(0, n - 1) + '…' : s; }
function plural(n, w) { return n + ' ' + w + (n === 1 ? '' : 's'); }

// The badge of a verdict word as benchctl prints it (list's VERDICT).
const VERDICT_CLASS = { 'pass': 'pass', 'FAIL': 'fail', 'REVIEW': 'review', 'INFRA-ERROR': 'infra', 'canceled': 'off', 'queued': 'run', 'running': 'run' };
function verdictBadge(word, big) {
  return el('span', { class: 'badge b-' + (VERDICT_CLASS[word] || 'off') + (big ? ' big' : '') }, word);
}
// The class of a scorecard's outcome word.
const OUTCOME_CLASS = { 'pass': 'pass', 'fail': 'fail', 'unresolved': 'review', 'infra error': 'infra', 'canceled': 'off' };

// ---- the router ----

const main = () => document.getElementById('main');
let generation = 0;
let config = null;

// Live pages: a page that shows a queued or running attempt (or a run
// not ended) says so (watch), and is drawn again every LIVE_MS while it is
// the page shown, in place (no scroll, no loading state), until nothing on
// it runs. A refresh waits while the reader is busy with the page: a field
// focused, or a field changed from what the page drew (a box ticked, a
// choice unticked, a value typed); the folds the reader opened stay open.
const LIVE_MS = 2000;
let liveOn = false;
function watch(state) { if (state === 'queued' || state === 'running') liveOn = true; }
let drawnFields = '';
function fieldState(m) {
  return JSON.stringify([...m.querySelectorAll('input, select, textarea')].map((i) => [i.checked, i.value]));
}
function readerBusy(m) {
  const f = document.activeElement;
  if (f && f !== document.body && m.contains(f) && /^(INPUT|SELECT|TEXTAREA)$/.test(f.tagName)) return true;
  return fieldState(m) !== drawnFields;
}

function parseRoute() {
  const h = location.hash.replace(/^#/, '') || '/attempts';
  const i = h.indexOf('?');
  const path = i < 0 ? h : h.slice(0, i);
  const q = new URLSearchParams(i < 0 ? '' : h.slice(i + 1));
  let parts;
  try { parts = path.split('/').filter(Boolean).map(decodeURIComponent); } catch (e) { parts = []; }
  return { parts, q };
}

async function route(opts) {
  const refresh = !!(opts && opts.refresh === true);
  const gen = ++generation;
  const hash = location.hash;
  const { parts, q } = parseRoute();
  const m = main();
  liveOn = false;
  if (!refresh) m.dataset.state = 'loading';
  const page = parts[0] || 'attempts';
  m.dataset.route = page;
  for (const a of document.querySelectorAll('.top nav a')) {
    a.classList.toggle('current', a.dataset.nav === (page === 'attempt' || page === 'compare' ? 'attempts' : page));
  }
  const view = el('div', { 'data-region': 'view' });
  try {
    if (!config) config = await api.config();
    switch (page) {
      case 'attempts': await attemptsPage(view, q, false); break;
      case 'runs': await attemptsPage(view, q, true); break;
      case 'attempt': await attemptPage(view, parts[1]); break;
      case 'compare': await comparePage(view, parts[1], parts[2]); break;
      case 'scorecard': await scorecardPage(view, q); break;
      default: view.append(el('p', { class: 'error' }, 'No such page: ' + parts.join('/')));
    }
  } catch (e) {
    view.append(el('p', { class: 'error' }, e.message));
  }
  if (gen !== generation) return; // another route started meanwhile
  const live = liveOn;
  if (live) view.prepend(el('p', { class: 'note live', 'data-region': 'live' }, 'live: attempts are running; this page is read again every ' + LIVE_MS / 1000 + ' s'));
  const y = window.scrollY;
  const folds = [...m.querySelectorAll('details')].map((d) => d.open);
  const newFolds = view.querySelectorAll('details');
  if (refresh && newFolds.length === folds.length) newFolds.forEach((d, i) => { d.open = folds[i]; });
  m.replaceChildren(view);
  m.dataset.hash = hash;
  m.dataset.state = 'ready';
  m.dataset.live = live ? 'on' : 'off';
  m.dataset.drawn = String(Number(m.dataset.drawn || 0) + 1);
  drawnFields = fieldState(m);
  if (refresh) window.scrollTo(0, y); else window.scrollTo(0, 0);
  if (live) scheduleRefresh(gen, hash);
}

// scheduleRefresh draws the page again in LIVE_MS if it is still the one
// shown then, or waits again while the reader is busy with it.
function scheduleRefresh(gen, hash) {
  setTimeout(() => {
    if (gen !== generation || location.hash !== hash) return;
    if (readerBusy(main())) { scheduleRefresh(gen, hash); return; }
    daemonLine();
    route({ refresh: true });
  }, LIVE_MS);
}

// fail is an error as a page shows it, in place of what could not be read.
function fail(where, e) {
  return el('p', { class: 'error' }, (where ? where + ': ' : '') + e.message);
}

// ---- filters ----

// filterForm is the form of list's (and scorecard's) filters: its
// values from q, applying it goes to the route with the new query.
function filterForm(q, go, opts) {
  const text = (name, label, ph) => el('label', null, label,
    el('input', { type: 'text', name, value: name === 'task' ? q.getAll('task').join(', ') : (q.get(name) || ''), placeholder: ph || '' }));
  const boxes = (name, label, values) => el('fieldset', null, el('legend', null, label),
    values.map((v) => el('label', null, el('input', { type: 'checkbox', name, value: v, checked: q.getAll(name).includes(v) }), v)));
  const series = el('select', { name: 'series' }, el('option', { value: '' }, opts.scorecard ? 'every series' : 'any'),
    config.series.map((s) => el('option', { value: s.name }, s.name)));
  series.value = q.get('series') || '';
  const f = el('form', { class: 'filters', 'data-region': 'filters' },
    text('agent', 'agent', 'as run --agent took it'), text('model', 'model'), text('run', 'run', 'r-…'),
    text('task', 'task', 'rt-01, rt-02'), el('label', null, 'series', series),
    boxes('state', 'state', config.states), boxes('purpose', 'purpose', config.purposes),
    opts.scorecard ? el('label', null, 'every purpose', el('input', { type: 'checkbox', name: 'all-purposes', value: '1', checked: q.has('all-purposes') })) : null,
    text('since', 'since', '2026-11-29, 24h, 7d'), text('until', 'until'),
    opts.scorecard ? null : el('label', null, 'limit', el('input', { type: 'number', name: 'limit', min: 1, max: 1000, value: q.get('limit') || '100' })),
    el('div', { class: 'buttons' },
      el('button', { type: 'submit', class: 'primary' }, 'Apply'),
      el('button', { type: 'button', onclick: () => { location.hash = go(new URLSearchParams()); } }, 'Clear')));
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const out = new URLSearchParams();
    for (const [k, v] of new FormData(f)) {
      const s = String(v).trim();
      if (!s || (k === 'limit' && s === '100')) continue;
      if (k === 'task') s.split(/[\s,]+/).filter(Boolean).forEach((t) => out.append('task', t));
      else out.append(k, s);
    }
    location.hash = go(out);
  });
  return f;
}

// ---- attempts and runs ----

async function attemptsPage(view, q, byRun) {
  const title = byRun ? 'Runs' : 'Attempts';
  view.append(el('div', { class: 'pagehead' }, el('h1', null, title),
    el('span', { class: 'sub' }, byRun ? 'the runs of the attempts that match, newest first' : 'newest first; filters applied by benchd')));
  view.append(el('div', { class: 'card' }, filterForm(q, byRun ? routes.runs : routes.attempts, {})));
  const run = q.get('run');
  const [list, status] = await Promise.all([
    api.attempts(q),
    !byRun && run && ID.test(run) ? api.runStatus(run).catch((e) => e) : null,
  ]);
  if (status) view.append(runCard(status));
  if (status && !(status instanceof Error) && !status.ended) liveOn = true;
  for (const sa of list.attempts) watch(sa.attempt.state);
  view.append(byRun ? runsTable(list) : attemptsTable(list));
}

function runCard(st) {
  if (st instanceof Error) return el('div', { class: 'card' }, fail('run', st));
  const counts = {};
  for (const a of st.attempts) counts[a.state] = (counts[a.state] || 0) + 1;
  return el('div', { class: 'card', 'data-region': 'run' },
    el('h2', null, 'Run ', el('span', { class: 'mono' }, st.run.id)),
    el('dl', { class: 'kv' },
      el('dt', null, 'agent'), el('dd', { class: 'mono' }, st.run.agent),
      el('dt', null, 'tasks'), el('dd', null, (st.run.tasks || []).join(', ')),
      el('dt', null, 'attempts'), el('dd', null, plural(st.attempts.length, 'slot') + ' (' + Object.entries(counts).map(([k, v]) => v + ' ' + k).join(', ') + ')' +
        (st.run.attempts.length > st.attempts.length ? ', ' + plural(st.run.attempts.length - st.attempts.length, 'retry') : '')),
      el('dt', null, 'ended'), el('dd', null, st.ended ? 'yes' : 'no (' + st.concurrency + ' at once on benchd)'),
      el('dt', null, 'created'), el('dd', null, new Date(st.run.created).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC'))));
}

function attemptsTable(list) {
  const picked = new Set();
  const button = el('button', { type: 'button', disabled: true }, 'Compare the two selected');
  const hint = el('span', { class: 'note' }, 'select two attempts of one task to compare them');
  button.addEventListener('click', () => {
    const [a, b] = [...picked];
    location.hash = routes.compare(a, b);
  });
  const byId = new Map(list.attempts.map((s) => [s.attempt.id, s.attempt]));
  const update = () => {
    const [a, b] = [...picked].map((id) => byId.get(id));
    const ok = picked.size === 2 && a.task === b.task;
    button.disabled = !ok;
    hint.textContent = picked.size === 2 && !ok ? 'these two are of different tasks: only attempts of one task are compared'
      : 'select two attempts of one task to compare them';
  };
  const rows = list.attempts.map((s) => {
    const a = s.attempt;
    const box = el('input', { type: 'checkbox', 'aria-label': 'select ' + a.id });
    box.addEventListener('change', () => { if (box.checked) picked.add(a.id); else picked.delete(a.id); update(); });
    return el('tr', { 'data-id': a.id },
      el('td', null, box),
      el('td', { class: 'nowrap' }, el('a', { href: routes.attempt(a.id), class: 'mono' }, a.id)),
      el('td', { class: 'nowrap' }, el('a', { href: routes.attempts(new URLSearchParams({ run: a.run })), class: 'mono' }, a.run)),
      el('td', { class: 'nowrap' }, a.task),
      el('td', { class: 'mono', title: a.agent.spec }, short(a.agent.spec, 48)),
      el('td', null, s.purpose),
      el('td', null, a.state === 'running' && a.phase ? a.state + ', ' + a.phase : a.state),
      el('td', null, a.host || '-'),
      el('td', null, verdictBadge(s.verdict)),
      el('td', { class: 'num' }, s.wall),
      el('td', { class: 'nowrap' }, s.created));
  });
  return el('div', { class: 'card', 'data-region': 'list' },
    el('div', { class: 'toolbar' }, el('span', { class: 'count' },
      plural(list.attempts.length, 'attempt') + (list.attempts.length >= list.limit ? ' (the newest ' + list.limit + ')' : '')), button, hint),
    list.attempts.length === 0 ? el('p', { class: 'empty' }, 'No attempt matches these filters.') :
      el('div', { class: 'scroll' }, el('table', { class: 'attempts list' },
        el('thead', null, el('tr', null, ['', 'attempt', 'run', 'task', 'agent', 'purpose', 'state', 'host', 'verdict', 'wall', 'created'].map((h) =>
          el('th', { class: h === 'wall' ? 'num' : null }, h)))),
        el('tbody', null, rows))));
}

// tasksText names a few tasks, or the first ones and how many more.
function tasksText(tasks) {
  return tasks.length <= 4 ? tasks.join(', ') : tasks.slice(0, 3).join(', ') + ' and ' + (tasks.length - 3) + ' more';
}

function runsTable(list) {
  const runs = new Map();
  for (const s of list.attempts) {
    const a = s.attempt;
    let r = runs.get(a.run);
    if (!r) runs.set(a.run, r = { id: a.run, agents: new Set(), tasks: new Set(), n: 0, words: {}, created: s.created });
    r.agents.add(a.agent.spec);
    r.tasks.add(a.task);
    r.n++;
    r.words[s.verdict] = (r.words[s.verdict] || 0) + 1;
    r.created = s.created < r.created ? s.created : r.created;
  }
  const cols = ['pass', 'FAIL', 'REVIEW', 'INFRA-ERROR', 'canceled', 'running', 'queued'];
  const rows = [...runs.values()].map((r) => el('tr', { 'data-id': r.id },
    el('td', { class: 'nowrap' }, el('a', { href: routes.attempts(new URLSearchParams({ run: r.id })), class: 'mono' }, r.id)),
    el('td', { class: 'mono', title: [...r.agents].join(', ') }, [...r.agents].map((a) => short(a, 48)).join(', ')),
    el('td', { title: [...r.tasks].sort().join(', ') }, tasksText([...r.tasks].sort())),
    el('td', { class: 'num' }, r.n),
    cols.map((c) => el('td', { class: 'num' }, r.words[c] ? el('span', { class: 't-' + (VERDICT_CLASS[c] || 'off') }, r.words[c]) : '·')),
    el('td', { class: 'nowrap' }, r.created)));
  return el('div', { class: 'card', 'data-region': 'list' },
    el('div', { class: 'toolbar' }, el('span', { class: 'count' }, plural(runs.size, 'run') + ' among ' + plural(list.attempts.length, 'attempt') +
      (list.attempts.length >= list.limit ? ' (the newest ' + list.limit + '; raise the limit for more)' : ''))),
    runs.size === 0 ? el('p', { class: 'empty' }, 'No attempt matches these filters.') :
      el('div', { class: 'scroll' }, el('table', { class: 'runs list' },
        el('thead', null, el('tr', null, ['run', 'agent', 'tasks', 'attempts', 'passed', 'failed', 'review', 'infra', 'canceled', 'running', 'queued', 'created'].map((h, i) =>
          el('th', { class: i >= 3 && i <= 10 ? 'num' : null }, h)))),
        el('tbody', null, rows))));
}

// ---- one attempt ----

async function attemptPage(view, id) {
  if (!id || !ID.test(id)) throw new Error('not an attempt id: ' + (id || ''));
  const s = await api.attempt(id);
  const a = s.attempt;
  watch(a.state);
  view.append(attemptHead(s));
  const why = notRun(a);
  if (why) {
    // Nothing ran: no journal, model log, changes or output to read.
    view.append(el('div', { class: 'card', 'data-region': 'not-run' }, el('p', { class: 'not-run' }, why)));
    view.append(el('div', { class: 'card', 'data-region': 'facts' }, el('div', { class: 'facts' }, factsOf(s))));
    return;
  }
  const [log, model, transcript, diff] = await Promise.all([
    api.log(id).catch((e) => e),
    api.model(id).catch((e) => e),
    api.transcript(id).catch((e) => e),
    api.diff(id).catch((e) => e),
  ]);
  view.append(el('div', { class: 'card', 'data-region': 'facts' }, el('div', { class: 'facts' }, factsOf(s))));
  view.append(modelCard(a, model));
  view.append(timelineCard(a, log, model));
  view.append(changesCard(diff));
  view.append(transcriptCard(transcript));
}

// notRun says why an attempt has no record of an agent's run ('' when it
// has one): queued, or ended (an infra error, a cancellation) before its
// agent started: no journal head and no agent end.
function notRun(a) {
  const started = a.journal_head || (a.wall_ms !== null && a.wall_ms !== undefined);
  if (a.state === 'queued') return 'not started yet: queued';
  if (started) return '';
  if (a.state === 'infra_error') return 'never ran: ' + (a.infra_error || 'an infra error before the agent started');
  if (a.state === 'canceled') return 'never ran: canceled before the agent started';
  return '';
}

function attemptHead(s) {
  const a = s.attempt;
  const sameTask = new URLSearchParams({ task: a.task });
  return el('div', { class: 'card', 'data-region': 'head' },
    el('div', { class: 'pagehead' },
      el('h1', null, 'Attempt ', el('span', { class: 'mono' }, a.id)),
      el('span', { class: 'sub' }, 'task ', el('strong', null, a.task), ' · run ',
        el('a', { href: routes.attempts(new URLSearchParams({ run: a.run })), class: 'mono' }, a.run),
        ' · ', el('a', { href: routes.attempts(sameTask) }, 'other attempts of ' + a.task))),
    el('div', { class: 'verdict-line', 'data-region': 'verdict' },
      verdictBadge(s.verdict, true),
      a.state === 'done' && !a.review && a.outcome !== 'review' ? el('span', null, 'reward ' + a.reward) : null,
      a.outcome === 'review' && !a.review ? el('span', { class: 'note' }, 'left to review: neither passed nor failed until benchctl review decides it') : null,
      a.state === 'infra_error' ? el('span', { class: 't-infra' }, 'infra error: ', a.infra_error || '') : null,
      a.retried_by ? el('span', { class: 'note' }, 'retried by ', el('a', { href: routes.attempt(a.retried_by), class: 'mono' }, a.retried_by), ' (this attempt is not scored)') : null,
      a.retry_of ? el('span', { class: 'note' }, 'retry of ', el('a', { href: routes.attempt(a.retry_of), class: 'mono' }, a.retry_of)) : null),
    a.review ? el('p', null, 'Reviewed: ', el('strong', null, a.review.outcome), ' by uid ' + a.review.uid + ' at ' + a.review.time + ': ', a.review.why) : null,
    a.reasons.length ? el('ul', { class: 'reasons' }, a.reasons.map((r) => el('li', null, el('code', null, r.code), r.message))) :
      (a.state === 'done' ? el('p', { class: 'note' }, 'no reasons: every rule held') : null));
}

function factsOf(s) {
  const a = s.attempt;
  const kv = (pairs) => el('dl', { class: 'kv' }, pairs.filter(Boolean).map(([k, v]) => [el('dt', null, k), el('dd', null, v)]));
  const g = a.agent || {};
  const n = a.network || {};
  return [
    kv([
      ['state', a.state === 'running' && a.phase ? a.state + ', ' + a.phase : a.state],
      ['exit status', s.exit + (a.timed_out ? ' (timed out)' : '')],
      ['wall time', s.wall],
      ['peak memory', s.peak_memory + ' (largest process ' + s.max_rss + ')' + (a.oom ? ', OOM killed' : '')],
      s.limits ? ['limits', s.limits] : null,
      ['edits', a.edits + ' (denied ' + a.denied + ')'],
      ['network', (n.mode || '-') + ': ' + plural((n.attempts || []).length, 'connection attempt') + ', ' + (n.dns || []).length + ' DNS ' + ((n.dns || []).length === 1 ? 'query' : 'queries') + ', ' + bytes(n.bytes_in || 0) + ' in, ' + bytes(n.bytes_out || 0) + ' out'],
      ...(n.gateways || []).map((gw) => ['gateway ' + gw.name, el('span', { class: 'mono' }, (gw.kind || 'tcp') + ' ' + (gw.url || gw.endpoint)), ' · ' + plural(gw.conns, 'connection') + ', ' + bytes(gw.bytes_in) + ' in, ' + bytes(gw.bytes_out) + ' out']),
    ]),
    kv([
      ['agent', el('span', { class: 'mono' }, g.spec || '-')],
      g.exe ? ['executable', el('span', { class: 'mono' }, g.exe)] : null,
      ['sha256', el('span', { class: 'mono', title: g.sha256 || '' }, short(g.sha256 || '-', 20))],
      s.args ? ['arguments', el('span', { class: 'mono' }, s.args)] : null,
      ['version', g.version || '-'],
      g.model ? ['model', g.model] : null,
      g.env && g.env.length ? ['environment', g.env.join(', ') + ' (values not kept)'] : null,
      ['purpose', s.purpose],
    ]),
    kv([
      ['host', a.host ? [a.host, ' ', el('span', { class: 'note mono' }, '(key ' + short(a.host_keyid, 13) + ')')] : '-'],
      ['bundle', el('span', { class: 'mono', title: a.task_sha256 || '' }, short(a.task_sha256 || '-', 13))],
      ['journal head', el('span', { class: 'mono', title: a.journal_head || '' }, short(a.journal_head || '-', 13))],
      a.benchd_version ? ['benchd', a.benchd_version] : null,
      ['created', s.created], ['started', s.started], ['finished', s.finished],
    ]),
  ];
}

// usageLine is a model usage in a few words, or '' for none.
function usageLine(x) {
  return x ? num(x.calls) + ' calls, ' + num(x.input_tokens) + ' in / ' + num(x.output_tokens) + ' out' + (x.cost_usd !== undefined ? ', ' + usd(x.cost_usd) : '') : '';
}

function usageStats(u) {
  const stat = (v, k) => el('div', { class: 'stat' }, el('span', { class: 'v' }, v), el('span', { class: 'k' }, k));
  return el('div', { class: 'usage' },
    stat(num(u.calls), 'model calls' + (u.errors ? ' (' + u.errors + ' failed)' : '')),
    stat(num(u.input_tokens), 'input tokens' + (u.cached_input_tokens ? ' (' + num(u.cached_input_tokens) + ' cached)' : '')),
    stat(num(u.output_tokens), 'output tokens' + (u.reasoning_tokens ? ' (' + num(u.reasoning_tokens) + ' reasoning)' : '')),
    stat(num(u.tool_calls), 'tool calls'),
    stat(usd(u.cost_usd) || '—', u.cost_usd === undefined ? 'cost: no price table' : 'cost' + (u.unpriced ? ' (' + plural(u.unpriced, 'call') + ' unpriced)' : '')),
    u.unreported ? stat(num(u.unreported), 'calls without usage') : null);
}

function hasHTTPGateway(a) {
  return ((a.network || {}).gateways || []).some((g) => g.kind === 'http');
}

// modelEmpty says why an attempt has no model calls to show, or null.
function modelEmpty(a, model) {
  if (model instanceof FetchError && model.status === 404) return 'No model log: this benchd does not record model calls (it has no /model endpoint).';
  if (model instanceof Error) return null;
  if (!model.calls || model.calls.length === 0) {
    return hasHTTPGateway(a) ? 'No model call went through the attempt\'s HTTP gateway.' : 'No model calls recorded: the attempt had no HTTP gateway.';
  }
  return null;
}

function modelCard(a, model) {
  const card = el('div', { class: 'card', 'data-region': 'model' }, el('h2', null, 'Model usage'));
  const why = modelEmpty(a, model);
  if (model instanceof Error && !why) card.append(fail('model log', model));
  else if (why) card.append(el('p', { class: 'empty' }, why));
  else card.append(usageStats(a.model || model.usage));
  return card;
}

// timelineCard interleaves the journal's records and the model calls by
// time.
function timelineCard(a, log, model) {
  const card = el('div', { class: 'card', 'data-region': 'timeline' }, el('h2', null, 'Timeline'));
  if (log instanceof Error) {
    card.append(fail('journal', log));
    return card;
  }
  // The mount's clock: its wall time less its t_ns, the journal's zero.
  const mount = log.records.length ? Date.parse(log.records[0].wall) - log.records[0].t_ns / 1e6 : Date.parse(a.started || a.created);
  const items = log.records.map((r) => ({ t: Date.parse(r.wall), order: 0, seq: r.seq, row: () => journalRow(r) }));
  const calls = model instanceof Error ? [] : (model.calls || []);
  for (const c of calls) items.push({ t: Date.parse(c.time), order: 1, seq: c.seq, row: () => modelRow(a, c, mount) });
  items.sort((x, y) => x.t - y.t || x.order - y.order || x.seq - y.seq);

  const verified = log.problem ? el('p', { class: 'error' }, log.problem)
    : el('p', { class: 'note' }, plural(log.records.length, 'journal record') + ', ' + plural(calls.length, 'model call') +
      (a.state === 'done' || a.state === 'infra_error' || a.state === 'canceled' ? '; chain intact, head ' + short(log.head, 13) + ' is the one stored for the attempt' : '; chain intact so far'));
  const toggles = {};
  const tbody = el('tbody');
  const box = (name, label, on) => {
    const b = el('input', { type: 'checkbox', checked: on });
    toggles[name] = b;
    b.addEventListener('change', fill);
    return el('label', null, b, label);
  };
  function fill() {
    const rows = [];
    for (const it of items) {
      const row = it.row();
      const k = row.dataset.kind;
      if (k === 'model' && !toggles.model.checked) continue;
      if (k !== 'model' && !toggles.fs.checked) continue;
      if (toggles.denied.checked && k !== 'denied') continue;
      if (!toggles.ignored.checked && k === 'ignored') continue;
      rows.push(row);
    }
    tbody.replaceChildren(...rows);
    if (rows.length === 0) tbody.append(el('tr', null, el('td', { colspan: 9, class: 'empty' }, 'nothing to show with these choices')));
  }
  card.append(verified, el('div', { class: 'legend' },
    box('fs', 'file operations', true), box('model', 'model calls', true), box('ignored', 'ignored paths', true), box('denied', 'only what was denied', false)));
  const why = modelEmpty(a, model);
  if (why) card.append(el('p', { class: 'empty', 'data-region': 'model-empty' }, why));
  else if (model instanceof Error) card.append(fail('model log', model));
  card.append(el('div', { class: 'scroll' }, el('table', { class: 'timeline' },
    el('thead', null, el('tr', null, el('th'), ['time', 'pid', 'command', 'op', 'path / model call', 'detail', 'decision', 'result'].map((h) => el('th', null, h)))),
    tbody)));
  fill();
  return card;
}

function journalRow(r) {
  const kind = r.decision === 'denied' ? 'denied' : r.decision === 'ignored' ? 'ignored' : (r.op === 'mount' || r.op === 'unmount' || r.op === 'interrupted') ? 'mark' : 'fs';
  return el('tr', { class: 'k-' + kind, 'data-kind': kind, 'data-seq': r.seq },
    el('td', { class: 'kind' }),
    el('td', { class: 'num mono' }, r.since),
    el('td', { class: 'num' }, r.pid || '-'),
    el('td', { class: 'mono' }, r.comm || '-'),
    el('td', { class: 'op' }, r.op),
    el('td', { class: 'path' }, r.paths),
    el('td', { class: 'detail' }, r.detail),
    el('td', { class: 'dec-' + (r.decision === 'denied' ? 'denied' : r.decision === 'ignored' ? 'ignored' : 'allowed') }, r.decision || '-'),
    el('td', { class: 'mono' }, r.result));
}

function modelRow(a, c, mount) {
  const since = '+' + ((Date.parse(c.time) - mount) / 1000).toFixed(3) + 's';
  const u = c.usage;
  const status = c.status ? String(c.status) : 'no response';
  const line = el('div', { class: 'model-line' },
    el('span', { class: 'api' }, c.api + (c.model ? ' · ' + c.model : '')),
    el('span', { class: c.status >= 400 || !c.status ? 't-fail' : 't-pass' }, status),
    el('span', null, ms(c.duration_ms)),
    u ? el('span', null, num(u.input_tokens) + ' in' + (u.cached_input_tokens ? ' (' + num(u.cached_input_tokens) + ' cached)' : '') + ' · ' + num(u.output_tokens) + ' out') : el('span', { class: 'note' }, 'no usage reported'),
    c.stream ? el('span', { class: 'note' }, 'streamed') : null,
    el('span', { class: 'note mono' }, c.method + ' ' + short(c.path, 60)));
  const parts = el('div');
  const text = c.text ? el('div', { class: 'model-text' }, short(c.text, 280)) : null;
  const more = c.text && c.text.length > 280 ? el('details', { class: 'tool' }, el('summary', null, 'the whole text (' + num(c.text.length) + ' characters)'), el('pre', null, c.text)) : null;
  const tools = (c.tool_calls || []).map((tc) => el('details', { class: 'tool' },
    el('summary', null, 'tool ', el('strong', null, tc.name), tc.id ? ' (' + short(tc.id, 24) + ')' : ''),
    el('pre', null, prettyArgs(tc.arguments))));
  const shown = el('div');
  const stored = (part) => el('button', { type: 'button', class: 'link', onclick: async () => {
    shown.replaceChildren(el('p', { class: 'note' }, 'loading the stored ' + part + '…'));
    try {
      const t = await api.modelPart(a.id, String(c.seq), part);
      shown.replaceChildren(el('h3', null, 'stored ' + part), el('pre', { class: 'block' }, t));
    } catch (e) { shown.replaceChildren(fail(part, e)); }
  } }, 'stored ' + part);
  add(parts, [line, c.error ? el('div', { class: 't-fail' }, c.error) : null, text, more, tools,
    el('div', { class: 'links' }, stored('request'), stored('response'),
      el('span', { class: 'note' }, bytes(c.request_bytes) + ' sent, ' + bytes(c.response_bytes) + ' received' + (c.truncated ? ', stored copy cut short' : ''))), shown]);
  return el('tr', { class: 'k-model', 'data-kind': 'model', 'data-seq': c.seq },
    el('td', { class: 'kind' }),
    el('td', { class: 'num mono' }, since),
    el('td', { class: 'num' }, '-'),
    el('td', { class: 'mono' }, c.gateway),
    el('td', { class: 'op' }, 'model #' + c.seq),
    el('td', { colspan: 4 }, parts));
}

// prettyArgs shows a tool call's arguments: a JSON object a name a
// line, its strings as they are (a patch on lines of its own); anything
// else as it was sent.
function prettyArgs(s) {
  let v;
  try { v = JSON.parse(s); } catch (e) { return s; }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return JSON.stringify(v, null, 2);
  return Object.entries(v).map(([k, x]) => typeof x !== 'string' ? k + ': ' + JSON.stringify(x)
    : x.includes('\n') ? k + ':\n' + x : k + ': ' + x).join('\n');
}

// name returns o's name under key: as it is, or, for a name that is not
// UTF-8 (sent as KEY_b64, the base64 of its bytes), its bytes with each
// one outside ASCII as \xNN.
function name(o, key) {
  if (o[key] !== undefined) return o[key];
  const raw = o[key + '_b64'];
  if (raw === undefined) return '';
  let bin;
  try { bin = atob(raw); } catch (e) { return '(bad name)'; }
  return Array.from(bin, (c) => c.charCodeAt(0) < 0x80 ? c : '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0')).join('');
}

function changesCard(diff, title, inner) {
  const card = el('div', { class: inner ? 'inner' : 'card', 'data-region': 'changes' }, el(inner ? 'h3' : 'h2', null, title || 'Changes'));
  if (diff instanceof Error) return add(card, [fail('diff', diff)]);
  if (diff.problem) return add(card, [el('p', { class: 'error' }, diff.problem)]);
  if (!diff.changeset.length) return add(card, [el('p', { class: 'empty' }, 'No changes.')]);
  card.append(el('ul', { class: 'changeset' }, diff.changeset.map((ch) =>
    el('li', { class: 'ch-' + (['added', 'deleted', 'modified', 'renamed'].includes(ch.kind) ? ch.kind : 'modified') },
      ch.kind + ' ', ch.kind === 'renamed' ? name(ch, 'from') + ' → ' + name(ch, 'path') : name(ch, 'path')))));
  for (const d of diff.diffs) {
    card.append(el('div', { class: 'file' },
      el('div', { class: 'fhead' }, d.kind + ' ' + d.path, d.note ? el('span', { class: 'note' }, ' — ' + d.note) : null),
      d.diff ? diffBlock(d.diff) : el('p', { class: 'note' }, d.binary ? 'binary content' : 'no content change')));
  }
  return card;
}

function diffBlock(text) {
  const lines = text.replace(/\n$/, '').split('\n');
  return el('pre', { class: 'diff' }, lines.map((l) => {
    const c = l.startsWith('+++') || l.startsWith('---') ? 'hdr' : l.startsWith('@@') ? 'hunk' : l.startsWith('+') ? 'add' : l.startsWith('-') ? 'del' : null;
    return el('span', { class: c }, l || ' ');
  }));
}

function transcriptCard(tr) {
  const card = el('div', { class: 'card', 'data-region': 'transcript' }, el('h2', null, 'Transcript'));
  if (tr instanceof Error) return add(card, [fail('transcript', tr)]);
  for (const [name, text, cut] of [['stdout', tr.stdout, tr.stdout_truncated], ['stderr', tr.stderr, tr.stderr_truncated]]) {
    card.append(el('h3', null, name + ' (' + bytes(text.length) + (cut ? ', truncated' : '') + ')'));
    card.append(text ? el('pre', { class: 'transcript', 'data-kind': name }, text) : el('p', { class: 'empty' }, 'empty'));
  }
  return card;
}

// ---- two attempts side by side ----

async function comparePage(view, idA, idB) {
  if (!ID.test(idA || '') || !ID.test(idB || '')) throw new Error('compare needs two attempt ids');
  const load = async (id) => {
    const [s, model, diff] = await Promise.all([api.attempt(id), api.model(id).catch((e) => e), api.diff(id).catch((e) => e)]);
    return { s, model, diff };
  };
  const [x, y] = await Promise.all([load(idA), load(idB)]);
  const a = x.s.attempt, b = y.s.attempt;
  view.append(el('div', { class: 'pagehead' }, el('h1', null, 'Compare'),
    el('span', { class: 'sub' }, 'two attempts of ', el('strong', null, a.task))));
  if (a.task !== b.task) {
    view.append(el('p', { class: 'error' }, a.id + ' is an attempt of ' + a.task + ' and ' + b.id + ' one of ' + b.task + ': only attempts of one task are compared.'));
    return;
  }
  view.append(el('div', { class: 'compare', 'data-region': 'compare' }, [x, y].map((side, i) => compareSide(side, [x, y][1 - i]))));
}

function compareSide(side, other) {
  const s = side.s, a = s.attempt, o = other.s.attempt;
  const u = a.model || (side.model instanceof Error ? null : side.model.usage);
  const metric = (k, v, ov) => el('tr', null, el('td', null, k), el('td', { class: v !== ov ? 'diff-cell' : null }, v));
  const os = other.s;
  const mu = (x) => usageLine(x) || 'none recorded';
  const ou = o.model || (other.model instanceof Error ? null : other.model.usage);
  return el('div', { class: 'card', 'data-region': 'side' },
    el('div', { class: 'pagehead' }, el('h2', null, el('a', { href: routes.attempt(a.id), class: 'mono' }, a.id)), verdictBadge(s.verdict)),
    el('p', { class: 'mono' }, a.agent.spec),
    a.reasons.length ? el('ul', { class: 'reasons' }, a.reasons.map((r) => el('li', null, el('code', null, r.code), r.message))) :
      el('p', { class: 'note' }, a.state === 'done' ? 'no reasons: every rule held' : a.state === 'infra_error' ? 'infra error: ' + (a.infra_error || '') : a.state),
    el('table', { class: 'metrics' }, el('tbody', null,
      metric('exit status', s.exit, os.exit),
      metric('wall time', s.wall, os.wall),
      metric('peak memory', s.peak_memory, os.peak_memory),
      metric('edits', a.edits + ' (denied ' + a.denied + ')', o.edits + ' (denied ' + o.denied + ')'),
      metric('model', a.agent.model || '-', o.agent.model || '-'),
      metric('model usage', mu(u), mu(ou)),
      metric('tool calls', u ? num(u.tool_calls) : '-', ou ? num(ou.tool_calls) : '-'),
      metric('host', a.host || '-', o.host || '-'),
      metric('created', s.created, os.created))),
    changesCard(side.diff, 'Changeset', true));
}

// ---- the scorecard ----

async function scorecardPage(view, q) {
  view.append(el('div', { class: 'pagehead' }, el('h1', null, 'Scorecard'),
    el('span', { class: 'sub' }, 'completion rates with 95% intervals; runs only unless asked; each series on its own')));
  view.append(el('div', { class: 'card' }, filterForm(q, routes.scorecard, { scorecard: true })));
  const sc = await api.scorecard(q);
  view.append(el('p', { class: 'note' }, 'Grading rules ' + sc.rules_version + '. Agents are listed by name, not by rate; a rate is the mean of per-task rates (each task weighs the same); agents are compared only with agents measured on the same task set, and those whose intervals overlap cannot be separated and are not ranked.'));
  if (sc.truncated && sc.truncated.length) view.append(el('p', { class: 'note' }, 'Only the newest ' + sc.history_limit + ' attempts of ' + sc.truncated.join(', ') + ' were read.'));
  view.append(el('div', { class: 'series-grid' }, sc.series.map(seriesCard)));
}

function seriesCard(c) {
  const notes = [];
  if (c.left_out) notes.push(plural(c.left_out, 'attempt') + ' graded by another bundle left out');
  if (c.retried) notes.push(plural(c.retried, 'retried infra error') + ' left out');
  if (c.unfinished) notes.push(c.unfinished + ' unfinished');
  if (c.unresolved) notes.push(plural(c.unresolved, 'attempt') + ' left to review, not scored');
  if (c.infra_only) notes.push(plural(c.infra_only, 'infra error') + ' of agents that never ran left out (not rows)');
  const dates = c.first ? c.first.replace('T', ' ').replace(/(:\d\d)(\.\d+)?Z$/, '$1 UTC') + ' to ' + c.last.replace('T', ' ').replace(/(:\d\d)(\.\d+)?Z$/, '$1 UTC') : 'no attempts';
  const img = el('img', { class: 'plot', alt: 'completion rates of series ' + c.series.name + ' with their intervals' });
  img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(c.plot);
  const agents = c.agents || [];
  const notScored = (a) => [a.infra_errors ? plural(a.infra_errors, 'infra error') : null, a.canceled ? a.canceled + ' canceled' : null,
    a.unresolved ? a.unresolved + ' unresolved' : null, a.note || null].filter(Boolean).join('; ') || '-';
  return el('div', { class: 'card', 'data-region': 'series' },
    el('h2', null, 'Series ' + c.series.name),
    el('p', { class: 'note' }, 'id ', el('code', null, c.id), ', ' + dates, el('br'), 'tasks: ' + c.series.tasks.join(', '), el('br'),
      'draw rule: ' + c.series.draw_rule, el('br'), 'grading rules: ' + c.series.rules_version + (notes.length ? '; ' + notes.join('; ') : ''),
      el('br'), el('span', { 'data-region': 'grouped-by' }, c.grouped_by || '')),
    agents.length === 0 ? el('p', { class: 'empty' }, 'No attempts.') : [
      el('h3', null, 'Completion rate, 95% intervals'),
      img,
      el('p', { class: 'note' }, 'Dot: rate. Line with caps: 95% interval. Shaded bar: bootstrap interval over tasks and attempts; an orange tick where it collapses to a point.'),
      el('div', { class: 'scroll' }, el('table', { class: 'rates' },
        el('thead', null, el('tr', null, ['agent', 'task set', 'tasks', 'passed', 'scored', 'rate', '95% interval', 'bootstrap', 'Wilson (tasks)', 'not scored'].map((h, i) =>
          el('th', { class: i >= 2 && i <= 5 ? 'num' : null }, h)))),
        el('tbody', null, agents.map((a) => el('tr', null,
          el('td', { class: 'wrap mono' }, a.agent), el('td', { class: 'nowrap' }, a.task_set || '-'), el('td', { class: 'num' }, a.tasks),
          el('td', { class: 'num' }, a.passes), el('td', { class: 'num' }, a.scored), el('td', { class: 'num' }, pct(a.rate)),
          el('td', { class: 'nowrap' }, interval(a.interval)), el('td', { class: 'nowrap' }, interval(a.bootstrap)),
          el('td', { class: 'nowrap' }, interval(a.task_wilson)), el('td', null, notScored(a))))))),
      agents.some((a) => a.model) ? [
        el('h3', null, 'Model calls, every attempt of the series (scored or not)'),
        el('div', { class: 'scroll' }, el('table', { class: 'rates', 'data-region': 'series-model' },
          el('thead', null, el('tr', null, ['agent', 'calls', 'tokens in', 'cached', 'tokens out', 'tool calls', 'cost', 'errors'].map((h, i) =>
            el('th', { class: i >= 1 ? 'num' : null }, h)))),
          el('tbody', null, agents.map((a) => { const u = a.model || {}; return el('tr', null,
            el('td', { class: 'wrap mono' }, a.agent), el('td', { class: 'num' }, num(u.calls || 0)), el('td', { class: 'num' }, num(u.input_tokens || 0)),
            el('td', { class: 'num' }, num(u.cached_input_tokens || 0)), el('td', { class: 'num' }, num(u.output_tokens || 0)),
            el('td', { class: 'num' }, num(u.tool_calls || 0)), el('td', { class: 'num' }, u.cost_usd !== undefined ? usd(u.cost_usd) : '-'),
            el('td', { class: 'num' }, num(u.errors || 0))); })))),
      ] : null,
      el('h3', null, 'Separation'),
      el('ul', { class: 'lines' }, c.separation_lines.map((l) => el('li', { class: 'separation' }, l)),
        (c.not_compared || []).map((l) => el('li', { class: 'not-compared' }, l)),
        !c.separation_lines.length && !(c.not_compared || []).length ? el('li', null, 'one agent or none: nothing to compare') : null),
    ],
    el('h3', null, 'Per task'),
    el('div', { class: 'scroll' }, el('table', { class: 'tasks' },
      el('thead', null, el('tr', null, ['task', 'agent', 'rate', 'attempts, oldest first', 'model usage'].map((h, i) => el('th', { class: i === 2 ? 'num' : null }, h)))),
      el('tbody', null, c.tasks.map((t) => t.agents.length === 0 ?
        el('tr', null, el('td', null, t.task), el('td', { colspan: 4, class: 'empty' }, 'no attempt' + (t.left_out ? ' (' + t.left_out + ' graded by another bundle, left out)' : ''))) :
        t.agents.map((g) => el('tr', null, el('td', { class: 'nowrap' }, t.task), el('td', { class: 'wrap mono' }, g.agent),
          el('td', { class: 'num' }, g.rate === null ? '-' : g.passes + '/' + g.scored + ' (' + Math.round(g.rate * 100) + '%)'),
          el('td', { class: 'outcomes' }, g.attempts.map((at) => el('a', { href: routes.attempt(at.id), class: 't-' + (OUTCOME_CLASS[at.outcome] || 'off'), title: at.id }, at.outcome))),
          el('td', { class: 'nowrap' }, usageLine(g.model) || '-'))))))));
}

// ---- start ----

async function daemonLine() {
  try {
    const st = await api.status();
    const d = document.getElementById('daemon');
    d.replaceChildren(document.createTextNode('benchd ' + st.version + ' · ' + st.running + ' running, ' + st.queued + ' queued · read-only'));
  } catch (e) { /* the pages say why */ }
}

window.addEventListener('hashchange', route);
daemonLine();
route();
