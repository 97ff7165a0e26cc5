// "What Rudder knows about you": the general profile and the recent question profiles, each
// statement with the history sessions it rests on, and the user's corrections: statements in
// their own words (which outrank anything inferred), deleted inferred statements (kept out of
// later profiles until restored), and sources switched off for personalisation.

import { busy, button, byId, h, replace, showError } from '../dom';
import { formatDate, plural } from '../format';
import { errorText, historyForget, onImportProgress, youBuild, youPersonalise, youRemember, youRestore, youSay, youUnsay, youView } from '../ipc';
import { onShow, show } from '../nav';
import type { InterestView, StatementView, YouView } from '../types';
import { openHistoryEntry } from './history';

/** The criteria a statement can belong to, as the engine names them. */
export const CRITERIA = ['emphasize', 'avoid', 'content depth', 'tone', 'explanation style'] as const;

const CRITERION_LABEL: Record<string, string> = {
  emphasize: 'what to cover',
  avoid: 'what to leave out',
  'content depth': 'depth',
  tone: 'tone',
  'explanation style': 'explanation style',
  interest: 'interest',
  presentation: 'presentation',
  domain: 'work or hobby',
  hidden: 'deleted',
  standing: 'standing',
  constraint: 'constraint',
  background: 'background',
  preference: 'preference',
};

export function criterionLabel(criterion: string): string {
  return CRITERION_LABEL[criterion] ?? criterion;
}

export function createYouScreen(): HTMLElement {
  const sayText = h('input', {
    id: 'you-say-text',
    type: 'text',
    placeholder: 'I’m vegetarian · keep answers short · I work as a nurse',
    autocomplete: 'off',
    maxlength: 300,
  });
  const sayCriterion = h(
    'select',
    { id: 'you-say-criterion' },
    h('option', { value: '' }, 'choose from the words'),
    CRITERIA.map((c) => h('option', { value: c }, criterionLabel(c))),
  );
  const sayButton = button('Add', () => void say(sayButton), { id: 'you-say-add' });
  sayText.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') sayButton.click();
  });
  const buildQuery = h('input', {
    id: 'you-build-query',
    type: 'text',
    placeholder: 'A question you might ask',
    autocomplete: 'off',
  });
  const buildButton = button('See what Rudder infers', () => void build(buildButton, buildQuery.value), {
    id: 'you-build',
  });
  buildQuery.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') buildButton.click();
  });
  const generalButton = button('Build from my whole history', () => void build(generalButton, null), {
    id: 'you-build-general',
  });
  const rememberButton = button('Read my history into memory', () => void remember(rememberButton), {
    id: 'you-remember',
  });
  const field = (id: string, text: string, el: HTMLElement): HTMLElement =>
    h('div', { class: 'field' }, h('label', { for: id }, text), el);

  const section = h(
    'section',
    { id: 'screen-you', class: 'screen', 'aria-labelledby': 'you-heading', hidden: true },
    h('h2', { id: 'you-heading' }, 'What Rudder knows about you'),
    h(
      'p',
      { class: 'detail' },
      'Rudder personalises research from your imported history. Here you see what it infers, with the history entries it rests on, and correct it. Your own words always win. Everything stays in Rudder’s data folder.',
    ),
    h('div', { id: 'you-empty', class: 'card empty-state', hidden: true }),
    h('p', { id: 'you-error', class: 'error', role: 'alert', hidden: true }),
    h(
      'div',
      { class: 'card', id: 'you-said-card' },
      h('h3', null, 'You said'),
      h('ul', { id: 'you-said', class: 'statements' }),
      h(
        'div',
        { class: 'search-bar' },
        field('you-say-text', 'Tell Rudder something about you', sayText),
        field('you-say-criterion', 'It is about', sayCriterion),
        h('div', { class: 'field field-button' }, sayButton),
      ),
    ),
    h(
      'div',
      { class: 'card', id: 'you-questions-card' },
      h('h3', null, 'For your questions'),
      h(
        'div',
        { class: 'search-bar' },
        field('you-build-query', 'Question', buildQuery),
        h('div', { class: 'field field-button' }, buildButton),
      ),
      h('p', { id: 'you-build-status', class: 'detail busy-text', role: 'status', hidden: true }),
      h('div', { id: 'you-recent' }),
    ),
    h(
      'div',
      { class: 'card', id: 'you-memory-card' },
      h('h3', null, 'What Rudder remembers'),
      h('p', { class: 'detail' }, 'Read once from your history: constraints, background, preferences and how you like answers, each with the history entries it rests on. Keep the ones that are true and matter (they then shape every research, as if you had written them), correct or delete the rest; forgetting an entry removes what rests on it alone.'),
      h('ul', { id: 'you-memory', class: 'statements' }),
      h('p', { id: 'you-memory-unread', class: 'detail' }),
      rememberButton,
      h('p', { id: 'you-remember-status', class: 'detail busy-text', role: 'status', hidden: true }),
    ),
    h(
      'div',
      { class: 'card', id: 'you-standing-card', hidden: true },
      h('h3', null, 'Standing constraints'),
      h('p', { class: 'detail' }, 'What you told other assistants about yourself (custom instructions, memories), found in your exports. Every profile carries these.'),
      h('ul', { id: 'you-standing', class: 'statements' }),
    ),
    h(
      'div',
      { class: 'card', id: 'you-general-card' },
      h('h3', null, 'Across your whole history'),
      h('ul', { id: 'you-general', class: 'statements' }),
      generalButton,
    ),
    h('div', { class: 'card', id: 'you-hidden-card', hidden: true }, h('h3', null, 'Deleted'), h('ul', { id: 'you-hidden', class: 'statements' })),
    h(
      'div',
      { class: 'card', id: 'you-sources-card' },
      h('h3', null, 'Sources used for personalisation'),
      h('p', { class: 'detail' }, 'A switched-off source stays searchable in History but no longer shapes profiles.'),
      h('ul', { id: 'you-sources', class: 'switches' }),
    ),
  );
  onShow('you', () => void refreshYou());
  return section;
}

