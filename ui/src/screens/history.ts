// History: search the imported history, read an entry (a search, a page visit or a chat), and
// forget it.

import { busy, button, byId, h, replace, showError } from '../dom';
import { formatDate, plural } from '../format';
import { errorText, historyForget, historySearch, historyShow, libraryStats } from '../ipc';
import { onShow, show } from '../nav';
import type { HistoryFilters, HistoryHit, HistoryEntry } from '../types';

export function createHistoryScreen(): HTMLElement {
  const query = h('input', { id: 'history-query', type: 'search', placeholder: 'What were you reading about?', autocomplete: 'off' });
  const kind = h(
    'select',
    { id: 'history-kind' },
    h('option', { value: '' }, 'any'),
    h('option', { value: 'search' }, 'search'),
    h('option', { value: 'chat' }, 'chat'),
    h('option', { value: 'visit' }, 'visit'),
  );
  const source = h('select', { id: 'history-source' }, h('option', { value: '' }, 'any'));
  const since = h('input', { id: 'history-since', type: 'date' });
  const until = h('input', { id: 'history-until', type: 'date' });
  const searchButton = button('Search', () => void search(searchButton), { id: 'history-search' });
  query.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') searchButton.click();
  });
  const label = (id: string, text: string, el: HTMLElement): HTMLElement =>
    h('div', { class: 'field' }, h('label', { for: id }, text), el);

  const section = h(
    'section',
    { id: 'screen-history', class: 'screen', 'aria-labelledby': 'history-heading', hidden: true },
    h('h2', { id: 'history-heading' }, 'History'),
    h('p', { id: 'history-stats', class: 'detail' }),
    h(
      'div',
      { class: 'card search-bar' },
      label('history-query', 'Search', query),
      label('history-kind', 'Kind', kind),
      label('history-source', 'Source', source),
      label('history-since', 'Since', since),
      label('history-until', 'Until', until),
      h('div', { class: 'field field-button' }, searchButton),
    ),
    h('p', { id: 'history-error', class: 'error', hidden: true }),
    h(
      'div',
      { id: 'history-empty', class: 'card empty-state', hidden: true },
      h('p', null, 'No history imported yet. Import a browser history, a chat export or a Google Takeout file, and it becomes searchable here.'),
      button('Import history', () => show('import'), { id: 'history-go-import' }),
    ),
    h(
      'div',
      { class: 'split', id: 'history-split' },
      h('div', { class: 'card' }, h('h3', null, 'Results'), h('p', { id: 'history-count', class: 'detail' }), h('ul', { id: 'history-results', class: 'hits' })),
      h('div', { class: 'card', id: 'history-session', 'aria-live': 'polite' }, h('p', { class: 'detail' }, 'Pick a result to read it.')),
    ),
  );
  onShow('history', () => void refreshSources());
  return section;
}

async function refreshSources(): Promise<void> {
  try {
    const stats = await libraryStats();
    const select = byId<HTMLSelectElement>('history-source');
    const keep = select.value;
    replace(
      select,
      h('option', { value: '' }, 'any'),
      stats.history_sources.map((s) => h('option', { value: s.source }, `${s.source} (${s.sessions})`)),
    );
    select.value = stats.history_sources.some((s) => s.source === keep) ? keep : '';
    byId('history-stats').textContent = `${plural(stats.history_sessions, 'entry', 'entries')} imported from ${plural(stats.history_sources.length, 'source')}.`;
    // Nothing to search: say where to go instead of showing empty boxes.
    const empty = stats.history_sessions === 0;
    byId('history-empty').hidden = !empty;
    byId('history-split').hidden = empty;
    byId<HTMLButtonElement>('history-search').disabled = empty;
  } catch (err) {
    showError(byId('history-error'), errorText(err));
  }
}

function filters(): HistoryFilters {
  const f: HistoryFilters = {};
  const kind = byId<HTMLSelectElement>('history-kind').value;
  const source = byId<HTMLSelectElement>('history-source').value;
  const since = byId<HTMLInputElement>('history-since').value;
  const until = byId<HTMLInputElement>('history-until').value;
  if (kind) f.kind = kind;
  if (source) f.source = source;
  if (since) f.since = since;
  if (until) f.until = until;
  return f;
}

async function search(btn: HTMLButtonElement): Promise<void> {
  const error = byId('history-error');
  showError(error, '');
  const q = byId<HTMLInputElement>('history-query').value.trim();
  try {
    const hits = await busy(btn, () => historySearch(q, filters()));
    renderHits(hits);
  } catch (err) {
    showError(error, errorText(err));
  }
}

