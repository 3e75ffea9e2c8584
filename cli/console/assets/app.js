// The sluice console's page: a hash-routed single page over the console's JSON API (/api/...).
// Plain DOM, no framework and no build step, so the binary can embed this file as it is and the
// page works offline. Text from the file is always set with textContent, never parsed as HTML.
'use strict';

const REFRESH_MS = 2000;
const COLOURS = ['#1f6f8b', '#c2571a', '#6a4c93', '#2e7d4f', '#b3261e', '#8a6d00', '#3b5bdb'];

const state = {
  session: {csrf_token: '', read_only: true},  // read-only until /api/session says otherwise
  renderId: 0,    // bumped on every navigation: answers for an older page are dropped
  timer: null,    // the current page's refresh timer
  consumers: [],  // consumer names, for the pickers
  eventPages: {filter: '', cursors: []},  // after_seq of the pages before this one, for Prev
  letterPages: {filter: '', cursors: []},
  flash: null,  // an action's outcome, shown again after the page reloads its data
};

// ---- DOM and formatting helpers -------------------------------------------------------------

// h('a', {href: '#/x', class: 'y'}, 'text', child...): attributes starting with "on" are event
// handlers; null/false children and attributes are skipped.
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on'))
      node.addEventListener(name.slice(2), value);
    else if (name === 'dataset')
      Object.assign(node.dataset, value);
    else if (value === true)
      node.setAttribute(name, '');
    else
      node.setAttribute(name, String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  return append(node, children);
}

// Times arrive as milliseconds since the epoch or as RFC 3339 strings (the CLI's --json style).
function toMs(time) {
  if (time === null || time === undefined || time === '') return null;
  if (typeof time === 'number') return time;
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? null : ms;
}

const pad = (n) => String(n).padStart(2, '0');

// In UTC with a Z, as the CLI prints times: "2026-11-29 10:32:41Z".
function formatTime(time) {
  const ms = toMs(time);
  if (ms === null) return '—';
  const d = new Date(ms);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
      `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}Z`;
}

// The browser's own zone, for a time's hover text.
function formatLocalTime(ms) {
  const d = new Date(ms);
  const offset = -d.getTimezoneOffset();
  const zone = `${offset < 0 ? '-' : '+'}${pad(Math.floor(Math.abs(offset) / 60))}:` +
      pad(Math.abs(offset) % 60);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} (local, UTC${zone})`;
}

// A time shown in UTC, local time on hover.
function timeNode(time) {
  const ms = toMs(time);
  if (ms === null) return '—';
  return h('time', {datetime: new Date(ms).toISOString(), title: formatLocalTime(ms)},
           formatTime(ms));
}

function formatDuration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3600000) return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
  return `${Math.floor(ms / 3600000)} h ${Math.round((ms % 3600000) / 60000)} min`;
}

function formatCount(n) {
  return n === null || n === undefined ? '—' : Number(n).toLocaleString('en-US');
}

// A <datetime-local> value for ms, and back, in UTC like every time the console shows.
function toUtcInput(ms) {
  if (ms === null) return '';
  return new Date(ms).toISOString().slice(0, 16);
}
function fromUtcInput(value) {
  return value ? Date.parse(`${value}:00Z`) : null;
}

function numberCell(n, {hotWhenPositive = false} = {}) {
  const cls = ['num', n === 0 ? 'zero' : '', hotWhenPositive && n > 0 ? 'hot' : ''];
  return h('td', {class: cls.filter(Boolean).join(' ')}, formatCount(n));
}

function pill(text, kind) {
  return h('span', {class: `pill ${kind || ''}`}, text);
}

function eventLink(id) {
  return h('a', {href: `#/event/${encodeURIComponent(id)}`, class: 'mono'}, id);
}

function table(headers, rows, emptyText) {
  const head = h('thead', {}, h('tr', {}, headers.map((header) => {
                   const [text, cls] = Array.isArray(header) ? header : [header, null];
                   return h('th', {class: cls, scope: 'col'}, text);
                 })));
  const body = h('tbody', {}, rows);
  if (rows.length === 0) {
    body.append(h('tr', {}, h('td', {class: 'empty', colspan: headers.length}, emptyText)));
  }
  return h('table', {}, head, body);
}

function field(label, input) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  input.id = id;
  return h('div', {class: 'field'}, h('label', { for: id
           }, label), input);
}

function resultBox(message, kind) {
  return h('div', {class: `result ${kind || ''}`, role: 'status'}, message);
}

// ---- API ------------------------------------------------------------------------------------

// GETs or POSTs JSON; a non-2xx answer throws an Error with the server's {"error"} message.
// Every POST carries the session's CSRF token.
async function api(path, body) {
  const init = {method: 'GET', headers: {Accept: 'application/json'}, credentials: 'same-origin'};
  if (body !== undefined) {
    init.method = 'POST';
    init.headers['Content-Type'] = 'application/json';
    init.headers['X-CSRF-Token'] = state.session.csrf_token;
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new Error(`cannot reach the console (${e.message})`);
  }
  let data = null;
  try {
    data = await response.json();
  } catch (e) {
    data = null;
  }
  if (!response.ok) {
    const why = data && data.error ? data.error : `HTTP ${response.status}`;
    throw new Error(`${init.method} ${path.split('?')[0]}: ${why}`);
  }
  return data;
}

function query(params) {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== '') q.set(name, value);
  }
  const text = q.toString();
  return text ? `?${text}` : '';
}


async function loadConsumers() {
  if (state.consumers.length > 0) return state.consumers;
  const overview = await api('/api/overview');
  state.consumers = overview.consumers.map((c) => c.name).sort();
  return state.consumers;
}

function showBanner(message) {
  const banner = document.getElementById('banner');
  banner.textContent = message || '';
  banner.hidden = !message;
}

// ---- Router ---------------------------------------------------------------------------------

const PAGES = {
  overview: overviewPage,
  events: eventsPage,
  event: eventPage,
  'dead-letters': deadLettersPage,
  workers: workersPage,
  backfill: backfillPage,
  audit: auditPage,
};

function parseRoute() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, search = ''] = hash.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const name = PAGES[parts[0]] ? parts[0] : 'overview';
  return {name, arg: parts[1] ?? null, params: new URLSearchParams(search)};
}

function go(name, params) {
  location.hash = `#/${name}${query(params || {})}`;
}

async function render() {
  const renderId = ++state.renderId;
  clearTimeout(state.timer);
  state.timer = null;
  const route = parseRoute();
  for (const link of document.querySelectorAll('nav a')) {
    const current = link.dataset.route === route.name ||
        (route.name === 'event' && link.dataset.route === 'events');
    if (current)
      link.setAttribute('aria-current', 'page');
    else
      link.removeAttribute('aria-current');
  }
  const view = document.getElementById('view');
  const page = h('div', {class: 'stack', dataset: {page: route.name}});
  view.replaceChildren(page);
  try {
    await PAGES[route.name](page, route, () => renderId === state.renderId);
    showBanner(null);
  } catch (e) {
    if (renderId !== state.renderId) return;
    page.append(resultBox(e.message, 'error'));
  }
}

