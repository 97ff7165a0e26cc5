//! Planted needs: eight synthetic users whose histories hide what a good answer to their
//! research questions must take into account, with labels, for an evaluation that needs no
//! LLM judge.
//!
//! Each user (`data/planted.json`) has a description, 2–3 research questions they would ask
//! Rudder, and for each question 4–6 *needs*: a constraint (a budget, a health limit), a
//! preference, a piece of background (their expertise) or a tone ("short bullet points").
//! Every need is *planted* in 1–3 sessions of the user's history (a search, a visited page, a
//! ChatGPT or Claude chat where they say it), among *distractor* sessions on the same subject
//! that do not state it, and among a year of filler from the ordinary generator (the user's
//! hobbies, chosen to fit them, plus everyday noise). Planted, distractor and filler sessions
//! are woven into the same export files (Takeout search, ChatGPT, Claude), ordered by time, so
//! nothing about the files marks them.
//!
//! The hard setting: every planting session shares at most one content word
//! ([`content_words`]) with its question. A retriever that searches with the raw question
//! finds the distractors (which talk about the subject in the question's words) rather than
//! the plantings (which talk about the user's knee, budget or toddler); query expansion and
//! profile-driven retrieval have to earn their keep.
//!
//! Labels (`labels.json`, [`PlantedSet`]): each need names its planting sessions by
//! [`Entry::content_hash`](rudder::history::Entry::content_hash), exactly as the real
//! importer produces them, so an evaluation can check that retrieval surfaced them. Its
//! `specifics` are short strings a sentence that truly addresses the need would normally
//! contain (a cheap lexical check); `addressing` and `mentioning` are sentence pairs for
//! calibrating an embedding matcher: the first address the need the way a report sentence
//! would, the second use the same words and topic without answering it for this user.
//!
//! Determinism: user `i` is driven by one `ChaCha8Rng` seeded with [`user_seed`]`(seed, i)`
//! (filler, times, ids), and nothing depends on hash-map order, so the same seed gives
//! byte-identical files. The texts and labels other than hashes come from the data file and do
//! not depend on the seed.

use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use rand::Rng;
use serde::{Deserialize, Serialize};

use rudder::history::{Entry, HistorySource, Kind, Turn};

use crate::vocab::vocab;
use crate::{
    form_encode, ms_to_dt, user_seed, usg, visit_session, weighted, Detail, FormatPref, Gen,
    InterestSlot, SynthConfig, SynthItem, TakeoutExtra, Tone, Writers, DAY_MS, HOURLY, HOUR_MS,
};

/// The labels file [`write_planted_set`] writes next to the users' export folders.
pub const LABELS_FILE: &str = "labels.json";

/// Filler sessions per user (the planted and distractor sessions come on top).
const FILLER_SESSIONS: usize = 330;

/// What kind of need it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NeedKind {
    /// A hard limit: a budget, a health condition, a time limit, a dietary rule.
    Constraint,
    /// Something the user likes or wants more of.
    Preference,
    /// Who the user is: expertise, situation, what they already have.
    Background,
    /// How the answer should be written.
    Tone,
}

/// One need planted in a user's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlantedNeed {
    /// `u3-q1-n2`.
    pub id: String,
    pub kind: NeedKind,
    /// The need in one sentence.
    pub statement: String,
    /// Short strings, any of which a sentence that truly addresses the need would normally
    /// contain.
    pub specifics: Vec<String>,
    /// Content hashes of the sessions that state the need.
    pub sessions: Vec<String>,
    /// Sentences that address the need the way a report sentence would (positives).
    pub addressing: Vec<String>,
    /// Sentences that use the need's words without addressing it for this user (hard
    /// negatives).
    pub mentioning: Vec<String>,
}

/// A research question the user would ask, with what its answer must take into account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlantedQuestion {
    /// `u3-q1`.
    pub id: String,
    pub query: String,
    pub needs: Vec<PlantedNeed>,
    /// Content hashes of sessions on the question's subject that state none of its needs.
    pub distractors: Vec<String>,
}

/// One synthetic user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlantedUser {
    /// `u3`.
    pub id: String,
    pub name: String,
    /// Profession, hobbies, situation and expertise in 2–3 sentences.
    pub description: String,
    /// The export folder, relative to the set's folder.
    pub export: String,
    /// Sessions in the export (filler, planted and distractors).
    pub sessions: usize,
    /// The export formats written (`takeout-search`, `chatgpt`, `claude`).
    pub formats: Vec<String>,
    pub questions: Vec<PlantedQuestion>,
}

/// Everything [`write_planted_set`] wrote, as stored in [`LABELS_FILE`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlantedSet {
    pub seed: u64,
    pub users: Vec<PlantedUser>,
}

