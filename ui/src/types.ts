// The JSON shapes of docs/desktop-api.md and of `rudder::research::Event` (serde, snake_case).
// Every string in here is untrusted text: render it with textContent only.

export type ModelState = 'present' | 'missing' | 'incomplete' | 'unknown';

export interface EngineStatus {
  data_dir: string;
  models_dir: string;
  chat_model: string;
  chat_model_present: boolean;
  chat_model_state: ModelState | string;
  embed_model: string;
  embed_model_present: boolean;
  threads: number;
  gpu_layers: number;
}

export interface ModelRow {
  name: string;
  role: string;
  size_bytes: number;
  state: ModelState | string;
  license: string;
  description: string;
  configured: boolean;
}

export interface FetchSummary {
  fetched: string[];
  already_present: string[];
}

export interface ModelProgress {
  name: string;
  file: string;
  done: number;
  total: number | null;
  finished: boolean;
}

export interface AppSettings {
  chat_model: string;
  chat_models: string[];
  threads: number;
  gpu_layers: number;
  depth: number;
  breadth: number;
  c0: number;
  tol: number;
  lambda_explore: number;
  lambda_info: number;
  clarify_turns: number;
  /** Ask at every branch, not only when the pause rule says it pays off. */
  always_ask: boolean;
  web_enabled: boolean;
  searxng_url: string;
  web_disclosure: string;
}

export interface ImportProgress {
  phase: string;
  done: number;
  total: number | null;
  file: string;
}

export type FileStatus =
  | { status: 'imported' }
  | { status: 'skipped'; reason: string }
  | { status: 'failed'; reason: string };

export interface FileReport {
  file: string;
  format: string | null;
  added: number;
  updated: number;
  duplicates: number;
  signals: number;
  /** Items the export holds that could not be read (skipped, the rest imported). */
  skipped_items?: number;
  /** Messages over 1 MB, stored cut to that size. */
  truncated_turns?: number;
  /** Why, for the first few skipped or cut items. */
  notes?: string[];
  status: FileStatus;
}

export interface ImportReport {
  files: FileReport[];
  added: number;
  updated: number;
  duplicates: number;
  signals: number;
  failed_files: number;
  seconds: number;
}

export interface DocsReport {
  added: number;
  updated: number;
  unchanged: number;
  removed: number;
  failed: number;
  errors: string[];
}

export interface LibraryStats {
  history_sessions: number;
  history_sources: { source: string; sessions: number }[];
  documents: number;
  chunks: number;
}

export interface HistoryFilters {
  kind?: string;
  source?: string;
  since?: string;
  until?: string;
  limit?: number;
}

export interface HistoryHit {
  id: number;
  score: number;
  bm25_rank: number | null;
  vector_rank: number | null;
  kind: string;
  source: string;
  title: string;
  url?: string;
  started_at: string | null;
  snippet: string;
}

export interface HistoryTurn {
  role: string;
  text: string;
  at: string | null;
}

export interface HistorySession {
  id: number;
  title: string;
  source: string;
  kind: string;
  started_at: string | null;
  url: string | null;
  turns: HistoryTurn[];
}

export interface ForgetSelector {
  id?: number;
  source?: string;
  since?: string;
  until?: string;
  all?: boolean;
}

export interface ForgetSummary {
  sessions_removed: number;
}

export interface ResearchRequest {
  question: string;
  persona: string;
  use_history: boolean;
  use_docs: boolean;
  depth?: number;
  breadth?: number;
  c0?: number;
  tol?: number;
  clarify_turns?: number;
}

export interface ClarifyReply {
  kind: 'clarify';
  choices: number[];
  text: string;
  skip: boolean;
}

export interface PauseReply {
  kind: 'pause';
  chosen: number[];
  new_questions: string[];
  text: string;
}

export type Reply = ClarifyReply | PauseReply;

export interface SteeringAck {
  id: number;
  text: string;
}

export type RunStateName = 'running' | 'waiting' | 'finished' | 'stopped' | 'failed';

export interface ResearchStateEvent {
  session: number;
  state: RunStateName;
  message: string;
}

export interface ResearchEventPayload {
  session: number;
  envelope: Envelope;
}

export type SessionStatus = 'running' | 'interrupted' | 'finished' | 'failed';

export interface SessionRow {
  id: number;
  query: string;
  title: string | null;
  status: SessionStatus;
  created_at: string;
  updated_at: string;
  events: number;
  pending_steering: number;
  live: boolean;
}

export type CitationTarget =
  | { kind: 'document'; path: string; chunk: number; page?: number; url?: string }
  | { kind: 'history'; session: number; url?: string }
  | { kind: 'web'; url: string };

export interface ReportReference {
  number: number;
  title: string;
  target: CitationTarget;
  label: string;
}

export interface ReportView {
  session: number;
  title: string;
  markdown: string;
  html: string;
  references: ReportReference[];
}

export interface SourceView {
  title: string;
  text: string;
  location: string;
  url: string | null;
  history_session: number | null;
}

// ---- The research event stream (src/research/events.rs and the structs it names) ----