// Calls `tick` now and every REFRESH_MS after the previous call finished, while the page that
// started it is still shown and `tick` did not return false. A failed call shows a banner and is
// tried again.
async function every(isCurrent, tick) {
  let again = true;
  try {
    again = (await tick()) !== false;
    showBanner(null);
  } catch (e) {
    showBanner(e.message);
  }
  if (again && isCurrent()) state.timer = setTimeout(() => every(isCurrent, tick), REFRESH_MS);
}

function pageHead(title, ...extra) {
  document.title = `${title} · sluice console`;
  return h('div', {class: 'page-head'}, h('h1', {}, title), extra);
}

// ---- Overview -------------------------------------------------------------------------------

function overviewPage(page, route, isCurrent) {
  const updated = h('span', {class: 'muted small', 'aria-live': 'off'});
  const verdict = h('section', {class: 'panel', 'aria-label': 'Health check'});
  const consumers = h('section', {class: 'panel', 'aria-label': 'Consumers'});
  const backlogChart = h('section', {class: 'panel', 'aria-label': 'Backlog chart'});
  const rateChart = h('section', {class: 'panel', 'aria-label': 'Delivered per second chart'});
  append(page, [
    pageHead('Overview', updated), verdict, consumers,
    h('div', {class: 'grid2'}, backlogChart, rateChart)
  ]);

  return every(isCurrent, async () => {
    const [overview, history] = await Promise.all([api('/api/overview'), api('/api/history')]);
    if (!isCurrent()) return;
    state.consumers = overview.consumers.map((c) => c.name).sort();
    const samples = history.samples || [];
    updated.textContent = `Updated ${formatTime(overview.now ?? Date.now())} · refreshes every 2 s`;
    verdict.replaceChildren(...verdictView(overview.check));
    consumers.replaceChildren(
        h('h2', {}, 'Consumers'),
        consumersTable(overview.consumers, samples, overview.now ?? Date.now()));
    const names = overview.consumers.map((c) => c.name);
    backlogChart.replaceChildren(
        h('h2', {}, 'Backlog'), ...lineChart(names, backlogSeries(samples, names)));
    rateChart.replaceChildren(
        h('h2', {}, 'Delivered per second'), ...lineChart(names, rateSeries(samples, names)));
  });
}

function verdictView(check) {
  if (!check) return [h('h2', {}, 'Health check'), h('p', {class: 'muted'}, 'No verdict.')];
  const status = check.status;
  const findings = (check.checks || []).filter((c) => c.status !== 'ok');
  const wording = {ok: 'Healthy', warning: 'Needs attention', problem: 'Problem'};
  return [
    h('h2', {}, 'Health check'),
    h('div', {class: 'verdict', dataset: {verdict: status}},
      pill(wording[status] || status, status),
      h('span', {class: 'muted'},
        findings.length === 0 ?
            'every check passed' :
            `${findings.length} of ${(check.checks || []).length} checks need a look`)),
    findings.length > 0 &&
        h('ul', {}, findings.map((c) => h('li', {}, h('strong', {}, c.name), `: ${c.detail}`))),
  ].filter(Boolean);  // replaceChildren() would print a false as the text "false"
}

// Events per second over the last minute of samples (or the last two samples).
function deliveredRate(samples, name) {
  const points = samples.filter((sample) => sample.consumers && sample.consumers[name]);
  if (points.length < 2) return null;
  const last = points[points.length - 1];
  let first = points[0];
  for (const p of points) {
    if (toMs(last.at) - toMs(p.at) <= 60000) {
      first = p;
      break;
    }
  }
  if (first === last) first = points[points.length - 2];
  const seconds = (toMs(last.at) - toMs(first.at)) / 1000;
  const delivered = last.consumers[name].delivered_total - first.consumers[name].delivered_total;
  return seconds > 0 ? Math.max(0, delivered) / seconds : null;
}

// What a consumer's workers are: "alive (1)", "seen 4 min 2 s ago", "unknown", "none running".
function workersText(health, now) {
  if (!health) return '—';
  if (health.live_workers > 0) return `alive (${health.live_workers})`;
  if (health.maybe_live_worker) return 'unknown';
  const seen = toMs(health.last_seen_worker_at);
  if (seen === null) return 'none running';
  return `seen ${formatDuration(Math.max(0, now - seen))} ago`;
}

// A consumer's state: running, or paused since when, until when, by whom and why; with a Pause or
// Resume button unless the console is read-only. Both go through the API, which records them in
// the audit log.
function pauseView(name, pause) {
  const text = pause ?
      [
        h('strong', {}, 'paused'),
        h('div', {class: 'muted small'},
          `since ${formatTime(pause.since)}, ${
              pause.until ? `until ${formatTime(pause.until)}` : 'until resumed'} (${pause.by})`),
        pause.note ? h('div', {class: 'small'}, pause.note) : null
      ] :
      ['running'];
  if (state.session.read_only) return h('div', {}, text);
  async function act() {
    const body = {consumer: name};
    if (!pause) {
      const note = window.prompt(
          `Pause ${name} in every process until resumed? Its workers claim nothing meanwhile. ` +
          'Why (recorded in the audit log)?', '');
      if (note === null) return;
      if (note.trim() !== '') body.note = note.trim();
    } else if (!window.confirm(`Resume ${name}? Its workers claim again at once.`)) {
      return;
    }
    try {
      await api(`/api/consumers/${pause ? 'resume' : 'pause'}`, body);
    } catch (e) {
      window.alert(e.message);
    }
    render();
  }
  return h('div', {}, text,
           h('button', {type: 'button', class: 'action', dataset: {action: pause ? 'resume' : 'pause'},
                        onclick: act},
             pause ? 'Resume' : 'Pause'));
}

// A consumer's circuit breaker, shown only while it holds the consumer back: open until when, or
// half-open (one probe event goes through), with the failures in a row that opened it.
function breakerView(breaker) {
  if (!breaker || breaker.state === 'closed') return null;
  const when = breaker.state === 'open' ? ` until ${formatTime(breaker.open_until)}` : '';
  return h('div', {class: 'small', dataset: {field: 'breaker'}},
           h('strong', {}, `breaker ${breaker.state}`),
           h('div', {class: 'muted small'},
             `${when.trim()} (${breaker.failures} failures in a row, cool-down ${
                 formatDuration(breaker.cool_down_seconds * 1000)})`));
}

