// The research workspace as a pure fold over a session's event log: the same function takes
// live events and a replayed log, so a reopened session looks exactly as it did live. Events
// carry a sequence number; one already seen (or older) is ignored, which makes the fold
// idempotent when a live event repeats one the log already had.

import type {
  ClarifyAnswer,
  Envelope,
  NodeStatus,
  Origin,
  PauseAnswer,
  Persona,
  Provenance,
  SteeringAck,
  Task,
  TaskStatus,
} from '../types';

export interface TreeNode {
  id: number;
  parent: number | null;
  depth: number;
  question: string;
  origin: Origin;
  confidence: number;
  tags: string[];
  status: NodeStatus;
  /** Learnings found while researching it. */
  learnings: number;
  /** Passages it was shown. */
  evidence: number;
  children: number[];
}

export interface PauseLine {
  seq: number;
  node: number;
  gain: number;
  cost: number;
  /** Whether to ask: the rule said so (ΔEV > C), or `forced`. */
  ask: boolean;
  /** Asked only because of the "ask at every branch" setting. */
  forced: boolean;
  /** Whether the user was actually asked (false when asking is switched off). */
  asked: boolean;
  parentAlignment: number;
  candidates: number;
}

export type NoteTone = 'system' | 'persona' | 'directives' | 'report' | 'finished' | 'reflect';

export type ConvItem =
  | {
      kind: 'started';
      key: string;
      query: string;
      sources: string[];
      remoteSources: boolean;
      model: string;
    }
  | {
      kind: 'clarify';
      key: string;
      turn: number;
      question: string;
      options: string[];
      answer: ClarifyAnswer | null;
      /** Answered, or the dialogue ended without it. */
      closed: boolean;
    }
  | {
      kind: 'pause';
      key: string;
      node: number;
      introduction: string;
      directions: string[];
      questions: string[];
      why: string;
      answer: PauseAnswer | null;
      closed: boolean;
    }
  | { kind: 'user'; key: string; text: string; via: 'clarify' | 'pause' }
  | { kind: 'steering'; key: string; id: number; text: string; status: 'queued' | 'applied' }
  | { kind: 'brief'; key: string; brief: string; checklist: string[]; turns: number }
  | { kind: 'note'; key: string; text: string; tone: NoteTone };

export interface LearningItem {
  id: number;
  node: number;
  text: string;
}

export interface UsageTotals {
  calls: number;
  prompt_tokens: number;
  generated_tokens: number;
  cached_tokens: number;
  seconds: number;
  /** The stage that last spent tokens. */
  stage: string;
}

export interface ReportState {
  title: string;
  words: number;
  citations: number;
  /** Later research or steering made it out of date (a newer one may follow). */
  stale: boolean;
}

export interface WorkspaceState {
  lastSeq: number;
  query: string;
  model: string;
  sources: string[];
  remoteSources: boolean;
  depth: number;
  breadth: number;
  brief: string | null;
  persona: Persona;
  /** Checklist items the model guessed from the question: they steer the research, and the
   * report does not call them the user's needs. */
  guessedChecklist: string[];
  conversation: ConvItem[];
  nodes: Record<number, TreeNode>;
  /** Node ids in the order they were added. */
  nodeOrder: number[];
  tasks: Task[];
  todoVersion: number;
  pauses: PauseLine[];
  learnings: LearningItem[];
  usage: UsageTotals;
  report: ReportState | null;
  /** Headings of report sections written so far (for progress while the report is written). */
  reportSections: string[];
  exclusions: string[];
  focus: string[];
  finished: boolean;
}

export function initialState(): WorkspaceState {
  return {
    lastSeq: -1,
    query: '',
    model: '',
    sources: [],
    remoteSources: false,
    depth: 0,
    breadth: 0,
    brief: null,
    persona: { text: '', checklist: [] },
    guessedChecklist: [],
    conversation: [],
    nodes: {},
    nodeOrder: [],
    tasks: [],
    todoVersion: 0,
    pauses: [],
    learnings: [],
    usage: {
      calls: 0,
      prompt_tokens: 0,
      generated_tokens: 0,
      cached_tokens: 0,
      seconds: 0,
      stage: '',
    },
    report: null,
    reportSections: [],
    exclusions: [],
    focus: [],
    finished: false,
  };
}