export type Origin = 'root' | 'planned' | 'wild_card' | 'user' | 'steering' | 'gap';
export type NodeStatus = 'pending' | 'researching' | 'done' | 'canceled';
export type TaskStatus = 'pending' | 'in_progress' | 'completed' | 'canceled';
export type Provenance = 'initial_query' | 'knowledge_gap' | 'steering' | 'user_pause';
export type Stage =
  | 'profile'
  | 'persona'
  | 'research'
  | 'alignment'
  | 'question'
  | 'report'
  | 'clarify'
  | 'reflect';

export interface FollowUp {
  question: string;
  confidence: number;
  tags: string[];
  wild_card: boolean;
}

export interface Learning {
  id: number;
  node: number;
  text: string;
  sources: string[];
}

export interface Evidence {
  target: CitationTarget;
  title: string;
  text: string;
  score: number;
}

export interface Task {
  id: number;
  text: string;
  priority: number;
  status: TaskStatus;
  provenance: Provenance;
  node: number;
  created_at: string;
  updated_at: string;
  note?: string;
}

export interface Persona {
  text: string;
  checklist: string[];
}

export interface Utility {
  alignment: number;
  delta_align: number;
  explore: number;
  info_gain: number;
  total: number;
}

export interface ScoredCandidate {
  follow_up: FollowUp;
  expected_evidence: string[];
  utility: Utility;
  execution_cost: number;
}

export interface PauseDecision {
  utilities: number[];
  radii: number[];
  execution_costs: number[];
  could_be_best: number[];
  gain: number;
  cost: number;
  direction_pauses: number;
  direction_tolerance: number;
  ask: boolean;
  /** Asked only because the user wants to be asked at every branch. */
  forced?: boolean;
}

export interface PauseQuestion {
  node: number;
  introduction: string;
  directions: string[];
  questions: string[];
  why: string;
}

export interface PauseAnswer {
  chosen: number[];
  new_questions: string[];
  text: string;
}

export interface ClarifyQuestion {
  turn: number;
  question: string;
  options: string[];
}

export interface ClarifyAnswer {
  choices: number[];
  text: string;
  skip: boolean;
}

export type RejectReason =
  | { kind: 'redundant'; similar_to: string; similarity: number }
  | { kind: 'unrelated'; similarity: number };

export interface Rejected {
  question: string;
  reason: RejectReason;
}

export interface SteeringMessage {
  id: number;
  text: string;
  received_at: string;
}

export interface Usage {
  prompt_tokens: number;
  cached_tokens: number;
  generated_tokens: number;
  calls: number;
}

export interface ReportParagraph {
  text: string;
  citations: number[];
}

/** The report as the log stores it (`Report`); the viewer uses `ReportView` instead. */
export interface Report {
  title: string;
  query: string;
  summary: ReportParagraph;
  sections: { heading: string; direction: number | null; paragraphs: ReportParagraph[] }[];
  closing: string;
  references: { number: number; key: string; title: string; target: CitationTarget }[];
  markdown: string;
}

export type ResearchEvent =
  | {
      type: 'started';
      query: string;
      depth: number;
      breadth: number;
      sources: string[];
      model: string;
      remote_sources: boolean;
      date?: string;
      persona_text?: string;
      profile?: string;
    }
  | { type: 'clarify_asked'; question: ClarifyQuestion; rejected?: Rejected[] }
  | { type: 'clarify_answered'; turn: number; answer: ClarifyAnswer }
  | { type: 'brief_refined'; brief: string; checklist: string[]; turns: number }
  | { type: 'persona_seeded'; persona: Persona; from_profile: boolean }
  | {
      type: 'node_added';
      id: number;
      parent: number | null;
      depth: number;
      question: string;
      origin: Origin;
      confidence?: number;
      tags?: string[];
      prefetched?: Evidence[];
    }
  | { type: 'node_started'; id: number }
  | { type: 'learning'; learning: Learning }
  | {
      type: 'node_researched';
      id: number;
      evidence: number;
      learnings: number;
      tags: string[];
      follow_ups: FollowUp[];
      sources?: Evidence[];
    }
  | { type: 'task_added'; task: Task }
  | { type: 'task_updated'; id: number; status?: TaskStatus; priority?: number; note?: string }
  | { type: 'steering_applied'; messages: SteeringMessage[]; summary: string }
  | { type: 'directives_added'; exclusions: string[]; focus: string[] }
  | { type: 'reflected'; level: number | null; knowledge_gaps: string[]; canceled: number[] }
  | { type: 'candidates_selected'; node: number; candidates: FollowUp[]; selected: number[] }
  | {
      type: 'pause_decided';
      node: number;
      candidates: ScoredCandidate[];
      parent_alignment: number;
      decision: PauseDecision;
      asked: boolean;
    }
  | { type: 'question'; question: PauseQuestion }
  | { type: 'answer'; node: number; answer: PauseAnswer }
  | { type: 'persona_updated'; persona: Persona; added_text: string; added_items: string[] }
  | { type: 'report_section'; index: number; heading: string }
  | { type: 'report_written'; title: string; words: number; citations: number; report?: Report }
  | { type: 'usage'; stage: Stage; usage: Usage; seconds: number }
  | { type: 'finished'; usage: Usage; seconds: number; pauses: number };

export type EventType = ResearchEvent['type'];

export interface Envelope {
  seq: number;
  at: string;
  event: ResearchEvent;
}