function consumersTable(consumers, samples, now) {
  const rows = consumers.map((c) => {
    const name = c.name;
    const rate = deliveredRate(samples, name);
    const dead = c.dead ?? 0;
    // Coloured by the rules `sluice check` applies (the API sends their verdict).
    const health = c.health || {status: 'ok', findings: []};
    const why = health.findings.map((f) => f.detail).join('\n');
    return h(
        'tr', {
          class: health.status !== 'ok' ? `health-${health.status}` : null,
          title: why || null,
          dataset: {consumer: name, health: health.status}
        },
        h('th', {scope: 'row'}, name,
          h('div', {class: 'muted small'}, (c.topics || []).join(', ')),
          health.findings.map((f) => h('div', {class: 'finding small'}, f.detail))),
        numberCell(c.backlog), h('td', {class: 'num'}, formatDuration(c.lag_ms)),
        numberCell(c.retrying ?? 0),
        h('td', {class: `num ${dead > 0 ? 'hot' : 'zero'}`, dataset: {field: 'dead'}},
          dead > 0 ? h('a', {href: `#/dead-letters${query({consumer: name})}`}, formatCount(dead)) :
                     '0'),
        numberCell(c.parked_keys ?? 0, {hotWhenPositive: true}), numberCell(c.delivered_total ?? 0),
        h('td', {class: 'num'}, rate === null ? '—' : `${rate.toFixed(1)}/s`),
        h('td', {dataset: {field: 'workers'}},
          h('a', {href: '#/workers'}, workersText(c.health, now))),
        h('td', {dataset: {field: 'state'}}, pauseView(name, c.pause), breakerView(c.breaker)));
  });
  return table(
      [
        'Consumer', ['Backlog', 'num'], ['Lag', 'num'], ['Retrying', 'num'], ['Dead', 'num'],
        ['Parked keys', 'num'], ['Delivered', 'num'], ['Rate', 'num'], 'Workers', 'State'
      ],
      rows, 'No consumers yet: none has subscribed in this file.');
}

function backlogSeries(samples, names) {
  return names.map(
      (name) => samples.filter((sample) => sample.consumers && sample.consumers[name])
                    .map((sample) => [toMs(sample.at), sample.consumers[name].backlog]));
}

function rateSeries(samples, names) {
  return names.map((name) => {
    const points = samples.filter((sample) => sample.consumers && sample.consumers[name]);
    const rates = [];
    for (let i = 1; i < points.length; i++) {
      const seconds = (toMs(points[i].at) - toMs(points[i - 1].at)) / 1000;
      const delivered =
          points[i].consumers[name].delivered_total - points[i - 1].consumers[name].delivered_total;
      if (seconds > 0) rates.push([toMs(points[i].at), Math.max(0, delivered) / seconds]);
    }
    return rates;
  });
}

// An inline SVG line chart of the last 10 minutes, one line per consumer, and its legend.
function lineChart(names, series) {
  const width = 600;
  const height = 150;
  const left = 44;
  const bottom = 20;
  const all = series.flat();
  if (all.length === 0) {
    return [h('p', {class: 'muted'}, 'Samples appear here every 2 s while the console runs.')];
  }
  // The samples' own span (the console keeps 10 minutes), but at least a minute, so the first
  // samples after a start already draw a line rather than a dot at the right edge.
  const end = Math.max(...all.map(([t]) => t));
  const span = Math.min(10 * 60000, Math.max(60000, end - Math.min(...all.map(([t]) => t))));
  const start = end - span;
  const top = Math.max(1, ...all.map(([, v]) => v));
  const x = (t) => left + ((t - start) / (end - start)) * (width - left - 8);
  const y = (v) => 8 + (1 - v / top) * (height - bottom - 8);
  const label = top >= 10 ? formatCount(Math.round(top)) : String(Number(top.toFixed(1)));
  const svg =
      s('svg', {
        class: 'chart',
        viewBox: `0 0 ${width} ${height}`,
        preserveAspectRatio: 'none',
        role: 'img',
        'aria-label': `chart of ${names.join(', ')}; peak ${label}`
      },
        s('line', {class: 'axis', x1: left, y1: y(0), x2: width - 8, y2: y(0)}), s('line', {
          class: 'axis',
          x1: left,
          y1: y(top),
          x2: width - 8,
          y2: y(top),
          'stroke-dasharray': '3 4'
        }),
        s('text', {x: left - 6, y: y(top) + 4, 'text-anchor': 'end'}, label),
        s('text', {x: left - 6, y: y(0) + 4, 'text-anchor': 'end'}, '0'),
        s('text', {x: left, y: height - 4}, `−${formatDuration(span).replace(' 0 s', '')}`),
        s('text', {x: width - 8, y: height - 4, 'text-anchor': 'end'}, 'now'));
  series.forEach((points, i) => {
    const visible = points.filter(([t]) => t >= start);
    if (visible.length === 0) return;
    const d =
        visible.map(([t, v], j) => `${j === 0 ? 'M' : 'L'}${x(t).toFixed(1)},${y(v).toFixed(1)}`);
    if (visible.length === 1)
      d.push(`L${(x(visible[0][0]) + 2).toFixed(1)},${y(visible[0][1]).toFixed(1)}`);
    svg.append(s('path', {d: d.join(' '), stroke: COLOURS[i % COLOURS.length]}));
  });
  const legend = h(
      'div', {class: 'legend'},
      names.map((name, i) => h('span', {style: `--swatch: ${COLOURS[i % COLOURS.length]}`}, name)));
  return [svg, legend];
}

// ---- Events ---------------------------------------------------------------------------------

const EVENT_FILTERS =
    ['topic', 'key', 'id', 'dedup_key', 'consumer', 'state', 'since', 'until', 'limit'];
const DELIVERY_STATES = ['pending', 'claimed', 'retrying', 'delivered', 'dead', 'discarded'];