function updateNode(
  s: WorkspaceState,
  id: number,
  f: (n: TreeNode) => TreeNode,
): Record<number, TreeNode> {
  const n = s.nodes[id];
  if (!n) return s.nodes;
  return { ...s.nodes, [id]: f(n) };
}

/** The user's clarify answer in words. */
export function describeClarifyAnswer(options: string[], a: ClarifyAnswer): string {
  const parts: string[] = [];
  const chosen = a.choices
    .map((n) => options[n - 1])
    .filter((o): o is string => o !== undefined);
  if (chosen.length) parts.push(chosen.join('; '));
  if (a.text.trim()) parts.push(a.text.trim());
  if (a.skip) parts.push(parts.length ? '(and skip the remaining questions)' : 'Skip the questions');
  return parts.length ? parts.join(' — ') : 'No preference';
}

/** The user's pause answer in words. */
export function describePauseAnswer(directions: string[], a: PauseAnswer): string {
  const lines: string[] = [];
  for (const n of a.chosen) {
    const d = directions[n - 1];
    lines.push(d === undefined ? `Direction ${n}` : `${n}. ${d}`);
  }
  for (const q of a.new_questions) lines.push(`New: ${q}`);
  if (a.text.trim()) lines.push(a.text.trim());
  return lines.length ? lines.join('\n') : 'Go on with every direction';
}

function nodeStatusForTask(t: TaskStatus): NodeStatus | null {
  return t === 'canceled' ? 'canceled' : null;
}

