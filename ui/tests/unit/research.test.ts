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
import type { Envelope } from '../../src/types';
import { Script, phaseAnswered, phaseClarify, phaseFirstLevel, phaseReport, phaseSteered, QUERY } from '../fixtures/run';

const NEW_Q = 'Does standing all day cause varicose veins?';

function fullRun(): { s: Script; phases: Envelope[][] } {
  const s = new Script();
  const phases = [
    phaseClarify(s),
    phaseFirstLevel(s, [1], 'mostly evidence'),
    phaseAnswered(s, { chosen: [2], new_questions: [NEW_Q], text: '' }),
    phaseSteered(s, { id: 1, text: 'Also look into sit-stand timing. Ignore brand comparisons.' }, 3, 3, 2),
    phaseReport(s),
  ];
  return { s, phases };
}

const live = (envs: Envelope[], from: WorkspaceState = initialState()): WorkspaceState => {
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
    expect(q && q.kind === 'clarify' ? q.options : []).toEqual(['Pain relief evidence', 'Cost and setup', 'Posture habits']);
    expect(afterClarify.query).toBe(QUERY);
    expect(afterClarify.persona.text).toBe('Developer who sits all day');

    const afterFirst = live(phases[1]!, afterClarify);
    const clarify = afterFirst.conversation.find((c) => c.kind === 'clarify');
    expect(clarify && clarify.kind === 'clarify' && clarify.closed).toBe(true);
    const bubble = afterFirst.conversation.find((c) => c.kind === 'user' && c.via === 'clarify');
    expect(bubble && bubble.kind === 'user' ? bubble.text : '').toBe('Pain relief evidence — mostly evidence');
    expect(afterFirst.brief).toMatch(/standing desks reduce lower back pain/);
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
    expect(st.nodes[0]?.learnings).toBe(2);
    expect(st.nodes[1]).toMatchObject({ question: 'Do anti-fatigue mats help?', origin: 'planned', status: 'done', parent: 0 });
    // Its task was canceled by steering before it was researched.
    expect(st.nodes[2]).toMatchObject({ question: NEW_Q, origin: 'user', status: 'canceled' });
    expect(st.nodes[3]).toMatchObject({ origin: 'steering', status: 'done', learnings: 1 });
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
    expect(g.completed.map((t) => t.id)).toEqual([0, 1, 3]);
    expect(g.canceled.map((t) => t.id)).toEqual([2]);
    expect(g.canceled[0]?.note).toMatch(/Canceled by steering/);
    expect(st.tasks.find((t) => t.id === 3)?.provenance).toBe('steering');
    const taskEvents = phases.flat().filter((e) => e.event.type === 'task_added' || e.event.type === 'task_updated');
    expect(st.todoVersion).toBe(taskEvents.length);
  });

  it('orders open tasks: in progress first, then by priority', () => {
    const { phases } = fullRun();
    const envs = phases.flat();
    const cut = envs.findIndex((e) => e.event.type === 'steering_applied');
    const st = live(envs.slice(0, cut));
    const g = todoGroups(st);
    expect(g.open.map((t) => t.id)).toEqual([2]);
  });

  it('explains each pause decision', () => {
    const { phases } = fullRun();
    const st = live(phases.flat());
    expect(st.pauses.map(pauseLineText)).toEqual(['Asked: ΔEV 0.31 > C 0.12', 'Went on: ΔEV 0.05 ≤ C 0.70']);
    expect(pausesFor(st, 0)).toHaveLength(1);
    expect(pausesFor(st, 1)).toHaveLength(1);
    expect(pauseLineText({ ...st.pauses[0]!, asked: false })).toBe('Went on (asking is off): ΔEV 0.31 > C 0.12');
    expect(pauseLineText({ ...st.pauses[1]!, ask: true, forced: true, asked: true })).toBe(
      'Asked (you asked to choose at every branch): ΔEV 0.05 ≤ C 0.70',
    );
  });

  it('records the pause answer, the persona update and steering', () => {
    const { phases } = fullRun();
    const st = live(phases.flat());
    expect(openQuestion(st)).toBeNull();
    const pause = st.conversation.find((c) => c.kind === 'pause');
    expect(pause && pause.kind === 'pause' ? pause.answer : null).toEqual({ chosen: [2], new_questions: [NEW_Q], text: '' });
    const answer = st.conversation.find((c) => c.kind === 'user' && c.via === 'pause');
    expect(answer && answer.kind === 'user' ? answer.text : '').toBe(`2. Whether anti-fatigue mats help\nNew: ${NEW_Q}`);
    expect(st.persona.checklist).toEqual([
      'Covers clinical evidence on back pain',
      'Covers cost of standing desks',
      'Covers anti-fatigue mats',
    ]);
    const steering = st.conversation.filter((c) => c.kind === 'steering');
    expect(steering).toHaveLength(1);
    expect(steering[0]).toMatchObject({ id: 1, status: 'applied' });
    const notes = st.conversation.filter((c) => c.kind === 'note').map((c) => (c.kind === 'note' ? c.text : ''));
    expect(notes).toContain('Steering applied: Look into sit-stand timing studies; leave out brand comparisons');
    expect(notes.some((n) => n.startsWith('Persona updated: Cares about equipment'))).toBe(true);
    expect(st.exclusions).toEqual(['brand comparisons']);
    expect(st.focus).toEqual(['sit-stand timing']);
  });

  it('knows when the report is written, and when later research makes it stale', () => {
    const { s, phases } = fullRun();
    const st = live(phases.flat());
    expect(st.report).toEqual({ title: 'Standing desks and lower back pain', words: 812, citations: 3, stale: false });
    expect(st.finished).toBe(true);
    expect(st.usage.calls).toBe(8);
    expect(usageLine(st)).toBe('Stage: report · 8 LLM calls · 9,520 tokens in · 1,300 out');
    const later = reduce(st, s.env({ type: 'node_researched', id: 3, evidence: 1, learnings: 0, tags: [], follow_ups: [] }));
    expect(later.report?.stale).toBe(true);
  });

  it('replaying the log gives the same state as the live events', () => {
    const { s, phases } = fullRun();
    const liveState = live(phases.flat());
    expect(replay(s.log)).toEqual(liveState);
    // Order of arrival does not matter to a replay: it folds by seq.
    expect(replay([...s.log].reverse())).toEqual(liveState);
  });

  it('ignores an event it has already seen', () => {
    const { s } = fullRun();
    const once = replay(s.log);
    const dup = s.log[10]!;
    expect(reduce(once, dup)).toBe(once);
    // A log replayed on top of live events changes nothing.
    expect(live(s.log, once)).toBe(once);
    // A log with duplicates folds like the log without them.
    expect(replay([...s.log, ...s.log.slice(3, 20)])).toEqual(once);
  });

  it('does not mutate the state it is given', () => {
    const { s } = fullRun();
    const before = replay(s.log.slice(0, 20));
    const snapshot = JSON.stringify(before);
    live(s.log.slice(20), before);
    expect(JSON.stringify(before)).toBe(snapshot);
  });

  it('shows a steering message as queued, then applied, once', () => {
    const { s, phases } = fullRun();
    const cut = phases[0]!.length + phases[1]!.length + phases[2]!.length;
    let st = replay(s.log.slice(0, cut));
    st = steeringQueued(st, { id: 1, text: 'Also look into sit-stand timing. Ignore brand comparisons.' });
    expect(st.conversation.filter((c) => c.kind === 'steering')).toEqual([
      expect.objectContaining({ id: 1, status: 'queued' }),
    ]);
    st = live(s.log.slice(cut), st);
    expect(st.conversation.filter((c) => c.kind === 'steering')).toEqual([
      expect.objectContaining({ id: 1, status: 'applied' }),
    ]);
  });

  it('closes an unanswered clarifying question when the brief is refined', () => {
    const s = new Script();
    phaseClarify(s);
    s.env({ type: 'brief_refined', brief: QUERY, checklist: [], turns: 1 });
    const st = replay(s.log);
    expect(openQuestion(st)).toBeNull();
  });

  it('keeps a researched node done when its task is canceled later', () => {
    const s = new Script();
    s.many([
      { type: 'node_added', id: 0, parent: null, depth: 0, question: 'q', origin: 'root' },
      { type: 'task_added', task: { id: 0, text: 'q', priority: 10, status: 'pending', provenance: 'initial_query', node: 0, created_at: '', updated_at: '' } },
      { type: 'node_researched', id: 0, evidence: 0, learnings: 0, tags: [], follow_ups: [] },
      { type: 'task_updated', id: 0, status: 'canceled' },
    ]);
    const st = replay(s.log);
    expect(st.nodes[0]?.status).toBe('done');
    expect(st.tasks[0]?.status).toBe('canceled');
  });
});