async function eventsPage(page, route, isCurrent) {
  const params = route.params;
  const value = (name) => params.get(name) || '';
  const consumers = await loadConsumers();
  if (!isCurrent()) return;
  const inputs = {
    consumer: h('select', {name: 'consumer'}, h('option', {value: ''}, 'Any consumer'),
                consumers.map(
                    (name) => h('option', {value: name, selected: name === value('consumer')},
                                name))),
    // A state is a consumer's view of an event: it needs a consumer (the API says so too).
    state: h('select', {name: 'state'}, h('option', {value: ''}, 'Any state'),
             DELIVERY_STATES.map(
                 (name) => h('option', {value: name, selected: name === value('state')}, name))),
    topic: h(
        'input', {type: 'text', name: 'topic', value: value('topic'), placeholder: 'order.placed'}),
    key: h('input', {type: 'text', name: 'key', value: value('key')}),
    id: h('input', {type: 'text', name: 'id', value: value('id'), class: 'wide'}),
    dedup_key: h('input', {type: 'text', name: 'dedup_key', value: value('dedup_key')}),
    since: h('input', {
      type: 'datetime-local',
      name: 'since',
      value: toUtcInput(params.has('since') ? Number(value('since')) : null)
    }),
    until: h('input', {
      type: 'datetime-local',
      name: 'until',
      value: toUtcInput(params.has('until') ? Number(value('until')) : null)
    }),
    limit:
        h('select', {name: 'limit'},
          ['25', '50', '100', '200'].map(
              (n) => h('option', {value: n, selected: (value('limit') || '50') === n}, n))),
  };
  const form =
      h('form', {
        class: 'filters',
        role: 'search',
        onsubmit: (e) => {
          e.preventDefault();
          go('events', {
            topic: inputs.topic.value.trim(),
            key: inputs.key.value.trim(),
            id: inputs.id.value.trim(),
            dedup_key: inputs.dedup_key.value.trim(),
            consumer: inputs.consumer.value,
            state: inputs.consumer.value ? inputs.state.value : '',
            since: fromUtcInput(inputs.since.value),
            until: fromUtcInput(inputs.until.value),
            limit: inputs.limit.value,
          });
        }
      },
        field('Topic', inputs.topic), field('Key', inputs.key), field('Event ID', inputs.id),
        field('Dedup key', inputs.dedup_key), field('Consumer', inputs.consumer),
        field('State for the consumer', inputs.state), h('div', {class: 'break'}),
        field('Created from (UTC)', inputs.since), field('Created before (UTC)', inputs.until),
        field('Per page', inputs.limit), h('button', {type: 'submit', class: 'primary'}, 'Search'),
        h('button', {type: 'button', onclick: () => go('events')}, 'Clear'));
  const syncState = () => {
    inputs.state.disabled = inputs.consumer.value === '';
  };
  inputs.consumer.addEventListener('change', syncState);
  syncState();
  const results = h('section', {class: 'panel', 'aria-label': 'Events found'});
  append(page, [pageHead('Events'), h('section', {class: 'panel'}, form), results]);

  const filter = {};
  for (const name of EVENT_FILTERS) filter[name] = value(name);
  filter.limit = filter.limit || '50';
  const filterKey = JSON.stringify(filter);
  if (state.eventPages.filter !== filterKey) state.eventPages = {filter: filterKey, cursors: []};
  const afterSeq = value('after_seq');
  const answer = await api(`/api/events${query({...filter, after_seq: afterSeq})}`);
  if (!isCurrent()) return;

  const rows = answer.events.map(
      (e) =>
          h('tr', {}, h('td', {class: 'num mono'}, e.seq), h('td', {}, timeNode(e.created_at)),
            h('td', {}, e.topic), h('td', {class: 'mono'}, e.key || '—'),
            h('td', {}, eventLink(e.id)), h('td', {class: 'mono'}, e.dedup_key || '—')));
  const cursors = state.eventPages.cursors;
  const prev =
      h('button', {
        type: 'button',
        disabled: !afterSeq,
        onclick: () => {
          go('events', {...filter, after_seq: cursors.pop() || ''});
        }
      },
        '← Prev');
  const next =
      h('button', {
        type: 'button',
        disabled: answer.next_after_seq == null,
        onclick: () => {
          cursors.push(afterSeq);
          go('events', {...filter, after_seq: answer.next_after_seq});
        }
      },
        'Next →');
  results.replaceChildren(
      table(
          [['Seq', 'num'], 'Created', 'Topic', 'Key', 'Event ID', 'Dedup key'], rows,
          'No events match.'),
      h('div', {class: 'pager'}, h('span', {class: 'muted small'}, `${rows.length} shown`), prev,
        next));
}

// ---- Event ----------------------------------------------------------------------------------

const SETTLED_STATES = new Set(['delivered', 'dead', 'discarded']);

function eventPage(page, route, isCurrent) {
  const id = route.arg || '';
  const body = h('div', {class: 'stack'});
  const flash = state.flash;
  state.flash = null;
  append(page, [
    pageHead('Event', h('span', {class: 'mono muted'}, id)),
    flash && resultBox(flash[0], 'ok'), body
  ]);

  // Refreshes while a delivery is still in flight, so a replay can be watched to its end; redrawn
  // only when something changed, so a note being typed for a discard stays.
  let shown = null;
  const load = async () => {
    const answer = await api(`/api/events/${encodeURIComponent(id)}`);
    if (!isCurrent()) return false;
    const text = JSON.stringify(answer);
    if (text !== shown) body.replaceChildren(...eventView(answer));
    shown = text;
    return (answer.deliveries || []).some((d) => !SETTLED_STATES.has(d.state));
  };
  return (async () => {
    // The first load's error (say, an unknown ID) belongs on the page, not in a banner.
    if (await load()) state.timer = setTimeout(() => every(isCurrent, load), REFRESH_MS);
  })();
}

function eventView({event, deliveries = [], attempts = []}) {
  const payload =
      typeof event.payload === 'string' ? event.payload : JSON.stringify(event.payload, null, 2);
  const headers = Object.entries(event.headers || {});
  const dead = deliveries.filter((d) => d.state === 'dead');
  return [
    h('section', {class: 'grid2'},
      h('div', {class: 'panel'}, h('h2', {}, 'Event'),
        h('dl', {class: 'facts'}, h('dt', {}, 'ID'), h('dd', {class: 'mono'}, event.id),
          h('dt', {}, 'Seq'), h('dd', {}, event.seq), h('dt', {}, 'Topic'),
          h('dd', {}, event.topic), h('dt', {}, 'Version'), h('dd', {}, event.version),
          h('dt', {}, 'Key'), h('dd', {class: 'mono'}, event.key || '—'),
          h('dt', {}, 'Dedup key'), h('dd', {class: 'mono'}, event.dedup_key || '—'),
          h('dt', {}, 'Created'), h('dd', {}, timeNode(event.created_at)),
          h('dt', {}, 'Not before'), h('dd', {}, timeNode(event.not_before)),
          h('dt', {}, 'Trace'), h('dd', {class: 'mono'}, event.trace_id || '—'))),
      h('div', {class: 'panel'}, h('h2', {}, 'Headers'),
        table(
            ['Name', 'Value'],
            headers.map(
                ([name, value]) =>
                    h('tr', {}, h('td', {class: 'mono'}, name), h('td', {class: 'mono'}, value))),
            'No headers.'))),
    h('section', {class: 'panel', 'aria-label': 'Payload'}, h('h2', {}, 'Payload'),
      h('pre', {class: 'json', tabindex: 0}, payload)),
    h('section', {class: 'panel', 'aria-label': 'Deliveries'}, h('h2', {}, 'Deliveries'),
      table(
          ['Consumer', 'State', ['Attempts', 'num'], 'Next attempt', 'Delivered', 'Last error'],
          deliveries.map(
              (d) =>
                  h('tr', {dataset: {consumer: d.consumer}}, h('th', {scope: 'row'}, d.consumer),
                    h('td', {dataset: {field: 'state'}}, pill(d.state, d.state)),
                    numberCell(d.attempts), h('td', {}, timeNode(d.next_attempt_at)),
                    h('td', {}, timeNode(d.delivered_at)),
                    h('td', {class: 'err'}, d.last_error || '—'))),
          'No consumer is subscribed to this topic.'),
      dead.length > 0 &&
          h('ul', {class: 'links'},
            dead.map(
                (d) =>
                    h('li', {},
                      h('a', {href: `#/dead-letters${query({consumer: d.consumer})}`},
                        `Dead letters of ${d.consumer} →`))))),
    !state.session.read_only && dead.length > 0 && deadLetterActions(event.id, dead),
    h('section', {class: 'panel', 'aria-label': 'Attempts'}, h('h2', {}, 'Attempt history'),
      table(
          ['When', 'Consumer', ['Attempt', 'num'], 'Outcome', 'Error'],
          attempts.map(
              (a) =>
                  h('tr', {}, h('td', {}, timeNode(a.at)), h('td', {}, a.consumer),
                    numberCell(a.attempt),
                    h('td', {}, pill(a.outcome, a.outcome === 'delivered' ? 'ok' : a.outcome)),
                    h('td', {class: 'err'}, a.error || '—'))),
          'No attempts recorded.')),
  ].filter(Boolean);
}

