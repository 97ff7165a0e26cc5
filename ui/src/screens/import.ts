// Import: history exports (files, folders, .zip) and documents, by dialog, drag and drop, or a
// typed path, with progress and a per-file report.

import { open } from '@tauri-apps/plugin-dialog';
import { getCurrentWebview } from '@tauri-apps/api/webview';
import { busy, button, byId, h, replace, showError } from '../dom';
import { formatBytes, plural } from '../format';
import { corpusAdd, docsAdd, errorText, importPaths, libraryStats, onImportProgress, onModelProgress } from '../ipc';
import { currentScreen, onShow } from '../nav';
import type { DocsReport, FileReport, ImportProgress, ImportReport, LibraryStats } from '../types';

type Target = 'history' | 'docs' | 'corpus';

/** The dialog plugin's open(), as a list of paths; throws with a readable message. */
export async function choosePaths(directory: boolean, multiple: boolean): Promise<string[]> {
  let picked: string | string[] | null;
  try {
    picked = await open({ directory, multiple });
  } catch (err) {
    throw new Error(`The file dialog is not available here (${errorText(err)}). Type a path instead.`);
  }
  if (picked === null) return [];
  return Array.isArray(picked) ? picked : [picked];
}

let running = false;

export function createImportScreen(): HTMLElement {
  const chooseFiles = button('Choose files…', () => void pick(false, chooseFiles), { id: 'import-choose' });
  const chooseFolder = button('Choose folder…', () => void pick(true, chooseFolder), { id: 'import-choose-folder' });
  const pathInput = h('input', {
    id: 'import-path',
    type: 'text',
    placeholder: '/home/you/Downloads/takeout.zip',
    autocomplete: 'off',
    spellcheck: false,
  });
  const runButton = button('Import', () => void runTyped('history', pathInput, runButton), { id: 'import-run' });
  const docsInput = h('input', {
    id: 'docs-path',
    type: 'text',
    placeholder: '/home/you/Documents/papers',
    autocomplete: 'off',
    spellcheck: false,
  });
  const docsButton = button('Add documents', () => void runTyped('docs', docsInput, docsButton), { id: 'docs-run' });
  for (const [input, btn] of [
    [pathInput, runButton],
    [docsInput, docsButton],
  ] as const) {
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') btn.click();
    });
  }
  const dropKind = h(
    'select',
    { id: 'import-drop-kind', 'aria-label': 'What dropped files are' },
    h('option', { value: 'history' }, 'history exports'),
    h('option', { value: 'docs' }, 'documents'),
  );

  const section = h(
    'section',
    { id: 'screen-import', class: 'screen', 'aria-labelledby': 'import-heading', hidden: true },
    h('h2', { id: 'import-heading' }, 'Import'),
    h('p', { id: 'library-stats', class: 'detail' }),
    h(
      'div',
      { class: 'card' },
      h('h3', null, 'History exports'),
      h(
        'p',
        { class: 'detail' },
        'Browser history, chat exports (ChatGPT, Claude, Gemini) or a Google Takeout .zip. ',
        'Everything stays on this machine.',
      ),
      h(
        'div',
        { id: 'import-drop', class: 'drop-zone', 'aria-describedby': 'import-drop-note' },
        h('p', { class: 'drop-title' }, 'Drop files or folders here'),
        h('p', { class: 'detail' }, 'Dropped items are imported as ', dropKind, '.'),
        h('div', { class: 'actions' }, chooseFiles, chooseFolder),
        h('p', { id: 'import-drop-note', class: 'detail', hidden: true }),
      ),
      h(
        'div',
        { class: 'field-row' },
        h('label', { for: 'import-path' }, 'Or type a path'),
        pathInput,
        runButton,
      ),
    ),
    h(
      'div',
      { class: 'card' },
      h('h3', null, 'Documents'),
      h('p', { class: 'detail' }, 'Files or folders of documents (PDF, Markdown, text, HTML) to research from.'),
      h('div', { class: 'field-row' }, h('label', { for: 'docs-path' }, 'Path'), docsInput, docsButton),
    ),
    h(
      'div',
      { class: 'card', id: 'corpus-card', hidden: true },
      h('h3', null, 'Offline encyclopedia'),
      h('p', { id: 'corpus-offer', class: 'detail' }),
      h('div', { class: 'actions' }, button('Install it', (ev) => void run('corpus', [], ev.currentTarget as HTMLButtonElement), { id: 'corpus-add' })),
    ),
    // Shown once something runs: an empty panel says nothing.
    h(
      'div',
      { class: 'card', id: 'import-status', hidden: true, 'aria-live': 'polite' },
      h('progress', { id: 'import-progress', max: 1, hidden: true }),
      h('p', { id: 'import-progress-text', class: 'detail', role: 'status', 'aria-live': 'polite' }),
      h('p', { id: 'import-error', class: 'error', hidden: true }),
      h('div', { id: 'import-report' }),
    ),
  );
  onShow('import', () => void refreshStats());
  void setupDragDrop(section, dropKind);
  return section;
}

