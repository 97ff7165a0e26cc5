// A fake engine that runs in the page: every command of docs/desktop-api.md answered with
// canned data, and a scripted research run emitted as `research-event`s. Each call is recorded
// in `window.__mock.calls` for the flow tests to check. Options come from the page's query
// string: `models=missing` (first run), `xss=1` (hostile text everywhere).

import { emit } from '@tauri-apps/api/event';
import type {
  AppSettings,
  CitationTarget,
  Envelope,
  HistoryHit,
  HistoryEntry,
  ImportReport,
  ModelRow,
  Reply,
  ReportView,
  ResearchRequest,
  RunStateName,
  SessionRow,
  SourceView,
  StatementView,
  YouView,
} from '../../src/types';
import {
  Script,
  XSS,
  phaseAnswered,
  phaseClarify,
  phaseFirstLevel,
  phaseReport,
  phaseSteered,
} from './script';

export interface MockRecord {
  calls: { cmd: string; args: unknown }[];
}

const params = new URLSearchParams(location.search);
const xss = params.get('xss') === '1';
const GAP_MS = 25;
// `?slow=MS`: the model list answers after MS milliseconds, as on a busy machine.
const SLOW_MS = Number(params.get('slow') ?? 0);

export const record: MockRecord = { calls: [] };

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---- Models and settings ----

const models: ModelRow[] = [
  {
    name: 'qwen2.5-1.5b-instruct',
    role: 'chat',
    size_bytes: 1_120_000_000,
    state: params.get('models') === 'missing' ? 'missing' : 'present',
    license: 'Apache-2.0',
    description: 'Small instruction-tuned chat model (GGUF, Q4_K_M)',
    configured: true,
  },
  {
    name: 'all-MiniLM-L6-v2',
    role: 'embedding',
    size_bytes: 90_000_000,
    state: params.get('models') === 'missing' ? 'missing' : 'present',
    license: 'Apache-2.0',
    description: 'Sentence embeddings for search',
    configured: true,
  },
  {
    name: 'llama-3.2-3b-instruct',
    role: 'chat',
    size_bytes: 2_020_000_000,
    state: 'missing',
    license: 'Llama 3.2 Community',
    description: 'Larger chat model',
    configured: false,
  },
];

let settings: AppSettings = {
  chat_model: 'qwen2.5-1.5b-instruct',
  chat_models: ['qwen2.5-1.5b-instruct', 'llama-3.2-3b-instruct'],
  threads: 2,
  gpu_layers: null,
  depth: 2,
  breadth: 2,
  c0: 0.7,
  tol: 3,
  lambda_explore: 0.5,
  lambda_info: 0.5,
  clarify_turns: 3,
  always_ask: false,
  web_enabled: false,
  searxng_url: '',
  web_disclosure:
    'With web search on, each research question is sent as a search query to the SearxNG instance you name, and the pages it finds are fetched. Your history, documents and persona stay on this machine.',
};

function engineStatus(): unknown {
  const chat = models[0]!;
  const embed = models[1]!;
  return {
    data_dir: '/home/user/.local/share/rudder',
    models_dir: '/home/user/.local/share/rudder/models',
    chat_model: chat.name,
    chat_model_present: chat.state === 'present',
    chat_model_state: chat.state,
    embed_model: embed.name,
    embed_model_present: embed.state === 'present',
    threads: settings.threads,
    gpu_layers_setting: settings.gpu_layers === null ? 'auto' : String(settings.gpu_layers),
    offload: {
      backend: 'Vulkan',
      device: {
        index: 1,
        name: 'Vulkan0',
        description: 'AMD Radeon 780M',
        backend: 'Vulkan',
        memory_total: 8 * 1024 ** 3,
        memory_free: 6 * 1024 ** 3,
        integrated: true,
      },
      layers: 0,
      layers_total: 0,
      needed_bytes: null,
      reason: 'Vulkan AMD Radeon 780M: layers are planned once the model is on disk',
    },
    recommendation: { model: 'llama-3.2-3b-instruct', reason: 'the largest chat model this machine runs well (6.0 GB free on AMD Radeon 780M)' },
  };
}

async function modelsFetch(): Promise<unknown> {
  const fetched: string[] = [];
  const already: string[] = [];
  for (const m of models.filter((x) => x.configured)) {
    if (m.state === 'present') {
      already.push(m.name);
      continue;
    }
    const total = m.size_bytes;
    for (let i = 0; i <= 4; i++) {
      await emit('model-progress', { name: m.name, file: `${m.name}.gguf`, done: (total * i) / 4, total, finished: false });
      await sleep(60);
    }
    await emit('model-progress', { name: m.name, file: `${m.name}.gguf`, done: total, total, finished: true });
    m.state = 'present';
    fetched.push(m.name);
  }
  return { fetched, already_present: already };
}

