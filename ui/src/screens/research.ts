// The research workspace: the start form, then the conversation, the research tree, the
// persona and the todo plan, all drawn from one `WorkspaceState` folded from the event log.

import { busy, button, byId, clear, h, replace, showError } from '../dom';
import { plural } from '../format';
import {
  engineStatus,
  errorText,
  libraryStats,
  onResearchEvent,
  onResearchState,
  researchReply,
  researchStart,
  researchSteer,
  researchStop,
  sessionEvents,
  sessionResume,
  settingsGet,
} from '../ipc';
import { onShow, show } from '../nav';
import { COVERAGE_LABEL, coverage } from '../state/coverage';
import { buildClarifyReply, buildPauseReply } from '../state/replies';
import {
  ORIGIN_LABEL,
  PROVENANCE_LABEL,
  initialState,
  openQuestion,
  pauseLineText,
  pausesFor,
  reduce,
  replay,
  steeringQueued,
  todoGroups,
  treeRoots,
  usageLine,
  type ConvItem,
  type TreeNode,
  type WorkspaceState,
} from '../state/research';
import type { Envelope, Reply, ResearchRequest, RunStateName, SessionRow, Task } from '../types';
import { openReport } from './report';

/** Everything received live, per session, so a session opened later misses nothing. */
const received = new Map<number, { envelopes: Envelope[]; state: RunStateName | null; message: string }>();

interface View {
  session: number | null;
  state: WorkspaceState;
  run: RunStateName | null;
  message: string;
  /** Driven by this app: questions can be answered and steering sent. */
  live: boolean;
  /** A log is being loaded: live events wait in `received`. */
  loading: boolean;
  /** The key of the question whose reply is on its way. */
  replying: string | null;
  /** Opened from the log of a session this app does not drive. */
  replayOnly: boolean;
}

const view: View = {
  session: null,
  state: initialState(),
  run: null,
  message: '',
  live: false,
  loading: false,
  replying: null,
  replayOnly: false,
};

const RUN_LABEL: Record<RunStateName, string> = {
  running: 'Running',
  waiting: 'Waiting for you',
  finished: 'Finished',
  stopped: 'Stopped',
  failed: 'Failed',
};

function numberInput(id: string, min: number, max: number, step: number): HTMLInputElement {
  return h('input', { id, type: 'number', min, max, step, required: true });
}

