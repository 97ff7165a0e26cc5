//! "What Rudder knows about you": the general profile and the recent query-aware profiles,
//! every statement with the entries it rests on, and the user's corrections — their own
//! statements, deleted inferred ones, sources switched off for personalisation. The CLI's
//! `rudder profile show | say | unsay | restore | exclude-source` call the same functions.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{App, AppError, AppResult};
use crate::history::store::Store;
use crate::history::UserStatement;
use crate::history::{History, HistorySource, StoredEntry};
use crate::models::ModelStore;
use crate::profile::query_profile::DOMAIN_NOT_INFERRED;
use crate::profile::user_statements::{check_statement, inferred_id, said_id, statement_key};
use crate::profile::{GeneralProfile, ProfileOptions, ProfileRun, QueryProfile, You};

/// Query-aware profiles listed.
const RECENT_PROFILES: usize = 5;

/// A history entry a statement rests on, enough to name it and open it in History.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct EntryRef {
    pub id: i64,
    pub title: String,
    pub source: String,
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub started_at: Option<DateTime<Utc>>,
}

/// One statement as the screen shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct StatementView {
    /// `i…` for an inferred statement, `u…` for one the user made.
    pub id: String,
    /// `emphasize`, `avoid`, `content depth`, `tone`, `explanation style`, `interest` or
    /// `presentation`.
    pub criterion: String,
    pub text: String,
    /// The user's own words ("you said").
    pub said: bool,
    pub sessions: Vec<EntryRef>,
    /// Where a statement that rests on no entry comes from (`chatgpt custom
    /// instructions`).
    pub origin: Option<String>,
}

/// One interest of the general profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct InterestView {
    /// The interest's name, as a statement the user can delete or correct.
    pub statement: StatementView,
    pub subtopics: Vec<String>,
    pub takeaway: String,
    /// How the user likes such answers presented, when inferred.
    pub presentation: Option<StatementView>,
}

/// The query-aware profile built for one question.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct QueryProfileView {
    pub query: String,
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub built_at: DateTime<Utc>,
    pub statements: Vec<StatementView>,
}

/// A source of imported history and whether it feeds profiles.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SourceSwitch {
    pub source: String,
    pub sessions: u64,
    pub personalised: bool,
}

/// Everything the screen shows.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct YouView {
    /// Whether any history is imported (else the screen points to Import).
    pub has_history: bool,
    /// The user's own statements, oldest first.
    pub said: Vec<StatementView>,
    /// The general profile, once built.
    pub interests: Vec<InterestView>,
    pub general_built: bool,
    /// Standing constraints: sentences of the custom instructions and memories the user
    /// wrote to other assistants, carried by every profile.
    pub standing: Vec<StatementView>,
    pub recent: Vec<QueryProfileView>,
    /// Inferred statements the user deleted; they stay out of profiles until restored.
    pub hidden: Vec<StatementView>,
    pub sources: Vec<SourceSwitch>,
    /// What Rudder remembers about the user: statements read from their history once, each
    /// with the entries it rests on (criterion: its kind, `constraint`, `background`,
    /// `preference` or `presentation`), the best supported first.
    pub memory: Vec<StatementView>,
    /// Entries not yet read into memory.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub memory_unread: u64,
}

/// A statement in the user's words: new, or correcting an inferred one (`corrects`, its id).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(optional_fields))]
pub struct SayRequest {
    pub text: String,
    /// One of the criteria; chosen from the words when absent.
    pub criterion: Option<String>,
    pub corrects: Option<String>,
}

impl App {
    /// The history database, created if there is none yet (the user may state things before
    /// importing anything).
    fn you_store(&self) -> AppResult<Store> {
        let dir = self.paths.history_dir();
        if let Some(store) = History::open_store(&dir)? {
            return Ok(store);
        }
        std::fs::create_dir_all(&dir).map_err(|source| AppError::Io {
            path: dir.clone(),
            source,
        })?;
        Ok(Store::open(&dir.join("history.sqlite")).map_err(crate::history::HistoryError::from)?)
    }