// ---- Library ----

let hits: HistoryHit[] = [
  {
    id: 12,
    score: 0.92,
    bm25_rank: 1,
    vector_rank: 2,
    kind: 'visit',
    source: 'chrome',
    title: 'Standing desk reviews 2024',
    url: 'https://example.org/standing-desks',
    started_at: '2024-11-03T18:20:00Z',
    snippet: 'We tested 12 sit-stand desks for stability and noise…',
  },
  {
    id: 15,
    score: 0.81,
    bm25_rank: 2,
    vector_rank: 1,
    kind: 'chat',
    source: 'chatgpt',
    title: 'Exercises for lower back pain',
    started_at: '2025-01-12T09:02:00Z',
    snippet: 'Try bird-dogs and dead bugs, three sets of ten…',
  },
];
if (xss) {
  hits.push({
    id: 66,
    score: 0.5,
    bm25_rank: 3,
    vector_rank: null,
    kind: 'search',
    source: 'chrome',
    title: XSS,
    started_at: '2025-02-01T10:00:00Z',
    snippet: XSS,
  });
}

function historyShow(id: number): HistoryEntry {
  const hit = hits.find((h) => h.id === id);
  if (!hit) throw `history entry  not found`;
  return {
    id,
    title: hit.title,
    source: hit.source,
    kind: hit.kind,
    started_at: hit.started_at,
    url: hit.url ?? null,
    turns: [
      { role: 'user', text: xss ? XSS : 'What exercises help lower back pain?', at: hit.started_at },
      { role: 'assistant', text: 'Bird-dogs, dead bugs and walking breaks help most people.', at: hit.started_at },
    ],
  };
}

async function importPaths(paths: string[]): Promise<ImportReport> {
  for (let i = 1; i <= 3; i++) {
    await emit('import-progress', { phase: 'reading', done: i, total: 3, file: `file ${i} of ${paths[0] ?? ''}` });
    await sleep(80);
  }
  return {
    files: [
      { file: xss ? XSS : 'chrome-history.json', format: 'takeout-chrome', added: 120, updated: 0, duplicates: 4, signals: 0, skipped_items: 0, truncated_turns: 0, notes: [], status: { status: 'imported' } },
      { file: 'Takeout/YouTube/watch-history.json', format: null, added: 0, updated: 0, duplicates: 0, signals: 0, skipped_items: 0, truncated_turns: 0, notes: [], status: { status: 'skipped', reason: 'not a history file' } },
      {
        file: 'broken-export.json',
        format: null,
        added: 0,
        updated: 0,
        duplicates: 0,
        signals: 0,
        skipped_items: 0,
        truncated_turns: 0,
        notes: [],
        status: { status: 'failed', reason: 'broken-export.json: line 3, column 9: expected value' },
      },
    ],
    added: 120,
    updated: 0,
    duplicates: 4,
    signals: 0,
    failed_files: 1,
    seconds: 1.4,
  };
}

// ---- Research ----

interface Run {
  id: number;
  script: Script;
  state: RunStateName;
  steer: number;
  answer: { chosen: number[]; new_questions: string[] } | null;
  request: ResearchRequest;
}

const runs = new Map<number, Run>();
let nextSession = 7;

async function state(run: Run, s: RunStateName, message = ''): Promise<void> {
  run.state = s;
  await emit('research-state', { session: run.id, state: s, message });
}

async function play(run: Run, envelopes: Envelope[]): Promise<void> {
  for (const envelope of envelopes) {
    await sleep(GAP_MS);
    await emit('research-event', { session: run.id, envelope });
  }
}

function startRun(request: ResearchRequest): number {
  const run: Run = { id: nextSession++, script: new Script(), state: 'running', steer: 0, answer: null, request };
  runs.set(run.id, run);
  void (async () => {
    await state(run, 'running');
    await play(run, phaseClarify(run.script));
    await state(run, 'waiting', 'A clarifying question is waiting for you');
  })();
  return run.id;
}