export function createResearchScreen(): HTMLElement {
  const start = h('button', { id: 'research-start', type: 'submit', class: 'primary' }, 'Start research');
  const form = h(
    'form',
    { id: 'research-form', class: 'card research-form' },
    h(
      'div',
      { class: 'field wide' },
      h('label', { for: 'research-question' }, 'What do you want to find out?'),
      h('textarea', { id: 'research-question', rows: 3, placeholder: 'e.g. Is a standing desk worth it for lower back pain?' }),
    ),
    h(
      'div',
      { class: 'field wide' },
      h('label', { for: 'research-persona' }, 'About you (optional)'),
      h('input', { id: 'research-persona', type: 'text', placeholder: 'e.g. software developer, 40, sits 9 hours a day' }),
    ),
    h(
      'div',
      { class: 'field-grid' },
      h('div', { class: 'field' }, h('label', { for: 'research-depth' }, 'Depth'), numberInput('research-depth', 1, 6, 1)),
      h('div', { class: 'field' }, h('label', { for: 'research-breadth' }, 'Breadth'), numberInput('research-breadth', 1, 6, 1)),
      h(
        'div',
        { class: 'field' },
        h('label', { for: 'research-c0', title: 'Base pause cost: higher means fewer questions' }, 'Pause cost C0'),
        numberInput('research-c0', 0, 1, 0.05),
      ),
      h(
        'div',
        { class: 'field checks' },
        h('label', null, h('input', { id: 'research-use-history', type: 'checkbox', checked: true }), ' Use my history'),
        h('label', null, h('input', { id: 'research-use-docs', type: 'checkbox', checked: true }), ' Use my documents'),
      ),
    ),
    h('div', { class: 'actions' }, start),
    h('p', { id: 'research-form-error', class: 'error', hidden: true }),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void startResearch(start);
  });
  for (const el of Array.from(form.querySelectorAll<HTMLInputElement>('input[type="number"]'))) {
    el.addEventListener('input', () => (el.dataset.edited = 'true'));
  }

  const steerInput = h('textarea', {
    id: 'steer-input',
    rows: 2,
    placeholder: 'Steer the research: “focus on …”, “ignore …”, “also look into …”',
  });
  const steerSend = button('Send', () => void steer(steerSend), { id: 'steer-send' });
  steerInput.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) steerSend.click();
  });

  const section = h(
    'section',
    { id: 'screen-research', class: 'screen', 'aria-labelledby': 'research-heading', hidden: true },
    h('h2', { id: 'research-heading' }, 'Research'),
    h('div', { id: 'research-guide', class: 'card empty-state', hidden: true }),
    form,
    h(
      'div',
      { class: 'run-bar card', id: 'research-bar', hidden: true },
      h('span', { id: 'research-session', class: 'detail' }),
      h('span', { id: 'research-state', class: 'run-state', role: 'status', 'aria-live': 'polite' }),
      h('span', { id: 'research-usage', class: 'detail' }),
      h('span', { class: 'spacer' }),
      button('Read the report', () => view.session !== null && void openReport(view.session, 'research'), {
        id: 'open-report',
        class: 'primary',
        hidden: true,
      }),
      button('Stop', (ev) => void stop(ev.currentTarget as HTMLButtonElement), { id: 'research-stop', class: 'danger-outline' }),
      button('New research', () => newResearch(), { id: 'research-new', class: 'link-button' }),
    ),
    h('p', { id: 'research-error', class: 'error', hidden: true }),
    h(
      'div',
      { class: 'workspace', id: 'workspace', hidden: true },
      h(
        'section',
        { class: 'panel panel-conversation', 'aria-labelledby': 'conversation-heading' },
        h('h3', { id: 'conversation-heading' }, 'Conversation'),
        h('div', { id: 'conversation', class: 'conversation', 'aria-live': 'polite' }),
        h(
          'div',
          { class: 'steer-box' },
          h('label', { for: 'steer-input' }, 'Steer'),
          steerInput,
          h('div', { class: 'actions' }, steerSend),
          h('p', { id: 'steer-error', class: 'error', hidden: true }),
        ),
      ),
      h(
        'section',
        { class: 'panel panel-tree', 'aria-labelledby': 'tree-heading' },
        h('h3', { id: 'tree-heading' }, 'Research tree'),
        h('div', { id: 'tree', class: 'tree' }),
      ),
      h(
        'div',
        { class: 'panel-stack' },
        h(
          'section',
          { class: 'panel panel-persona', 'aria-labelledby': 'persona-heading' },
          h('h3', { id: 'persona-heading' }, 'Persona'),
          h('div', { id: 'persona', class: 'persona' }),
        ),
        h(
          'section',
          { class: 'panel panel-todo', 'aria-labelledby': 'todo-heading' },
          h('h3', { id: 'todo-heading' }, 'Plan ', h('span', { id: 'todo-version', class: 'detail' })),
          h('div', { id: 'todo', class: 'todo' }),
        ),
      ),
    ),
  );
  onShow('research', () => {
    void prefill();
    void guide();
  });
  // Enter starts the research (Shift+Enter: a new line); Ctrl/Cmd+Enter sends steering.
  const question = form.querySelector<HTMLTextAreaElement>('#research-question');
  question?.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      form.requestSubmit(start);
    }
  });
  return section;
}

/** Says what is missing before a research can run, with a way there. */
export async function guide(): Promise<void> {
  const box = byId('research-guide');
  try {
    const [status, stats] = await Promise.all([engineStatus(), libraryStats()]);
    if (!status.chat_model_present || !status.embed_model_present) {
      replace(
        box,
        h('p', null, 'The models are not installed yet: research needs the chat model and the embedding model on this machine.'),
        button('Go to Setup', () => show('setup'), { id: 'research-go-setup' }),
      );
      box.hidden = false;
    } else if (stats.history_sessions === 0 && stats.documents === 0) {
      const offer = stats.corpus && stats.corpus.indexed_documents === null;
      replace(
        box,
        h('p', null, 'Nothing to research from yet: import your history or add documents', offer ? ', or install the offline encyclopedia.' : '.'),
        h(
          'div',
          { class: 'actions' },
          button('Import history or documents', () => show('import'), { id: 'research-go-import' }),
          offer ? button('Install the offline encyclopedia', () => show('import'), { id: 'research-go-corpus' }) : null,
        ),
      );
      box.hidden = false;
    } else {
      box.hidden = true;
    }
  } catch {
    // Without an engine (a plain browser) there is nothing to guide by.
    box.hidden = true;
  }
}

