// End-to-end test of `sluice console` in a real browser: Debian's chromium driven by
// playwright-core (no browser download). On the orders example's file, with a worker in another
// process, an operator opens the overview and sees the dead letter, opens it, previews a replay
// (nothing changes), replays it and watches it delivered, discards another with a note after its
// dry run and finds the note in the audit log, replays and discards from an event's own page,
// filters events by consumer and state, and sees the workers alive; a console restarted with
// --read-only shows no action at all; a killed worker shows dead and its consumer's row coloured
// as `sluice check` warns. Times show in UTC with a Z, local time on hover. On a file where all
// is well the health check says so, with no stray text. Screenshots of every page go to the
// artifacts folder.
//
// Environment (set by tests/meson.build): SLUICE_CLI, SLUICE_ORDERS_EXAMPLE,
// SLUICE_CONSOLE_WORKER, SLUICE_BROWSER_ARTIFACTS. `--docs-images DIR` first places orders for a
// minute, so the overview's charts have a shape, then also writes the overview and the dry-run
// dead-letter screenshots and the workers view to DIR as console-overview.png,
// console-dead-letters.png and console-workers.png: how
// docs/images/ is refreshed (a normal run leaves the source tree alone).
// Exits 77 (skipped) only when chromium is not installed.
'use strict';

const assert = require('node:assert/strict');
const childProcess = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const CHROMIUM = '/usr/bin/chromium';
const WAIT_MS = 15000;  // the longest any one step may take before the test fails