// Replay or discard an event's dead letters from its page, each after its dry run, as the
// dead-letter page does.
function deadLetterActions(id, dead) {
  return h('section', {class: 'panel actionbar', 'aria-label': 'Act on the dead letter'},
           h('h2', {}, 'Act on the dead letter'),
           dead.map((d) => letterActions(id, d.consumer)));
}

function letterActions(id, consumer) {
  const outcome = h('div', {'aria-live': 'polite'});
  const note = h('textarea', {
    name: 'note',
    rows: 2,
    'aria-label': `Note for discarding the dead letter of ${consumer}`,
    placeholder: 'Why it is discarded (kept in the audit log)'
  });
  let previewed = null;  // what the last dry run was for: "replay", or "discard" and its note
  const key = (action) => (action === 'replay' ? 'replay' : `discard\n${note.value.trim()}`);
  const button = (text, cls, action, dryRun) =>
      h('button', {type: 'button', class: cls, onclick: () => run(action, dryRun)}, text);
  const previewReplay = button('Preview replay (dry run)', 'action', 'replay', true);
  const replay = button('Replay', 'action primary', 'replay', false);
  const previewDiscard = button('Preview discard (dry run)', 'action', 'discard', true);
  const discard = button('Discard', 'action danger', 'discard', false);
  const sync = () => {
    replay.disabled = previewed !== key('replay');
    previewDiscard.disabled = note.value.trim() === '';
    discard.disabled = previewDiscard.disabled || previewed !== key('discard');
  };
  note.addEventListener('input', sync);
  async function run(action, dryRun) {
    const body = {consumer, ids: [id], dry_run: dryRun};
    if (action === 'discard') body.note = note.value.trim();
    try {
      const answer = await api(`/api/dead-letters/${action}`, body);
      if (dryRun) {
        previewed = key(action);
        outcome.replaceChildren(resultBox([
          h('strong', {},
            `Dry run: ${formatCount(answer.count)} dead letter${
                answer.count === 1 ? '' : 's'} of ${consumer} would be ${
                action === 'replay' ? 'replayed (its handler is called again)' : 'discarded'}.`),
          h('div', {class: 'small'},
            `Nothing has changed yet. Press ${
                action === 'replay' ? 'Replay' : 'Discard'} to do it.`)
        ]));
      } else {
        state.flash = [
          action === 'replay' ?
              `Replayed the dead letter of ${consumer}: queued for delivery again.` :
              `Discarded the dead letter of ${consumer}; the note is in the audit log.`,
          [id]
        ];
        render();
      }
    } catch (e) {
      previewed = null;
      outcome.replaceChildren(resultBox(e.message, 'error'));
    }
    sync();
  }
  sync();
  return h('div', {class: 'letter-actions', dataset: {consumer}}, h('h3', {}, `For ${consumer}`),
           h('div', {class: 'cols'},
             h('div', {}, h('div', {class: 'actions'}, previewReplay, replay)),
             h('div', {}, note,
               h('div', {class: 'actions', style: 'margin-top: 8px'}, previewDiscard, discard))),
           outcome);
}

// ---- Dead letters ---------------------------------------------------------------------------

// What an action applies to: some letters by ID (one request per consumer) or a whole group
// (its consumer and fingerprint).
function selectionRequests(selection) {
  if (selection.group) {
    return [{consumer: selection.group.consumer, fingerprint: selection.group.fingerprint}];
  }
  const byConsumer = new Map();
  for (const key of selection.letters) {
    const [consumer, id] = JSON.parse(key);
    if (!byConsumer.has(consumer)) byConsumer.set(consumer, []);
    byConsumer.get(consumer).push(id);
  }
  return [...byConsumer].map(([consumer, ids]) => ({consumer, ids}));
}

function selectionSize(selection) {
  return selection.group ? selection.group.count : selection.letters.size;
}