    /// What Rudder knows about the user. No model runs.
    pub fn you_view(&self) -> AppResult<YouView> {
        let Some(store) = History::open_store(&self.paths.history_dir())? else {
            return Ok(YouView::default());
        };
        let err = crate::history::HistoryError::from;
        let you = You::load(&store)?;
        let stats = store.stats().map_err(err)?;
        let general: Option<GeneralProfile> = store
            .recent_profiles("general", 1)
            .map_err(err)?
            .into_iter()
            .next()
            .and_then(|c| serde_json::from_str(&c.body).ok());
        let mut recent: Vec<(ProfileRun, DateTime<Utc>)> = store
            .recent_profiles("query", RECENT_PROFILES)
            .map_err(err)?
            .into_iter()
            .filter_map(|c| Some((serde_json::from_str(&c.body).ok()?, c.created_at)))
            .collect();
        // One profile per question: the newest.
        let mut seen = Vec::new();
        recent.retain(|(run, _)| {
            let key = statement_key(&run.profile.query);
            let fresh = !seen.contains(&key);
            seen.push(key);
            fresh
        });
        let memory = crate::profile::memory::usable(&store, &you)?;
        let memory_unread = store.count_unread_for_memory().map_err(err)?;
        let mut cited: Vec<i64> = you.hidden.iter().flat_map(|h| h.sessions.clone()).collect();
        cited.extend(
            memory
                .iter()
                .flat_map(|m| m.sessions.iter().map(|(id, _)| *id)),
        );
        if let Some(g) = &general {
            cited.extend(g.cited());
        }
        for (run, _) in &recent {
            cited.extend(run.profile.cited());
        }
        cited.sort_unstable();
        cited.dedup();
        let sessions = store.get_many(&cited).map_err(err)?;
        let refs = |ids: &[i64]| -> Vec<EntryRef> {
            ids.iter()
                .filter_map(|id| sessions.iter().find(|s| s.id == *id))
                .map(session_ref)
                .collect()
        };
        let inferred = |criterion: &str, text: &str, ids: &[i64]| StatementView {
            id: inferred_id(text),
            criterion: criterion.to_string(),
            text: text.to_string(),
            said: false,
            sessions: refs(ids),
            origin: None,
        };
        let interests = general
            .as_ref()
            .map(|g| {
                let mut g = g.clone();
                you.apply_general(&mut g);
                g.interests
                    .iter()
                    .map(|i| InterestView {
                        statement: inferred("interest", &i.name, &i.sessions),
                        subtopics: i.subtopics.clone(),
                        takeaway: i.takeaway.clone(),
                        presentation: (!i.presentation.trim().is_empty())
                            .then(|| inferred("presentation", &i.presentation, &i.sessions)),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut recent_views = Vec::new();
        for (run, built_at) in recent {
            let mut profile = run.profile;
            you.apply(&mut profile, None)?;
            recent_views.push(QueryProfileView {
                query: profile.query.clone(),
                built_at,
                statements: statement_views(&profile, &you, &refs),
            });
        }
        Ok(YouView {
            has_history: stats.sessions > 0,
            said: you
                .said
                .iter()
                .map(|s| StatementView {
                    id: said_id(s.id),
                    criterion: s.criterion.clone(),
                    text: s.text.clone(),
                    said: true,
                    sessions: Vec::new(),
                    origin: None,
                })
                .collect(),
            interests,
            general_built: general.is_some(),
            standing: you
                .standing
                .iter()
                .filter(|s| !you.hidden.iter().any(|h| h.key == statement_key(&s.text)))
                .map(|s| StatementView {
                    origin: Some(s.origin.clone()),
                    ..inferred("standing", &s.text, &[])
                })
                .collect(),
            recent: recent_views,
            hidden: you
                .hidden
                .iter()
                .map(|h| inferred("hidden", &h.text, &h.sessions))
                .collect(),
            sources: stats
                .by_source
                .iter()
                .map(|(source, &sessions)| SourceSwitch {
                    source: source.clone(),
                    sessions,
                    personalised: source
                        .parse::<HistorySource>()
                        .map(|s| you.personalises_from(s))
                        .unwrap_or(true),
                })
                .collect(),
            memory: memory
                .iter()
                .map(|m| {
                    let ids: Vec<i64> = m.sessions.iter().map(|(id, _)| *id).collect();
                    inferred(&m.kind, &m.text, &ids)
                })
                .collect(),
            memory_unread,
        })
    }

    /// Reads the history not yet in memory with the chat model (`import-progress` events, phase
    /// `reading into memory`), then returns the screen. Resumes where an earlier reading
    /// stopped.
    pub fn you_remember(&self) -> AppResult<YouView> {
        let settings = self.settings()?;
        let models = ModelStore::open(&self.paths)?;
        let llm = crate::llm::open_chat(&models, &settings, None)?;
        let mut history = self.history()?;
        let embedder = self.embedder()?;
        let progress = super::library::Forward::new(self.notifier.as_ref());
        crate::profile::memory::remember(
            llm.as_ref(),
            &mut history,
            embedder
                .as_deref()
                .map(|e| e as &dyn crate::embed::Embedder),
            &crate::profile::memory::RememberOptions::default(),
            &progress,
        )?;
        history.release_writer()?;
        self.you_view()
    }

    /// Stores a statement in the user's words; a correction also deletes the inferred
    /// statement it corrects. Returns the screen as it is now.
    pub fn you_say(&self, request: &SayRequest) -> AppResult<YouView> {
        let text = check_statement(&request.text)?;
        let view = self.you_view()?;
        let corrected = match request.corrects.as_deref() {
            Some(id) => Some(find_inferred(&view, id)?),
            None => None,
        };
        let criterion = match (&request.criterion, &corrected) {
            (Some(c), _) => {
                let c = c.trim().to_lowercase();
                if !crate::profile::CRITERIA.contains(&c.as_str()) {
                    return Err(AppError::Invalid(format!(
                        "unknown criterion {c:?}: one of {}",
                        crate::profile::CRITERIA.join(", ")
                    )));
                }
                c
            }
            (None, Some(old)) if crate::profile::CRITERIA.contains(&old.criterion.as_str()) => {
                old.criterion.clone()
            }
            _ => crate::profile::criterion_of(&text).to_string(),
        };
        let store = self.you_store()?;
        let err = crate::history::HistoryError::from;
        if let Some(old) = &corrected {
            hide(&store, old)?;
        }
        store
            .add_user_statement(
                &text,
                &criterion,
                corrected.as_ref().map(|o| o.text.as_str()),
            )
            .map_err(err)?;
        self.you_view()
    }

    /// Deletes a statement: the user's own (`u…`) is removed; an inferred one (`i…`) stays
    /// out of every later profile until restored.
    pub fn you_unsay(&self, id: &str) -> AppResult<YouView> {
        let store = self.you_store()?;
        let err = crate::history::HistoryError::from;
        if let Some(n) = id.strip_prefix('u').and_then(|n| n.parse::<i64>().ok()) {
            if !store.remove_user_statement(n).map_err(err)? {
                return Err(AppError::Invalid(format!("you made no statement {id}")));
            }
        } else {
            let view = self.you_view()?;
            hide(&store, &find_inferred(&view, id)?)?;
        }
        self.you_view()
    }

    /// Lets a deleted inferred statement back into profiles.
    pub fn you_restore(&self, id: &str) -> AppResult<YouView> {
        let store = self.you_store()?;
        let err = crate::history::HistoryError::from;
        let hidden = store.hidden_statements().map_err(err)?;
        let Some(h) = hidden.iter().find(|h| inferred_id(&h.text) == id) else {
            return Err(AppError::Invalid(format!("no deleted statement {id}")));
        };
        store.restore_statement(&h.key).map_err(err)?;
        self.you_view()
    }

    /// Switches personalisation from a source on or off; its entries stay searchable.
    pub fn you_personalise(&self, source: &str, personalised: bool) -> AppResult<YouView> {
        let source: HistorySource = source
            .parse()
            .map_err(|e: String| AppError::Invalid(format!("source: {e}")))?;
        let store = self.you_store()?;
        store
            .set_source_personalised(source, personalised)
            .map_err(crate::history::HistoryError::from)?;
        self.you_view()
    }

    /// Builds the query-aware profile for `query` (or, without one, refreshes the general
    /// profile) with the chat model, so the user sees what Rudder would infer before asking.
    pub fn you_build(&self, query: Option<&str>) -> AppResult<YouView> {
        let settings = self.settings()?;
        let models = ModelStore::open(&self.paths)?;
        let llm = crate::llm::open_chat(&models, &settings, None)?;
        let mut history = self.history()?;
        if history.stats()?.store.sessions == 0 {
            return Err(AppError::Invalid(
                "no history imported yet: import an export on the Import screen first".into(),
            ));
        }
        match query.map(str::trim) {
            Some("") => return Err(AppError::Invalid("type a question first".into())),
            Some(q) => {
                let embedder = self.embedder()?;
                let with = embedder.as_deref().map(|e| {
                    (
                        e as &dyn crate::embed::Embedder,
                        settings.embed_model.as_str(),
                    )
                });
                crate::profile::query_profile(
                    llm.as_ref(),
                    &mut history,
                    with,
                    q,
                    &ProfileOptions::default(),
                )?;
            }
            None => {
                crate::profile::general_profile(llm.as_ref(), &mut history, true)?;
            }
        }
        history.release_writer()?;
        self.you_view()
    }
}

fn session_ref(s: &StoredEntry) -> EntryRef {
    EntryRef {
        id: s.id,
        title: s.entry.title.clone(),
        source: s.entry.source.as_str().to_string(),
        started_at: s.entry.started_at,
    }
}

/// The statements of a query-aware profile, the user's own marked as said.
fn statement_views(
    profile: &QueryProfile,
    you: &You,
    refs: &dyn Fn(&[i64]) -> Vec<EntryRef>,
) -> Vec<StatementView> {
    let said: &[UserStatement] = &you.said;
    profile
        .statements()
        .into_iter()
        .filter(|(name, s)| !(*name == "domain" && s.text == DOMAIN_NOT_INFERRED))
        .map(|(criterion, s)| StatementView {
            id: if s.said {
                said.iter()
                    .find(|u| u.text == s.text)
                    .map(|u| said_id(u.id))
                    .unwrap_or_default()
            } else {
                inferred_id(&s.text)
            },
            criterion: criterion.to_string(),
            text: s.text.clone(),
            said: s.said,
            sessions: refs(&s.sessions),
            // A standing constraint says where it comes from.
            origin: you
                .standing
                .iter()
                .find(|c| !s.said && statement_key(&c.text) == statement_key(&s.text))
                .map(|c| c.origin.clone()),
        })
        .collect()
}

/// An inferred statement on the screen by its id.
fn find_inferred(view: &YouView, id: &str) -> AppResult<StatementView> {
    view.interests
        .iter()
        .flat_map(|i| std::iter::once(&i.statement).chain(i.presentation.as_ref()))
        .chain(view.standing.iter())
        .chain(view.memory.iter())
        .chain(view.recent.iter().flat_map(|p| p.statements.iter()))
        .find(|s| !s.said && s.id == id)
        .cloned()
        .ok_or_else(|| AppError::UnknownStatement(id.to_string()))
}

fn hide(store: &Store, statement: &StatementView) -> AppResult<()> {
    let ids: Vec<i64> = statement.sessions.iter().map(|s| s.id).collect();
    store
        .hide_statement(&statement_key(&statement.text), &statement.text, &ids)
        .map_err(crate::history::HistoryError::from)?;
    Ok(())
}