export async function refreshYou(): Promise<void> {
  try {
    renderYou(await youView());
  } catch (err) {
    showError(byId('you-error'), errorText(err));
  }
}

async function act(work: () => Promise<YouView>, btn: HTMLButtonElement | null): Promise<boolean> {
  const error = byId('you-error');
  showError(error, '');
  try {
    renderYou(await busy(btn, work));
    return true;
  } catch (err) {
    showError(error, errorText(err));
    return false;
  }
}

async function say(btn: HTMLButtonElement): Promise<void> {
  const text = byId<HTMLInputElement>('you-say-text');
  const criterion = byId<HTMLSelectElement>('you-say-criterion').value;
  const ok = await act(() => youSay(criterion ? { text: text.value, criterion } : { text: text.value }), btn);
  if (ok) {
    text.value = '';
    byId<HTMLSelectElement>('you-say-criterion').value = '';
  }
}

async function build(btn: HTMLButtonElement, query: string | null): Promise<void> {
  const status = byId('you-build-status');
  status.textContent =
    query === null
      ? 'Reading an even spread of your history with the chat model… this can take a minute.'
      : 'Finding the history entries that bear on this question and reading each with the chat model… this can take a minute.';
  status.hidden = false;
  try {
    await act(() => youBuild(query), btn);
  } finally {
    status.hidden = true;
  }
}

async function remember(btn: HTMLButtonElement): Promise<void> {
  const status = byId('you-remember-status');
  status.textContent = 'Reading your history with the chat model…';
  status.hidden = false;
  const stop = await onImportProgress((p) => {
    if (p.phase === 'reading into memory' && p.total) {
      status.textContent = `Reading your history with the chat model: ${p.done} of ${p.total} entries…`;
    }
  });
  try {
    await act(() => youRemember(), btn);
  } finally {
    stop();
    status.hidden = true;
  }
}

function sessionsLine(s: StatementView): HTMLElement | null {
  if (s.sessions.length === 0) return s.origin ? h('span', { class: 'statement-sessions' }, `from your ${s.origin}`) : null;
  return h(
    'span',
    { class: 'statement-sessions' },
    'from ',
    s.sessions.map((r, i) => [
      i > 0 ? ', ' : null,
      button(`${r.title || '(untitled)'} (${r.source}${r.started_at ? `, ${formatDate(r.started_at).slice(0, 10)}` : ''})`, () => void openHistoryEntry(r.id, true), {
        class: 'link-button',
        'data-history-id': r.id,
        title: 'Open this entry in History',
      }),
    ]),
  );
}

