import { beforeEach, describe, expect, it } from 'vitest';
import { createYouScreen, criterionLabel, renderYou, statementItem } from '../../src/screens/you';
import type { StatementView, YouView } from '../../src/types';

const inferred: StatementView = {
  id: 'i1234abcd',
  criterion: 'avoid',
  text: 'dislikes <b>long</b> videos',
  said: false,
  sessions: [{ id: 7, title: 'Video length', source: 'google-search', started_at: '2025-01-05T10:00:00Z' }],
  origin: null,
};
const said: StatementView = { id: 'u3', criterion: 'content depth', text: 'Keep answers short', said: true, sessions: [], origin: null };

const view = (over: Partial<YouView> = {}): YouView => ({
  has_history: true,
  said: [said],
  interests: [],
  general_built: false,
  standing: [],
  recent: [{ query: 'What camera should I buy?', built_at: '2025-02-01T08:00:00Z', statements: [said, inferred] }],
  hidden: [],
  sources: [{ source: 'google-search', sessions: 12, personalised: true }],
  memory: [],
  memory_unread: 0,
  ...over,
});

beforeEach(() => {
  document.body.replaceChildren(createYouScreen());
});

describe('the You screen', () => {
  it('shows an inferred statement as text, with its criterion, its sessions and ways to correct it', () => {
    const li = statementItem(inferred, 'inferred');
    expect(li.querySelector('.you-text')?.textContent).toBe('dislikes <b>long</b> videos');
    expect(li.querySelector('b')).toBeNull();
    expect(li.querySelector('.badge')?.textContent).toBe('what to leave out');
    expect(li.querySelector('.statement-sessions button')?.textContent).toBe('Video length (google-search, 2025-01-05)');
    expect(li.querySelector('.statement-sessions button')?.getAttribute('data-history-id')).toBe('7');
    expect([...li.querySelectorAll('button')].map((b) => b.textContent)).toContain('Correct');
  });

  it('marks the user’s own words and offers only to delete them', () => {
    const li = statementItem(said, 'said');
    expect(li.querySelector('.badge-said')?.textContent).toBe('you said');
    expect(li.querySelector('.you-correct')).toBeNull();
    expect(li.querySelector('.you-delete')?.getAttribute('aria-label')).toBe('Delete “Keep answers short”');
  });

  it('offers to restore a deleted statement and to forget its entries', () => {
    const li = statementItem({ ...inferred, criterion: 'hidden' }, 'hidden');
    expect([...li.querySelectorAll('.statement-actions button')].map((b) => b.textContent)).toEqual(['Restore', 'Forget its 1 entry']);
  });

  it('renders the profiles, hides empty cards, and lists the sources as switches', () => {
    renderYou(view());
    expect(document.getElementById('you-empty')?.hidden).toBe(true);
    expect(document.getElementById('you-hidden-card')?.hidden).toBe(true);
    expect([...document.querySelectorAll('.you-profile .you-text')].map((e) => e.textContent)).toEqual([
      'Keep answers short',
      'dislikes <b>long</b> videos',
    ]);
    const box = document.getElementById('you-source-google-search') as HTMLInputElement;
    expect(box.checked).toBe(true);
    expect(document.getElementById('you-sources')?.textContent).toContain('12 entries');
    expect(document.getElementById('you-build-general')?.textContent).toBe('Build from my whole history');

    renderYou(view({ hidden: [{ ...inferred, criterion: 'hidden' }], sources: [{ source: 'chatgpt', sessions: 1, personalised: false }] }));
    expect(document.getElementById('you-hidden-card')?.hidden).toBe(false);
    expect((document.getElementById('you-source-chatgpt') as HTMLInputElement).checked).toBe(false);
    expect(document.getElementById('you-sources')?.textContent).toContain('searchable only');
  });

  it('shows the memory with its kinds and sessions, and offers to read what is unread', () => {
    const remembered: StatementView = { ...inferred, id: 'i5678abcd', criterion: 'constraint', text: 'right knee is irritated' };
    renderYou(view({ memory: [remembered], memory_unread: 40 }));
    const item = document.querySelector('#you-memory .you-statement');
    expect(item?.querySelector('.you-text')?.textContent).toBe('right knee is irritated');
    expect(item?.querySelector('.badge')?.textContent).toBe('constraint');
    expect(item?.querySelector('.statement-sessions button')?.getAttribute('data-history-id')).toBe('7');
    expect(document.getElementById('you-memory-unread')?.textContent).toContain('40 entries not read yet');
    expect(document.getElementById('you-remember')?.hidden).toBe(false);
    expect(item?.querySelector('.you-keep')?.getAttribute('aria-label')).toBe('Keep “right knee is irritated” for every question');

    // A statement the user kept says so instead of offering to keep it again.
    const kept: StatementView = { ...said, id: 'u9', text: 'Right knee is irritated ' };
    renderYou(view({ said: [said, kept], memory: [remembered] }));
    const again = document.querySelector('#you-memory .you-statement');
    expect(again?.querySelector('.you-keep')).toBeNull();
    expect(again?.querySelector('.statement-actions')?.textContent).toContain('kept');

    renderYou(view({ memory: [], memory_unread: 0 }));
    expect(document.getElementById('you-memory')?.textContent).toBe('Nothing yet.');
    expect(document.getElementById('you-memory-unread')?.textContent).toBe('All of your history is read.');
    expect(document.getElementById('you-remember')?.hidden).toBe(true);
  });

  it('points to Import when there is no history, and disables what needs it', () => {
    renderYou(view({ has_history: false, recent: [], sources: [], said: [] }));
    const empty = document.getElementById('you-empty');
    expect(empty?.hidden).toBe(false);
    expect(empty?.querySelector('#you-go-import')?.textContent).toBe('Import history');
    expect((document.getElementById('you-build') as HTMLButtonElement).disabled).toBe(true);
    expect(document.getElementById('you-recent')?.textContent).toContain('None yet');
  });

  it('shows standing constraints with where they come from', () => {
    renderYou(view({ standing: [{ ...inferred, id: 'i9', criterion: 'standing', text: 'I work nights.', sessions: [], origin: 'chatgpt custom instructions' }] }));
    expect(document.getElementById('you-standing-card')?.hidden).toBe(false);
    expect(document.querySelector('#you-standing .statement-sessions')?.textContent).toBe('from your chatgpt custom instructions');
    expect(document.querySelector('#you-standing .you-correct')).not.toBeNull();
  });

  it('names every criterion in words', () => {
    for (const c of ['emphasize', 'avoid', 'content depth', 'tone', 'explanation style']) {
      expect(criterionLabel(c)).not.toBe('');
    }
    expect(criterionLabel('emphasize')).toBe('what to cover');
  });
});