/** Folds one event into the state. Pure: returns a new state, or the same one if ignored. */
export function reduce(state: WorkspaceState, env: Envelope): WorkspaceState {
  if (!(env.seq > state.lastSeq)) return state;
  const s: WorkspaceState = { ...state, lastSeq: env.seq };
  const e = env.event;
  const key = `e${env.seq}`;
  const push = (item: ConvItem): ConvItem[] => [...s.conversation, item];
  switch (e.type) {
    case 'started':
      s.query = e.query;
      s.model = e.model;
      s.sources = e.sources;
      s.remoteSources = e.remote_sources;
      s.depth = e.depth;
      s.breadth = e.breadth;
      s.persona = { text: e.persona_text ?? '', checklist: s.persona.checklist };
      s.conversation = push({
        kind: 'started',
        key,
        query: e.query,
        sources: e.sources,
        remoteSources: e.remote_sources,
        model: e.model,
      });
      return s;
    case 'clarify_asked':
      s.conversation = push({
        kind: 'clarify',
        key,
        turn: e.question.turn,
        question: e.question.question,
        options: e.question.options,
        answer: null,
        closed: false,
      });
      return s;
    case 'clarify_answered': {
      let options: string[] = [];
      let found = false;
      const conv = s.conversation.map((item) => item);
      for (let i = conv.length - 1; i >= 0; i--) {
        const item = conv[i];
        if (item && item.kind === 'clarify' && !item.closed) {
          options = item.options;
          conv[i] = { ...item, answer: e.answer, closed: true };
          found = true;
          break;
        }
      }
      if (!found) return s;
      conv.push({ kind: 'user', key, text: describeClarifyAnswer(options, e.answer), via: 'clarify' });
      s.conversation = conv;
      return s;
    }
    case 'brief_refined':
      s.brief = e.brief;
      // The dialogue is over: a question still open can no longer be answered.
      s.conversation = [
        ...s.conversation.map((item) =>
          item.kind === 'clarify' && !item.closed ? { ...item, closed: true } : item,
        ),
        { kind: 'brief', key, brief: e.brief, checklist: e.checklist, turns: e.turns },
      ];
      if (e.checklist.length && !s.persona.checklist.length) {
        s.persona = { text: s.persona.text, checklist: e.checklist };
      }
      return s;
    case 'persona_seeded':
      s.persona = e.persona;
      s.guessedChecklist = e.guessed ?? [];
      return s;
    case 'persona_updated': {
      s.persona = e.persona;
      const bits: string[] = [];
      if (e.added_text.trim()) bits.push(e.added_text.trim());
      if (e.added_items.length) bits.push(`New checklist items: ${e.added_items.join('; ')}`);
      s.conversation = push({
        kind: 'note',
        key,
        tone: 'persona',
        text: `Persona updated${bits.length ? ': ' + bits.join(' · ') : ''}`,
      });
      return s;
    }
    case 'node_added': {
      const node: TreeNode = {
        id: e.id,
        parent: e.parent,
        depth: e.depth,
        question: e.question,
        origin: e.origin,
        confidence: e.confidence ?? 1,
        tags: e.tags ?? [],
        status: 'pending',
        learnings: 0,
        evidence: 0,
        children: [],
      };
      const nodes = { ...s.nodes, [e.id]: node };
      if (e.parent !== null) {
        const p = nodes[e.parent];
        if (p && !p.children.includes(e.id)) {
          nodes[e.parent] = { ...p, children: [...p.children, e.id] };
        }
      }
      s.nodes = nodes;
      s.nodeOrder = s.nodeOrder.includes(e.id) ? s.nodeOrder : [...s.nodeOrder, e.id];
      return s;
    }
    case 'node_started':
      s.nodes = updateNode(s, e.id, (n) => ({ ...n, status: 'researching' }));
      return s;
    case 'learning':
      s.learnings = [
        ...s.learnings,
        { id: e.learning.id, node: e.learning.node, text: e.learning.text },
      ];
      s.nodes = updateNode(s, e.learning.node, (n) => ({ ...n, learnings: n.learnings + 1 }));
      return s;
    case 'node_researched':
      s.nodes = updateNode(s, e.id, (n) => ({
        ...n,
        status: 'done',
        evidence: e.evidence,
        tags: [...n.tags, ...e.tags.filter((t) => !n.tags.includes(t))],
      }));
      if (s.report) s.report = { ...s.report, stale: true };
      return s;
    case 'task_added':
      s.tasks = [...s.tasks.filter((t) => t.id !== e.task.id), e.task].sort((a, b) => a.id - b.id);
      s.todoVersion += 1;
      return s;
    case 'task_updated': {
      const task = s.tasks.find((t) => t.id === e.id);
      if (!task) return s;
      const updated: Task = {
        ...task,
        status: e.status ?? task.status,
        priority: e.priority ?? task.priority,
        note: e.note ? e.note : task.note ?? '',
        updated_at: env.at,
      };
      s.tasks = s.tasks.map((t) => (t.id === e.id ? updated : t));
      s.todoVersion += 1;
      const ns = e.status ? nodeStatusForTask(e.status) : null;
      if (ns) {
        s.nodes = updateNode(s, task.node, (n) => (n.status === 'done' ? n : { ...n, status: ns }));
      }
      return s;
    }
    case 'steering_applied': {
      let conv = s.conversation;
      for (const m of e.messages) {
        const i = conv.findIndex((c) => c.kind === 'steering' && c.id === m.id);
        if (i >= 0) {
          conv = conv.map((c, j) => (j === i && c.kind === 'steering' ? { ...c, status: 'applied' } : c));
        } else {
          conv = [
            ...conv,
            { kind: 'steering', key: `${key}-m${m.id}`, id: m.id, text: m.text, status: 'applied' },
          ];
        }
      }
      const summary = e.summary.trim();
      conv = [
        ...conv,
        {
          kind: 'note',
          key,
          tone: 'system',
          text: summary ? `Steering applied: ${summary}` : 'Steering applied',
        },
      ];
      s.conversation = conv;
      if (s.report) s.report = { ...s.report, stale: true };
      return s;
    }
    case 'directives_added': {
      s.exclusions = [...s.exclusions, ...e.exclusions];
      s.focus = [...s.focus, ...e.focus];
      const bits: string[] = [];
      if (e.exclusions.length) bits.push(`leaving out ${e.exclusions.join(', ')}`);
      if (e.focus.length) bits.push(`focusing on ${e.focus.join(', ')}`);
      if (bits.length) {
        s.conversation = push({ kind: 'note', key, tone: 'directives', text: `Now ${bits.join('; ')}` });
      }
      return s;
    }
    case 'reflected': {
      const bits: string[] = [];
      if (e.knowledge_gaps.length) {
        bits.push(`${e.knowledge_gaps.length} knowledge gap${e.knowledge_gaps.length === 1 ? '' : 's'}: ${e.knowledge_gaps.join('; ')}`);
      }
      if (e.canceled.length) {
        bits.push(`${e.canceled.length} task${e.canceled.length === 1 ? '' : 's'} canceled`);
      }
      if (bits.length) {
        s.conversation = push({ kind: 'note', key, tone: 'reflect', text: `Reflection: ${bits.join(' · ')}` });
      }
      return s;
    }
    case 'candidates_selected':
      return s;
    case 'pause_decided':
      s.pauses = [
        ...s.pauses,
        {
          seq: env.seq,
          node: e.node,
          gain: e.decision.gain,
          cost: e.decision.cost,
          ask: e.decision.ask,
          forced: e.decision.forced === true,
          asked: e.asked,
          parentAlignment: e.parent_alignment,
          candidates: e.candidates.length,
        },
      ];
      return s;
    case 'question': {
      const q = e.question;
      s.conversation = [
        // Only the newest question can be answered.
        ...s.conversation.map((item) =>
          item.kind === 'pause' && !item.closed ? { ...item, closed: true } : item,
        ),
        {
          kind: 'pause',
          key,
          node: q.node,
          introduction: q.introduction,
          directions: q.directions,
          questions: q.questions,
          why: q.why,
          answer: null,
          closed: false,
        },
      ];
      return s;
    }
    case 'answer': {
      const conv = [...s.conversation];
      let directions: string[] | null = null;
      for (let i = conv.length - 1; i >= 0; i--) {
        const item = conv[i];
        if (item && item.kind === 'pause' && item.node === e.node && item.answer === null) {
          directions = item.directions;
          conv[i] = { ...item, answer: e.answer, closed: true };
          break;
        }
      }
      conv.push({
        kind: 'user',
        key,
        text: describePauseAnswer(directions ?? [], e.answer),
        via: 'pause',
      });
      s.conversation = conv;
      return s;
    }
    case 'report_section':
      s.reportSections = [...s.reportSections, e.heading];
      return s;
    case 'report_written':
      s.report = { title: e.title, words: e.words, citations: e.citations, stale: false };
      s.reportSections = [];
      s.conversation = push({
        kind: 'note',
        key,
        tone: 'report',
        text: `Report written: ${e.title} (${e.words} words, ${e.citations} citations)`,
      });
      return s;
    case 'usage':
      s.usage = {
        calls: s.usage.calls + e.usage.calls,
        prompt_tokens: s.usage.prompt_tokens + e.usage.prompt_tokens,
        generated_tokens: s.usage.generated_tokens + e.usage.generated_tokens,
        cached_tokens: s.usage.cached_tokens + e.usage.cached_tokens,
        seconds: s.usage.seconds + e.seconds,
        stage: e.stage,
      };
      return s;
    case 'finished':
      s.finished = true;
      s.usage = {
        ...s.usage,
        calls: e.usage.calls,
        prompt_tokens: e.usage.prompt_tokens,
        generated_tokens: e.usage.generated_tokens,
        cached_tokens: e.usage.cached_tokens,
        seconds: e.seconds,
      };
      s.conversation = push({
        kind: 'note',
        key,
        tone: 'finished',
        text: `Finished in ${Math.round(e.seconds)} s with ${e.pauses} question${e.pauses === 1 ? '' : 's'} to you`,
      });
      return s;
    default: {
      // An event type this window does not know yet: keep going.
      const unknown: { type?: unknown } = e;
      void unknown;
      return s;
    }
  }
}

