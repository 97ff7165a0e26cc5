// Typed wrappers for every command of docs/desktop-api.md and its four events. Arguments are
// passed as Tauri expects them: the Rust `arg_name` becomes `argName`.

import { invoke } from '@tauri-apps/api/core';
import { listen, type UnlistenFn } from '@tauri-apps/api/event';
import type {
  AppSettings,
  CitationTarget,
  DocsReport,
  EngineStatus,
  Envelope,
  FetchSummary,
  ForgetSelector,
  ForgetSummary,
  HistoryFilters,
  HistoryHit,
  HistoryEntry,
  ImportProgress,
  ImportReport,
  LibraryStats,
  ModelProgress,
  ModelRow,
  Reply,
  ReportView,
  ResearchEventPayload,
  ResearchRequest,
  ResearchStateEvent,
  SayRequest,
  SessionRow,
  SourceView,
  SteeringAck,
  YouView,
} from './types';

export const engineStatus = (): Promise<EngineStatus> => invoke('engine_status');
export const modelsList = (): Promise<ModelRow[]> => invoke('models_list');
export const modelsFetch = (names: string[]): Promise<FetchSummary> =>
  invoke('models_fetch', { names });
export const settingsGet = (): Promise<AppSettings> => invoke('settings_get');
export const settingsSet = (settings: AppSettings): Promise<AppSettings> =>
  invoke('settings_set', { settings });
export const importPaths = (paths: string[]): Promise<ImportReport> =>
  invoke('import_paths', { paths });
export const docsAdd = (paths: string[]): Promise<DocsReport> => invoke('docs_add', { paths });
export const libraryStats = (): Promise<LibraryStats> => invoke('library_stats');
export const corpusAdd = (name: string | null): Promise<DocsReport> => invoke('corpus_add', { name });
export const historySearch = (query: string, filters: HistoryFilters): Promise<HistoryHit[]> =>
  invoke('history_search', { query, filters });
export const historyShow = (id: number): Promise<HistoryEntry> => invoke('history_show', { id });
export const historyForget = (selector: ForgetSelector): Promise<ForgetSummary> =>
  invoke('history_forget', { selector });
export const researchStart = (request: ResearchRequest): Promise<number> =>
  invoke('research_start', { request });
export const researchReply = (session: number, reply: Reply): Promise<void> =>
  invoke('research_reply', { session, reply });
export const researchSteer = (session: number, text: string): Promise<SteeringAck> =>
  invoke('research_steer', { session, text });
export const researchStop = (session: number): Promise<void> =>
  invoke('research_stop', { session });
export const sessionsList = (): Promise<SessionRow[]> => invoke('sessions_list');
export const sessionEvents = (session: number): Promise<Envelope[]> =>
  invoke('session_events', { session });
export const sessionResume = (session: number): Promise<void> =>
  invoke('session_resume', { session });
export const sessionReport = (session: number): Promise<ReportView> =>
  invoke('session_report', { session });
export const sessionExport = (session: number, dir: string): Promise<string[]> =>
  invoke('session_export', { session, dir });
export const sourceOpen = (target: CitationTarget): Promise<SourceView> =>
  invoke('source_open', { target });

export const youView = (): Promise<YouView> => invoke('you_view');
export const youSay = (request: SayRequest): Promise<YouView> => invoke('you_say', { request });
export const youUnsay = (id: string): Promise<YouView> => invoke('you_unsay', { id });
export const youRestore = (id: string): Promise<YouView> => invoke('you_restore', { id });
export const youPersonalise = (source: string, personalised: boolean): Promise<YouView> =>
  invoke('you_personalise', { source, personalised });
export const youBuild = (query: string | null): Promise<YouView> => invoke('you_build', { query });
export const youRemember = (): Promise<YouView> => invoke('you_remember');

export const onModelProgress = (f: (p: ModelProgress) => void): Promise<UnlistenFn> =>
  listen<ModelProgress>('model-progress', (e) => f(e.payload));
export const onImportProgress = (f: (p: ImportProgress) => void): Promise<UnlistenFn> =>
  listen<ImportProgress>('import-progress', (e) => f(e.payload));
export const onResearchEvent = (f: (p: ResearchEventPayload) => void): Promise<UnlistenFn> =>
  listen<ResearchEventPayload>('research-event', (e) => f(e.payload));
export const onResearchState = (f: (p: ResearchStateEvent) => void): Promise<UnlistenFn> =>
  listen<ResearchStateEvent>('research-state', (e) => f(e.payload));

/** Errors from `invoke` are the command's `Err(String)`, or an Error outside Tauri. */
export function errorText(err: unknown): string {
  if (typeof err === 'string') return err;
  if (err instanceof Error) return err.message;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}