if (!fs.existsSync(CHROMIUM)) {
  console.log(`${CHROMIUM} is not installed (scripts/install-deps installs it): skipped`);
  process.exit(77);
}
let chromium;
try {
  ({chromium} = require('playwright-core'));
} catch (e) {
  console.error(
      `playwright-core is not installed in ${__dirname}: run scripts/install-deps (npm ci)`);
  process.exit(1);
}

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (tests/meson.build sets it)`);
  return value;
}

const cli = env('SLUICE_CLI');
const ordersExample = env('SLUICE_ORDERS_EXAMPLE');
const workerProgram = env('SLUICE_CONSOLE_WORKER');
const artifacts = env('SLUICE_BROWSER_ARTIFACTS');
const docsImagesFlag = process.argv.indexOf('--docs-images');
const docsImages = docsImagesFlag > 0 ? process.argv[docsImagesFlag + 1] : null;

let passed = 0;
function step(text) {
  passed++;
  console.log(`ok ${passed} - ${text}`);
}

// A child process whose output is kept for the failure message.
class Child {
  constructor(name, program, args, options = {}) {
    this.name = name;
    this.output = '';
    this.exited = null;
    this.process =
        childProcess.spawn(program, args, {stdio: ['ignore', 'pipe', 'pipe'], ...options});
    this.process.stdout.on('data', (d) => this.output += d);
    this.process.stderr.on('data', (d) => this.output += d);
    this.exit = new Promise((resolve) => this.process.on('exit', (code, signal) => {
      this.exited = {code, signal};
      resolve(this.exited);
    }));
  }

  // Resolves once the output holds `text`; rejects if the process exits first or on timeout.
  async waitForOutput(text) {
    const deadline = Date.now() + WAIT_MS;
    while (!this.output.includes(text)) {
      if (this.exited) throw new Error(`${this.name} exited early: ${this.output}`);
      if (Date.now() > deadline) throw new Error(`${this.name} did not print "${text}"`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, deadline - Date.now());
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        this.process.stdout.once('data', done);
        this.exit.then(done);
      });
    }
  }

  // SIGTERM by PID and wait for the exit.
  async stop() {
    if (this.exited) return this.exited;
    this.process.kill('SIGTERM');
    return this.exit;
  }
}

function run(program, args, options = {}) {
  const result =
      childProcess.spawnSync(program, args, {encoding: 'utf8', timeout: 60000, ...options});
  if (result.status !== 0) {
    throw new Error(
        `${path.basename(program)} ${args.join(' ')} exited ${result.status}:\n` +
        `${result.stdout}${result.stderr}`);
  }
  return result.stdout;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const {port} = server.address();
      server.close(() => resolve(port));
    });
  });
}

// Starts `sluice console` on a free loopback port and waits until it answers (to `token`, when
// the console was given one).
async function startConsole(db, extraArgs, token = null) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const console_ = new Child(
      'sluice console', cli,
      ['--db', db, 'console', '--listen', `127.0.0.1:${port}`, ...extraArgs]);
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    if (console_.exited) throw new Error(`sluice console exited early: ${console_.output}`);
    try {
      const headers = token ? {Authorization: `Bearer ${token}`} : {};
      const response = await fetch(`${base}/api/session`, {headers});
      if (response.ok) break;
    } catch (e) {
      // Not listening yet: connection refused.
    }
    if (Date.now() > deadline) throw new Error(`sluice console did not answer on ${base}`);
    await new Promise((resolve) => setTimeout(resolve, 50));  // poll interval, not a sync point
  }
  return {console: console_, base};
}

// Polls `condition` (an async predicate) every 100 ms until it holds; fails after WAIT_MS.
async function waitUntil(what, condition) {
  const deadline = Date.now() + WAIT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));  // poll interval, not a sync point
  }
}

async function getJson(url) {
  const response = await fetch(url);
  assert.equal(response.status, 200, `GET ${url}`);
  return response.json();
}

// The status of one check in the console's overview.
async function check(base, name) {
  const overview = await getJson(`${base}/api/overview`);
  return overview.check.checks.find((c) => c.name === name).status;
}

async function shot(page, name) {
  const file = path.join(artifacts, `${name}.png`);
  await page.screenshot({path: file, fullPage: true});
  return file;
}

async function main() {
  fs.mkdirSync(artifacts, {recursive: true});
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-console-browser-'));
  const db = path.join(work, 'orders.db');
  const children = [];
  let browser = null;
  try {
    run(ordersExample, [db], {cwd: work});
    step('the orders example left its file with a dead letter (A-1004, email)');

    const worker = new Child('console_test_worker', workerProgram, [db]);
    children.push(worker);
    await worker.waitForOutput('ready');
    // Orders placed as the app would, through the CLI: A-1006 and A-1007 have no address the
    // fixed mailer can use, so email dead-letters them too.
    const placeOrder = (id, email) => run(cli, [
      '--db', db, 'enqueue', '--topic', 'order.placed', '--key', id, '--id', `req-${id}`,
      '--dedup-key', `${id}:placed`, '--payload',
      JSON.stringify({order_id: id, customer: 'edsger', email, amount_cents: 700})
    ]);
    placeOrder('A-1006', '');
    placeOrder('A-1007', 'nobody');

    let started = await startConsole(db, []);
    children.push(started.console);
    const {base} = started;
    step(`sluice console answers on ${base}`);

    if (docsImages) {
      // For the README's picture: a minute of orders, some each sample, so the charts have a shape.
      for (let i = 0; i < 30; i++) {
        const samples = (await getJson(`${base}/api/history`)).samples.length;
        for (let j = 0; j < [3, 5, 8, 4, 2, 6][i % 6]; j++) {
          placeOrder(`B-${2000 + i * 10 + j}`, `customer${j}@example.com`);
        }
        await waitUntil('the console took another sample', async () => {
          return (await getJson(`${base}/api/history`)).samples.length > samples;
        });
      }
    }

    browser = await chromium.launchPersistentContext(path.join(work, 'chromium-profile'), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: {width: 1280, height: 800},
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'
      ],
    });
    browser.setDefaultTimeout(WAIT_MS);
    const page = browser.pages()[0] || await browser.newPage();
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));

    // Overview: the email consumer shows its three dead letters (the page refreshes every 2 s).
    await page.goto(`${base}/#/overview`);
    const emailDead = page.locator('tr[data-consumer="email"] td[data-field="dead"]');
    await emailDead.filter({hasText: /^3$/}).waitFor();
    await page.locator('.verdict').waitFor();
    await page.locator('svg.chart').first().waitFor();
    const overviewShot = await shot(page, 'overview');
    const updated = page.locator('[data-page="overview"] .page-head span');
    const firstUpdate = await updated.innerText();
    await page.waitForFunction(
        (before) =>
            document.querySelector('[data-page="overview"] .page-head span').textContent.trim() !==
            before.trim(),
        firstUpdate, {timeout: WAIT_MS});
    step('the overview shows the email consumer with its dead letters and a chart, and refreshes');

    // Dead letters, from the overview's link.
    await emailDead.locator('a').click();
    const row1004 = page.locator('tr[data-event="req-A-1004"]');
    await row1004.waitFor();
    assert.match(await row1004.innerText(), /invalid email address 'ken-at-example\.com'/);
    await page.locator('tr[data-event="req-A-1006"]').waitFor();
    await page.locator('td', {hasText: /^3$/}).first().waitFor();  // the group of 3
    await shot(page, 'dead-letters');
    step('the dead-letter page lists A-1004, A-1006 and A-1007 under one fingerprint');

    // Open the dead letter's event.
    await row1004.locator('a', {hasText: 'req-A-1004'}).click();
    await page.locator('pre.json', {hasText: '"email": "ken-at-example.com"'}).waitFor();
    const emailState = page.locator('tr[data-consumer="email"] td[data-field="state"]');
    await emailState.filter({hasText: 'dead'}).waitFor();
    await shot(page, 'event-dead');
    step('the event page shows the payload and the email delivery as dead');

    // Dry run, then replay.
    await page.goBack();
    await row1004.locator('input[type="checkbox"]').check();
    await page.locator('.selection', {hasText: '1 selected'}).waitFor();
    const replay = page.locator('button', {hasText: /^Replay$/});
    assert.equal(await replay.isDisabled(), true, 'Replay waits for its dry run');
    await page.locator('button', {hasText: 'Preview replay'}).click();
    await page.locator('.result', {hasText: 'Dry run: 1 dead letter would be replayed'}).waitFor();
    const stillDead = await getJson(`${base}/api/dead-letters?consumer=email`);
    assert.ok(
        stillDead.letters.some((d) => d.event_id === 'req-A-1004'), 'the dry run changed nothing');
    const dryRunShot = await shot(page, 'dead-letters-dry-run');
    step('the dry run previews 1 replay and changes nothing');

    await replay.click();
    await page.locator('.result', {hasText: 'Replayed 1 dead letter'}).waitFor();
    await row1004.waitFor({state: 'detached'});
    step('replay queued A-1004 again and it left the dead letters');

    // See it delivered: the event page refreshes while a delivery is in flight.
    await page.goto(`${base}/#/event/req-A-1004`);
    await emailState.filter({hasText: 'delivered'}).waitFor();
    await shot(page, 'event-delivered');
    step('the event page shows the replayed email delivery as delivered');

    // A whole fingerprint group: the dry run counts the two letters left.
    await page.goto(`${base}/#/dead-letters`);
    await page.locator('button', {hasText: 'Select group'}).click();
    await page.locator('.selection', {hasText: 'Group of 2'}).waitFor();
    await page.locator('button', {hasText: 'Preview replay'}).click();
    await page.locator('.result', {hasText: 'Dry run: 2 dead letters would be replayed'}).waitFor();
    await page.locator('button', {hasText: 'clear selection'}).click();
    step('selecting the fingerprint group previews a replay of its 2 letters');

    // Discard the other one, with a note.
    await page.goto(`${base}/#/dead-letters`);
    const row1006 = page.locator('tr[data-event="req-A-1006"]');
    await row1006.locator('input[type="checkbox"]').check();
    const discard = page.locator('button', {hasText: /^Discard$/});
    assert.equal(await discard.isDisabled(), true, 'Discard needs a note');
    const note = 'no address on file; the customer re-orders by phone';
    await page.getByLabel('Note (required)').fill(note);
    assert.equal(await discard.isDisabled(), true, 'Discard waits for its dry run');
    await page.locator('button', {hasText: 'Preview discard'}).click();
    await page.locator('.result', {hasText: 'Dry run: 1 dead letter would be discarded'}).waitFor();
    assert.ok(
        (await getJson(`${base}/api/dead-letters?consumer=email`))
            .letters.some((d) => d.event_id === 'req-A-1006'),
        'the discard\'s dry run changed nothing');
    await page.getByLabel('Note (required)').fill(`${note}.`);
    assert.equal(await discard.isDisabled(), true, 'a new note needs a new dry run');
    await page.getByLabel('Note (required)').fill(note);
    await page.locator('button', {hasText: 'Preview discard'}).click();
    await discard.click();
    await page.locator('.result', {hasText: 'Discarded 1 dead letter'}).waitFor();
    await row1006.waitFor({state: 'detached'});
    await shot(page, 'dead-letters-after');
    step('discard, after its dry run and with a note, removed A-1006 from the dead letters');

    await page.locator('nav a', {hasText: 'Audit log'}).click();
    await page.locator('tr[data-action="discard"]', {hasText: note}).waitFor();
    await page.locator('tr[data-action="replay"]').first().waitFor();
    await shot(page, 'audit');
    step('the audit log shows the replay and the discard with its note');

    // An order whose ID is a number fails for both consumers (billing retries, then gives up):
    // its event page links each consumer's dead letters apart and acts on them.
    run(cli, [
      '--db', db, 'enqueue', '--topic', 'order.placed', '--key', 'A-1008', '--id', 'req-A-1008',
      '--payload', JSON.stringify({order_id: 1008, amount_cents: 100})
    ]);
    await page.goto(`${base}/#/event/req-A-1008`);
    for (const consumer of ['email', 'billing']) {
      await page.locator(`tr[data-consumer="${consumer}"] td[data-field="state"]`)
          .filter({hasText: 'dead'})
          .waitFor();
    }
    const links = page.locator('ul.links li');
    await links.nth(1).waitFor();
    assert.deepEqual(
        (await links.allInnerTexts()).map((t) => t.trim()).sort(),
        ['Dead letters of billing →', 'Dead letters of email →']);
    const actions = page.locator('section[aria-label="Act on the dead letter"]');
    const emailActions = actions.locator('[data-consumer="email"]');
    assert.equal(await emailActions.locator('button', {hasText: /^Replay$/}).isDisabled(), true);
    await emailActions.locator('button', {hasText: 'Preview replay'}).click();
    await emailActions.locator('.result', {hasText: 'would be replayed'}).waitFor();
    assert.equal(await emailActions.locator('button', {hasText: /^Replay$/}).isDisabled(), false);
    const eventDiscard = emailActions.locator('button', {hasText: /^Discard$/});
    await emailActions.getByLabel('Note for discarding the dead letter of email').fill('test order');
    assert.equal(await eventDiscard.isDisabled(), true, 'Discard waits for its dry run');
    await emailActions.locator('button', {hasText: 'Preview discard'}).click();
    await emailActions.locator('.result', {hasText: 'would be discarded'}).waitFor();
    assert.equal(
        (await getJson(`${base}/api/events/req-A-1008`))
            .deliveries.find((d) => d.consumer === 'email')
            .state,
        'dead', 'the dry runs changed nothing');
    await shot(page, 'event-actions');
    await eventDiscard.click();
    await page.locator('.result', {hasText: 'Discarded the dead letter of email'}).waitFor();
    await page.locator('tr[data-consumer="email"] td[data-field="state"]')
        .filter({hasText: 'discarded'})
        .waitFor();
    step('the event page links each consumer\'s dead letters apart, previews and discards one');

    // Times: UTC with a Z, the browser's zone on hover.
    const created = page.locator('dd time').first();
    assert.match(await created.innerText(), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/);
    assert.match(await created.getAttribute('title'), /local, UTC[+-]\d\d:\d\d/);
    step('times show in UTC with a Z and local time on hover');

    // Events by consumer and state, through the form.
    await page.goto(`${base}/#/events`);
    await page.locator('select[name="consumer"]').selectOption('email');
    await page.locator('select[name="state"]').selectOption('dead');
    await page.locator('button', {hasText: 'Search'}).click();
    await page.waitForFunction(() => location.hash.includes('consumer=email') &&
                                   location.hash.includes('state=dead'));
    await page.locator('a', {hasText: 'req-A-1007'}).waitFor();
    const deadForEmail =
        await page.locator('[data-page="events"] tbody a[href^="#/event/"]').allInnerTexts();
    assert.deepEqual(deadForEmail, ['req-A-1007'], 'only the event dead for email');
    step('the events page filters by consumer and state');

    // Workers: the console_test_worker, alive, with its two consumers.
    await page.goto(`${base}/#/workers`);
    const liveWorker = page.locator('tr[data-liveness="alive"]');
    await liveWorker.waitFor();
    assert.match(await liveWorker.innerText(), /billing, email/);
    await page.locator('tr[data-consumer="email"]', {hasText: 'alive (1)'}).waitFor();
    const workersShot = await shot(page, 'workers');
    step('the workers view shows the running worker alive with its consumers');

    // The other pages render from the live API.
    await page.goto(`${base}/#/events?topic=order.placed`);
    await page.locator('a', {hasText: 'req-A-1006'}).waitFor();
    await shot(page, 'events');
    // Keyset pages of 3: Next follows next_after_seq, Prev comes back.
    await page.goto(`${base}/#/events?topic=order.placed&limit=3`);
    const seqs = () => page.locator('[data-page="events"] tbody td:first-child').allInnerTexts();
    await page.waitForFunction(
        () => document.querySelectorAll('[data-page="events"] tbody tr').length === 3, null,
        {timeout: WAIT_MS});
    const firstPage = await seqs();
    const firstSeqIs = (wanted, same) => page.waitForFunction(([seq, equal]) => {
      const cell = document.querySelector('[data-page="events"] tbody td');
      return cell !== null && (cell.textContent === seq) === equal;
    }, [wanted, same], {timeout: WAIT_MS});
    await page.locator('button', {hasText: 'Next'}).click();
    await firstSeqIs(firstPage[0], false);
    const secondPage = await seqs();
    assert.ok(Number(secondPage[0]) > Number(firstPage[2]), `${secondPage} follows ${firstPage}`);
    await page.locator('button', {hasText: 'Prev'}).click();
    await firstSeqIs(firstPage[0], true);
    assert.deepEqual(await seqs(), firstPage);
    await page.goto(`${base}/#/backfill`);
    const backfillText = await page.locator('section[aria-label="Backfill"]').innerText();
    assert.match(backfillText, /clears the consumer's seen marks/);
    assert.match(backfillText, /handler is called again/);
    assert.doesNotMatch(backfillText, /still drops what it has seen/);
    assert.equal(await page.locator('button', {hasText: /^Backfill/}).isDisabled(), true);
    await page.locator('button', {hasText: 'Preview count'}).click();
    await page.locator('.result', {hasText: /Dry run: \d+ event\(s\) would be delivered/})
        .waitFor();
    assert.match(
        await page.locator('button', {hasText: /^Backfill/}).innerText(), /^Backfill \d+ event/);
    await page.locator('button', {hasText: 'Preview prune'}).click();
    await page.locator('.result', {hasText: /Dry run: \d+ event\(s\) would be pruned/}).waitFor();
    await shot(page, 'backfill');
    step('events search pages by keyset; backfill and prune previews answer');
    assert.deepEqual(pageErrors, [], 'no script errors on the page');

    // With --token: the page opened once with ?token= keeps working from its cookie, POSTs too.
    await started.console.stop();
    const token = 'browser-test-token';
    started = await startConsole(db, ['--token', token], token);
    children.push(started.console);
    await page.goto(`${started.base}/?token=${token}#/dead-letters`);
    await page.locator('tr[data-event="req-A-1007"] input[type="checkbox"]').check();
    await page.locator('button', {hasText: 'Preview replay'}).click();
    await page.locator('.result', {hasText: 'Dry run: 1 dead letter would be replayed'}).waitFor();
    await page.goto(`${started.base}/#/overview`);
    await emailDead.filter({hasText: /^1$/}).waitFor();
    step('with --token the page works after opening it once with ?token=');

    // Read-only: the same pages without a single action, though A-1007 is still dead.
    await started.console.stop();
    started = await startConsole(db, ['--read-only']);
    children.push(started.console);
    const readOnlyBase = started.base;
    const actionPattern = /replay|discard|backfill|prune|select group|preview/i;
    for (const route of ['overview', 'dead-letters', 'event/req-A-1004', 'backfill', 'audit']) {
      await page.goto(`${readOnlyBase}/#/${route}`);
      await page.locator('#mode', {hasText: 'Read-only'}).waitFor();
      await page.locator(`[data-page="${route.split('/')[0]}"] h1`).waitFor();
      await page.locator(`[data-page="${route.split('/')[0]}"] :is(table, .panel p)`)
          .first()
          .waitFor();
      const buttons = await page.locator('button:visible').allInnerTexts();
      const actions = buttons.filter((text) => actionPattern.test(text));
      assert.deepEqual(actions, [], `read-only ${route} shows action buttons`);
      assert.equal(await page.locator('.action, .actionbar, input[type="checkbox"]').count(), 0);
    }
    await page.goto(`${readOnlyBase}/#/dead-letters`);
    await page.locator('h2', {hasText: 'Parked keys'}).waitFor();
    await page.locator('tr[data-event="req-A-1007"]').waitFor();
    assert.equal(await page.locator('tr[data-event="req-A-1007"] input').count(), 0);
    await shot(page, 'dead-letters-read-only');
    step('with --read-only no page shows an action button');

    // The worker dies (SIGKILL: no chance to unregister) and an order comes in: the workers view
    // shows it dead, and the overview colours the stuck consumers as `sluice check` warns.
    worker.process.kill('SIGKILL');
    await worker.exit;
    placeOrder('A-1009', 'ken@example.com');
    await page.goto(`${readOnlyBase}/#/workers`);
    await page.locator('tr[data-liveness="dead"]').waitFor();
    await page.locator('tr[data-consumer="email"][data-health="warning"]', {
      hasText: 'no live worker'
    }).waitFor();
    await shot(page, 'workers-dead');
    await page.goto(`${readOnlyBase}/#/overview`);
    const stuckRow = page.locator('tr[data-consumer="billing"]');
    await stuckRow.and(page.locator('.health-warning')).waitFor();
    assert.match(await stuckRow.innerText(), /due and no live worker/);
    assert.equal(await check(readOnlyBase, 'stuck'), 'warning', 'the check agrees with the row');
    await shot(page, 'overview-stuck');
    step('a killed worker shows dead, and its consumers\' rows are coloured by the check\'s rules');
    assert.deepEqual(pageErrors, [], 'no script errors on the page');

    // A file where all is well: the health check says so, with no stray text.
    await started.console.stop();
    const calm = path.join(work, 'calm.db');
    run(cli, ['--db', calm, 'init']);
    started = await startConsole(calm, []);
    children.push(started.console);
    await page.goto(`${started.base}/#/overview`);
    const verdict = page.locator('section[aria-label="Health check"]');
    await verdict.locator('.verdict', {hasText: 'every check passed'}).waitFor();
    assert.doesNotMatch(await verdict.innerText(), /false|undefined|null/);
    step('on a healthy file the health check shows no literal false');
    assert.deepEqual(pageErrors, [], 'no script errors on the page');

    if (docsImages) {
      fs.mkdirSync(docsImages, {recursive: true});
      fs.copyFileSync(overviewShot, path.join(docsImages, 'console-overview.png'));
      fs.copyFileSync(dryRunShot, path.join(docsImages, 'console-dead-letters.png'));
      fs.copyFileSync(workersShot, path.join(docsImages, 'console-workers.png'));
    }
  } finally {
    if (browser) await browser.close();
    for (const child of children.reverse()) {
      const exit = await child.stop();
      if (exit.code !== 0 && exit.signal === null) console.log(`${child.name}: ${child.output}`);
    }
    fs.rmSync(work, {recursive: true, force: true});
  }
  console.log(`screenshots in ${artifacts}`);
  console.log(`${passed} passed, 0 failed`);
}

main().catch((e) => {
  console.error(`not ok ${passed + 1} - ${e.stack || e}`);
  process.exit(1);
});