/// Writes every user's export folder under `dir` and `dir/labels.json`; the same seed gives
/// byte-identical files.
pub fn write_planted_set(seed: u64, dir: &Path) -> rudder::Result<PlantedSet> {
    let mut users = Vec::new();
    for (i, user) in data().users.iter().enumerate() {
        users.push(write_user(seed, i, user, dir)?);
    }
    let set = PlantedSet { seed, users };
    fs::create_dir_all(dir).map_err(|e| rudder::Error::io(dir, e))?;
    let path = dir.join(LABELS_FILE);
    let mut json = serde_json::to_string_pretty(&set)
        .map_err(|e| rudder::Error::Config(format!("planted labels: {e}")))?;
    json.push('\n');
    fs::write(&path, json).map_err(|e| rudder::Error::io(&path, e))?;
    Ok(set)
}

/// Reads `dir/labels.json` (an error names the file).
pub fn read_planted_set(dir: &Path) -> rudder::Result<PlantedSet> {
    let path = dir.join(LABELS_FILE);
    let text = fs::read_to_string(&path).map_err(|e| rudder::Error::io(&path, e))?;
    serde_json::from_str(&text).map_err(|e| rudder::Error::Parse {
        path: path.clone(),
        message: e.to_string(),
    })
}

/// The text of a session as the user would see it, for [`content_words`]: the title, every
/// turn and the words of the URL.
pub fn session_text(s: &Entry) -> String {
    let mut out = s.title.clone();
    for t in &s.turns {
        out.push('\n');
        out.push_str(&t.text);
    }
    if let Some(url) = &s.url {
        out.push('\n');
        out.push_str(url);
    }
    out
}

pub use rudder::checks::text::content_words;

// ---------------------------------------------------------------------------------------------
// The data file
// ---------------------------------------------------------------------------------------------