async function deadLettersPage(page, route, isCurrent) {
  const params = route.params;
  const filter = {
    consumer: params.get('consumer') || '',
    topic: params.get('topic') || '',
    fingerprint: params.get('fingerprint') || ''
  };
  const filterKey = JSON.stringify(filter);
  if (state.letterPages.filter !== filterKey) state.letterPages = {filter: filterKey, cursors: []};
  const after = params.get('after') || '';
  const [answer, consumers] =
      await Promise.all([api(`/api/dead-letters${query({...filter, after})}`), loadConsumers()]);
  if (!isCurrent()) return;

  const readOnly = state.session.read_only;
  const selection = {letters: new Set(), group: null, previewed: null};
  const flash = state.flash;
  state.flash = null;

  // Filters.
  const consumerSelect =
      h('select', {name: 'consumer'}, h('option', {value: ''}, 'All consumers'),
        consumers.map(
            (name) => h('option', {value: name, selected: name === filter.consumer}, name)));
  const topicInput = h('input', {type: 'text', name: 'topic', value: filter.topic});
  const fingerprintInput =
      h('input', {type: 'text', name: 'fingerprint', class: 'wide', value: filter.fingerprint});
  const filters =
      h('form', {
        class: 'filters',
        role: 'search',
        onsubmit: (e) => {
          e.preventDefault();
          go('dead-letters', {
            consumer: consumerSelect.value,
            topic: topicInput.value.trim(),
            fingerprint: fingerprintInput.value.trim()
          });
        }
      },
        field('Consumer', consumerSelect), field('Topic', topicInput),
        field('Fingerprint', fingerprintInput),
        h('button', {type: 'submit', class: 'primary'}, 'Filter'),
        h('button', {type: 'button', onclick: () => go('dead-letters')}, 'Clear'));

  // The action bar; absent in read-only mode.
  const selectionText = h('p', {class: 'selection', 'aria-live': 'polite'});
  const rate =
      h('input', {type: 'number', name: 'rate', min: '0.1', step: 'any', placeholder: 'no limit'});
  const note =
      h('textarea',
        {name: 'note', rows: 2, placeholder: 'Why these are discarded (kept in the audit log)'});
  const outcome = h('div', {'aria-live': 'polite'});
  const previewButton =
      h('button', {type: 'button', class: 'action', onclick: () => act('replay', true)},
        'Preview replay (dry run)');
  const replayButton =
      h('button', {type: 'button', class: 'action primary', onclick: () => act('replay', false)},
        'Replay');
  const discardPreviewButton =
      h('button', {type: 'button', class: 'action', onclick: () => act('discard', true)},
        'Preview discard (dry run)');
  const discardButton =
      h('button', {type: 'button', class: 'action danger', onclick: () => act('discard', false)},
        'Discard');
  // What a dry run was seen for: the selection, with the rate (replay) or the note (discard).
  const replaySignature = () => JSON.stringify(selectionRequests(selection)) + rate.value;
  const discardSignature = () =>
      `${JSON.stringify(selectionRequests(selection))}\n${note.value.trim()}`;
  const clearButton =
      h('button', {
        type: 'button',
        class: 'link',
        onclick: () => {
          selection.letters.clear();
          selection.group = null;
          for (const box of page.querySelectorAll('input[data-letter]')) box.checked = false;
          update();
        }
      },
        'clear selection');

  function update() {
    const size = selectionSize(selection);
    selectionText.replaceChildren();
    append(
        selectionText,
        size === 0 ? 'Select dead letters below, or a whole group.' :
            selection.group ?
                     [
                       h('strong', {}, `Group of ${formatCount(size)}`), ` with fingerprint `,
                       h('span', {class: 'mono'}, selection.group.fingerprint), ' · ', clearButton
                     ] :
                     [h('strong', {}, `${size} selected`), ' · ', clearButton]);
    previewButton.disabled = size === 0;
    // A replay is offered only once its dry run has been seen for this exact selection.
    replayButton.disabled = size === 0 || selection.previewed !== replaySignature();
    // So is a discard, for this selection and this note.
    discardPreviewButton.disabled = size === 0 || note.value.trim() === '';
    discardButton.disabled = discardPreviewButton.disabled ||
        selection.discardPreviewed !== discardSignature();
    for (const row of page.querySelectorAll('tr[data-letter]')) {
      row.classList.toggle(
          'selected',
          selection.group ? selection.group.consumer === row.dataset.consumer &&
                  row.dataset.fingerprint === selection.group.fingerprint :
                            selection.letters.has(row.dataset.letter));
    }
  }
  rate.addEventListener('input', update);
  note.addEventListener('input', update);

  async function act(action, dryRun) {
    const rateValue = rate.value === '' ? null : Number(rate.value);
    const bodies = selectionRequests(selection).map(
        (request) => action === 'replay' ?
            {...request, dry_run: dryRun, rate_per_second: rateValue} :
            {...request, dry_run: dryRun, note: note.value.trim()});
    const signature = action === 'replay' ? replaySignature() : discardSignature();
    for (const button of [previewButton, replayButton, discardPreviewButton, discardButton]) {
      button.disabled = true;
    }
    try {
      let count = 0;
      const ids = [];
      for (const body of bodies) {
        const answer = await api(`/api/dead-letters/${action}`, body);
        count += answer.count;
        ids.push(...(answer.events || []));
      }
      if (dryRun) {
        if (action === 'replay')
          selection.previewed = signature;
        else
          selection.discardPreviewed = signature;
        outcome.replaceChildren(resultBox([
          h('strong', {},
            `Dry run: ${formatCount(count)} dead letter${count === 1 ? '' : 's'} would be ${
                action === 'replay' ? 'replayed' : 'discarded'}`),
          action === 'replay' && rateValue ? ` at ${rateValue} per second.` : '.',
          ids.length > 0 && h('div', {class: 'mono small'}, `Events: ${ids.join(', ')}`),
          h('div', {class: 'small'},
            `Nothing has changed yet. Press ${
                action === 'replay' ? 'Replay' : 'Discard'} to do it.`)
        ]));
        update();
      } else {
        state.flash = [
          action === 'replay' ? `Replayed ${formatCount(count)} dead letter${
                                    count === 1 ? '' : 's'}: queued for delivery again.` :
                                `Discarded ${formatCount(count)} dead letter${
                                    count === 1 ? '' : 's'}; the note is in the audit log.`,
          ids
        ];
        render();
      }
    } catch (e) {
      outcome.replaceChildren(resultBox(e.message, 'error'));
      update();
    }
  }

  // Groups.
  const groups = answer.groups || [];
  const groupRows = groups.map((g) => {
    return h(
        'tr', {dataset: {fingerprint: g.fingerprint}}, numberCell(g.count), h('td', {}, g.consumer),
        h('td', {}, g.topic), h('td', {}, timeNode(g.first_seen)),
        h('td', {}, timeNode(g.last_seen)), h('td', {class: 'err'}, g.sample_error),
        h('td', {},
          h('a', {
            href: `#/dead-letters${
                query({...filter, consumer: g.consumer, fingerprint: g.fingerprint})}`
          },
            'Show'),
          !readOnly && ' · ',
          !readOnly &&
              h('button', {
                type: 'button',
                class: 'link action',
                onclick: () => {
                  selection
                      .group = {fingerprint: g.fingerprint, consumer: g.consumer, count: g.count};
                  selection.letters.clear();
                  for (const box of page.querySelectorAll('input[data-letter]'))
                    box.checked = false;
                  update();
                }
              },
                'Select group')));
  });

  // Letters.
  const letters = answer.letters || [];
  const letterRows = letters.map((d) => {
    const key = JSON.stringify([d.consumer, d.event_id]);
    const box = !readOnly && h('input', {
      type: 'checkbox',
      'aria-label': `Select event ${d.event_id} for ${d.consumer}`,
      dataset: {letter: key},
      onchange: (e) => {
        selection.group = null;
        if (e.target.checked)
          selection.letters.add(key);
        else
          selection.letters.delete(key);
        update();
      }
    });
    return h(
        'tr', {
          dataset:
              {letter: key, consumer: d.consumer, fingerprint: d.fingerprint, event: d.event_id}
        },
        !readOnly && h('td', {class: 'check'}, box), h('td', {}, eventLink(d.event_id)),
        h('td', {}, d.consumer), h('td', {}, d.topic), h('td', {class: 'mono'}, d.key || '—'),
        h('td', {}, pill(d.reason, 'dead')), numberCell(d.attempts),
        h('td', {class: 'err'}, d.last_error), h('td', {}, timeNode(d.last_failed_at)));
  });
  const selectAll = !readOnly && h('input', {
    type: 'checkbox',
    'aria-label': 'Select every dead letter shown',
    onchange: (e) => {
      selection.group = null;
      for (const box of page.querySelectorAll('input[data-letter]')) {
        box.checked = e.target.checked;
        if (e.target.checked)
          selection.letters.add(box.dataset.letter);
        else
          selection.letters.delete(box.dataset.letter);
      }
      update();
    }
  });
  const cursors = state.letterPages.cursors;
  const pager =
      h('div', {class: 'pager'},
        h('button', {
          type: 'button',
          disabled: !after,
          onclick: () => go('dead-letters', {...filter, after: cursors.pop() || ''})
        },
          '← Prev'),
        h('button', {
          type: 'button',
          disabled: answer.next_after == null,
          onclick: () => {
            cursors.push(after);
            go('dead-letters', {...filter, after: answer.next_after});
          }
        },
          'Next →'));

  const parked =
      (answer.parked_keys || [])
          .map(
              (p) =>
                  h('tr', {}, h('td', {}, p.consumer), h('td', {class: 'mono'}, p.key),
                    h('td', {}, p.parked_by_event_id ? eventLink(p.parked_by_event_id) : '—')));

  append(page, [
    pageHead('Dead letters'),
    flash &&
        resultBox(
            [
              flash[0],
              flash[1].length > 0 &&
                  h('div', {class: 'mono small'}, `Events: ${flash[1].join(', ')}`)
            ],
            'ok'),
    h('section', {class: 'panel'}, filters),
    h('section', {class: 'panel', 'aria-label': 'Groups'},
      h('h2', {}, 'Grouped by error fingerprint'),
      table(
          [['Count', 'num'], 'Consumer', 'Topic', 'First seen', 'Last seen', 'Error', ''],
          groupRows, 'No dead letters match. Nothing is waiting for an operator.'),
      answer.groups_total > groups.length &&
          h('p', {class: 'small'},
            `The ${groups.length} largest of ${formatCount(answer.groups_total)} groups ` +
                `(${formatCount(answer.dead_letters_total)} dead letters); ` +
                'filter by consumer or topic to see others.')),
    h('section', {class: 'panel', 'aria-label': 'Dead letters'}, h('h2', {}, 'Dead letters'),
      table(
          [
            !readOnly && h('span', {}, selectAll), 'Event', 'Consumer', 'Topic', 'Key', 'Reason',
            ['Attempts', 'num'], 'Last error', 'Last failed'
          ].filter(Boolean),
          letterRows, 'No dead letters match.'),
      pager),
    !readOnly &&
        h('section', {class: 'panel actionbar', 'aria-label': 'Act on the selection'},
          selectionText,
          h('div', {class: 'cols'},
            h('div', {}, h('h2', {}, 'Replay'),
              h('div', {class: 'actions'}, field('Rate limit, per second (optional)', rate),
                previewButton, replayButton)),
            h('div', {}, h('h2', {}, 'Discard'),
              h('div', {class: 'field'},
                h('label',
                  { for: 'discard-note'
                  },
                  'Note (required)'),
                note),
              h('div', {class: 'actions', style: 'margin-top: 8px'}, discardPreviewButton,
                discardButton))),
          outcome),
    h('section', {class: 'panel', 'aria-label': 'Parked keys'}, h('h2', {}, 'Parked keys'),
      h('p', {class: 'muted small'},
        'A key is parked while a dead letter of that key holds back its later events; replaying or discarding the letter unparks it.'),
      table(['Consumer', 'Key', 'Parked by'], parked, 'No parked keys.')),
  ]);
  note.id = 'discard-note';
  update();
}

