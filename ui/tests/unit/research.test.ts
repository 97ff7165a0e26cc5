import { describe, expect, it } from 'vitest';
import {
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
  type WorkspaceState,
} from '../../src/state/research';
import type { Envelope, ResearchEvent } from '../../src/types';
import researchLog from '../fixtures/research-log.json';

// The event log of a real research run: the Rust loop with a scripted model, through a
// clarifying question, a pause answered with one offered direction and one new question, a
// steering message (a new task, the user's question excluded) and the report. Written by
// tests/ui_contract.rs, which fails when the loop's output changes; regenerate with
// `RUDDER_UPDATE_UI_TYPES=1 cargo test --test ui_contract`.
const LOG: readonly Envelope[] = researchLog as unknown as Envelope[];

const QUERY = 'How should I brew tea?';
const NEW_Q = 'Does tea go stale in the cupboard?';
const STEERING = 'Also look into tea chemistry. Ignore poems. Skip the cupboard.';

function at(type: ResearchEvent['type'], from = 0): number {
  const i = LOG.findIndex((e, k) => k >= from && e.event.type === type);
  if (i < 0) throw new Error(`the log has no ${type} event after ${from}`);
  return i;
}

/** The log cut into the phases the window goes through. */
function fullRun(): { log: readonly Envelope[]; phases: Envelope[][] } {
  const clarifyAsked = at('clarify_asked') + 1;
  const paused = at('question') + 1;
  const steered = at('steering_applied');
  const reflected = at('reflected', steered) + 1;
  const phases = [
    LOG.slice(0, clarifyAsked), // started, the clarifying question
    LOG.slice(clarifyAsked, paused), // its answer, the root researched, the pause
    LOG.slice(paused, steered), // the pause answer: persona update, the new directions
    LOG.slice(steered, reflected), // steering applied: a task added, one canceled
    LOG.slice(reflected), // the research, a pause that goes on, the report
  ];
  return { log: LOG, phases };
}

/** Envelopes for events after `after`, numbered on. */
function more(after: readonly Envelope[], events: ResearchEvent[]): Envelope[] {
  const seq = after.length === 0 ? 0 : after[after.length - 1]!.seq + 1;
  return events.map((event, i) => ({ seq: seq + i, at: '2025-05-01T12:00:00Z', event }));
}

function last<T extends ResearchEvent['type']>(type: T): Extract<ResearchEvent, { type: T }> {
  const e = [...LOG].reverse().find((x) => x.event.type === type);
  if (!e) throw new Error(`the log has no ${type} event`);
  return e.event as Extract<ResearchEvent, { type: T }>;
}

const live = (envs: readonly Envelope[], from: WorkspaceState = initialState()): WorkspaceState => {
  let st = from;
  for (const e of envs) st = reduce(st, e);
  return st;
};