/** Folds a whole log (sorted by seq, so a merged log and live tail fold the same way). */
export function replay(envelopes: readonly Envelope[], from: WorkspaceState = initialState()): WorkspaceState {
  return [...envelopes].sort((a, b) => a.seq - b.seq).reduce(reduce, from);
}

/**
 * A steering message the user just sent, shown at once as "queued"; the `steering_applied`
 * event that carries its id later marks it applied instead of adding it again.
 */
export function steeringQueued(state: WorkspaceState, ack: SteeringAck): WorkspaceState {
  if (state.conversation.some((c) => c.kind === 'steering' && c.id === ack.id)) return state;
  return {
    ...state,
    conversation: [
      ...state.conversation,
      { kind: 'steering', key: `steer-${ack.id}`, id: ack.id, text: ack.text, status: 'queued' },
    ],
  };
}

// ---- Views derived from the state ----

/** The question the user can answer now: the newest one, if it is still open. */
export function openQuestion(
  state: WorkspaceState,
): Extract<ConvItem, { kind: 'clarify' | 'pause' }> | null {
  for (let i = state.conversation.length - 1; i >= 0; i--) {
    const item = state.conversation[i];
    if (item && (item.kind === 'clarify' || item.kind === 'pause')) {
      return item.closed ? null : item;
    }
  }
  return null;
}