function reply(session: number, r: Reply): null {
  const run = runs.get(session);
  if (!run) throw `session ${session} is not running here`;
  void (async () => {
    await state(run, 'running');
    if (r.kind === 'clarify') {
      await play(run, phaseFirstLevel(run.script, r.choices, r.text, { xss }));
      await state(run, 'waiting', 'Choose the directions to follow');
    } else {
      run.answer = { chosen: r.chosen, new_questions: r.new_questions };
      await play(run, phaseAnswered(run.script, { chosen: r.chosen, new_questions: r.new_questions, text: r.text }, { xss }));
      // The run then waits for steering (the flow sends some) before writing its report.
    }
  })();
  return null;
}

function steer(session: number, text: string): unknown {
  const run = runs.get(session);
  if (!run) throw `session ${session} is not running here`;
  if (!text.trim()) throw 'the message is empty';
  run.steer += 1;
  const ack = { id: run.steer, text: text.trim() };
  const added = 1 + (run.answer ? run.answer.chosen.length + run.answer.new_questions.length : 0);
  void (async () => {
    await sleep(400); // applied at the next step boundary
    await play(run, phaseSteered(run.script, ack, added, added, added > 2 ? added - 1 : null));
    await play(run, phaseReport(run.script));
    await state(run, 'finished');
  })();
  return ack;
}

/** A finished session from an earlier day, and an interrupted one. */
function storedLog(id: number): Envelope[] {
  const s = new Script();
  phaseClarify(s);
  phaseFirstLevel(s, [2], '');
  phaseAnswered(s, { chosen: [1], new_questions: [], text: '' });
  if (id === 3) phaseReport(s);
  return s.log;
}

function sessionsList(): SessionRow[] {
  const rows: SessionRow[] = [
    {
      id: 3,
      query: 'Note-taking methods for research',
      title: 'Note-taking methods compared',
      status: 'finished',
      created_at: '2025-04-20T08:00:00Z',
      updated_at: '2025-04-20T08:12:00Z',
      events: storedLog(3).length,
      pending_steering: 0,
      live: false,
    },
    {
      id: 4,
      query: 'Rust or Go for small command-line tools?',
      title: null,
      status: 'interrupted',
      created_at: '2025-04-22T19:00:00Z',
      updated_at: '2025-04-22T19:04:00Z',
      events: storedLog(4).length,
      pending_steering: 1,
      live: false,
    },
  ];
  for (const run of runs.values()) {
    rows.unshift({
      id: run.id,
      query: run.request.question,
      title: null,
      status: run.state === 'finished' ? 'finished' : run.state === 'failed' ? 'failed' : 'running',
      created_at: '2025-05-01T10:00:00Z',
      updated_at: '2025-05-01T10:05:00Z',
      events: run.script.log.length,
      pending_steering: 0,
      live: run.state !== 'finished',
    });
  }
  return rows;
}

function report(session: number): ReportView {
  const hostile = xss ? `<p>Injected: ${XSS}<a href="javascript:window.__pwned=1">click</a></p>` : '';
  return {
    session,
    title: xss ? `Report ${XSS}` : 'Standing desks and lower back pain',
    markdown: '# Standing desks and lower back pain\n…',
    html:
      '<h1>Standing desks and lower back pain</h1>' +
      '<p>Standing desks modestly reduce back pain after twelve weeks <a href="#ref-1">[1]</a>. ' +
      'Reviews mention wobble at full height <a href="#ref-2">[2]</a>; see also <a href="#ref-3">[3]</a>.</p>' +
      hostile +
      '<h2>References</h2><ol><li id="ref-1">ergonomics.pdf</li><li id="ref-2">Standing desk reviews 2024</li><li id="ref-3">example.org</li></ol>',
    references: [
      { number: 1, title: 'ergonomics.pdf', label: '/docs/ergonomics.pdf, page 2', target: { kind: 'document', path: '/docs/ergonomics.pdf', chunk: 3, page: 2 } },
      { number: 2, title: 'Standing desk reviews 2024', label: 'history: chrome', target: { kind: 'history', session: 12, url: 'https://example.org/standing-desks' } },
      { number: 3, title: 'Sit-stand guidance', label: 'https://example.org/guidance', target: { kind: 'web', url: 'https://example.org/guidance' } },
    ],
  };
}