/** One statement with its badge, its sessions and what the user can do with it. */
export function statementItem(s: StatementView, mode: 'said' | 'inferred' | 'remembered' | 'kept' | 'hidden'): HTMLElement {
  const li = h('li', { class: 'you-statement', 'data-statement-id': s.id, 'data-said': s.said ? 'true' : 'false' });
  const badge = s.said
    ? h('span', { class: 'badge badge-said' }, 'you said')
    : h('span', { class: 'badge' }, criterionLabel(s.criterion));
  const text = h('span', { class: 'you-text' }, s.text);
  const actions = h('span', { class: 'statement-actions' });
  if (mode === 'hidden') {
    actions.append(
      button('Restore', (ev) => void act(() => youRestore(s.id), ev.currentTarget as HTMLButtonElement), {
        class: 'you-restore',
        'aria-label': `Restore “${s.text}”`,
      }),
    );
    if (s.sessions.length) {
      actions.append(
        button(`Forget its ${plural(s.sessions.length, 'entry', 'entries')}`, (ev) => void forgetSessions(s, ev.currentTarget as HTMLButtonElement), {
          class: 'you-forget danger',
        }),
      );
    }
  } else if (mode === 'said' || s.said) {
    if (s.id) {
      actions.append(
        button('Delete', (ev) => void act(() => youUnsay(s.id), ev.currentTarget as HTMLButtonElement), {
          class: 'you-delete',
          'aria-label': `Delete “${s.text}”`,
        }),
      );
    }
  } else {
    if (mode === 'remembered') {
      // Memory feeds no profile by itself (the small model cannot yet tell which notes bear
      // on a question); a statement the user keeps becomes theirs and shapes every profile.
      actions.append(
        button('Keep', (ev) => void act(() => youSay({ text: s.text }), ev.currentTarget as HTMLButtonElement), {
          class: 'you-keep',
          'aria-label': `Keep “${s.text}” for every question`,
        }),
      );
    } else if (mode === 'kept') {
      actions.append(h('span', { class: 'badge badge-said' }, 'kept'));
    }
    actions.append(
      button('Correct', () => startCorrecting(li, s), { class: 'you-correct', 'aria-label': `Correct “${s.text}”` }),
      button('Delete', (ev) => void act(() => youUnsay(s.id), ev.currentTarget as HTMLButtonElement), {
        class: 'you-delete',
        'aria-label': `Delete “${s.text}”`,
      }),
    );
  }
  li.append(h('span', { class: 'statement-head' }, badge, text, actions));
  const from = sessionsLine(s);
  if (from) li.append(from);
  return li;
}

/** Swaps the statement's text for an editor; saving stores the user's words in its place. */
function startCorrecting(li: HTMLElement, s: StatementView): void {
  const input = h('input', {
    type: 'text',
    class: 'you-correct-text',
    value: s.text,
    maxlength: 300,
    'aria-label': `Your correction of “${s.text}”`,
  });
  const save = button('Save', () => void act(() => youSay({ text: input.value, corrects: s.id }), save), {
    class: 'you-correct-save',
  });
  const cancel = button('Cancel', () => void refreshYou(), { class: 'you-correct-cancel' });
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') save.click();
    if (ev.key === 'Escape') cancel.click();
  });
  li.append(h('span', { class: 'statement-editor' }, input, save, cancel));
  input.focus();
  input.select();
}

async function forgetSessions(s: StatementView, btn: HTMLButtonElement): Promise<void> {
  const error = byId('you-error');
  showError(error, '');
  try {
    await busy(btn, async () => {
      for (const r of s.sessions) await historyForget({ id: r.id });
    });
    await refreshYou();
  } catch (err) {
    showError(error, errorText(err));
  }
}