function renderHits(hits: HistoryHit[]): void {
  byId('history-count').textContent = hits.length ? plural(hits.length, 'result') : 'Nothing found.';
  replace(
    byId('history-results'),
    hits.map((hit) => {
      const li = h(
        'li',
        { class: 'history-hit', 'data-history-id': hit.id, 'data-source': hit.source, tabindex: 0, role: 'button' },
        h('span', { class: 'hit-title' }, hit.title || '(untitled)'),
        h('span', { class: 'hit-meta' }, `${hit.source} · ${hit.kind} · ${formatDate(hit.started_at)}`),
        hit.url ? h('span', { class: 'hit-url' }, hit.url) : null,
        h('span', { class: 'hit-snippet' }, hit.snippet),
      );
      const openIt = (): void => void openHistoryEntry(hit.id);
      li.addEventListener('click', openIt);
      li.addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter' || ev.key === ' ') {
          ev.preventDefault();
          openIt();
        }
      });
      return li;
    }),
  );
}

/** Shows history entry `id` (from a result, or from a report's citation). */
export async function openHistoryEntry(id: number, navigate = false): Promise<void> {
  if (navigate) show('history');
  const box = byId('history-session');
  showError(byId('history-error'), '');
  replace(box, h('p', { class: 'detail busy-text' }, 'Opening…'));
  for (const li of Array.from(document.querySelectorAll('.history-hit'))) {
    li.classList.toggle('selected', li.getAttribute('data-history-id') === String(id));
  }
  try {
    renderEntry(await historyShow(id));
  } catch (err) {
    replace(box);
    showError(byId('history-error'), errorText(err));
  }
}

function renderEntry(s: HistoryEntry): void {
  const box = byId('history-session');
  const confirmBox = h(
    'div',
    { class: 'confirm', id: 'history-forget-confirm-box', hidden: true },
    h('p', null, 'Forget this entry? It is removed from Rudder’s history for good.'),
    button('Forget it', (ev) => void forget({ id: s.id }, ev.currentTarget as HTMLButtonElement), {
      id: 'history-forget-confirm',
      class: 'danger',
    }),
    button('Keep it', () => (confirmBox.hidden = true), { id: 'history-forget-cancel' }),
  );
  const sourceConfirm = h(
    'div',
    { class: 'confirm', id: 'history-forget-source-box', hidden: true },
    h('p', null, `Forget every entry imported from ${s.source}?`),
    button('Forget them all', (ev) => void forget({ source: s.source }, ev.currentTarget as HTMLButtonElement), {
      id: 'history-forget-source-confirm',
      class: 'danger',
    }),
    button('Keep them', () => (sourceConfirm.hidden = true), { id: 'history-forget-source-cancel' }),
  );
  replace(
    box,
    h('h3', { class: 'session-title' }, s.title || '(untitled)'),
    h('p', { class: 'session-meta detail' }, `${s.source} · ${s.kind} · ${formatDate(s.started_at)} · ${plural(s.turns.length, 'turn')}`),
    s.url ? h('p', { class: 'session-url detail' }, s.url) : null,
    h(
      'ol',
      { class: 'turns' },
      s.turns.map((t) =>
        h(
          'li',
          { class: 'turn', 'data-role': t.role },
          h('span', { class: 'turn-role' }, t.role),
          t.at ? h('span', { class: 'turn-at detail' }, formatDate(t.at)) : null,
          h('div', { class: 'turn-text' }, t.text),
        ),
      ),
    ),
    h(
      'div',
      { class: 'actions' },
      button('Forget this entry', () => ((confirmBox.hidden = false), (sourceConfirm.hidden = true)), {
        id: 'history-forget',
        class: 'danger-outline',
      }),
      button(`Forget everything from ${s.source}`, () => ((sourceConfirm.hidden = false), (confirmBox.hidden = true)), {
        id: 'history-forget-source',
        class: 'danger-outline',
      }),
    ),
    confirmBox,
    sourceConfirm,
    h('p', { id: 'history-forget-result', class: 'detail', hidden: true }),
  );
}

async function forget(selector: { id: number } | { source: string }, btn: HTMLButtonElement): Promise<void> {
  try {
    const summary = await busy(btn, () => historyForget(selector));
    for (const li of Array.from(document.querySelectorAll<HTMLElement>('.history-hit'))) {
      const gone =
        'id' in selector
          ? li.getAttribute('data-history-id') === String(selector.id)
          : li.getAttribute('data-source') === selector.source;
      if (gone) li.remove();
    }
    replace(
      byId('history-session'),
      h('p', { id: 'history-forget-result', class: 'detail' }, `Forgot ${plural(summary.sessions_removed, 'entry', 'entries')}.`),
    );
    const left = document.querySelectorAll('.history-hit').length;
    byId('history-count').textContent = left ? plural(left, 'result') : 'Nothing left.';
    void refreshSources();
  } catch (err) {
    showError(byId('history-error'), errorText(err));
  }
}

