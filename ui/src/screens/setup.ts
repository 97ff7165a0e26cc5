// Setup / first run: what the engine sees, the models it needs, and fetching them.

import { busy, button, byId, h, replace, showError } from '../dom';
import { formatBytes } from '../format';
import { engineStatus, errorText, modelsFetch, modelsList, onModelProgress } from '../ipc';
import { onShow } from '../nav';
import { chatModelLine, dataDirLine, embedModelLine, gpuBuildNote, gpuLine, recommendationLine, threadsLine, type Line } from '../status';
import type { EngineStatus, ModelProgress, ModelRow } from '../types';

function showLine(el: HTMLElement, line: Line): void {
  el.textContent = line.text;
  el.classList.remove('status-pending', 'status-ok', 'status-warn');
  el.classList.add(line.tone === 'ok' ? 'status-ok' : 'status-warn');
}

export function createSetupScreen(): HTMLElement {
  const fetchButton = button('Fetch models', () => void fetchModels(fetchButton), { id: 'models-fetch' });
  const section = h(
    'section',
    { id: 'screen-setup', class: 'screen', 'aria-labelledby': 'setup-heading', hidden: true },
    h('h2', { id: 'setup-heading' }, 'Setup'),
    h(
      'div',
      { class: 'card', 'aria-labelledby': 'engine-heading' },
      h('h3', { id: 'engine-heading' }, 'Engine'),
      h('p', { id: 'model-status', class: 'status status-pending', role: 'status', 'aria-live': 'polite' }, 'Checking engine…'),
      h('p', { id: 'embed-status', class: 'status status-pending' }),
      h('p', { id: 'threads-status', class: 'detail' }),
      h('p', { id: 'gpu-status', class: 'status status-pending' }),
      h('p', { id: 'gpu-reason', class: 'detail' }),
      h('p', { id: 'gpu-build-note', class: 'detail' }),
      h('p', { id: 'model-recommendation', class: 'detail' }),
      h('p', { id: 'data-dir', class: 'detail' }),
      h('p', { id: 'engine-error', class: 'error', hidden: true }),
    ),
    h(
      'div',
      { class: 'card' },
      h('h3', null, 'Models'),
      h(
        'p',
        { class: 'detail' },
        'Rudder runs a chat model and an embedding model on this machine. ',
        '“Fetch models” downloads the ones the settings use; nothing else leaves the machine.',
      ),
      h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { id: 'models-table', class: 'data-table' },
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              ['Model', 'Role', 'Size', 'State', 'License', 'In use'].map((t) => h('th', { scope: 'col' }, t)),
            ),
          ),
          h('tbody', null),
        ),
      ),
      h('div', { class: 'actions' }, fetchButton),
      h('progress', { id: 'models-progress', max: 1, hidden: true }),
      h('p', { id: 'models-progress-text', class: 'detail', role: 'status', 'aria-live': 'polite' }),
      h('p', { id: 'models-error', class: 'error', hidden: true }),
    ),
  );
  onShow('setup', () => void refresh());
  return section;
}

let unlistenProgress: (() => void) | null = null;

function showProgress(p: ModelProgress): void {
  const bar = byId<HTMLProgressElement>('models-progress');
  bar.hidden = false;
  if (p.total !== null && p.total > 0) {
    bar.max = p.total;
    bar.value = Math.min(p.done, p.total);
  } else {
    bar.removeAttribute('value'); // indeterminate
  }
  const amount =
    p.total !== null && p.total > 0 ? `${formatBytes(p.done)} of ${formatBytes(p.total)}` : formatBytes(p.done);
  byId('models-progress-text').textContent = p.finished
    ? `${p.name}: ${p.file} — done`
    : `${p.name}: ${p.file} — ${amount}`;
}

async function fetchModels(btn: HTMLButtonElement): Promise<void> {
  const error = byId('models-error');
  showError(error, '');
  if (!unlistenProgress) {
    try {
      unlistenProgress = await onModelProgress(showProgress);
    } catch {
      // Progress is a nicety; the fetch itself still reports its result.
    }
  }
  byId('models-progress-text').textContent = 'Starting download…';
  try {
    const summary = await busy(btn, () => modelsFetch([]));
    const parts: string[] = [];
    if (summary.fetched.length) parts.push(`Fetched: ${summary.fetched.join(', ')}`);
    if (summary.already_present.length) parts.push(`Already present: ${summary.already_present.join(', ')}`);
    byId('models-progress-text').textContent = parts.join(' · ') || 'Nothing to fetch.';
    const bar = byId<HTMLProgressElement>('models-progress');
    bar.max = 1;
    bar.value = 1;
  } catch (err) {
    showError(error, errorText(err));
  }
  await refresh();
}

function renderModels(rows: ModelRow[]): void {
  const tbody = byId('models-table').querySelector('tbody');
  if (!tbody) return;
  replace(
    tbody,
    rows.map((m) =>
      h(
        'tr',
        { class: 'model-row', 'data-model': m.name, 'data-state': m.state },
        h('td', null, h('span', { class: 'model-name' }, m.name), m.description ? h('span', { class: 'detail block' }, m.description) : null),
        h('td', { class: 'nowrap' }, m.role),
        h('td', { class: 'nowrap' }, formatBytes(m.size_bytes)),
        h('td', null, h('span', { class: `pill state-${m.state}` }, m.state)),
        h('td', null, m.license),
        h('td', null, m.configured ? 'yes' : ''),
      ),
    ),
  );
}

let lastStatus: EngineStatus | null = null;

/** Reads the engine status and the model table; resolves to the status (null on error). */
export async function refresh(): Promise<EngineStatus | null> {
  const model = byId('model-status');
  const error = byId('engine-error');
  try {
    const status = await engineStatus();
    lastStatus = status;
    showLine(model, chatModelLine(status));
    showLine(byId('embed-status'), embedModelLine(status));
    byId('threads-status').textContent = threadsLine(status);
    showLine(byId('gpu-status'), gpuLine(status));
    byId('gpu-reason').textContent = status.offload.reason;
    byId('gpu-build-note').textContent = gpuBuildNote(status);
    byId('model-recommendation').textContent = recommendationLine(status);
    byId('data-dir').textContent = dataDirLine(status);
    showError(error, '');
  } catch (err) {
    lastStatus = null;
    model.textContent = 'Chat model: unknown — engine unavailable';
    model.classList.remove('status-pending', 'status-ok');
    model.classList.add('status-warn');
    showError(error, errorText(err));
  }
  try {
    renderModels(await modelsList());
  } catch (err) {
    showError(byId('models-error'), errorText(err));
  }
  return lastStatus;
}

/** Whether the engine has what research needs. */
export function modelsReady(status: EngineStatus | null): boolean {
  return !!status && status.chat_model_present && status.embed_model_present;
}
