// The JSON shapes of docs/desktop-api.md and of `rudder::research::Event`.
//
// Every shape that crosses the IPC boundary is generated from the Rust types by ts-rs into
// ./generated/ (committed); `tests/ui_contract.rs` fails when the two drift, and
// `RUDDER_UPDATE_UI_TYPES=1 cargo test --test ui_contract` regenerates them. This file only
// re-exports them, under the names the window uses, and adds what the window narrows or
// defines itself. Never copy a Rust type by hand here.
//
// Every string in here is untrusted text: render it with textContent only.

import type {
  DocsSummary,
  ForgetSelectorView,
  HistoryEntryView,
  ReferenceView,
  ReplyView,
  RunState,
  SearchHit,
  TurnView,
  Envelope,
  ResearchEvent,
} from './generated';

export type {
  AppSettings,
  CitationTarget,
  ClarifyAnswer,
  ClarifyQuestion,
  EngineStatus,
  Envelope,
  Evidence,
  FetchSummary,
  FileReport,
  FileStatus,
  FollowUp,
  ForgetSummary,
  HistoryFilters,
  HistoryFormat,
  HistoryKind,
  HistorySource,
  ImportProgress,
  ImportReport,
  Learning,
  LibraryStats,
  ModelProgress,
  ModelRow,
  Origin,
  PauseAnswer,
  PauseDecision,
  PauseQuestion,
  Persona,
  Provenance,
  Reference,
  RejectReason,
  Rejected,
  Report,
  ReportParagraph,
  ReportSection,
  ReportView,
  ResearchEvent,
  ResearchRequest,
  RunState,
  ScoredCandidate,
  SessionRow,
  SessionStatus,
  SourceCount,
  SourceView,
  Stage,
  SteeringAck,
  SteeringMessage,
  Task,
  TaskStatus,
  Usage,
  Utility,
  InterestView,
  QueryProfileView,
  SayRequest,
  EntryRef,
  SourceSwitch,
  StatementView,
  YouView,
} from './generated';

// ---- Names the window uses for generated types ----

/** `docs_add`'s result (`rudder::app::library::DocsSummary`). */
export type DocsReport = DocsSummary;
/** One `history_search` result (`rudder::history::SearchHit`). */
export type HistoryHit = SearchHit;
/** `history_show`'s result (`rudder::app::HistoryEntryView`). */
export type HistoryEntry = HistoryEntryView;
export type HistoryTurn = TurnView;
/** `history_forget`'s selector: every field has a default on the Rust side. */
export type ForgetSelector = Partial<ForgetSelectorView>;
/** `research_reply`'s argument (`rudder::app::ReplyView`). */
export type Reply = ReplyView;
export type ClarifyReply = Extract<ReplyView, { kind: 'clarify' }>;
export type PauseReply = Extract<ReplyView, { kind: 'pause' }>;
/** The `research-state` event (`rudder::app::RunState`). */
export type ResearchStateEvent = RunState;
export type RunStateName = RunState['state'];
/** A report's reference as the viewer gets it (`rudder::app::research::ReferenceView`). */
export type ReportReference = ReferenceView;
export type EventType = ResearchEvent['type'];

// ---- The window's own types ----

/** What `EngineStatus.chat_model_state` and `ModelRow.state` hold (typed `string` in Rust). */
export type ModelState = 'present' | 'missing' | 'incomplete' | 'unknown';

/** A tree node's status as the reducer derives it from the events. */
export type NodeStatus = 'pending' | 'researching' | 'done' | 'canceled';

/**
 * The `research-event` payload. The shell's struct (`src-tauri/src/main.rs`, borrowing the
 * envelope) is not exported; its envelope is.
 */
export interface ResearchEventPayload {
  session: number;
  envelope: Envelope;
}