function interestItem(i: InterestView): HTMLElement {
  const li = statementItem(i.statement, 'inferred');
  const more: HTMLElement[] = [];
  if (i.subtopics.length) more.push(h('span', { class: 'detail' }, i.subtopics.join(' · ')));
  if (i.takeaway) more.push(h('span', { class: 'detail' }, i.takeaway));
  if (more.length) li.append(h('span', { class: 'interest-detail' }, more));
  if (i.presentation) li.append(h('ul', { class: 'statements nested' }, statementItem(i.presentation, 'inferred')));
  return li;
}

export function renderYou(view: YouView): void {
  const empty = byId('you-empty');
  if (!view.has_history) {
    replace(
      empty,
      h('p', null, 'No history imported yet. Rudder learns what you need from your search and chat history; until then, it knows only what you tell it here.'),
      button('Import history', () => show('import'), { id: 'you-go-import' }),
    );
    empty.hidden = false;
  } else {
    empty.hidden = true;
  }
  const said = byId('you-said');
  replace(
    said,
    view.said.length
      ? view.said.map((s) => statementItem(s, 'said'))
      : h('li', { class: 'detail' }, 'Nothing yet. What you add here comes first in every profile and persona.'),
  );

  const general = byId('you-general');
  replace(
    general,
    view.interests.length
      ? view.interests.map(interestItem)
      : h(
          'li',
          { class: 'detail' },
          view.general_built ? 'No interests left: you deleted them all.' : 'Not built yet. It reads an even spread of your history with the chat model.',
        ),
  );
  byId<HTMLButtonElement>('you-build-general').textContent = view.general_built ? 'Refresh from new history' : 'Build from my whole history';
  byId<HTMLButtonElement>('you-build-general').disabled = !view.has_history;
  byId<HTMLButtonElement>('you-build').disabled = !view.has_history;

  replace(
    byId('you-recent'),
    view.recent.length
      ? view.recent.map((p) =>
          h(
            'div',
            { class: 'you-profile', 'data-query': p.query },
            h('h4', null, p.query, h('span', { class: 'detail' }, ` · ${formatDate(p.built_at)}`)),
            p.statements.length
              ? h('ul', { class: 'statements' }, p.statements.map((s) => statementItem(s, 'inferred')))
              : h('p', { class: 'detail' }, 'Nothing in your history bears on this question.'),
          ),
        )
      : h('p', { class: 'detail' }, 'Each research builds a profile for its question. None yet: ask a question above to see one.'),
  );

  const saidTexts = new Set(view.said.map((s) => s.text.trim().toLowerCase()));
  replace(
    byId('you-memory'),
    view.memory.length
      ? view.memory.map((s) => statementItem(s, saidTexts.has(s.text.trim().toLowerCase()) ? 'kept' : 'remembered'))
      : h('li', { class: 'detail' }, view.has_history ? 'Nothing yet.' : 'Nothing yet: import your history first.'),
  );
  const unread = Number(view.memory_unread);
  byId('you-memory-unread').textContent =
    unread > 0 ? `${plural(unread, 'entry', 'entries')} not read yet.` : view.has_history ? 'All of your history is read.' : '';
  byId<HTMLButtonElement>('you-remember').hidden = unread === 0;

  byId('you-standing-card').hidden = view.standing.length === 0;
  replace(
    byId('you-standing'),
    view.standing.map((s) => statementItem(s, 'inferred')),
  );

  const hiddenCard = byId('you-hidden-card');
  hiddenCard.hidden = view.hidden.length === 0;
  replace(
    byId('you-hidden'),
    view.hidden.map((s) => statementItem(s, 'hidden')),
  );

  replace(
    byId('you-sources'),
    view.sources.length
      ? view.sources.map((src) => {
          const id = `you-source-${src.source}`;
          const box = h('input', { id, type: 'checkbox', checked: src.personalised, 'data-source': src.source });
          box.addEventListener('change', () => {
            box.disabled = true;
            void act(() => youPersonalise(src.source, box.checked), null).finally(() => (box.disabled = false));
          });
          return h(
            'li',
            { class: 'switch-row' },
            box,
            h('label', { for: id }, `${src.source} · ${plural(Number(src.sessions), 'entry', 'entries')}`),
            h('span', { class: 'detail' }, src.personalised ? 'shapes profiles' : 'searchable only'),
          );
        })
      : h('li', { class: 'detail' }, 'No sources yet.'),
  );
}