/** Root nodes (no parent, or a parent the log never announced). */
export function treeRoots(state: WorkspaceState): TreeNode[] {
  return state.nodeOrder
    .map((id) => state.nodes[id])
    .filter((n): n is TreeNode => !!n && (n.parent === null || !state.nodes[n.parent]));
}

export interface TodoGroups {
  open: Task[];
  completed: Task[];
  canceled: Task[];
}

/** Tasks grouped as the plan shows them; open ones highest priority first. */
export function todoGroups(state: WorkspaceState): TodoGroups {
  const open = state.tasks
    .filter((t) => t.status === 'pending' || t.status === 'in_progress')
    .sort((a, b) => {
      const running = Number(b.status === 'in_progress') - Number(a.status === 'in_progress');
      return running || b.priority - a.priority || a.id - b.id;
    });
  return {
    open,
    completed: state.tasks.filter((t) => t.status === 'completed'),
    canceled: state.tasks.filter((t) => t.status === 'canceled'),
  };
}

/** "Asked: ΔEV 0.31 > C 0.12", "Went on: ΔEV 0.05 ≤ C 0.70". */
export function pauseLineText(p: PauseLine): string {
  const byRule = p.ask && !p.forced;
  const nums = `ΔEV ${p.gain.toFixed(2)} ${byRule ? '>' : '≤'} C ${p.cost.toFixed(2)}`;
  if (p.forced && p.asked) return `Asked (you asked to choose at every branch): ${nums}`;
  if (p.ask && p.asked) return `Asked: ${nums}`;
  if (p.ask) return `Went on (asking is off): ${nums}`;
  return `Went on: ${nums}`;
}

export function pausesFor(state: WorkspaceState, node: number): PauseLine[] {
  return state.pauses.filter((p) => p.node === node);
}

export const ORIGIN_LABEL: Record<Origin, string> = {
  root: 'root',
  planned: 'planned',
  wild_card: 'wild card',
  user: 'yours',
  steering: 'steering',
  gap: 'gap',
  need: 'for you',
};

export const PROVENANCE_LABEL: Record<Provenance, string> = {
  initial_query: 'query',
  knowledge_gap: 'knowledge gap',
  steering: 'steering',
  user_pause: 'your answer',
};

export function usageLine(state: WorkspaceState): string {
  const u = state.usage;
  const n = (x: number): string => x.toLocaleString('en-US');
  const stage = u.stage ? `Stage: ${u.stage} · ` : '';
  return `${stage}${n(u.calls)} LLM call${u.calls === 1 ? '' : 's'} · ${n(u.prompt_tokens)} tokens in · ${n(u.generated_tokens)} out`;
}