let prefilled = false;

async function prefill(): Promise<void> {
  if (prefilled) return;
  try {
    const s = await settingsGet();
    // A value the user already typed wins over the saved default arriving late.
    const set = (id: string, v: number): void => {
      const el = byId<HTMLInputElement>(id);
      if (el.dataset.edited !== 'true') el.value = String(v);
    };
    set('research-depth', s.depth);
    set('research-breadth', s.breadth);
    set('research-c0', s.c0);
    prefilled = true;
  } catch (err) {
    showError(byId('research-form-error'), `Could not read the settings: ${errorText(err)}`);
  }
}

/** Called after the settings are saved, so the form starts from the new defaults. */
export function settingsChanged(): void {
  prefilled = false;
  for (const id of ['research-depth', 'research-breadth', 'research-c0']) {
    delete byId<HTMLInputElement>(id).dataset.edited;
  }
}

/** Subscribes to the research events once, at start-up. */
export async function listenForResearch(): Promise<void> {
  await onResearchEvent(({ session, envelope }) => {
    const r = received.get(session) ?? { envelopes: [], state: null, message: '' };
    r.envelopes.push(envelope);
    received.set(session, r);
    if (session === view.session && !view.loading) {
      const next = reduce(view.state, envelope);
      if (next !== view.state) {
        view.state = next;
        scheduleRender();
      }
    }
  });
  await onResearchState(({ session, state, message }) => {
    const r = received.get(session) ?? { envelopes: [], state: null, message: '' };
    r.state = state;
    r.message = message;
    received.set(session, r);
    if (session === view.session) {
      view.run = state;
      view.message = message;
      view.live = state === 'running' || state === 'waiting';
      scheduleRender();
    }
  });
}

function readRequest(): ResearchRequest | string {
  const question = byId<HTMLTextAreaElement>('research-question').value.trim();
  if (!question) return 'Write the question you want researched.';
  const request: ResearchRequest = {
    question,
    persona: byId<HTMLInputElement>('research-persona').value.trim(),
    use_history: byId<HTMLInputElement>('research-use-history').checked,
    use_docs: byId<HTMLInputElement>('research-use-docs').checked,
  };
  // An empty field is left out: the engine then uses the saved setting.
  const num = (id: string): number | null => {
    const raw = byId<HTMLInputElement>(id).value.trim();
    return raw === '' ? null : Number(raw);
  };
  const depth = num('research-depth');
  const breadth = num('research-breadth');
  const c0 = num('research-c0');
  if (depth !== null) {
    if (!(Number.isInteger(depth) && depth >= 1 && depth <= 6)) return 'Depth must be a whole number from 1 to 6.';
    request.depth = depth;
  }
  if (breadth !== null) {
    if (!(Number.isInteger(breadth) && breadth >= 1 && breadth <= 6)) return 'Breadth must be a whole number from 1 to 6.';
    request.breadth = breadth;
  }
  if (c0 !== null) {
    if (!(Number.isFinite(c0) && c0 >= 0 && c0 <= 1)) return 'C0 must be between 0 and 1.';
    request.c0 = c0;
  }
  return request;
}

async function startResearch(btn: HTMLButtonElement): Promise<void> {
  const error = byId('research-form-error');
  const request = readRequest();
  if (typeof request === 'string') {
    showError(error, request);
    return;
  }
  showError(error, '');
  try {
    const session = await busy(btn, () => researchStart(request));
    const r = received.get(session);
    // Events may arrive before the command answers: they are already in `received`.
    attach(session, replay(r?.envelopes ?? []), r?.state ?? 'running', r?.message ?? '', true);
  } catch (err) {
    showError(error, errorText(err));
  }
}

function attach(session: number, state: WorkspaceState, run: RunStateName | null, message: string, live: boolean): void {
  view.session = session;
  view.state = state;
  view.run = run;
  view.message = message;
  view.live = live && run !== 'finished' && run !== 'failed' && run !== 'stopped';
  view.replayOnly = !live;
  view.loading = false;
  view.replying = null;
  clear(byId('conversation'));
  rendered.clear();
  byId('research-form').hidden = true;
  byId('research-bar').hidden = false;
  byId('workspace').hidden = false;
  showError(byId('research-error'), '');
  render();
}

