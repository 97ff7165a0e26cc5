// Sessions: every research session in the store, to reopen, resume or read.

import { busy, button, byId, h, replace, showError } from '../dom';
import { formatDate } from '../format';
import { errorText, sessionsList } from '../ipc';
import { onShow } from '../nav';
import type { SessionRow } from '../types';
import { openReport } from './report';
import { openSession, resumeSession } from './research';

/** What the list says for a status: an interrupted run is one the user (or a crash) stopped. */
export function statusLabel(row: SessionRow): string {
  if (row.live) return row.status === 'running' ? 'running here' : row.status;
  return row.status === 'interrupted' ? 'stopped' : row.status;
}

export function createSessionsScreen(): HTMLElement {
  const refreshButton = button('Refresh', () => void refresh(refreshButton), { id: 'sessions-refresh' });
  const section = h(
    'section',
    { id: 'screen-sessions', class: 'screen', 'aria-labelledby': 'sessions-heading', hidden: true },
    h('div', { class: 'screen-head' }, h('h2', { id: 'sessions-heading' }, 'Sessions'), refreshButton),
    h('p', { id: 'sessions-error', class: 'error', hidden: true }),
    h(
      'div',
      { class: 'card table-wrap' },
      h(
        'table',
        { id: 'sessions-list', class: 'data-table' },
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            ['Question', 'Status', 'Created', 'Updated', 'Events', 'Queued'].map((t) =>
              h(
                'th',
                {
                  scope: 'col',
                  class: t === 'Question' ? 'col-wide' : t === 'Created' ? 'col-created' : null,
                  title: t === 'Queued' ? 'Steering messages waiting for the run' : null,
                },
                t,
              ),
            ),
            // Named for screen readers; the buttons say what they do.
            h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')),
          ),
        ),
        h('tbody', null),
      ),
      h('p', { id: 'sessions-empty', class: 'detail', hidden: true }, 'No research sessions yet.'),
    ),
  );
  onShow('sessions', () => void refresh(null));
  return section;
}

async function refresh(btn: HTMLButtonElement | null): Promise<void> {
  const error = byId('sessions-error');
  showError(error, '');
  try {
    const rows = await busy(btn, () => sessionsList());
    render(rows);
  } catch (err) {
    showError(error, errorText(err));
  }
}

function render(rows: SessionRow[]): void {
  const tbody = byId('sessions-list').querySelector('tbody');
  if (!tbody) return;
  byId('sessions-empty').hidden = rows.length > 0;
  replace(
    tbody,
    rows.map((row) =>
      h(
        'tr',
        { class: 'session-row', 'data-session-id': row.id, 'data-status': row.status },
        h(
          'td',
          { class: 'session-query' },
          row.title ? h('span', { class: 'session-title block' }, row.title) : null,
          h('span', { class: row.title ? 'detail block' : 'block' }, row.query),
        ),
        h('td', null, h('span', { class: `pill session-status status-${row.status}` }, statusLabel(row))),
        h('td', { class: 'nowrap col-created' }, formatDate(row.created_at)),
        h('td', { class: 'nowrap' }, formatDate(row.updated_at)),
        h('td', { class: 'num' }, row.events),
        h('td', { class: 'num' }, row.pending_steering),
        // The buttons sit in a flex box inside the cell: a cell that is itself a flex box
        // leaves the table's layout, and its border no longer lines up with the row's.
        h(
          'td',
          { class: 'actions-cell' },
          h(
            'div',
            { class: 'row-actions' },
            button('Open', (ev) => void busy(ev.currentTarget as HTMLButtonElement, () => openSession(row)), {
              class: 'session-open',
              'aria-label': `Open “${row.title || row.query}”`,
            }),
            !row.live && (row.status === 'interrupted' || row.status === 'failed')
              ? button('Resume', (ev) => void busy(ev.currentTarget as HTMLButtonElement, () => resumeSession(row)), {
                  class: 'session-resume',
                  'aria-label': `Resume “${row.title || row.query}”`,
                })
              : null,
            row.status === 'finished'
              ? button('Report', () => void openReport(row.id, 'sessions'), {
                  class: 'session-report',
                  'aria-label': `Report of “${row.title || row.query}”`,
                })
              : null,
          ),
        ),
      ),
    ),
  );
}