async function refreshStats(): Promise<void> {
  try {
    const s = await libraryStats();
    renderCorpusOffer(s);
    byId('library-stats').textContent =
      `Library: ${plural(s.history_sessions, 'history entry', 'history entries')} from ${plural(s.history_sources.length, 'source')} · ` +
      `${plural(s.documents, 'document')} (${plural(s.chunks, 'passage')})`;
  } catch {
    byId('library-stats').textContent = '';
  }
}

/** The offline corpus, offered while it is not installed (and first of all when there are no documents). */
export function renderCorpusOffer(s: LibraryStats): void {
  const card = byId('corpus-card');
  const c = s.corpus;
  if (!c || c.indexed_documents !== null) {
    card.hidden = true;
    return;
  }
  card.hidden = false;
  byId('corpus-offer').textContent =
    `${s.documents === 0 ? 'No documents yet? ' : ''}${c.description} — a ${formatBytes(c.size_bytes)} download from ${c.source} ` +
    `(${c.license}), then indexed and embedded on this machine. This is the only step here that uses the network, and only when you click.`;
}

async function setupDragDrop(section: HTMLElement, kind: HTMLSelectElement): Promise<void> {
  const zone = section.querySelector<HTMLElement>('#import-drop');
  const note = section.querySelector<HTMLElement>('#import-drop-note');
  if (!zone || !note) return;
  try {
    await getCurrentWebview().onDragDropEvent((event) => {
      // The webview reports drops anywhere in the window; only the Import screen takes them.
      if (currentScreen() !== 'import') return;
      const p = event.payload;
      if (p.type === 'enter' || p.type === 'over') zone.classList.add('drop-active');
      else zone.classList.remove('drop-active');
      if (p.type === 'drop' && p.paths.length) {
        void run(kind.value === 'docs' ? 'docs' : 'history', p.paths, null);
      }
    });
  } catch (err) {
    note.textContent = `Drag and drop works in the desktop app only (${errorText(err)}).`;
    note.hidden = false;
  }
}

async function pick(directory: boolean, btn: HTMLButtonElement): Promise<void> {
  showError(byId('import-error'), '');
  let paths: string[];
  try {
    paths = await choosePaths(directory, !directory);
  } catch (err) {
    showError(byId('import-error'), errorText(err));
    return;
  }
  if (paths.length) await run('history', paths, btn);
}

async function runTyped(target: Target, input: HTMLInputElement, btn: HTMLButtonElement): Promise<void> {
  const path = input.value.trim();
  if (!path) {
    showError(byId('import-error'), 'Type the path of a file or folder first.');
    input.focus();
    return;
  }
  await run(target, [path], btn);
}

let unlisten: (() => void) | null = null;

function showProgress(p: ImportProgress): void {
  if (!running) return;
  const bar = byId<HTMLProgressElement>('import-progress');
  bar.hidden = false;
  if (p.total !== null && p.total > 0) {
    bar.max = p.total;
    bar.value = Math.min(p.done, p.total);
  } else {
    bar.removeAttribute('value');
  }
  const count = p.total !== null ? `${p.done} of ${p.total}` : String(p.done);
  byId('import-progress-text').textContent = `${p.phase} ${count}${p.file ? ` — ${p.file}` : ''}`;
}