function newResearch(): void {
  view.session = null;
  view.state = initialState();
  view.live = false;
  byId('research-form').hidden = false;
  byId('research-bar').hidden = true;
  byId('workspace').hidden = true;
  clear(byId('conversation'));
  rendered.clear();
}

const STATUS_OF_ROW: Record<SessionRow['status'], RunStateName> = {
  running: 'running',
  interrupted: 'stopped',
  finished: 'finished',
  failed: 'failed',
};

/** Opens a stored session: replays its log, and follows it live if this app drives it. */
export async function openSession(row: SessionRow): Promise<void> {
  show('research');
  view.session = row.id;
  view.loading = true;
  byId('research-form').hidden = true;
  byId('research-bar').hidden = false;
  byId('research-session').textContent = `Session ${row.id}`;
  byId('research-state').textContent = 'Loading…';
  try {
    const log = await sessionEvents(row.id);
    const r = received.get(row.id);
    const state = replay([...log, ...(r?.envelopes ?? [])]);
    const run = r?.state ?? STATUS_OF_ROW[row.status];
    attach(row.id, state, run, r?.message ?? '', row.live);
  } catch (err) {
    view.loading = false;
    showError(byId('research-error'), errorText(err));
  }
}

/** Resumes an interrupted or failed session and follows it live. */
export async function resumeSession(row: SessionRow): Promise<void> {
  // What an earlier run sent live but never committed (say, a pause question it was waiting
  // on when it stopped) is redone by the resumed run under the same sequence numbers: start
  // from the stored log only, so those events are shown again.
  received.delete(row.id);
  await openSession(row);
  try {
    await sessionResume(row.id);
    const r = received.get(row.id);
    view.run = r?.state && r.state !== 'stopped' && r.state !== 'failed' ? r.state : 'running';
    view.live = true;
    view.replayOnly = false;
    render();
  } catch (err) {
    showError(byId('research-error'), errorText(err));
  }
}

async function stop(btn: HTMLButtonElement): Promise<void> {
  if (view.session === null) return;
  const session = view.session;
  try {
    await busy(btn, () => researchStop(session));
    byId('research-state').textContent = 'Stopping at the next step…';
  } catch (err) {
    showError(byId('research-error'), errorText(err));
  }
}

async function steer(btn: HTMLButtonElement): Promise<void> {
  const input = byId<HTMLTextAreaElement>('steer-input');
  const text = input.value.trim();
  const error = byId('steer-error');
  if (!text || view.session === null) return;
  const session = view.session;
  showError(error, '');
  try {
    const ack = await busy(btn, () => researchSteer(session, text));
    input.value = '';
    if (view.session === session) {
      view.state = steeringQueued(view.state, ack);
      render();
    }
  } catch (err) {
    showError(error, errorText(err));
  }
  btn.disabled = !view.live;
}

async function sendReply(key: string, reply: Reply, controls: HTMLElement): Promise<void> {
  if (view.session === null) return;
  const session = view.session;
  view.replying = key;
  const parts = Array.from(controls.querySelectorAll<HTMLButtonElement | HTMLInputElement | HTMLTextAreaElement>('button, input, textarea'));
  parts.forEach((p) => (p.disabled = true));
  const note = controls.querySelector<HTMLElement>('.reply-note');
  if (note) note.textContent = 'Sent — waiting for the engine…';
  try {
    await researchReply(session, reply);
  } catch (err) {
    view.replying = null;
    parts.forEach((p) => (p.disabled = false));
    if (note) note.textContent = '';
    const error = controls.querySelector<HTMLElement>('.error');
    if (error) showError(error, errorText(err));
  }
}

// ---- Rendering ----

let frame = 0;
function scheduleRender(): void {
  if (frame) return;
  const run = (): void => {
    frame = 0;
    render();
  };
  // requestAnimationFrame does not fire in a hidden window; a timeout still does.
  frame = window.setTimeout(run, 16);
}