// ---- Workers --------------------------------------------------------------------------------

// The registered workers, alive or dead as the kernel tells, and each consumer's verdict: the
// page an operator opens when work is stuck.
function workersPage(page, route, isCurrent) {
  const updated = h('span', {class: 'muted small', 'aria-live': 'off'});
  const workers = h('section', {class: 'panel', 'aria-label': 'Workers'});
  const consumers = h('section', {class: 'panel', 'aria-label': 'Consumers and their workers'});
  append(page, [pageHead('Workers', updated), workers, consumers]);
  return every(isCurrent, async () => {
    const [answer, overview] = await Promise.all([api('/api/workers'), api('/api/overview')]);
    if (!isCurrent()) return;
    const now = answer.now ?? Date.now();
    updated.textContent = `Updated ${formatTime(now)} · refreshes every 2 s`;
    const rows = answer.workers.map((w) => {
      const oldest = Math.min(...w.claims.map((c) => toMs(c.since)));
      return h(
          'tr', {class: `liveness-${w.liveness}`, dataset: {worker: w.id, liveness: w.liveness}},
          h('td', {class: 'num mono'}, w.id), h('td', {class: 'num mono'}, w.pid),
          h('td', {}, w.host), h('td', {}, w.kind), h('td', {}, w.consumers.join(', ') || '—'),
          h('td', {}, timeNode(w.started_at),
            h('div', {class: 'muted small'},
              `${formatDuration(Math.max(0, now - toMs(w.started_at)))} ago`)),
          h('td', {dataset: {field: 'liveness'}},
            pill(w.liveness, {alive: 'ok', dead: 'dead', unknown: 'warning'}[w.liveness])),
          h('td', {class: 'num'}, formatCount(w.claims.length),
            w.claims.length > 0 &&
                h('div', {class: 'muted small'},
                  `oldest ${formatDuration(Math.max(0, now - oldest))}`)));
    });
    workers.replaceChildren(
        h('h2', {}, 'Workers'),
        table(
            [
              ['ID', 'num'], ['PID', 'num'], 'Host', 'Kind', 'Consumers', 'Since (UTC)', 'State',
              ['Claims', 'num']
            ],
            rows, 'No worker is registered: none is running.'),
        h('p', {class: 'muted small'},
          'A worker registers when it starts (or, for run_until_idle and SQL, when it first ' +
              'claims) and leaves when it stops. Alive or dead comes from the lock it holds ' +
              'beside the file, asked of the kernel: nothing is written to tell.'));
    const consumerRows = overview.consumers.map((c) => {
      const health = c.health || {status: 'ok', findings: []};
      return h('tr', {
        class: health.status !== 'ok' ? `health-${health.status}` : null,
        dataset: {consumer: c.name, health: health.status}
      },
               h('th', {scope: 'row'}, c.name), h('td', {}, workersText(health, now)),
               h('td', {}, timeNode(health.last_seen_worker_at)), numberCell(c.due ?? 0),
               h('td', {class: 'num'}, formatDuration(c.lag_ms)),
               h('td', {},
                 health.findings.length === 0 ?
                     pill('ok', 'ok') :
                     health.findings.map((f) => h('div', {class: 'finding'}, f.detail))));
    });
    consumers.replaceChildren(
        h('h2', {}, 'Consumers'),
        table(
            ['Consumer', 'Workers', 'Last seen a worker', ['Due', 'num'], ['Lag', 'num'], 'Check'],
            consumerRows, 'No consumers yet.'));
  });
}

// ---- Backfill and prune ---------------------------------------------------------------------