function sourceOpen(target: CitationTarget): SourceView {
  switch (target.kind) {
    case 'document':
      return {
        title: 'ergonomics.pdf',
        text: xss ? `Passage: ${XSS}` : 'In a 12-week trial, sit-stand desks reduced reported lower back pain by 32%.',
        location: `${target.path} · passage ${target.chunk + 1}${target.page ? ` · page ${target.page}` : ''}`,
        url: null,
        history_session: null,
      };
    case 'history':
      return {
        title: 'Standing desk reviews 2024',
        text: 'We tested 12 sit-stand desks for stability and noise…',
        location: `history entry `,
        url: target.url ?? null,
        history_session: target.session,
      };
    case 'web':
      return { title: target.url, text: '', location: target.url, url: target.url, history_session: null };
  }
}

// ---- What Rudder knows about you ----

const sessionRef = (id: number): StatementView['sessions'][number] => {
  const hit = hits.find((h) => h.id === id);
  return { id, title: hit?.title ?? '(forgotten)', source: hit?.source ?? 'chatgpt', started_at: hit?.started_at ?? null };
};
const inferred = (id: string, criterion: string, text: string, sessions: number[]): StatementView => ({
  id,
  criterion,
  text: xss ? `${text} ${XSS}` : text,
  said: false,
  sessions: sessions.filter((s) => hits.some((h) => h.id === s)).map(sessionRef),
  origin: null,
});
let corpusInstalled = false;
let said: StatementView[] = [];
let hiddenIds: string[] = [];
let unpersonalised: string[] = [];
let saidNext = 1;
let profileBuilt = false;
const recentProfile = (): StatementView[] => [
  inferred('i0000aaaa', 'emphasize', 'works at a desk all day', [12]),
  inferred('i0000bbbb', 'explanation style', 'wants exercises as numbered steps', [15]),
];
let remembered = false;
const memory = (): StatementView[] => [inferred('i0000ffff', 'constraint', 'sits at a desk eight hours a day', [12])];
const generalInterests = (): YouView['interests'] => [
  { statement: inferred('i0000cccc', 'interest', 'Back health', [12, 15]), subtopics: ['standing desks', 'exercises'], takeaway: 'Looks for relief at work', presentation: inferred('i0000dddd', 'presentation', 'short practical answers', [15]) },
];

function youView(): YouView {
  const standing = [{ ...inferred('i0000eeee', 'standing', 'I work night shifts as a nurse.', []), origin: 'chatgpt custom instructions' }];
  const all = [...recentProfile(), ...standing, ...memory(), ...generalInterests().flatMap((i) => [i.statement, i.presentation!])];
  const visible = (s: StatementView): boolean => !hiddenIds.includes(s.id);
  const sources = [...new Set(hits.map((h) => h.source))];
  return {
    has_history: hits.length > 0,
    said,
    interests: profileBuilt
      ? generalInterests()
          .filter((i) => visible(i.statement))
          .map((i) => ({ ...i, presentation: i.presentation && visible(i.presentation) ? i.presentation : null }))
      : [],
    general_built: profileBuilt,
    standing: standing.filter(visible),
    recent: [
      {
        query: 'How can I ease lower back pain at work?',
        built_at: '2025-03-02T09:00:00Z',
        statements: [...said, ...recentProfile().filter(visible)],
      },
    ],
    hidden: all.filter((s) => hiddenIds.includes(s.id)).map((s) => ({ ...s, criterion: 'hidden' })),
    sources: sources.map((source) => ({
      source,
      sessions: hits.filter((h) => h.source === source).length,
      personalised: !unpersonalised.includes(source),
    })),
    memory: remembered ? memory().filter(visible) : [],
    memory_unread: remembered ? 0 : hits.length,
  };
}

function youSay(request: { text: string; criterion?: string; corrects?: string }): YouView {
  const text = request.text.trim();
  if (!text) throw 'the statement is empty: write what Rudder should know';
  if (request.corrects) hiddenIds.push(request.corrects);
  said = [...said, { id: `u${saidNext++}`, criterion: request.criterion ?? 'emphasize', text, said: true, sessions: [], origin: null }];
  return youView();
}

// ---- The command handler ----

type Args = Record<string, unknown>;