function render(): void {
  const s = view.state;
  byId('research-session').textContent =
    view.session === null ? '' : `Session ${view.session}${view.replayOnly ? ' · read-only' : ''}`;
  const stateEl = byId('research-state');
  const label = view.run ? RUN_LABEL[view.run] : view.loading ? 'Loading…' : '';
  stateEl.textContent = view.message ? `${label} — ${view.message}` : label;
  stateEl.setAttribute('data-state', view.run ?? '');
  const writing = s.reportSections.length && !s.report ? ` · writing section ${s.reportSections.length}: ${s.reportSections[s.reportSections.length - 1]}` : '';
  byId('research-usage').textContent = usageLine(s) + writing;
  const reportButton = byId<HTMLButtonElement>('open-report');
  reportButton.hidden = !s.report;
  reportButton.textContent = s.report?.stale ? 'Read the report (earlier version)' : 'Read the report';
  byId<HTMLButtonElement>('research-stop').disabled = !view.live;
  byId<HTMLButtonElement>('steer-send').disabled = !view.live;
  byId<HTMLTextAreaElement>('steer-input').disabled = !view.live;
  renderConversation(s);
  renderTree(s);
  renderPersona(s);
  renderTodo(s);
}

/** Rendered conversation items by key, with the signature they were drawn for. */
const rendered = new Map<string, { el: HTMLElement; sig: string }>();

function signature(item: ConvItem, interactive: boolean): string {
  switch (item.kind) {
    case 'clarify':
    case 'pause':
      return `${item.closed}|${JSON.stringify(item.answer)}|${interactive}`;
    case 'steering':
      return item.status;
    default:
      return '';
  }
}

function renderConversation(s: WorkspaceState): void {
  const box = byId('conversation');
  // Follow new messages unless the reader has scrolled up to read older ones.
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  const before = box.childElementCount;
  const open = openQuestion(s);
  const keys = new Set<string>();
  let prev: Element | null = null;
  for (const item of s.conversation) {
    keys.add(item.key);
    const interactive = view.live && open !== null && open.key === item.key;
    const sig = signature(item, interactive);
    let entry = rendered.get(item.key);
    if (!entry || entry.sig !== sig) {
      const el = convItem(item, interactive);
      if (entry) entry.el.replaceWith(el);
      entry = { el, sig };
      rendered.set(item.key, entry);
    }
    const expected: Element | null = prev ? prev.nextElementSibling : box.firstElementChild;
    if (expected !== entry.el) box.insertBefore(entry.el, expected);
    prev = entry.el;
  }
  for (const [key, entry] of rendered) {
    if (!keys.has(key)) {
      entry.el.remove();
      rendered.delete(key);
    }
  }
  if (box.childElementCount > before && (atBottom || before === 0 || open)) {
    box.scrollTop = box.scrollHeight;
  }
}

function convItem(item: ConvItem, interactive: boolean): HTMLElement {
  switch (item.kind) {
    case 'started':
      return h(
        'div',
        { class: 'msg msg-user msg-query' },
        h('span', { class: 'msg-label' }, 'You asked'),
        h('p', null, item.query),
        h(
          'p',
          { class: 'detail' },
          `Sources: ${item.sources.join(', ') || 'none'} · model ${item.model}`,
          item.remoteSources ? ' · web search sends queries off this machine' : '',
        ),
      );
    case 'clarify':
      return clarifyItem(item, interactive);
    case 'pause':
      return pauseItem(item, interactive);
    case 'user':
      return h('div', { class: `msg msg-user msg-answer`, 'data-via': item.via }, h('span', { class: 'msg-label' }, 'You'), h('p', { class: 'pre' }, item.text));
    case 'steering':
      return h(
        'div',
        { class: 'msg msg-user msg-steering', 'data-steering-id': item.id, 'data-status': item.status },
        h('span', { class: 'msg-label' }, item.status === 'queued' ? 'You steered (queued)' : 'You steered'),
        h('p', null, item.text),
      );
    case 'brief':
      return h(
        'div',
        { class: 'msg msg-system msg-brief' },
        h('span', { class: 'msg-label' }, item.turns ? 'Brief refined' : 'Brief'),
        h('p', null, item.brief),
        item.checklist.length ? h('ul', { class: 'checklist-plain' }, item.checklist.map((c) => h('li', null, c))) : null,
      );
    case 'note':
      return h('div', { class: `msg msg-system msg-note`, 'data-tone': item.tone }, h('p', null, item.text));
  }
}

