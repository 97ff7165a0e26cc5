// The report viewer: the engine's sanitised HTML, its references, the cited sources, export.

import { busy, button, byId, h, replace, showError } from '../dom';
import { plural } from '../format';
import { errorText, sessionExport, sessionReport, sourceOpen } from '../ipc';
import { show, type ScreenId } from '../nav';
import { insertSanitisedReport } from '../sanitize';
import type { CitationTarget, ReportReference, ReportView } from '../types';
import { openHistoryEntry } from './history';
import { choosePaths } from './import';

let report: ReportView | null = null;
let backTo: ScreenId = 'research';

export function createReportScreen(): HTMLElement {
  const exportButton = button('Export to a folder…', () => void exportReport(exportButton), { id: 'export-all' });
  const body = h('article', { id: 'report-body', class: 'report-body' });
  body.addEventListener('click', onBodyClick);
  const section = h(
    'section',
    { id: 'screen-report', class: 'screen', 'aria-labelledby': 'report-title', hidden: true },
    h(
      'div',
      { class: 'report-head' },
      button('← Back', () => show(backTo), { id: 'report-back', class: 'link-button' }),
      h('h2', { id: 'report-title' }, 'Report'),
      h('p', { id: 'report-meta', class: 'detail' }),
    ),
    h('p', { id: 'report-error', class: 'error', hidden: true }),
    h(
      'div',
      { class: 'report-layout' },
      h('div', { class: 'card report-main' }, body),
      h(
        'aside',
        { class: 'report-side' },
        h(
          'div',
          { class: 'card' },
          h('h3', null, 'Export'),
          h('p', { class: 'detail' }, 'Writes report.md, report.html, todo.md, events.jsonl and session.json.'),
          h('div', { class: 'actions' }, exportButton),
          h('ul', { id: 'export-result', class: 'paths', 'aria-live': 'polite' }),
        ),
        h('div', { class: 'card', id: 'source-view', 'aria-live': 'polite', hidden: true }),
        h(
          'div',
          { class: 'card' },
          h('h3', null, 'References'),
          h('ol', { id: 'report-references', class: 'references' }),
        ),
      ),
    ),
  );
  return section;
}

/** Opens the report of `session`, coming from screen `from`. */
export async function openReport(session: number, from: ScreenId = 'research'): Promise<void> {
  backTo = from;
  show('report');
  const error = byId('report-error');
  showError(error, '');
  byId('report-title').textContent = 'Loading the report…';
  replace(byId('report-body'));
  replace(byId('report-references'));
  replace(byId('export-result'));
  byId('report-meta').textContent = '';
  byId('source-view').hidden = true;
  try {
    report = await sessionReport(session);
  } catch (err) {
    report = null;
    byId('report-title').textContent = 'Report';
    showError(error, errorText(err));
    return;
  }
  byId('report-title').textContent = report.title;
  byId('report-meta').textContent = `Session ${report.session} · ${plural(report.references.length, 'reference')}`;
  insertSanitisedReport(byId('report-body'), report.html);
  renderReferences(report.references);
}

function renderReferences(refs: ReportReference[]): void {
  replace(
    byId('report-references'),
    refs.map((r) =>
      h(
        'li',
        { class: 'reference', id: `reference-${r.number}`, 'data-ref': r.number, value: r.number },
        button(h('span', { class: 'ref-title' }, r.title || r.label), () => void openSource(r), {
          class: 'reference-open link-button',
          'data-ref': r.number,
        }),
        r.label && r.label !== r.title ? h('span', { class: 'ref-label detail' }, r.label) : null,
      ),
    ),
  );
}

function onBodyClick(ev: MouseEvent): void {
  const target = ev.target instanceof Element ? ev.target.closest('a') : null;
  if (!target) return;
  // Nothing in the report navigates the window away.
  ev.preventDefault();
  const href = target.getAttribute('href') ?? '';
  const m = /^#ref-(\d+)$/.exec(href);
  if (m) {
    const ref = report?.references.find((r) => r.number === Number(m[1]));
    if (ref) void openSource(ref);
    return;
  }
  if (/^https?:/i.test(href)) showWebAddress(target.textContent ?? href, href);
}

function sourceView(): HTMLElement {
  const view = byId('source-view');
  view.hidden = false;
  view.scrollIntoView({ block: 'nearest' });
  return view;
}

function showWebAddress(title: string, url: string): void {
  const view = sourceView();
  replace(
    view,
    h('h3', { class: 'source-title' }, title),
    h('p', { class: 'source-url' }, url),
    h('p', { class: 'detail' }, 'Rudder does not open web pages itself; copy the address into your browser if you want to read it.'),
  );
}

export async function openSource(ref: ReportReference): Promise<void> {
  const view = sourceView();
  replace(view, h('p', { class: 'detail busy-text' }, `Opening [${ref.number}]…`));
  const target: CitationTarget = ref.target;
  try {
    const src = await sourceOpen(target);
    const isWeb = target.kind === 'web';
    replace(
      view,
      h('h3', { class: 'source-title' }, `[${ref.number}] ${src.title || ref.title}`),
      src.location && src.location !== src.url ? h('p', { class: 'source-location detail' }, src.location) : null,
      src.text ? h('pre', { class: 'source-text' }, src.text) : null,
      src.url
        ? h(
            'p',
            { class: 'source-url' },
            src.url,
            isWeb || !src.text ? h('span', { class: 'detail block' }, 'Rudder does not open web pages itself; copy the address into your browser if you want to read it.') : null,
          )
        : null,
      src.history_session !== null
        ? button('Open in History', () => void openHistoryEntry(src.history_session ?? 0, true), {
            id: 'source-open-history',
          })
        : null,
    );
  } catch (err) {
    replace(view, h('p', { class: 'error' }, errorText(err)));
  }
}

async function exportReport(btn: HTMLButtonElement): Promise<void> {
  const error = byId('report-error');
  showError(error, '');
  if (!report) return;
  const session = report.session;
  let dir: string | undefined;
  try {
    [dir] = await choosePaths(true, false);
  } catch (err) {
    showError(error, errorText(err));
    return;
  }
  if (!dir) return;
  const folder = dir;
  try {
    const written = await busy(btn, () => sessionExport(session, folder));
    replace(
      byId('export-result'),
      written.map((p) => h('li', null, p)),
    );
  } catch (err) {
    showError(error, errorText(err));
  }
}