export async function handle(cmd: string, args: Args = {}): Promise<unknown> {
  record.calls.push({ cmd, args: JSON.parse(JSON.stringify(args)) as unknown });
  switch (cmd) {
    case 'engine_status':
      return engineStatus();
    case 'models_list':
      if (SLOW_MS > 0) await sleep(SLOW_MS);
      return models;
    case 'models_fetch':
      return modelsFetch();
    case 'settings_get':
      return settings;
    case 'settings_set': {
      const s = args.settings as AppSettings;
      if (!(s.c0 >= 0 && s.c0 <= 1)) throw `C0 must be between 0 and 1, not ${s.c0}`;
      settings = { ...s, chat_models: settings.chat_models, web_disclosure: settings.web_disclosure };
      return settings;
    }
    case 'import_paths':
      return importPaths(args.paths as string[]);
    case 'docs_add':
      await emit('import-progress', { phase: 'indexing', done: 1, total: 2, file: 'notes.md' });
      await sleep(50);
      return { added: 2, updated: 0, unchanged: 1, removed: 0, failed: 1, errors: ['/docs/bad.pdf: page 4: cannot decode text'] };
    case 'library_stats': {
      const sources = [...new Set(hits.map((h) => h.source))];
      return {
        history_sessions: hits.length,
        history_sources: sources.map((source) => ({ source, sessions: hits.filter((h) => h.source === source).length })),
        documents: corpusInstalled ? 1003 : 3,
        chunks: corpusInstalled ? 3042 : 42,
        corpus: {
          name: 'wikipedia-vital-en',
          description: 'Summaries of Wikipedia’s 1,000 vital articles',
          license: 'CC BY-SA 4.0',
          size_bytes: 3_400_000,
          source: 'PyPI (rudder-corpus-wikipedia-vital-en)',
          indexed_documents: corpusInstalled ? 1000 : null,
        },
      };
    }
    case 'history_search': {
      await sleep(50);
      const f = (args.filters ?? {}) as { kind?: string; source?: string };
      return hits.filter((h) => (!f.kind || h.kind === f.kind) && (!f.source || h.source === f.source));
    }
    case 'history_show':
      return historyShow(args.id as number);
    case 'history_forget': {
      const sel = args.selector as { id?: number; source?: string };
      const before = hits.length;
      hits = hits.filter((h) => !(sel.id !== undefined && h.id === sel.id) && !(sel.source !== undefined && h.source === sel.source));
      return { sessions_removed: before - hits.length };
    }
    case 'research_start':
      return startRun(args.request as ResearchRequest);
    case 'research_reply':
      return reply(args.session as number, args.reply as Reply);
    case 'research_steer':
      return steer(args.session as number, args.text as string);
    case 'research_stop': {
      const run = runs.get(args.session as number);
      if (run) await state(run, 'stopped', 'Stopped; resume it from Sessions');
      return null;
    }
    case 'sessions_list':
      return sessionsList();
    case 'session_events': {
      const id = args.session as number;
      return runs.get(id)?.script.log ?? storedLog(id);
    }
    case 'session_resume':
      return null;
    case 'session_report':
      return report(args.session as number);
    case 'session_export': {
      const dir = args.dir as string;
      return ['report.md', 'report.html', 'todo.md', 'events.jsonl', 'session.json'].map((f) => `${dir}/session-${String(args.session)}/${f}`);
    }
    case 'source_open':
      return sourceOpen(args.target as CitationTarget);
    case 'corpus_add':
      await emit('model-progress', { name: 'wikipedia-vital-en', file: 'summaries.json', done: 1_700_000, total: 3_400_000, finished: false });
      await sleep(100);
      await emit('import-progress', { phase: 'embedding', done: 500, total: 1000, file: 'Printing press' });
      await sleep(100);
      corpusInstalled = true;
      return { added: 1000, updated: 0, unchanged: 0, removed: 0, failed: 0, errors: [] };
    case 'you_view':
      return youView();
    case 'you_say':
      return youSay(args.request as { text: string; criterion?: string; corrects?: string });
    case 'you_unsay': {
      const id = args.id as string;
      if (id.startsWith('u')) said = said.filter((s) => s.id !== id);
      else hiddenIds.push(id);
      return youView();
    }
    case 'you_restore':
      hiddenIds = hiddenIds.filter((h) => h !== (args.id as string));
      return youView();
    case 'you_personalise': {
      const source = args.source as string;
      unpersonalised = args.personalised ? unpersonalised.filter((s) => s !== source) : [...unpersonalised, source];
      return youView();
    }
    case 'you_remember':
      await sleep(200);
      remembered = true;
      return youView();
    case 'you_build':
      await sleep(200);
      if (args.query === null) profileBuilt = true;
      return youView();
    case 'plugin:dialog|open': {
      const options = (args.options ?? {}) as { directory?: boolean; multiple?: boolean };
      if (options.directory) return '/home/user/exports';
      return options.multiple ? ['/fixtures/history/chrome-history.json'] : '/fixtures/history/chrome-history.json';
    }
    default:
      throw `unknown command ${cmd}`;
  }
}