function clarifyItem(item: Extract<ConvItem, { kind: 'clarify' }>, interactive: boolean): HTMLElement {
  const chosen = new Set(item.answer?.choices ?? []);
  const el = h(
    'div',
    { class: 'msg msg-engine msg-clarify', 'data-turn': item.turn, 'data-closed': item.closed },
    h('span', { class: 'msg-label' }, `Question ${item.turn}`),
    h('p', { class: 'question-text' }, item.question),
  );
  if (!interactive) {
    el.append(
      h(
        'ol',
        { class: 'options' },
        item.options.map((o, i) => h('li', { class: chosen.has(i + 1) ? 'chosen' : '' }, o)),
      ),
    );
    return el;
  }
  const options = item.options.map((o, i) => {
    const b = button(`${i + 1}. ${o}`, () => b.setAttribute('aria-pressed', String(b.getAttribute('aria-pressed') !== 'true')), {
      class: 'clarify-option',
      'data-option': i + 1,
      'aria-pressed': 'false',
    });
    return b;
  });
  const text = h('input', { id: 'clarify-text', type: 'text', placeholder: 'Or answer in your own words' });
  const controls = h('div', { class: 'reply-controls' });
  const collect = (skip: boolean): Reply =>
    buildClarifyReply(
      options.filter((b) => b.getAttribute('aria-pressed') === 'true').map((b) => Number(b.getAttribute('data-option'))),
      text.value,
      skip,
    );
  const send = button('Send', () => void sendReply(item.key, collect(false), controls), { id: 'clarify-send', class: 'primary' });
  const skip = button('Skip the questions', () => void sendReply(item.key, collect(true), controls), { id: 'clarify-skip' });
  text.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') send.click();
  });
  controls.append(
    h('div', { class: 'option-buttons' }, options),
    text,
    h('div', { class: 'actions' }, send, skip, h('span', { class: 'reply-note detail' })),
    h('p', { class: 'error', hidden: true }),
  );
  el.append(controls);
  return el;
}

function pauseItem(item: Extract<ConvItem, { kind: 'pause' }>, interactive: boolean): HTMLElement {
  const chosen = new Set(item.answer?.chosen ?? []);
  const el = h(
    'div',
    { class: 'msg msg-engine msg-pause', 'data-node': item.node, 'data-closed': item.closed },
    h('span', { class: 'msg-label' }, 'A question before going on'),
    h('p', { class: 'question-text' }, item.introduction),
  );
  const why = h('p', { class: 'why detail' }, `Why I asked: ${item.why}`);
  if (!interactive) {
    el.append(
      h(
        'ol',
        { class: 'options' },
        item.directions.map((d, i) => h('li', { class: chosen.has(i + 1) ? 'chosen' : '', title: item.questions[i] ?? '' }, d)),
      ),
      why,
    );
    return el;
  }
  const boxes = item.directions.map((_, i) =>
    h('input', { type: 'checkbox', class: 'pause-direction', value: i + 1, id: `pause-direction-${i + 1}` }),
  );
  const list = h(
    'ol',
    { class: 'directions' },
    item.directions.map((d, i) =>
      h(
        'li',
        null,
        h('label', { for: `pause-direction-${i + 1}`, title: item.questions[i] ?? '' }, boxes[i], ` ${d}`),
      ),
    ),
  );
  const newQs = h('textarea', { id: 'pause-new', rows: 2, placeholder: 'New follow-up questions, one per line (optional)' });
  const controls = h('div', { class: 'reply-controls' });
  const send = button(
    'Send',
    () =>
      void sendReply(
        item.key,
        buildPauseReply(
          boxes.filter((b) => b.checked).map((b) => Number(b.value)),
          newQs.value,
        ),
        controls,
      ),
    { id: 'pause-send', class: 'primary' },
  );
  controls.append(
    list,
    why,
    h('label', { for: 'pause-new', class: 'detail' }, 'Anything else to research?'),
    newQs,
    h(
      'div',
      { class: 'actions' },
      send,
      h('span', { class: 'reply-note detail' }, 'Sending nothing ticked goes on with every direction.'),
    ),
    h('p', { class: 'error', hidden: true }),
  );
  el.append(controls);
  return el;
}