async function backfillPage(page, route, isCurrent) {
  const consumers = await loadConsumers();
  if (!isCurrent()) return;
  append(page, pageHead('Backfill & prune'));
  if (state.session.read_only) {
    append(
        page,
        h('section', {class: 'panel'},
          h('p', {class: 'muted'},
            'This console is read-only: backfill and prune previews are not available. ' +
                'Start it without --read-only to use them.')));
    return;
  }

  // Backfill: re-feed a consumer retained events, after a preview count.
  const consumer =
      h('select', {name: 'consumer', required: true},
        consumers.map((name) => h('option', {value: name}, name)));
  const sinceRadio = h('input', {type: 'radio', name: 'from', value: 'since', checked: true});
  const eventRadio = h('input', {type: 'radio', name: 'from', value: 'event'});
  const since =
      h('input',
        {type: 'datetime-local', name: 'since', value: toUtcInput(Date.now() - 3600 * 1000)});
  const fromEvent =
      h('input', {type: 'text', name: 'from_event', class: 'wide', placeholder: 'event ID'});
  const backfillOutcome = h('div', {'aria-live': 'polite'});
  let previewed = null;
  const request = () =>
      (eventRadio.checked ? {consumer: consumer.value, from_event: fromEvent.value.trim()} :
                            {consumer: consumer.value, since: fromUtcInput(since.value)});
  const previewButton = h(
      'button', {type: 'button', class: 'action', onclick: () => backfill(true)}, 'Preview count');
  const runButton =
      h('button', {type: 'button', class: 'action primary', onclick: () => backfill(false)},
        'Backfill');
  const sync = () => {
    runButton.disabled = previewed !== JSON.stringify(request());
    previewButton.disabled = consumers.length === 0;
  };
  for (const input of [consumer, sinceRadio, eventRadio, since, fromEvent]) {
    input.addEventListener('input', sync);
    input.addEventListener('change', sync);
  }
  async function backfill(dryRun) {
    const body = request();
    try {
      const answer = await api('/api/backfill', {...body, dry_run: dryRun});
      previewed = dryRun ? JSON.stringify(body) : null;
      backfillOutcome.replaceChildren(resultBox(
          dryRun ?
              [
                h('strong', {},
                  `Dry run: ${formatCount(answer.count)} event(s) would be delivered to ${
                      body.consumer} again.`),
                h('div', {class: 'small'},
                  `Its handler is called again for each of them, also for those it has ` +
                      `handled before. Nothing has changed yet. Press Backfill to do it.`)
              ] :
              `Backfilled ${formatCount(answer.count)} event(s) for ${
                  body.consumer}: their seen marks are cleared and they are delivered again.`,
          dryRun ? '' : 'ok'));
      runButton.textContent =
          dryRun ? `Backfill ${formatCount(answer.count)} event(s)` : 'Backfill';
    } catch (e) {
      previewed = null;
      backfillOutcome.replaceChildren(resultBox(e.message, 'error'));
    }
    sync();
  }
  sync();

  // Prune: a preview only; pruning itself stays a deliberate CLI step.
  const olderThan = h('input', {type: 'text', name: 'older_than', value: '7d'});
  const force = h('input', {type: 'checkbox', name: 'force'});
  const pruneOutcome = h('div', {'aria-live': 'polite'});
  const pruneButton =
      h('button', {
        type: 'button',
        class: 'action',
        onclick: async () => {
          try {
            const answer = await api(
                '/api/prune',
                {dry_run: true, older_than: olderThan.value.trim(), force: force.checked});
            const details =
                Object.entries(answer).filter(([name]) => name !== 'count' && name !== 'dry_run');
            pruneOutcome.replaceChildren(resultBox([
              h('strong', {}, `Dry run: ${formatCount(answer.count)} event(s) would be pruned.`),
              details.length > 0 &&
                  h('dl', {class: 'facts', style: 'margin-top: 6px'},
                    details.map(
                        ([name, value]) =>
                            [h('dt', {}, name),
                             h('dd', {class: 'mono'},
                               typeof value === 'object' ? JSON.stringify(value) : value)]))
            ]));
          } catch (e) {
            pruneOutcome.replaceChildren(resultBox(e.message, 'error'));
          }
        }
      },
        'Preview prune');

  append(
      page,
      h('div', {class: 'grid2'},
        h('section', {class: 'panel', 'aria-label': 'Backfill'}, h('h2', {}, 'Backfill a consumer'),
          h('p', {class: 'small backfill-warning'},
            'Delivers retained events to the consumer again: backfill clears the consumer\'s ' +
                'seen marks (its inbox) for them, so its handler is called again for every one, ' +
                'also for events it has handled. A handler with outside effects (an email, a ' +
                'charge) repeats them. Preview the count first; Backfill runs only after it.'),
          h('div', {class: 'stack'}, field('Consumer', consumer),
            h('fieldset', {}, h('legend', {class: 'label muted small'}, 'Events'),
              h('label', {class: 'radio'}, sinceRadio, 'created since'), since,
              h('label', {class: 'radio', style: 'margin-top: 8px'}, eventRadio, 'from event'),
              fromEvent),
            h('div', {class: 'actions'}, previewButton, runButton)),
          backfillOutcome),
        h('section', {class: 'panel', 'aria-label': 'Prune preview'}, h('h2', {}, 'Prune preview'),
          h('p', {class: 'muted small'},
            'Counts what sluice prune would delete; nothing is deleted from here.'),
          h('div', {class: 'stack'}, field('Older than', olderThan),
            h('label', {class: 'radio'}, force, 'allow a retention under the dedup horizon'),
            h('div', {class: 'actions'}, pruneButton)),
          pruneOutcome)));
  since.setAttribute('aria-label', 'Created since');
  fromEvent.setAttribute('aria-label', 'From event ID');
}

// ---- Audit log ------------------------------------------------------------------------------

async function auditPage(page, route, isCurrent) {
  const limit = 50;
  const rowsBody = [];
  const holder = h('section', {class: 'panel', 'aria-label': 'Audit entries'});
  append(page, [
    pageHead(
        'Audit log',
        h('span', {class: 'muted small'},
          'Every replay, discard, backfill and prune, from the console and the CLI')),
    holder
  ]);
  let after = '';
  async function more() {
    const answer = await api(`/api/audit${query({after, limit})}`);
    if (!isCurrent()) return;
    const entries = answer.entries || [];
    for (const entry of entries) {
      rowsBody.push(
          h('tr', {dataset: {action: entry.action}}, h('td', {}, timeNode(entry.at)),
            h('td', {}, h('strong', {}, entry.action)), h('td', {}, pill(entry.source)),
            numberCell(entry.count),
            h('td', {class: 'mono small err'},
              typeof entry.filter === 'string' ? entry.filter : JSON.stringify(entry.filter)),
            h('td', {class: 'err'}, entry.note || '—')));
    }
    after = answer.next_after;
    const moreButton = after != null &&
        h('button', {type: 'button', onclick: () => more().catch((e) => showBanner(e.message))},
          'More entries');
    holder.replaceChildren(
        table(
            ['When', 'Action', 'Source', ['Count', 'num'], 'Filter', 'Note'], rowsBody,
            'No operator actions recorded yet.'),
        h('div', {class: 'pager'}, moreButton));
  }
  await more();
}

// ---- Start ----------------------------------------------------------------------------------

async function start() {
  try {
    state.session = await api('/api/session');
  } catch (e) {
    showBanner(`${e.message}. Reload the page to try again.`);
    return;
  }
  document.body.classList.toggle('read-only', Boolean(state.session.read_only));
  document.getElementById('mode').hidden = !state.session.read_only;
  window.addEventListener('hashchange', () => {
    render();
    document.getElementById('view').focus({preventScroll: true});
  });
  render();
}

start();