const PLANTED_JSON: &str = include_str!("../data/planted.json");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DataFile {
    users: Vec<UserDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserDef {
    name: String,
    profession: String,
    description: String,
    /// Interests of `interests.json` the filler is drawn from.
    interests: Vec<String>,
    questions: Vec<QuestionDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuestionDef {
    query: String,
    needs: Vec<NeedDef>,
    distractors: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NeedDef {
    kind: NeedKind,
    statement: String,
    specifics: Vec<String>,
    /// Entry specs: `s:query`, `v:title|url`, `c:title|prompt|answer|…` (ChatGPT),
    /// `k:title|prompt|answer|…` (Claude).
    plants: Vec<String>,
    addressing: Vec<String>,
    mentioning: Vec<String>,
}

fn data() -> &'static DataFile {
    static DATA: OnceLock<DataFile> = OnceLock::new();
    DATA.get_or_init(|| {
        serde_json::from_str(PLANTED_JSON)
            .unwrap_or_else(|e| panic!("crates/synth/data/planted.json: {e}"))
    })
}

// ---------------------------------------------------------------------------------------------
// Writing one user
// ---------------------------------------------------------------------------------------------

fn write_user(
    seed: u64,
    i: usize,
    def: &'static UserDef,
    dir: &Path,
) -> rudder::Result<PlantedUser> {
    let id = format!("u{i}");
    let mut cfg = SynthConfig::new(user_seed(seed, i), FILLER_SESSIONS);
    cfg.claude_share = 0.3;
    let mut gen = Gen::new(&cfg);
    dress(&mut gen, def)?;

    let mut all: Vec<(i64, SynthItem)> = Vec::with_capacity(FILLER_SESSIONS + 64);
    while let Some(item) = gen.next_item() {
        let at = item
            .session
            .started_at
            .map(|t| t.timestamp_millis())
            .unwrap_or(0);
        all.push((at, item));
    }

    let mut questions = Vec::with_capacity(def.questions.len());
    for (qi, q) in def.questions.iter().enumerate() {
        let qid = format!("{id}-q{qi}");
        let mut needs = Vec::with_capacity(q.needs.len());
        for (ni, n) in q.needs.iter().enumerate() {
            let nid = format!("{qid}-n{ni}");
            let mut sessions = Vec::with_capacity(n.plants.len());
            for spec in &n.plants {
                let (at, item) = planted_item(&mut gen, spec, &nid)?;
                sessions.push(item.session.content_hash());
                all.push((at, item));
            }
            needs.push(PlantedNeed {
                id: nid,
                kind: n.kind,
                statement: n.statement.clone(),
                specifics: n.specifics.clone(),
                sessions,
                addressing: n.addressing.clone(),
                mentioning: n.mentioning.clone(),
            });
        }
        let mut distractors = Vec::with_capacity(q.distractors.len());
        for spec in &q.distractors {
            let (at, item) = planted_item(&mut gen, spec, &qid)?;
            distractors.push(item.session.content_hash());
            all.push((at, item));
        }
        questions.push(PlantedQuestion {
            id: qid,
            query: q.query.clone(),
            needs,
            distractors,
        });
    }

    // Newest first, as Takeout writes; the sort is stable, so ties keep their order.
    all.sort_by_key(|item| std::cmp::Reverse(item.0));
    let folder = dir.join(&id);
    let mut out = Writers::create(&folder, true)?;
    for (_, item) in &all {
        out.push(item)?;
    }
    let files = out.finish()?;
    let formats = files
        .iter()
        .filter(|f| f.sessions > 0)
        .map(|f| f.format.as_str().to_string())
        .collect();
    Ok(PlantedUser {
        id: id.clone(),
        name: def.name.clone(),
        description: def.description.clone(),
        export: id,
        sessions: all.len(),
        formats,
        questions,
    })
}

/// Makes the generator's persona this user: their name and profession, the interests of the
/// data file, and a neutral tone with no format preference (custom instructions must not
/// state a planted tone need).
fn dress(gen: &mut Gen, def: &'static UserDef) -> rudder::Result<()> {
    let v = vocab();
    let mut slots = Vec::with_capacity(def.interests.len());
    for name in &def.interests {
        let index = v
            .interests
            .iter()
            .position(|i| i.name == name.as_str())
            .ok_or_else(|| {
                rudder::Error::Config(format!("planted.json: {}: no interest {name:?}", def.name))
            })?;
        let weight = 0.3 + gen.rng.random::<f64>();
        let topic_weights = (0..v.interests[index].topics.len())
            .map(|_| (gen.rng.random::<f64>() + 0.15).powi(2))
            .collect();
        slots.push(InterestSlot {
            index,
            weight,
            season: None,
            topic_weights,
        });
    }
    slots.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    let p = &mut gen.persona;
    p.name = def.name.as_str();
    p.occupation = def.profession.as_str();
    p.interests = slots.iter().map(|s| v.interests[s.index].name).collect();
    p.slots = slots;
    p.tone = Tone::Neutral;
    p.format = FormatPref::Any;
    Ok(())
}

/// A time in the window at an hour the user is awake.
fn planted_time(gen: &mut Gen) -> i64 {
    let days = (gen.clock.end_ms - gen.clock.start_ms) / DAY_MS;
    let day = gen.rng.random_range(0..days.max(1));
    let hour = weighted(&mut gen.rng, &HOURLY) as i64;
    let offset = i64::from(gen.persona.utc_offset_hours) * HOUR_MS;
    let at = gen.clock.start_ms + day * DAY_MS + hour * HOUR_MS - offset
        + gen.rng.random_range(0..HOUR_MS);
    at.clamp(gen.clock.start_ms, gen.clock.end_ms - 1)
}

/// The session a spec of the data file describes, at a fresh time.
fn planted_item(gen: &mut Gen, spec: &str, owner: &str) -> rudder::Result<(i64, SynthItem)> {
    let bad = || rudder::Error::Config(format!("planted.json: {owner}: bad session {spec:?}"));
    let (kind, rest) = spec.split_once(':').ok_or_else(bad)?;
    let at = planted_time(gen);
    let item = match kind {
        "s" => {
            let q = rest.to_string();
            let session = Entry {
                source: HistorySource::GoogleSearch,
                kind: Kind::Search,
                title: q.clone(),
                url: Some(format!(
                    "https://www.google.com/search?q={}",
                    form_encode(&q)
                )),
                external_id: None,
                started_at: Some(ms_to_dt(at)),
                time_note: None,
                turns: vec![Turn::user(q, Some(ms_to_dt(at)))],
            };
            let location = gen.rng.random_bool(0.3).then(|| gen.location());
            SynthItem {
                session,
                interest: None,
                topic: None,
                detail: Detail::Takeout(TakeoutExtra {
                    header: true,
                    usg: None,
                    location,
                }),
            }
        }
        "v" => {
            let (title, url) = rest.split_once('|').ok_or_else(bad)?;
            let session = visit_session(title.to_string(), url.to_string(), at);
            SynthItem {
                session,
                interest: None,
                topic: None,
                detail: Detail::Takeout(TakeoutExtra {
                    header: true,
                    usg: Some(usg(&mut gen.rng)),
                    location: None,
                }),
            }
        }
        "c" | "k" => {
            let mut parts = rest.split('|');
            let title = parts.next().ok_or_else(bad)?.to_string();
            let turns: Vec<&str> = parts.collect();
            if turns.is_empty() || !turns.len().is_multiple_of(2) {
                return Err(bad());
            }
            let script: Vec<(String, String)> = turns
                .chunks(2)
                .map(|p| (p[0].to_string(), p[1].to_string()))
                .collect();
            let start_us = at * 1000 + gen.rng.random_range(0..1000);
            let detail = if kind == "k" {
                Detail::Claude(Box::new(gen.claude_conv(title, script, start_us)))
            } else {
                // The vocabulary of an abandoned branch, if the conversation gets one.
                let c = gen.ctx(0, 0, at, None);
                Detail::Chatgpt(Box::new(gen.gpt_conv(title, script, start_us, &c)))
            };
            crate::chat_item(detail)
        }
        _ => return Err(bad()),
    };
    Ok((at, item))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_parses_and_every_spec_is_well_formed() {
        for u in &data().users {
            for q in &u.questions {
                let specs = q.needs.iter().flat_map(|n| &n.plants).chain(&q.distractors);
                for s in specs {
                    let (kind, rest) = s.split_once(':').unwrap();
                    match kind {
                        "s" => assert!(!rest.is_empty()),
                        "v" => assert!(rest.contains("|https://"), "{s}"),
                        "c" | "k" => assert!(rest.split('|').count() % 2 == 1, "{s}"),
                        _ => panic!("{s}"),
                    }
                }
            }
        }
    }
}