/** Runs an import; every control that starts one is disabled meanwhile. */
export async function run(target: Target, paths: string[], btn: HTMLButtonElement | null): Promise<void> {
  if (running) return;
  running = true;
  const error = byId('import-error');
  showError(error, '');
  byId('import-status').hidden = false;
  const bar = byId<HTMLProgressElement>('import-progress');
  bar.hidden = false;
  bar.removeAttribute('value');
  byId('import-progress-text').textContent =
    target === 'corpus' ? 'Downloading the corpus…' : `Working on ${plural(paths.length, 'path')}…`;
  replace(byId('import-report'));
  const controls = ['import-run', 'docs-run', 'import-choose', 'import-choose-folder', 'corpus-add']
    .map((id) => byId<HTMLButtonElement>(id))
    .filter((b) => b !== btn);
  controls.forEach((b) => (b.disabled = true));
  if (!unlisten) {
    try {
      unlisten = await onImportProgress(showProgress);
    } catch {
      // Without progress events the bar stays indeterminate.
    }
  }
  try {
    if (target === 'history') {
      const report = await busy(btn, () => importPaths(paths));
      replace(byId('import-report'), renderImportReport(report));
      byId('import-progress-text').textContent =
        report.added + report.updated > 0
          ? `Imported in ${report.seconds.toFixed(1)} s. Rudder can now read the new entries into its memory of you: You → Read my history into memory.`
          : `Imported in ${report.seconds.toFixed(1)} s.`;
    } else if (target === 'docs') {
      const report = await busy(btn, () => docsAdd(paths));
      replace(byId('import-report'), renderDocsReport(report));
      byId('import-progress-text').textContent = 'Documents added.';
    } else {
      // The download reports as model progress, the indexing as import progress.
      let stopDownload: (() => void) | null = null;
      try {
        stopDownload = await onModelProgress((p) =>
          showProgress({ phase: 'downloading', done: p.done, total: p.total, file: p.file }),
        );
      } catch {
        // Outside the desktop app: an indeterminate bar.
      }
      try {
        const report = await busy(btn, () => corpusAdd(null));
        replace(byId('import-report'), renderDocsReport(report));
        byId('import-progress-text').textContent = 'The encyclopedia is installed.';
      } finally {
        stopDownload?.();
      }
    }
    bar.max = 1;
    bar.value = 1;
  } catch (err) {
    bar.hidden = true;
    byId('import-progress-text').textContent = '';
    showError(error, errorText(err));
  } finally {
    running = false;
    controls.forEach((b) => (b.disabled = false));
    void refreshStats();
  }
}

function statusText(f: FileReport): string {
  const s = f.status;
  const base = s.status === 'imported' ? 'imported' : `${s.status}: ${s.reason}`;
  const extra: string[] = [];
  if (f.skipped_items) extra.push(`${plural(f.skipped_items, 'item')} skipped`);
  if (f.truncated_turns) extra.push(`${plural(f.truncated_turns, 'message')} cut to 1 MB`);
  const notes = (f.notes ?? []).join('; ');
  return [base, ...extra].join(' · ') + (notes ? ` (${notes})` : '');
}

export function renderImportReport(r: ImportReport): HTMLElement {
  const num = (n: number): HTMLTableCellElement => h('td', { class: 'num' }, n);
  return h(
    'div',
    { class: 'import-report' },
    h(
      'p',
      { class: 'import-totals' },
      `Added ${r.added} · updated ${r.updated} · duplicates ${r.duplicates} · signals ${r.signals} · `,
      `${plural(r.failed_files, 'file')} failed · ${r.seconds.toFixed(1)} s`,
    ),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'data-table', id: 'import-report-table' },
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            ['File', 'Format', 'Added', 'Updated', 'Duplicates', 'Status'].map((t) => h('th', { scope: 'col' }, t)),
          ),
        ),
        h(
          'tbody',
          null,
          r.files.map((f) =>
            h(
              'tr',
              { class: 'import-file', 'data-status': f.status.status },
              h('td', { class: 'file' }, f.file),
              h('td', null, f.format ?? '—'),
              num(f.added),
              num(f.updated),
              num(f.duplicates),
              h('td', { class: `file-status status-${f.status.status}` }, statusText(f)),
            ),
          ),
        ),
      ),
    ),
  );
}

export function renderDocsReport(r: DocsReport): HTMLElement {
  return h(
    'div',
    { class: 'import-report' },
    h(
      'p',
      { class: 'import-totals' },
      `Documents: ${r.added} added · ${r.updated} updated · ${r.unchanged} unchanged · ${r.removed} removed · ${r.failed} failed`,
    ),
    r.errors.length ? h('ul', { class: 'docs-errors' }, r.errors.map((e) => h('li', { class: 'error' }, e))) : null,
  );
}