function treeItem(s: WorkspaceState, node: TreeNode): HTMLElement {
  const pauses = pausesFor(s, node.id);
  const children = node.children.map((id) => s.nodes[id]).filter((n): n is TreeNode => !!n);
  return h(
    'li',
    { class: 'tree-node', 'data-node-id': node.id, 'data-status': node.status, 'data-origin': node.origin },
    h(
      'div',
      { class: 'node-line' },
      h('span', { class: 'status-dot', title: node.status, 'aria-label': node.status }),
      h('span', { class: 'node-question' }, node.question),
      h('span', { class: `badge origin-badge origin-${node.origin}` }, ORIGIN_LABEL[node.origin] ?? node.origin),
      node.learnings ? h('span', { class: 'node-learnings detail' }, plural(node.learnings, 'learning')) : null,
    ),
    pauses.length
      ? h(
          'ul',
          { class: 'pause-lines' },
          pauses.map((p) => h('li', { class: 'pause-line', 'data-asked': p.ask && p.asked }, pauseLineText(p))),
        )
      : null,
    children.length ? h('ul', { class: 'tree-children' }, children.map((c) => treeItem(s, c))) : null,
  );
}

function renderTree(s: WorkspaceState): void {
  const roots = treeRoots(s);
  replace(
    byId('tree'),
    roots.length
      ? h('ul', { class: 'tree-root' }, roots.map((r) => treeItem(s, r)))
      : h('p', { class: 'detail' }, 'The tree grows here once clarification is done.'),
  );
}

function renderPersona(s: WorkspaceState): void {
  const cov = coverage(
    s.persona.checklist,
    s.learnings.map((l) => l.text),
  );
  replace(
    byId('persona'),
    s.brief ? h('p', { class: 'persona-brief' }, h('strong', null, 'Brief: '), s.brief) : null,
    s.persona.text
      ? h('p', { class: 'persona-text pre' }, s.persona.text)
      : h('p', { class: 'detail' }, 'Nothing known about you yet.'),
    cov.length
      ? h(
          'div',
          { class: 'checklist' },
          h('p', { class: 'detail' }, `Checklist · bars show ${COVERAGE_LABEL} (${plural(s.learnings.length, 'finding')} so far)`),
          h(
            'ul',
            null,
            cov.map((c) =>
              h(
                'li',
                { class: 'checklist-item' },
                h('span', { class: 'item-text' }, c.item),
                s.guessedChecklist.includes(c.item)
                  ? h(
                      'span',
                      {
                        class: 'detail guessed',
                        title: 'Guessed from your question: it steers the research, and the report does not call it your need.',
                      },
                      ' (guessed)',
                    )
                  : null,
                h('meter', {
                  class: 'coverage-meter',
                  min: 0,
                  max: 1,
                  low: 0.15,
                  high: 0.4,
                  optimum: 1,
                  value: c.fraction.toFixed(3),
                  title: `${COVERAGE_LABEL}: ${c.matched} of ${c.total}`,
                }),
                h('span', { class: 'coverage-count detail' }, `${c.matched} of ${c.total}`),
              ),
            ),
          ),
        )
      : null,
    s.exclusions.length || s.focus.length
      ? h(
          'p',
          { class: 'detail directives' },
          s.focus.length ? `Focus: ${s.focus.join(', ')}. ` : '',
          s.exclusions.length ? `Leaving out: ${s.exclusions.join(', ')}.` : '',
        )
      : null,
  );
}

function taskItem(t: Task): HTMLElement {
  return h(
    'li',
    { class: 'todo-task', 'data-status': t.status, 'data-task-id': t.id, 'data-provenance': t.provenance },
    h('span', { class: 'task-text' }, t.text),
    h('span', { class: 'badge priority-badge', title: 'priority (5–10, higher runs first)' }, `P${t.priority}`),
    h('span', { class: `badge provenance-badge provenance-${t.provenance}` }, PROVENANCE_LABEL[t.provenance] ?? t.provenance),
    t.status === 'in_progress' ? h('span', { class: 'badge running-badge' }, 'in progress') : null,
    t.note ? h('span', { class: 'task-note detail' }, t.note) : null,
  );
}

function renderTodo(s: WorkspaceState): void {
  const g = todoGroups(s);
  byId('todo-version').textContent = s.todoVersion ? `v${s.todoVersion}` : '';
  const group = (id: string, title: string, tasks: Task[]): HTMLElement =>
    h(
      'div',
      { class: 'todo-group', id: `todo-${id}` },
      h('h4', null, `${title} (${tasks.length})`),
      tasks.length ? h('ul', null, tasks.map(taskItem)) : null,
    );
  replace(
    byId('todo'),
    s.tasks.length
      ? [group('open', 'Open', g.open), group('completed', 'Completed', g.completed), group('canceled', 'Canceled', g.canceled)]
      : h('p', { class: 'detail' }, 'No tasks yet.'),
  );
}