describe('research reducer', () => {
  it('asks the clarifying question, then answers it', () => {
    const { phases } = fullRun();
    const afterClarify = live(phases[0]!);
    const q = openQuestion(afterClarify);
    expect(q?.kind).toBe('clarify');
    expect(q && q.kind === 'clarify' ? q.options : []).toEqual(['For myself', 'For guests', 'Both']);
    expect(afterClarify.query).toBe(QUERY);
    expect(afterClarify.persona.text).toBe('A home cook who likes tea.');

    const afterFirst = live(phases[1]!, afterClarify);
    const clarify = afterFirst.conversation.find((c) => c.kind === 'clarify');
    expect(clarify && clarify.kind === 'clarify' && clarify.closed).toBe(true);
    const bubble = afterFirst.conversation.find((c) => c.kind === 'user' && c.via === 'clarify');
    expect(bubble && bubble.kind === 'user' ? bubble.text : '').toBe('For myself — mostly evidence');
    expect(afterFirst.brief).toMatch(/Brew tea at home for guests/);
    const pause = openQuestion(afterFirst);
    expect(pause?.kind).toBe('pause');
    expect(pause && pause.kind === 'pause' ? pause.directions.length : 0).toBe(2);
  });

  it('builds the tree with nesting, statuses and origins', () => {
    const { phases } = fullRun();
    const st = live(phases.flat());
    const roots = treeRoots(st);
    expect(roots.map((r) => r.id)).toEqual([0]);
    expect(st.nodes[0]?.children).toEqual([1, 2, 3]);
    expect(st.nodes[0]?.status).toBe('done');
    expect(st.nodes[0]?.learnings).toBe(3);
    expect(st.nodes[1]).toMatchObject({ question: 'How does brewing shape the tea I brew 9939?', origin: 'planned', status: 'done', parent: 0 });
    expect(st.nodes[1]?.children).toEqual([4, 5]);
    // Its task was canceled by steering before it was researched.
    expect(st.nodes[2]).toMatchObject({ question: NEW_Q, origin: 'user', status: 'canceled' });
    expect(st.nodes[3]).toMatchObject({ origin: 'steering', status: 'done', learnings: 2 });
  });

  it('marks a node researching between node_started and node_researched', () => {
    const { phases } = fullRun();
    const envs = phases.flat();
    const started = envs.findIndex((e) => e.event.type === 'node_started');
    const st = live(envs.slice(0, started + 1));
    expect(st.nodes[0]?.status).toBe('researching');
  });

  it('groups the todo plan and keeps notes and versions', () => {
    const { phases } = fullRun();
    const st = live(phases.flat());
    const g = todoGroups(st);
    expect(g.open).toEqual([]);
    expect(g.completed.map((t) => t.id)).toEqual([0, 1, 3, 4, 5]);
    expect(g.canceled.map((t) => t.id)).toEqual([2]);
    expect(g.canceled[0]?.note).toBe('excluded by steering');
    expect(st.tasks.find((t) => t.id === 3)?.provenance).toBe('steering');
    const taskEvents = phases.flat().filter((e) => e.event.type === 'task_added' || e.event.type === 'task_updated');
    expect(st.todoVersion).toBe(taskEvents.length);
  });

  it('orders open tasks: in progress first, then by priority', () => {
    const { phases } = fullRun();
    const envs = phases.flat();
    const cut = envs.findIndex((e) => e.event.type === 'steering_applied');
    let st = live(envs.slice(0, cut));
    // The user's own question (priority 10) before the offered direction (9).
    expect(todoGroups(st).open.map((t) => t.id)).toEqual([2, 1]);
    const started = envs.findIndex((e, i) => i > cut && e.event.type === 'task_updated' && e.event.status === 'in_progress');
    st = live(envs.slice(cut, started + 1), st);
    // The steering task runs first; the canceled one is gone.
    expect(todoGroups(st).open.map((t) => t.id)).toEqual([3, 1]);
  });

  it('explains each pause decision', () => {
    const { phases } = fullRun();
    const st = live(phases.flat());
    expect(st.pauses.map(pauseLineText)).toEqual(['Asked: ΔEV 0.64 > C 0.50', 'Went on: ΔEV 0.40 ≤ C 0.50']);
    expect(pausesFor(st, 0)).toHaveLength(1);
    expect(pausesFor(st, 1)).toHaveLength(1);
    expect(pauseLineText({ ...st.pauses[0]!, asked: false })).toBe('Went on (asking is off): ΔEV 0.64 > C 0.50');
    expect(pauseLineText({ ...st.pauses[1]!, ask: true, forced: true, asked: true })).toBe(
      'Asked (you asked to choose at every branch): ΔEV 0.40 ≤ C 0.50',
    );
  });

  it('keeps which checklist items the model guessed from the question', () => {
    const guessed = ['Covers the cost', 'Covers safety'];
    const st = reduce(initialState(), {
      seq: 0,
      event: { type: 'persona_seeded', persona: { text: 'A home cook.', checklist: guessed }, from_profile: false, guessed },
    } as Envelope);
    expect(st.guessedChecklist).toEqual(guessed);
    // A log written before the field existed: nothing is marked guessed.
    const old = reduce(initialState(), {
      seq: 0,
      event: { type: 'persona_seeded', persona: { text: 'A home cook.', checklist: guessed }, from_profile: false },
    } as Envelope);
    expect(old.guessedChecklist).toEqual([]);
  });

  it('records the pause answer, the persona update and steering', () => {
    const { phases } = fullRun();
    const st = live(phases.flat());
    expect(openQuestion(st)).toBeNull();
    const pause = st.conversation.find((c) => c.kind === 'pause');
    expect(pause && pause.kind === 'pause' ? pause.answer : null).toEqual({ chosen: [1], new_questions: [NEW_Q], text: '' });
    const answer = st.conversation.find((c) => c.kind === 'user' && c.via === 'pause');
    expect(answer && answer.kind === 'user' ? answer.text : '').toBe(`1. Direction number 1\nNew: ${NEW_Q}`);
    expect(st.persona.checklist).toEqual(['Covers brewing for guests', 'Covers the cost of tea', 'Covers brewing in depth']);
    const steering = st.conversation.filter((c) => c.kind === 'steering');
    expect(steering).toHaveLength(1);
    expect(steering[0]).toMatchObject({ id: 1, status: 'applied' });
    const notes = st.conversation.filter((c) => c.kind === 'note').map((c) => (c.kind === 'note' ? c.text : ''));
    expect(notes).toContain('Steering applied: Look into tea chemistry; leave out poems');
    expect(notes.some((n) => n.startsWith('Persona updated: Cares about brewing.'))).toBe(true);
    expect(st.exclusions).toEqual(['poems', 'the cupboard']);
    expect(st.focus).toEqual(['tea chemistry']);
  });

  it('knows when the report is written, and when later research makes it stale', () => {
    const { log, phases } = fullRun();
    const st = live(phases.flat());
    // Words and tokens follow the prompts and templates: read from the log, not pinned.
    const written = last('report_written');
    const finished = last('finished');
    expect(st.report).toEqual({ title: 'What we learned about tea', words: written.words, citations: written.citations, stale: false });
    expect(written.citations).toBeGreaterThan(0);
    expect(st.finished).toBe(true);
    expect(st.usage.calls).toBe(finished.usage.calls);
    expect(finished.usage.calls).toBeGreaterThan(8);
    const n = (x: number): string => x.toLocaleString('en-US');
    expect(usageLine(st)).toBe(
      `Stage: report · ${finished.usage.calls} LLM calls · ${n(finished.usage.prompt_tokens)} tokens in · ${n(finished.usage.generated_tokens)} out`,
    );
    const later = reduce(
      st,
      more(log, [{ type: 'node_researched', id: 3, evidence: 1, learnings: 0, tags: [], follow_ups: [], sources: [] }])[0]!,
    );
    expect(later.report?.stale).toBe(true);
  });

  it('replaying the log gives the same state as the live events', () => {
    const { log, phases } = fullRun();
    const liveState = live(phases.flat());
    expect(replay(log)).toEqual(liveState);
    // Order of arrival does not matter to a replay: it folds by seq.
    expect(replay([...log].reverse())).toEqual(liveState);
  });

  it('ignores an event it has already seen', () => {
    const { log } = fullRun();
    const once = replay(log);
    const dup = log[10]!;
    expect(reduce(once, dup)).toBe(once);
    // A log replayed on top of live events changes nothing.
    expect(live(log, once)).toBe(once);
    // A log with duplicates folds like the log without them.
    expect(replay([...log, ...log.slice(3, 20)])).toEqual(once);
  });

  it('does not mutate the state it is given', () => {
    const { log } = fullRun();
    const before = replay(log.slice(0, 20));
    const snapshot = JSON.stringify(before);
    live(log.slice(20), before);
    expect(JSON.stringify(before)).toBe(snapshot);
  });

  it('shows a steering message as queued, then applied, once', () => {
    const { log, phases } = fullRun();
    const cut = phases[0]!.length + phases[1]!.length + phases[2]!.length;
    let st = replay(log.slice(0, cut));
    st = steeringQueued(st, { id: 1, text: STEERING });
    expect(st.conversation.filter((c) => c.kind === 'steering')).toEqual([
      expect.objectContaining({ id: 1, status: 'queued' }),
    ]);
    st = live(log.slice(cut), st);
    expect(st.conversation.filter((c) => c.kind === 'steering')).toEqual([
      expect.objectContaining({ id: 1, status: 'applied' }),
    ]);
  });

  it('closes an unanswered clarifying question when the brief is refined', () => {
    const { phases } = fullRun();
    const asked = phases[0]!;
    const st = replay([...asked, ...more(asked, [{ type: 'brief_refined', brief: QUERY, checklist: [], turns: 1 }])]);
    expect(openQuestion(st)).toBeNull();
  });

  it('keeps a researched node done when its task is canceled later', () => {
    const envs = more(
      [],
      [
        { type: 'node_added', id: 0, parent: null, depth: 0, question: 'q', origin: 'root', confidence: 1, tags: [] },
        {
          type: 'task_added',
          task: { id: 0, text: 'q', priority: 10, status: 'pending', provenance: 'initial_query', node: 0, created_at: '', updated_at: '' },
        },
        { type: 'node_researched', id: 0, evidence: 0, learnings: 0, tags: [], follow_ups: [], sources: [] },
        { type: 'task_updated', id: 0, status: 'canceled' },
      ],
    );
    const st = replay(envs);
    expect(st.nodes[0]?.status).toBe('done');
    expect(st.tasks[0]?.status).toBe('canceled');
  });
});
