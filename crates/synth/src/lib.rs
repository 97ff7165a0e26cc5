//! Synthetic histories: a deterministic generator of large, realistic-looking search, visit and
//! chat histories of made-up users, written as the real export files the importers read.
//!
//! It feeds benchmarks (import throughput, index size), memory tests (500k sessions stream
//! through with bounded memory) and retrieval evaluation (every [`SynthItem`] carries the
//! interest and topic it was generated from, as a label).
//!
//! What [`write_export`] writes for one user (the formats the importers in
//! `rudder::history::import` read):
//! * `Takeout/My Activity/Search/MyActivity.json`: Google My Activity JSON, newest first, laid
//!   out the way Takeout writes it (`[{\n  "header": "Search",\n  …\n},{…}]`, arrays inline)
//!   with Gson's HTML-safe escapes (`=` → `\u003d`, `&` → `\u0026`, `'` → `\u0027`) and times
//!   with milliseconds and `Z`. Quirks included: "Visited" items point at a
//!   `https://www.google.com/url?q=<page>&usg=…` redirect whose inner `?`, `=`, `&` are
//!   percent-encoded; items before 2021 sometimes lack `header`; some searches carry
//!   `locationInfos`; a few titles are not ASCII (`Bon Appétit`).
//! * `chatgpt/conversations.json`: conversations with a `mapping` tree: a root whose message is
//!   null, a hidden empty system message, a hidden `user_editable_context` (custom
//!   instructions) in conversations after the user set them, regenerated answers and edited
//!   prompts left behind as abandoned branches, and `current_node` at the end of the thread
//!   the user saw. Times are float Unix seconds; hidden messages have a null `create_time`.
//! * `claude/conversations.json` (only when some chats go to Claude): linear `chat_messages`
//!   with µs ISO-8601 times and a `content[]` copy of the text; some answers share their
//!   prompt's `created_at`, and a few messages are earlier than the one before them (position,
//!   not time, is the order).
//!
//! Determinism: one `ChaCha8Rng` seeded from [`SynthConfig::seed`] drives everything and no
//! output depends on hash-map order, so the same config gives byte-identical files.
//!
//! Vocabulary: the names, cities, interests, templates and everyday "noise" the users are made
//! of are data, the JSON files in `crates/synth/data/` (described in `src/vocab.rs`), embedded
//! at build time and parsed once.
//!
//! Memory: sessions are produced as short "episodes" (a search, the pages it led to, a chat)
//! walking backward in time from the end of the window, so the Takeout file comes out newest
//! first without buffering. Only one episode (at most 8 sessions) and the URLs visited on the
//! current day are held at a time.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

pub mod planted;
mod vocab;

use vocab::{vocab, InterestDef};

use rudder::history::import::time::from_unix_seconds_f64;
use rudder::history::import::Format;
use rudder::history::{Entry, HistorySource, Kind, Turn};

/// A chat (ChatGPT or Claude) as an item without interest labels.
pub(crate) fn chat_item(detail: Detail) -> SynthItem {
    let session = match &detail {
        Detail::Chatgpt(conv) => conv.session(),
        Detail::Claude(conv) => conv.session(),
        Detail::Takeout(_) => unreachable!("chats are ChatGPT or Claude"),
    };
    SynthItem {
        session,
        interest: None,
        topic: None,
        detail,
    }
}

/// Where the Takeout search activity goes, relative to the export folder.
pub const TAKEOUT_SEARCH_PATH: &str = "Takeout/My Activity/Search/MyActivity.json";
/// Where the ChatGPT conversations go.
pub const CHATGPT_PATH: &str = "chatgpt/conversations.json";
/// Where the Claude conversations go (only written when some chats go to Claude).
pub const CLAUDE_PATH: &str = "claude/conversations.json";

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;

// ---------------------------------------------------------------------------------------------
// Configuration and results
// ---------------------------------------------------------------------------------------------

/// The share of each session kind. Need not sum to one; it is normalised.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix {
    pub search: f64,
    pub visit: f64,
    pub chat: f64,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            search: 0.45,
            visit: 0.40,
            chat: 0.15,
        }
    }
}

impl Mix {
    /// `[search, visit, chat]` summing to one. Negative or non-finite shares count as zero; an
    /// all-zero mix falls back to the default.
    fn normalized(&self) -> [f64; 3] {
        let w = [self.search, self.visit, self.chat].map(|x| {
            if x.is_finite() && x > 0.0 {
                x
            } else {
                0.0
            }
        });
        let sum: f64 = w.iter().sum();
        if sum > 0.0 {
            w.map(|x| x / sum)
        } else {
            Mix::default().normalized()
        }
    }
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct SynthConfig {
    /// Everything (the user, their interests, every text and time) follows from the seed.
    pub seed: u64,
    /// Sessions in total (searches + visits + chats).
    pub sessions: usize,
    pub mix: Mix,
    /// The window is `[start, start + days)`.
    pub start: DateTime<Utc>,
    pub days: u32,
    /// Share of the chats that happen in Claude rather than ChatGPT (0: no Claude file).
    pub claude_share: f64,
    /// Share of sessions unrelated to the user's interests (weather, package tracking, …).
    pub noise: f64,
}

impl SynthConfig {
    /// A year (2024) of history with the default mix, 20% of chats in Claude, 5% noise.
    pub fn new(seed: u64, sessions: usize) -> Self {
        SynthConfig {
            seed,
            sessions,
            mix: Mix::default(),
            start: Utc
                .with_ymd_and_hms(2024, 1, 1, 0, 0, 0)
                .single()
                .unwrap_or_default(),
            days: 365,
            claude_share: 0.2,
            noise: 0.05,
        }
    }

    /// The exact number of sessions of each kind the config produces: the mix applied to
    /// `sessions` by largest remainder, so the three always add up to `sessions`.
    pub fn counts(&self) -> KindCounts {
        let f = self.mix.normalized();
        let n = self.sessions;
        let raw = f.map(|x| x * n as f64);
        let mut c = raw.map(|x| x.floor() as usize);
        let mut order = [0usize, 1, 2];
        order.sort_by(|&a, &b| (raw[b] - raw[b].floor()).total_cmp(&(raw[a] - raw[a].floor())));
        let mut rest = n.saturating_sub(c.iter().sum());
        for &k in order.iter().cycle() {
            if rest == 0 {
                break;
            }
            if f[k] > 0.0 {
                c[k] += 1;
                rest -= 1;
            }
        }
        let share = if self.claude_share.is_finite() {
            self.claude_share.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let claude = ((c[2] as f64) * share).round() as usize;
        let claude = claude.min(c[2]);
        KindCounts {
            searches: c[0],
            visits: c[1],
            chats: c[2],
            chatgpt_chats: c[2] - claude,
            claude_chats: claude,
        }
    }

    fn days(&self) -> u32 {
        self.days.clamp(1, MAX_DAYS)
    }
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig::new(1, 1000)
    }
}

const MAX_DAYS: u32 = 36_500;

/// How many sessions of each kind a config yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KindCounts {
    pub searches: usize,
    pub visits: usize,
    pub chats: usize,
    pub chatgpt_chats: usize,
    pub claude_chats: usize,
}

/// One file [`write_export`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthFile {
    pub path: PathBuf,
    pub format: Format,
    /// Sessions (array elements) in the file.
    pub sessions: usize,
    pub bytes: u64,
}

/// What [`write_export`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SynthSummary {
    pub counts: KindCounts,
    /// Sessions unrelated to the user's interests (included in `counts`).
    pub noise: usize,
    /// ChatGPT conversations carrying the hidden custom-instructions message (each one is a
    /// profile signal for the importer, not a turn).
    pub custom_instructions: usize,
    /// ChatGPT conversations with a regenerated answer or an edited prompt.
    pub branched: usize,
    pub files: Vec<SynthFile>,
}

impl SynthSummary {
    pub fn total_sessions(&self) -> usize {
        self.counts.searches + self.counts.visits + self.counts.chats
    }

    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }

    fn add(&mut self, item: &SynthItem) {
        match item.session.kind {
            Kind::Search => self.counts.searches += 1,
            Kind::Visit => self.counts.visits += 1,
            Kind::Chat => self.counts.chats += 1,
        }
        if item.interest.is_none() {
            self.noise += 1;
        }
        match &item.detail {
            Detail::Takeout(_) => {}
            Detail::Chatgpt(c) => {
                self.counts.chatgpt_chats += 1;
                if c.has_context {
                    self.custom_instructions += 1;
                }
                if c.nodes.len() > c.visible_nodes {
                    self.branched += 1;
                }
            }
            Detail::Claude(_) => self.counts.claude_chats += 1,
        }
    }
}

/// One generated session with its labels (for retrieval evaluation).
#[derive(Debug, Clone)]
pub struct SynthItem {
    /// The session as an importer should produce it from the written file.
    pub session: Entry,
    /// The interest it came from (`None` for noise).
    pub interest: Option<&'static str>,
    /// The topic within the interest (`None` for noise).
    pub topic: Option<&'static str>,
    detail: Detail,
}

impl SynthItem {
    /// The file format this session is written in.
    pub fn format(&self) -> Format {
        match self.detail {
            Detail::Takeout(_) => Format::TakeoutSearch,
            Detail::Chatgpt(_) => Format::Chatgpt,
            Detail::Claude(_) => Format::Claude,
        }
    }
}

#[derive(Debug, Clone)]
enum Detail {
    Takeout(TakeoutExtra),
    Chatgpt(Box<GptConv>),
    Claude(Box<ClaudeConv>),
}

// ---------------------------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------------------------

/// Every session of the history, newest first (chats interleaved by start time), with labels.
pub fn items(cfg: &SynthConfig) -> Items {
    Items { gen: Gen::new(cfg) }
}

/// The sessions [`write_export`] writes, in memory, in the same order.
pub fn sessions(cfg: &SynthConfig) -> impl Iterator<Item = Entry> {
    items(cfg).map(|i| i.session)
}

/// The synthetic user a config describes.
pub fn persona(cfg: &SynthConfig) -> Persona {
    Gen::new(cfg).persona
}

/// Iterator returned by [`items`].
pub struct Items {
    gen: Gen,
}

impl Iterator for Items {
    type Item = SynthItem;
    fn next(&mut self) -> Option<SynthItem> {
        self.gen.next_item()
    }
}

/// Writes one user's export under `dir` (see the module docs for the files), streaming: memory
/// does not grow with `cfg.sessions`.
pub fn write_export(cfg: &SynthConfig, dir: &Path) -> rudder::Result<SynthSummary> {
    if cfg.days == 0 || cfg.days > MAX_DAYS {
        return Err(rudder::Error::Config(format!(
            "synthetic history: days must be between 1 and {MAX_DAYS}, not {}",
            cfg.days
        )));
    }
    let planned = cfg.counts();
    let mut out = Writers::create(dir, planned.claude_chats > 0)?;
    let mut summary = SynthSummary::default();
    for item in items(cfg) {
        summary.add(&item);
        out.push(&item)?;
    }
    summary.files = out.finish()?;
    Ok(summary)
}

/// The export files of one user, written one session at a time.
struct Writers {
    takeout: ArrayWriter,
    chatgpt: ArrayWriter,
    claude: Option<ArrayWriter>,
}

impl Writers {
    fn create(dir: &Path, claude: bool) -> rudder::Result<Self> {
        let takeout = ArrayWriter::create(dir.join(TAKEOUT_SEARCH_PATH), Format::TakeoutSearch)?;
        let chatgpt = ArrayWriter::create(dir.join(CHATGPT_PATH), Format::Chatgpt)?;
        let claude = if claude {
            Some(ArrayWriter::create(dir.join(CLAUDE_PATH), Format::Claude)?)
        } else {
            None
        };
        Ok(Writers {
            takeout,
            chatgpt,
            claude,
        })
    }

    /// Appends `item` to its file (a Claude chat is dropped when there is no Claude file).
    fn push(&mut self, item: &SynthItem) -> rudder::Result<()> {
        match &item.detail {
            Detail::Takeout(extra) => self
                .takeout
                .push(|w| write_takeout(w, &item.session, extra)),
            Detail::Chatgpt(conv) => self
                .chatgpt
                .push(|w| serde_json::to_writer(w, conv.as_ref()).map_err(io::Error::from)),
            Detail::Claude(conv) => match self.claude.as_mut() {
                Some(claude) => claude
                    .push(|w| serde_json::to_writer(w, conv.as_ref()).map_err(io::Error::from)),
                None => Ok(()),
            },
        }
    }

    fn finish(self) -> rudder::Result<Vec<SynthFile>> {
        let mut files = vec![self.takeout.finish()?, self.chatgpt.finish()?];
        if let Some(claude) = self.claude {
            files.push(claude.finish()?);
        }
        Ok(files)
    }
}

/// Writes `users` exports under `dir/user-00`, `dir/user-01`, …: different people (the seed of
/// user `i` is derived from `cfg.seed` and `i`) with the same size and window.
pub fn write_users(
    cfg: &SynthConfig,
    users: usize,
    dir: &Path,
) -> rudder::Result<Vec<SynthSummary>> {
    (0..users)
        .map(|i| {
            let mut one = cfg.clone();
            one.seed = user_seed(cfg.seed, i);
            write_export(&one, &dir.join(format!("user-{i:02}")))
        })
        .collect()
}

/// The seed [`write_users`] gives user `i` (SplitMix64 of the pair, so users are unrelated).
pub fn user_seed(seed: u64, i: usize) -> u64 {
    let mut z = seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A JSON array written one element at a time: `[`, elements joined by `,`, `]`.
struct ArrayWriter {
    path: PathBuf,
    format: Format,
    out: BufWriter<File>,
    count: usize,
}

impl ArrayWriter {
    fn create(path: PathBuf, format: Format) -> rudder::Result<Self> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| rudder::Error::io(parent, e))?;
        }
        let file = File::create(&path).map_err(|e| rudder::Error::io(&path, e))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(b"[")
            .map_err(|e| rudder::Error::io(&path, e))?;
        Ok(ArrayWriter {
            path,
            format,
            out,
            count: 0,
        })
    }

    fn push(
        &mut self,
        f: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
    ) -> rudder::Result<()> {
        let result = if self.count > 0 {
            self.out.write_all(b",")
        } else {
            Ok(())
        };
        result
            .and_then(|()| f(&mut self.out))
            .map_err(|e| rudder::Error::io(&self.path, e))?;
        self.count += 1;
        Ok(())
    }

    fn finish(mut self) -> rudder::Result<SynthFile> {
        let path = self.path;
        self.out
            .write_all(b"]")
            .and_then(|()| self.out.flush())
            .map_err(|e| rudder::Error::io(&path, e))?;
        drop(self.out);
        let bytes = fs::metadata(&path)
            .map_err(|e| rudder::Error::io(&path, e))?
            .len();
        Ok(SynthFile {
            path,
            format: self.format,
            sessions: self.count,
            bytes,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The user
// ---------------------------------------------------------------------------------------------

/// How a user writes to chatbots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// "sourdough starter not bubbling why"
    Terse,
    /// "Why is my sourdough starter not bubbling?"
    Neutral,
    /// "Hi! Could you help me understand …? Thank you!"
    Polite,
}

/// The answer format a user tends to ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatPref {
    Bullets,
    Prose,
    Any,
}

/// A synthetic user: who they are, what they care about, how they write.
#[derive(Debug, Clone)]
pub struct Persona {
    pub name: &'static str,
    pub occupation: &'static str,
    pub city: &'static str,
    /// Fixed offset used for the daily rhythm (no daylight saving).
    pub utc_offset_hours: i32,
    /// Interest names, most frequent first.
    pub interests: Vec<&'static str>,
    pub tone: Tone,
    pub format: FormatPref,
    slots: Vec<InterestSlot>,
    city_index: usize,
    capitalize: bool,
    question_rate: f64,
    typo_rate: f64,
    chronotype: i64,
    /// Fraction of the window after which ChatGPT conversations carry custom instructions.
    instructions_since: f64,
}

#[derive(Debug, Clone)]
struct InterestSlot {
    index: usize,
    weight: f64,
    /// (centre, width) as fractions of the window for interests that come and go (a marathon,
    /// a renovation); `None` for steady hobbies.
    season: Option<(f64, f64)>,
    topic_weights: Vec<f64>,
}

impl Persona {
    fn generate(rng: &mut ChaCha8Rng) -> Persona {
        let v = vocab();
        let name = pick(rng, &v.names);
        let city_index = rng.random_range(0..v.cities.len());
        let occupation = pick(rng, &v.occupations);
        let n = rng.random_range(3..=6).min(v.interests.len());
        let mut order: Vec<usize> = (0..v.interests.len()).collect();
        for i in 0..n {
            let j = rng.random_range(i..order.len());
            order.swap(i, j);
        }
        let mut slots: Vec<InterestSlot> = order[..n]
            .iter()
            .map(|&index| {
                let def = &v.interests[index];
                let weight = 0.2 + rng.random::<f64>().powi(2);
                let season = def
                    .episodic
                    .then(|| (rng.random_range(0.1..0.9), rng.random_range(0.06..0.25)));
                let topic_weights = (0..def.topics.len())
                    .map(|_| (rng.random::<f64>() + 0.15).powi(2))
                    .collect();
                InterestSlot {
                    index,
                    weight,
                    season,
                    topic_weights,
                }
            })
            .collect();
        slots.sort_by(|a, b| b.weight.total_cmp(&a.weight));
        let tone = match weighted(rng, &[0.35, 0.4, 0.25]) {
            0 => Tone::Terse,
            1 => Tone::Neutral,
            _ => Tone::Polite,
        };
        let format = match weighted(rng, &[0.35, 0.2, 0.45]) {
            0 => FormatPref::Bullets,
            1 => FormatPref::Prose,
            _ => FormatPref::Any,
        };
        Persona {
            name,
            occupation,
            city: v.cities[city_index].0,
            utc_offset_hours: v.cities[city_index].1,
            interests: slots.iter().map(|s| v.interests[s.index].name).collect(),
            tone,
            format,
            slots,
            city_index,
            capitalize: rng.random_bool(0.15),
            question_rate: rng.random_range(0.4..1.8),
            typo_rate: rng.random_range(0.005..0.04),
            chronotype: rng.random_range(-1..=2),
            instructions_since: rng.random_range(0.15..0.75),
        }
    }

    /// What the user told ChatGPT about themselves and how to answer (the part inside the
    /// fences of the `user_editable_context` message).
    pub fn custom_instructions(&self) -> (String, String) {
        let about: Vec<&str> = self
            .slots
            .iter()
            .take(2)
            .map(|s| vocab().interests[s.index].about)
            .collect();
        let profile = format!(
            "Preferred name: {}\nRole: {}\nOther Information: I live in {}. {}",
            self.name,
            self.occupation,
            self.city,
            about.join(" ")
        );
        let mut how = Vec::new();
        match self.tone {
            Tone::Terse => how.push("Be brief. No filler, no disclaimers."),
            Tone::Neutral => how.push("Be direct and practical."),
            Tone::Polite => how.push("Explain things patiently, step by step."),
        }
        match self.format {
            FormatPref::Bullets => how.push("Use bullet points where possible."),
            FormatPref::Prose => how.push("Answer in plain prose, not lists."),
            FormatPref::Any => {}
        }
        // Everyone but the North Americans gets metric units.
        if !(-8..=-5).contains(&vocab().cities[self.city_index].1) {
            how.push("Use metric units.");
        }
        (profile, how.join(" "))
    }

    fn interest_weight(&self, slot: usize, x: f64) -> f64 {
        let s = &self.slots[slot];
        match s.season {
            Some((centre, width)) => s.weight * (0.08 + (-((x - centre) / width).powi(2)).exp()),
            None => s.weight,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Time: a daily rhythm over the window, sampled by stratified quantiles
// ---------------------------------------------------------------------------------------------

/// Activity by local hour (0–23): quiet at night, peaks late morning and in the evening.
const HOURLY: [f64; 24] = [
    0.35, 0.18, 0.08, 0.04, 0.03, 0.05, 0.15, 0.45, 0.8, 1.0, 1.05, 1.0, 1.1, 1.0, 0.95, 0.95, 1.0,
    1.05, 1.1, 1.25, 1.4, 1.35, 1.0, 0.6,
];
/// Activity by weekday, Monday first.
const WEEKDAY: [f64; 7] = [1.0, 1.0, 1.0, 1.0, 0.95, 0.8, 0.85];

/// Maps a session's position (0 = newest) to a time. The window's hours carry weights (daily
/// rhythm, weekday, busy and away days); slot `i` of `n` gets the time at mass quantile
/// `1 - (i + r) / n`, `r` random in `[0, 1)`. Strata do not overlap, so times fall newest
/// first without holding the sessions, and they spread over the whole window whatever `n` is.
struct Clock {
    start_ms: i64,
    end_ms: i64,
    /// Cumulative weight per hour of the window.
    cum: Vec<f64>,
    n: usize,
}

impl Clock {
    fn new(rng: &mut ChaCha8Rng, start_ms: i64, days: u32, n: usize, persona: &Persona) -> Clock {
        let days = days as usize;
        let mut day_factor = Vec::with_capacity(days);
        let mut away = 0u32;
        for _ in 0..days {
            if away == 0 && rng.random_bool(0.015) {
                away = rng.random_range(3..10);
            }
            let f = if away > 0 {
                away -= 1;
                0.15
            } else {
                rng.random_range(0.55..1.45)
            };
            day_factor.push(f);
        }
        let offset_ms = i64::from(persona.utc_offset_hours) * HOUR_MS;
        let mut cum = Vec::with_capacity(days * 24);
        let mut total = 0.0;
        for h in 0..days * 24 {
            let local = start_ms + h as i64 * HOUR_MS + offset_ms;
            let hour = local.div_euclid(HOUR_MS).rem_euclid(24);
            // 1970-01-01 was a Thursday: day 0 is weekday 3 counting from Monday.
            let weekday = (local.div_euclid(DAY_MS) + 3).rem_euclid(7) as usize;
            let shifted = (hour - persona.chronotype).rem_euclid(24) as usize;
            total += HOURLY[shifted] * WEEKDAY[weekday] * day_factor[h / 24];
            cum.push(total);
        }
        Clock {
            start_ms,
            end_ms: start_ms + days as i64 * DAY_MS,
            cum,
            n: n.max(1),
        }
    }

    fn time_at(&self, slot: usize, rng: &mut ChaCha8Rng) -> i64 {
        let total = self.cum.last().copied().unwrap_or(0.0);
        let r: f64 = rng.random();
        let q = ((slot as f64 + r) / self.n as f64).clamp(0.0, 1.0);
        let m = (1.0 - q) * total;
        let k = self
            .cum
            .partition_point(|&c| c <= m)
            .min(self.cum.len().saturating_sub(1));
        let before = if k == 0 { 0.0 } else { self.cum[k - 1] };
        let w = self.cum.get(k).copied().unwrap_or(total) - before;
        let frac = if w > 0.0 {
            ((m - before) / w).clamp(0.0, 1.0)
        } else {
            0.5
        };
        let t = self.start_ms + k as i64 * HOUR_MS + (frac * HOUR_MS as f64) as i64;
        t.clamp(self.start_ms, self.end_ms - 1)
    }
}

// ---------------------------------------------------------------------------------------------
// The generator
// ---------------------------------------------------------------------------------------------

struct Gen {
    rng: ChaCha8Rng,
    persona: Persona,
    clock: Clock,
    mix: [f64; 3],
    /// Sessions still to generate: search, visit, chat.
    left: [usize; 3],
    left_claude: usize,
    left_chatgpt: usize,
    noise_target: f64,
    noise_done: usize,
    /// Slots used so far (0 = newest).
    index: usize,
    /// The newest time the next episode may use (ms): the oldest time emitted so far.
    bound: i64,
    queue: VecDeque<SynthItem>,
    /// The last episode's interest slot, topic and time, so research threads continue.
    last: Option<(usize, usize, i64)>,
    /// URLs visited per UTC day: an importer keeps one visit per (URL, day), so the
    /// generator never repeats one and the counts stay exact.
    seen: HashMap<i64, HashSet<String>>,
    instructions_since_ms: i64,
}

const SEARCH: usize = 0;
const VISIT: usize = 1;
const CHAT: usize = 2;

impl Gen {
    fn new(cfg: &SynthConfig) -> Gen {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let persona = Persona::generate(&mut rng);
        let start_ms = cfg.start.timestamp_millis();
        let clock = Clock::new(&mut rng, start_ms, cfg.days(), cfg.sessions, &persona);
        let counts = cfg.counts();
        let span = clock.end_ms - start_ms;
        Gen {
            instructions_since_ms: start_ms + (persona.instructions_since * span as f64) as i64,
            rng,
            persona,
            mix: cfg.mix.normalized(),
            left: [counts.searches, counts.visits, counts.chats],
            left_claude: counts.claude_chats,
            left_chatgpt: counts.chatgpt_chats,
            noise_target: if cfg.noise.is_finite() {
                cfg.noise.clamp(0.0, 1.0)
            } else {
                0.0
            },
            noise_done: 0,
            index: 0,
            bound: clock.end_ms - 1,
            queue: VecDeque::new(),
            last: None,
            seen: HashMap::new(),
            clock,
        }
    }

    fn next_item(&mut self) -> Option<SynthItem> {
        if self.queue.is_empty() && self.left.iter().sum::<usize>() > 0 {
            self.episode();
        }
        self.queue.pop_front()
    }

    /// Plans the next (older) episode and queues its sessions newest first.
    fn episode(&mut self) {
        let noise = self.noise_episode();
        let kinds = self.plan_kinds(noise);
        let len = kinds.len();
        let anchor = self
            .clock
            .time_at(self.index + len - 1, &mut self.rng)
            .min(self.bound);

        // Offsets forward from the anchor, squeezed if the episode would run past newer ones.
        let mut offsets = Vec::with_capacity(len);
        let mut t = 0i64;
        for &k in &kinds {
            offsets.push(t);
            t += match k {
                SEARCH => self.rng.random_range(8_000..90_000),
                VISIT => self.rng.random_range(20_000..480_000),
                _ => self.rng.random_range(60_000..900_000),
            };
        }
        let room = self.bound - anchor;
        let last = offsets.last().copied().unwrap_or(0);
        if last > room {
            for o in &mut offsets {
                *o = (i128::from(*o) * i128::from(room) / i128::from(last.max(1))) as i64;
            }
        }
        self.bound = anchor;

        let mut built = Vec::with_capacity(len);
        if noise {
            for (&k, &o) in kinds.iter().zip(&offsets) {
                built.push(self.noise_item(k, anchor + o));
            }
            self.noise_done += len;
        } else {
            let (slot, topic) = self.choose_context(anchor);
            let mut focus: Option<Focus> = None;
            for (j, (&k, &o)) in kinds.iter().zip(&offsets).enumerate() {
                let at = anchor + o;
                let item = match k {
                    SEARCH => {
                        let refine = focus.is_some() && j > 0;
                        let (item, f) = self.search_item(slot, topic, at, focus.as_ref(), refine);
                        focus = Some(f);
                        item
                    }
                    VISIT => self.visit_item(slot, topic, at, focus.as_ref()),
                    _ => self.chat_item(slot, topic, at, focus.as_ref()),
                };
                built.push(item);
            }
            self.last = Some((slot, topic, anchor));
        }
        self.index += len;
        // Later episodes are older than this anchor: newer days can no longer collide.
        let day = anchor.div_euclid(DAY_MS);
        self.seen.retain(|&d, _| d <= day);
        self.queue.extend(built.into_iter().rev());
    }

    /// Whether the next episode is noise, steering the running share towards the target.
    fn noise_episode(&mut self) -> bool {
        let target = self.noise_target;
        if target <= 0.0 {
            return false;
        }
        let p = if (self.noise_done as f64) < target * (self.index as f64 + 1.0) {
            (target * 2.5).min(1.0)
        } else {
            target * 0.3
        };
        self.rng.random_bool(p.clamp(0.0, 1.0))
    }

    /// The kinds of the next episode's sessions, in time order, taken from what is left so
    /// the totals come out exact. Weights lean towards kinds that are behind their share.
    fn plan_kinds(&mut self, noise: bool) -> Vec<usize> {
        let mut kinds = Vec::with_capacity(8);
        // Searches usually open an episode, visits rarely (a bookmark, a link from elsewhere);
        // every weight is scaled by how far its kind is behind its share, to the fourth power,
        // so no kind piles up at the old end of the history.
        let first = [
            self.mix[SEARCH] * self.behind(SEARCH),
            self.mix[VISIT] * 0.15 * self.behind(VISIT),
            self.mix[CHAT] * 2.0 * self.behind(CHAT),
        ];
        let k = weighted(&mut self.rng, &first);
        self.take(k);
        kinds.push(k);
        let max = if noise { 2 } else { 8 };
        while kinds.len() < max {
            let total: usize = self.left.iter().sum();
            if total == 0 {
                break;
            }
            let prev = kinds.last().copied().unwrap_or(SEARCH);
            let (cont, stop) = match prev {
                SEARCH => ([0.45, 1.3, 0.08], 0.45),
                VISIT => ([0.35, 0.55, 0.05], 0.8),
                _ => ([0.15, 0.05, 0.0], 1.6),
            };
            let stop = if noise { stop * 4.0 } else { stop };
            let w = [
                cont[0] * self.behind(SEARCH),
                cont[1] * self.behind(VISIT),
                cont[2] * self.behind(CHAT),
                stop,
            ];
            let k = weighted(&mut self.rng, &w);
            if k == 3 {
                break;
            }
            self.take(k);
            kinds.push(k);
        }
        kinds
    }

    /// (share of what is left that is kind `k`) / (its share in the mix), to the fourth power;
    /// zero when none is left.
    fn behind(&self, k: usize) -> f64 {
        let total: usize = self.left.iter().sum();
        if self.left[k] == 0 || self.mix[k] <= 0.0 || total == 0 {
            return 0.0;
        }
        ((self.left[k] as f64 / total as f64) / self.mix[k])
            .powi(4)
            .min(50.0)
    }

    fn take(&mut self, k: usize) {
        self.left[k] = self.left[k].saturating_sub(1);
    }

    /// Picks the interest slot and topic for an episode at `at`: often the thread of the
    /// previous (newer) episode when it was recent, else by the interests' weights then.
    fn choose_context(&mut self, at: i64) -> (usize, usize) {
        if let Some((slot, topic, when)) = self.last {
            if when - at < 8 * HOUR_MS && self.rng.random_bool(0.45) {
                if self.rng.random_bool(0.55) {
                    return (slot, topic);
                }
                let t = weighted(&mut self.rng, &self.persona.slots[slot].topic_weights);
                return (slot, t);
            }
        }
        let span = (self.clock.end_ms - self.clock.start_ms).max(1) as f64;
        let x = (at - self.clock.start_ms) as f64 / span;
        let weights: Vec<f64> = (0..self.persona.slots.len())
            .map(|s| self.persona.interest_weight(s, x))
            .collect();
        let slot = weighted(&mut self.rng, &weights);
        let topic = weighted(&mut self.rng, &self.persona.slots[slot].topic_weights);
        (slot, topic)
    }

    fn ctx(&mut self, slot: usize, topic: usize, at: i64, focus: Option<&Focus>) -> Ctx {
        let interest = &interests()[self.persona.slots[slot].index];
        let topic_ref = &interest.topics[topic];
        let topic2 = if interest.topics.len() > 1 {
            let mut j = self.rng.random_range(0..interest.topics.len() - 1);
            if j >= topic {
                j += 1;
            }
            &interest.topics[j]
        } else {
            topic_ref
        };
        let facet = match focus {
            Some(f) => f.facet,
            None => pick(&mut self.rng, &topic_ref.facets),
        };
        let facet2 = pick(&mut self.rng, &topic_ref.facets);
        let state = pick(&mut self.rng, &topic_ref.states);
        let entity = match focus {
            Some(f) => f.entity,
            None => pick(&mut self.rng, &interest.def.entities),
        };
        Ctx {
            interest,
            topic: topic_ref,
            topic2,
            facet,
            facet2,
            state,
            entity,
            year: year_of(at),
            city: self.persona.city,
        }
    }

    fn search_item(
        &mut self,
        slot: usize,
        topic: usize,
        at: i64,
        focus: Option<&Focus>,
        refine: bool,
    ) -> (SynthItem, Focus) {
        // A refinement keeps the entity but usually moves to another facet.
        let keep = if refine && self.rng.random_bool(0.3) {
            focus
        } else {
            None
        };
        let mut c = self.ctx(slot, topic, at, keep);
        if refine {
            if let Some(f) = focus {
                c.entity = f.entity;
            }
        }
        let q = self.query(&c);
        let url = format!("https://www.google.com/search?q={}", form_encode(&q));
        let session = Entry {
            source: HistorySource::GoogleSearch,
            kind: Kind::Search,
            title: q.clone(),
            url: Some(url),
            external_id: None,
            started_at: Some(ms_to_dt(at)),
            time_note: None,
            turns: vec![Turn::user(q, Some(ms_to_dt(at)))],
        };
        let extra = TakeoutExtra {
            header: self.header_present(at),
            usg: None,
            location: self.rng.random_bool(0.3).then(|| self.location()),
        };
        let focus = Focus {
            facet: c.facet,
            entity: c.entity,
        };
        let item = SynthItem {
            session,
            interest: Some(c.interest.def.name),
            topic: Some(c.topic.name),
            detail: Detail::Takeout(extra),
        };
        (item, focus)
    }

    fn visit_item(
        &mut self,
        slot: usize,
        topic: usize,
        at: i64,
        focus: Option<&Focus>,
    ) -> SynthItem {
        let day = at.div_euclid(DAY_MS);
        let mut c = self.ctx(slot, topic, at, focus);
        let mut page = None;
        for attempt in 0..6 {
            if attempt > 0 {
                c = self.ctx(slot, topic, at, if attempt < 3 { focus } else { None });
            }
            let (title, url) = make_page(&mut self.rng, &c, at, attempt >= 4);
            if !self.seen.get(&day).is_some_and(|s| s.contains(&url)) {
                page = Some((title, url));
                break;
            }
        }
        // Still a repeat after several tries (a small vocabulary on a busy day): a question
        // page with a fresh random id.
        let (title, url) = match page {
            Some(p) => p,
            None => loop {
                let (title, url) = make_page(&mut self.rng, &c, at, true);
                if !self.seen.get(&day).is_some_and(|s| s.contains(&url)) {
                    break (title, url);
                }
            },
        };
        self.seen.entry(day).or_default().insert(url.clone());
        let session = visit_session(title, url, at);
        let extra = TakeoutExtra {
            header: self.header_present(at),
            usg: Some(usg(&mut self.rng)),
            location: None,
        };
        SynthItem {
            session,
            interest: Some(c.interest.def.name),
            topic: Some(c.topic.name),
            detail: Detail::Takeout(extra),
        }
    }

    fn header_present(&mut self, at: i64) -> bool {
        // Some pre-2021 My Activity items have no `header`.
        at >= 1_609_459_200_000 || self.rng.random_bool(0.6)
    }

    fn location(&mut self) -> LocationExtra {
        let (_, _, lat, lon) = vocab().cities[self.persona.city_index];
        let source = weighted(&mut self.rng, &[0.5, 0.3, 0.2]);
        LocationExtra {
            lat: lat + self.rng.random_range(-0.05..0.05),
            lon: lon + self.rng.random_range(-0.05..0.05),
            source,
        }
    }

    fn query(&mut self, c: &Ctx) -> String {
        let p = &self.persona;
        let weights: Vec<f64> = vocab()
            .query_templates
            .iter()
            .map(|&(w, question, _)| if question { w * p.question_rate } else { w })
            .collect();
        let i = weighted(&mut self.rng, &weights);
        let (_, question, tpl) = vocab().query_templates[i];
        let mut q = fill(&mut self.rng, tpl, c);
        let words: Vec<&str> = q.split_whitespace().collect();
        if words.len() > 10 {
            q = words[..10].join(" ");
        }
        if !self.persona.capitalize {
            q = q.to_lowercase();
        } else {
            q = cap_first(&q);
        }
        if question && self.persona.tone == Tone::Polite && self.rng.random_bool(0.4) {
            q.push('?');
        }
        if self.rng.random_bool(self.persona.typo_rate) {
            q = typo(&mut self.rng, &q);
        }
        q
    }

    fn chat_target(&mut self) -> bool {
        // Exact split: Claude with probability (Claude chats left) / (chats left).
        let total = self.left_claude + self.left_chatgpt;
        let claude = total > 0 && self.rng.random_range(0..total) < self.left_claude;
        if claude {
            self.left_claude -= 1;
        } else {
            self.left_chatgpt = self.left_chatgpt.saturating_sub(1);
        }
        claude
    }

    fn chat_item(
        &mut self,
        slot: usize,
        topic: usize,
        at: i64,
        focus: Option<&Focus>,
    ) -> SynthItem {
        let c = self.ctx(slot, topic, at, focus);
        let pairs = 1 + weighted(&mut self.rng, &[30.0, 25.0, 18.0, 12.0, 8.0, 7.0]);
        let tone = self.persona.tone;
        let ask_format = self.rng.random_bool(0.6);
        let bullets = match self.persona.format {
            FormatPref::Bullets => self.rng.random_bool(0.8),
            FormatPref::Prose => false,
            FormatPref::Any => self.rng.random_bool(0.35),
        };
        let mut script = Vec::with_capacity(pairs);
        for p in 0..pairs {
            let (user, about) = if p == 0 {
                let tpl = pick(&mut self.rng, opener_templates(tone));
                let mut u = fill(&mut self.rng, tpl, &c);
                if ask_format {
                    match self.persona.format {
                        FormatPref::Bullets => u.push_str(format_request(tone, true)),
                        FormatPref::Prose => u.push_str(format_request(tone, false)),
                        FormatPref::Any => {}
                    }
                }
                if !c.interest.def.snippets.is_empty() && self.rng.random_bool(0.3) {
                    let (lang, code) = pick(&mut self.rng, &c.interest.def.snippets);
                    u.push_str(&format!("\n\n```{lang}\n{code}\n```"));
                }
                (u, c)
            } else {
                // Follow-ups wander over the topic's facets (mostly asking about `F2`), and
                // the answer is about what was asked.
                let c2 = self.ctx(slot, topic, at, None);
                let tpl = pick(&mut self.rng, followup_templates(tone));
                let u = fill(&mut self.rng, tpl, &c2);
                let about = Ctx {
                    facet: c2.facet2,
                    facet2: c2.facet,
                    ..c2
                };
                (u, about)
            };
            let short = p > 0 && self.rng.random_bool(0.4);
            let answer = assistant_answer(&mut self.rng, &about, bullets, short);
            script.push((user, answer));
        }
        let tpl = pick(&mut self.rng, &vocab().chat_titles);
        let raw = fill(&mut self.rng, tpl, &c);
        // ChatGPT titles are usually Title Case, sometimes sentence case.
        let title = if self.rng.random_bool(0.6) {
            title_case(&raw)
        } else {
            cap_first(&raw)
        };
        let mut item = self.chat_from_script(title, script, at, &c);
        item.interest = Some(c.interest.def.name);
        item.topic = Some(c.topic.name);
        item
    }

    /// Builds the ChatGPT or Claude conversation for a script of (prompt, answer) pairs.
    fn chat_from_script(
        &mut self,
        title: String,
        script: Vec<(String, String)>,
        at: i64,
        c: &Ctx,
    ) -> SynthItem {
        let claude = self.chat_target();
        let start_us = at * 1000 + self.rng.random_range(0..1000);
        let detail = if claude {
            Detail::Claude(Box::new(self.claude_conv(title, script, start_us)))
        } else {
            Detail::Chatgpt(Box::new(self.gpt_conv(title, script, start_us, c)))
        };
        chat_item(detail)
    }

    fn gpt_conv(
        &mut self,
        title: String,
        script: Vec<(String, String)>,
        start_us: i64,
        c: &Ctx,
    ) -> GptConv {
        let rng = &mut self.rng;
        let id = uuid(rng);
        let model = if start_us < 1_715_000_000_000_000 {
            pick(rng, &["gpt-4", "text-davinci-002-render-sha"])
        } else {
            pick(rng, &["gpt-4o", "gpt-4o", "auto", "gpt-4o-mini"])
        };
        let mut conv = GptConv {
            id,
            title,
            create_time: 0.0,
            update_time: 0.0,
            model,
            nodes: Vec::new(),
            current: 0,
            visible_nodes: 0,
            has_context: false,
        };
        // Newer exports name the root "client-created-root"; older ones use a UUID.
        let root_id = if start_us >= 1_704_067_200_000_000 {
            "client-created-root".to_string()
        } else {
            uuid(rng)
        };
        let root = conv.push(root_id, None, None);
        let sys_id = uuid(rng);
        let mut cur = conv.push(
            sys_id,
            Some(root),
            Some(GptMessage {
                role: "system",
                body: GptBody::Text(String::new()),
                time: None,
                hidden: true,
            }),
        );
        if start_us / 1000 >= self.instructions_since_ms {
            let (profile, instructions) = self.persona.custom_instructions();
            let ctx_id = uuid(rng);
            cur = conv.push(
                ctx_id,
                Some(cur),
                Some(GptMessage {
                    role: "user",
                    body: GptBody::Context {
                        profile: format!("{CONTEXT_PROFILE_PREAMBLE}```{profile}\n```"),
                        instructions: format!(
                            "{CONTEXT_INSTRUCTIONS_PREAMBLE}```{instructions}```"
                        ),
                    },
                    time: None,
                    hidden: true,
                }),
            );
            conv.has_context = true;
        }
        let pairs = script.len();
        let edit_at = (pairs > 0 && rng.random_bool(0.07)).then(|| rng.random_range(0..pairs));
        let regen_at = (pairs > 0 && rng.random_bool(0.15)).then(|| rng.random_range(0..pairs));
        let mut t = start_us;
        let mut first_time = None;
        let mut visible = conv.nodes.len();
        for (p, (user, answer)) in script.into_iter().enumerate() {
            if edit_at == Some(p) {
                // The prompt as first sent, and its answer, left behind by an edit.
                let old = user_variant(rng, &user);
                let old_u = conv.push_text(rng, cur, "user", old, t);
                t += rng.random_range(3_000_000..40_000_000);
                let old_answer = assistant_answer(rng, c, false, true);
                conv.push_text(rng, old_u, "assistant", old_answer, t);
                t += rng.random_range(30_000_000..200_000_000);
            }
            let u = conv.push_text(rng, cur, "user", user, t);
            first_time.get_or_insert(t);
            t += rng.random_range(3_000_000..40_000_000);
            if regen_at == Some(p) {
                // The first answer, replaced by "Regenerate".
                let old_answer = assistant_answer(rng, c, false, false);
                conv.push_text(rng, u, "assistant", old_answer, t);
                t += rng.random_range(15_000_000..120_000_000);
            }
            cur = conv.push_text(rng, u, "assistant", answer, t);
            visible += 2;
            t += rng.random_range(20_000_000..480_000_000);
        }
        conv.current = cur;
        conv.visible_nodes = visible;
        conv.create_time = us_to_secs(first_time.unwrap_or(start_us));
        conv.update_time = conv
            .nodes
            .iter()
            .filter_map(|n| n.message.as_ref().and_then(|m| m.time))
            .fold(conv.create_time, f64::max);
        conv
    }

    fn claude_conv(
        &mut self,
        name: String,
        script: Vec<(String, String)>,
        start_us: i64,
    ) -> ClaudeConv {
        let rng = &mut self.rng;
        let mut messages = Vec::with_capacity(script.len() * 2);
        let mut t = start_us;
        let mut prev_answer = start_us;
        for (p, (user, answer)) in script.into_iter().enumerate() {
            let mut user_at = t;
            if p > 0 && rng.random_bool(0.04) {
                // Out of time order: stamped before the answer that precedes it.
                user_at = prev_answer - rng.random_range(1_000_000..30_000_000);
            }
            messages.push(ClaudeMessage {
                uuid: uuid(rng),
                human: true,
                text: user,
                at_us: user_at,
            });
            // Some answers carry their prompt's timestamp.
            let answer_at = if rng.random_bool(0.12) {
                user_at
            } else {
                t + rng.random_range(3_000_000..40_000_000)
            };
            messages.push(ClaudeMessage {
                uuid: uuid(rng),
                human: false,
                text: answer,
                at_us: answer_at,
            });
            prev_answer = answer_at;
            t = answer_at.max(t) + rng.random_range(20_000_000..480_000_000);
        }
        ClaudeConv {
            uuid: uuid(rng),
            name,
            account: account_uuid(self.persona.name),
            messages,
        }
    }

    fn noise_item(&mut self, kind: usize, at: i64) -> SynthItem {
        let year = year_of(at);
        let city = self.persona.city;
        match kind {
            SEARCH => {
                let tpl = pick(&mut self.rng, &vocab().noise_queries);
                let q = fill_noise(&mut self.rng, tpl, city, year).to_lowercase();
                let url = format!("https://www.google.com/search?q={}", form_encode(&q));
                let session = Entry {
                    source: HistorySource::GoogleSearch,
                    kind: Kind::Search,
                    title: q.clone(),
                    url: Some(url),
                    external_id: None,
                    started_at: Some(ms_to_dt(at)),
                    time_note: None,
                    turns: vec![Turn::user(q, Some(ms_to_dt(at)))],
                };
                let extra = TakeoutExtra {
                    header: self.header_present(at),
                    usg: None,
                    location: self.rng.random_bool(0.5).then(|| self.location()),
                };
                SynthItem {
                    session,
                    interest: None,
                    topic: None,
                    detail: Detail::Takeout(extra),
                }
            }
            VISIT => {
                let day = at.div_euclid(DAY_MS);
                let mut page = None;
                for attempt in 0..8 {
                    // Fixed pages (Gmail, Netflix) repeat within a day; news articles do not.
                    let table = if attempt < 2 {
                        &vocab().noise_pages
                    } else {
                        &vocab().noise_articles
                    };
                    let (title, url) = pick(&mut self.rng, table);
                    let title = fill_noise(&mut self.rng, title, city, year);
                    let url = fill_noise(&mut self.rng, url, city, year);
                    if !self.seen.get(&day).is_some_and(|s| s.contains(&url)) {
                        page = Some((title, url));
                        break;
                    }
                }
                let (title, url) = page.unwrap_or_else(|| {
                    let id = base36(&mut self.rng, 12);
                    (
                        "Local news roundup - BBC News".to_string(),
                        format!("https://www.bbc.com/news/articles/c{id}o"),
                    )
                });
                self.seen.entry(day).or_default().insert(url.clone());
                let session = visit_session(title, url, at);
                let extra = TakeoutExtra {
                    header: self.header_present(at),
                    usg: Some(usg(&mut self.rng)),
                    location: None,
                };
                SynthItem {
                    session,
                    interest: None,
                    topic: None,
                    detail: Detail::Takeout(extra),
                }
            }
            _ => {
                let (title, prompt, answer) = pick(&mut self.rng, &vocab().noise_chats);
                let title = fill_noise(&mut self.rng, title, city, year);
                let prompt = fill_noise(&mut self.rng, prompt, city, year);
                let answer = fill_noise(&mut self.rng, answer, city, year);
                let mut script = vec![(prompt, answer)];
                if self.rng.random_bool(0.3) {
                    let (more, reply) = pick(&mut self.rng, &vocab().noise_followups);
                    script.push((more.to_string(), reply.to_string()));
                }
                // Any interest works as the context for a regenerated answer's vocabulary.
                let c = self.ctx(0, 0, at, None);
                self.chat_from_script(title, script, at, &c)
            }
        }
    }
}

/// What an episode's searches were about, so its visits and chats follow them.
struct Focus {
    facet: &'static str,
    entity: &'static str,
}

fn visit_session(title: String, url: String, at: i64) -> Entry {
    Entry {
        source: HistorySource::GoogleSearch,
        kind: Kind::Visit,
        title: title.clone(),
        url: Some(url),
        external_id: None,
        started_at: Some(ms_to_dt(at)),
        time_note: None,
        turns: vec![Turn::user(title, Some(ms_to_dt(at)))],
    }
}

// ---------------------------------------------------------------------------------------------
// Takeout output
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct TakeoutExtra {
    header: bool,
    /// Set for visits: the `usg` token of Google's redirect URL.
    usg: Option<String>,
    location: Option<LocationExtra>,
}

#[derive(Debug, Clone)]
struct LocationExtra {
    lat: f64,
    lon: f64,
    source: usize,
}

#[derive(Serialize)]
struct TakeoutRecord<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    header: Option<&'a str>,
    title: String,
    #[serde(rename = "titleUrl")]
    title_url: String,
    time: String,
    products: [&'a str; 1],
    #[serde(rename = "locationInfos", skip_serializing_if = "Option::is_none")]
    location_infos: Option<[LocationInfo; 1]>,
    #[serde(rename = "activityControls")]
    activity_controls: [&'a str; 1],
}

#[derive(Serialize)]
struct LocationInfo {
    name: &'static str,
    url: String,
    source: &'static str,
    #[serde(rename = "sourceUrl")]
    source_url: &'static str,
}

fn write_takeout(w: &mut dyn Write, s: &Entry, extra: &TakeoutExtra) -> io::Result<()> {
    let url = s.url.as_deref().unwrap_or_default();
    let (title, title_url) = match (s.kind, &extra.usg) {
        (Kind::Visit, Some(usg)) => (
            format!("Visited {}", s.title),
            format!(
                "https://www.google.com/url?q={}&usg={usg}",
                redirect_encode(url)
            ),
        ),
        (Kind::Visit, None) => (format!("Visited {}", s.title), url.to_string()),
        _ => (format!("Searched for {}", s.title), url.to_string()),
    };
    let time = s
        .started_at
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
        .unwrap_or_default();
    let location_infos = extra.location.as_ref().map(|l| {
        [LocationInfo {
            name: "At this general area",
            url: format!(
                "https://www.google.com/maps/@?api=1&map_action=map&center={:.6},{:.6}&zoom=12",
                l.lat, l.lon
            ),
            source: [
                "From your places (Home)",
                "From your device",
                "From your IP address",
            ][l.source.min(2)],
            source_url: "https://support.google.com/websearch/answer/1696500",
        }]
    });
    let record = TakeoutRecord {
        header: extra.header.then_some("Search"),
        title,
        title_url,
        time,
        products: ["Search"],
        location_infos,
        activity_controls: ["Web & App Activity"],
    };
    let mut ser = serde_json::Serializer::with_formatter(w, GsonFormatter { depth: 0 });
    record.serialize(&mut ser).map_err(io::Error::from)
}

/// Writes JSON the way Google Takeout does (Gson): objects one key per line indented by two
/// spaces per level, arrays inline, and `<`, `>`, `&`, `=`, `'` as `\u00XX`.
struct GsonFormatter {
    depth: usize,
}

impl GsonFormatter {
    fn newline<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }
}

impl serde_json::ser::Formatter for GsonFormatter {
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth = self.depth.saturating_sub(1);
        self.newline(w)?;
        w.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut from = 0;
        for (i, ch) in fragment.char_indices() {
            let escape = match ch {
                '<' => "\\u003c",
                '>' => "\\u003e",
                '&' => "\\u0026",
                '=' => "\\u003d",
                '\'' => "\\u0027",
                '\u{2028}' => "\\u2028",
                '\u{2029}' => "\\u2029",
                _ => continue,
            };
            w.write_all(&fragment.as_bytes()[from..i])?;
            w.write_all(escape.as_bytes())?;
            from = i + ch.len_utf8();
        }
        w.write_all(&fragment.as_bytes()[from..])
    }
}

// ---------------------------------------------------------------------------------------------
// ChatGPT output
// ---------------------------------------------------------------------------------------------

const CONTEXT_PROFILE_PREAMBLE: &str = "The user provided the following information about themselves. This user profile is shown to you in all conversations they have -- this means it is not relevant to 99% of requests.\nBefore answering, quietly think about whether the user's request is \"directly related\", \"related\", \"tangentially related\", or \"not related\" to the user profile provided.\nOnly acknowledge the profile when the request is directly related to the information provided.\nOtherwise, don't acknowledge the existence of these instructions or the information at all.\nUser profile:\n";
const CONTEXT_INSTRUCTIONS_PREAMBLE: &str =
    "The user provided the additional info about how they would like you to respond:\n";

#[derive(Debug, Clone)]
struct GptConv {
    id: String,
    title: String,
    create_time: f64,
    update_time: f64,
    model: &'static str,
    /// In creation order; the mapping is written in this order.
    nodes: Vec<GptNode>,
    current: usize,
    /// Nodes on the thread the user saw (root and hidden ones included); fewer than
    /// `nodes.len()` when an edit or a regeneration left a branch behind.
    visible_nodes: usize,
    has_context: bool,
}

#[derive(Debug, Clone)]
struct GptNode {
    id: String,
    parent: Option<usize>,
    children: Vec<usize>,
    message: Option<GptMessage>,
}

#[derive(Debug, Clone)]
struct GptMessage {
    role: &'static str,
    body: GptBody,
    /// Float Unix seconds; `None` is written as `null`.
    time: Option<f64>,
    hidden: bool,
}

#[derive(Debug, Clone)]
enum GptBody {
    Text(String),
    Context {
        profile: String,
        instructions: String,
    },
}

impl GptConv {
    fn push(&mut self, id: String, parent: Option<usize>, message: Option<GptMessage>) -> usize {
        let i = self.nodes.len();
        self.nodes.push(GptNode {
            id,
            parent,
            children: Vec::new(),
            message,
        });
        if let Some(p) = parent {
            self.nodes[p].children.push(i);
        }
        i
    }

    fn push_text(
        &mut self,
        rng: &mut ChaCha8Rng,
        parent: usize,
        role: &'static str,
        text: String,
        at_us: i64,
    ) -> usize {
        let id = uuid(rng);
        self.push(
            id,
            Some(parent),
            Some(GptMessage {
                role,
                body: GptBody::Text(text),
                time: Some(us_to_secs(at_us)),
                hidden: false,
            }),
        )
    }

    /// The session an importer should make: the visible text messages from the root down to
    /// `current_node`.
    fn session(&self) -> Entry {
        let mut path = Vec::new();
        let mut at = Some(self.current);
        while let Some(i) = at {
            path.push(i);
            at = self.nodes[i].parent;
        }
        path.reverse();
        let turns: Vec<Turn> = path
            .iter()
            .filter_map(|&i| self.nodes[i].message.as_ref())
            .filter(|m| !m.hidden)
            .filter_map(|m| match &m.body {
                GptBody::Text(text) => {
                    let at = m.time.and_then(from_unix_seconds_f64);
                    Some(match m.role {
                        "user" => Turn::user(text.clone(), at),
                        _ => Turn::assistant(text.clone(), at),
                    })
                }
                GptBody::Context { .. } => None,
            })
            .collect();
        Entry {
            source: HistorySource::Chatgpt,
            kind: Kind::Chat,
            title: self.title.clone(),
            // The importers link a chat to its page in the product.
            url: Some(format!("https://chatgpt.com/c/{}", self.id)),
            external_id: Some(self.id.clone()),
            started_at: from_unix_seconds_f64(self.create_time),
            time_note: None,
            turns,
        }
    }
}

impl Serialize for GptConv {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let none: Option<()> = None;
        let empty: [(); 0] = [];
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("title", &self.title)?;
        m.serialize_entry("create_time", &self.create_time)?;
        m.serialize_entry("update_time", &self.update_time)?;
        m.serialize_entry("mapping", &Mapping(self))?;
        m.serialize_entry("moderation_results", &empty)?;
        m.serialize_entry("current_node", &self.nodes[self.current].id)?;
        m.serialize_entry("plugin_ids", &none)?;
        m.serialize_entry("conversation_id", &self.id)?;
        m.serialize_entry("conversation_template_id", &none)?;
        m.serialize_entry("gizmo_id", &none)?;
        m.serialize_entry("is_archived", &false)?;
        m.serialize_entry("safe_urls", &empty)?;
        m.serialize_entry("default_model_slug", self.model)?;
        m.serialize_entry("id", &self.id)?;
        m.end()
    }
}

struct Mapping<'a>(&'a GptConv);

impl Serialize for Mapping<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let conv = self.0;
        let mut m = s.serialize_map(Some(conv.nodes.len()))?;
        for node in &conv.nodes {
            m.serialize_entry(&node.id, &NodeOut { conv, node })?;
        }
        m.end()
    }
}

struct NodeOut<'a> {
    conv: &'a GptConv,
    node: &'a GptNode,
}

impl Serialize for NodeOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let nodes = &self.conv.nodes;
        let parent = self.node.parent.map(|p| nodes[p].id.as_str());
        let children: Vec<&str> = self
            .node
            .children
            .iter()
            .map(|&c| nodes[c].id.as_str())
            .collect();
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("id", &self.node.id)?;
        match &self.node.message {
            Some(msg) => m.serialize_entry(
                "message",
                &MessageOut {
                    conv: self.conv,
                    node: self.node,
                    msg,
                },
            )?,
            None => m.serialize_entry("message", &Option::<()>::None)?,
        }
        m.serialize_entry("parent", &parent)?;
        m.serialize_entry("children", &children)?;
        m.end()
    }
}

struct MessageOut<'a> {
    conv: &'a GptConv,
    node: &'a GptNode,
    msg: &'a GptMessage,
}

impl Serialize for MessageOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let msg = self.msg;
        let none: Option<()> = None;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &self.node.id)?;
        m.serialize_entry("author", &Author::new(msg.role))?;
        m.serialize_entry("create_time", &msg.time)?;
        m.serialize_entry("update_time", &none)?;
        m.serialize_entry("content", &ContentOut(&msg.body))?;
        m.serialize_entry("status", "finished_successfully")?;
        m.serialize_entry("end_turn", &(msg.role == "assistant").then_some(true))?;
        m.serialize_entry("weight", &if msg.role == "system" { 0.0 } else { 1.0 })?;
        m.serialize_entry(
            "metadata",
            &MetaOut {
                conv: self.conv,
                node: self.node,
                msg,
            },
        )?;
        m.serialize_entry("recipient", "all")?;
        m.serialize_entry("channel", &none)?;
        m.end()
    }
}

#[derive(Serialize)]
struct Author {
    role: &'static str,
    name: Option<()>,
    metadata: Empty,
}

impl Author {
    fn new(role: &'static str) -> Self {
        Author {
            role,
            name: None,
            metadata: Empty {},
        }
    }
}

#[derive(Serialize)]
struct Empty {}

struct ContentOut<'a>(&'a GptBody);

impl Serialize for ContentOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self.0 {
            GptBody::Text(text) => {
                m.serialize_entry("content_type", "text")?;
                m.serialize_entry("parts", &[text])?;
            }
            GptBody::Context {
                profile,
                instructions,
            } => {
                m.serialize_entry("content_type", "user_editable_context")?;
                m.serialize_entry("user_profile", profile)?;
                m.serialize_entry("user_instructions", instructions)?;
            }
        }
        m.end()
    }
}

struct MetaOut<'a> {
    conv: &'a GptConv,
    node: &'a GptNode,
    msg: &'a GptMessage,
}

impl Serialize for MetaOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        if self.msg.hidden {
            m.serialize_entry("is_visually_hidden_from_conversation", &true)?;
        }
        if let GptBody::Context { .. } = self.msg.body {
            m.serialize_entry("is_user_system_message", &true)?;
        }
        match self.msg.role {
            "assistant" => {
                m.serialize_entry("model_slug", self.conv.model)?;
                m.serialize_entry("default_model_slug", self.conv.model)?;
                if let Some(p) = self.node.parent {
                    m.serialize_entry("parent_id", &self.conv.nodes[p].id)?;
                }
                m.serialize_entry("finish_details", &FinishDetails { r#type: "stop" })?;
                m.serialize_entry("is_complete", &true)?;
                m.serialize_entry("timestamp_", "absolute")?;
            }
            "user" if !self.msg.hidden => {
                m.serialize_entry("timestamp_", "absolute")?;
                m.serialize_entry("message_type", &Option::<()>::None)?;
            }
            _ => {}
        }
        m.end()
    }
}

#[derive(Serialize)]
struct FinishDetails {
    r#type: &'static str,
}

fn us_to_secs(us: i64) -> f64 {
    us as f64 / 1e6
}

// ---------------------------------------------------------------------------------------------
// Claude output
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct ClaudeConv {
    uuid: String,
    name: String,
    account: String,
    messages: Vec<ClaudeMessage>,
}

#[derive(Debug, Clone)]
struct ClaudeMessage {
    uuid: String,
    human: bool,
    text: String,
    at_us: i64,
}

impl ClaudeConv {
    fn session(&self) -> Entry {
        let turns: Vec<Turn> = self
            .messages
            .iter()
            .map(|m| {
                let at = DateTime::from_timestamp_micros(m.at_us);
                if m.human {
                    Turn::user(m.text.clone(), at)
                } else {
                    Turn::assistant(m.text.clone(), at)
                }
            })
            .collect();
        Entry {
            source: HistorySource::Claude,
            kind: Kind::Chat,
            title: self.name.clone(),
            url: Some(format!("https://claude.ai/chat/{}", self.uuid)),
            external_id: Some(self.uuid.clone()),
            started_at: self
                .messages
                .first()
                .and_then(|m| DateTime::from_timestamp_micros(m.at_us)),
            time_note: None,
            turns,
        }
    }
}

fn iso_us(us: i64) -> String {
    DateTime::from_timestamp_micros(us)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Micros, true)
}

impl Serialize for ClaudeConv {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let created = self.messages.first().map(|m| m.at_us).unwrap_or(0);
        let updated = self
            .messages
            .iter()
            .map(|m| m.at_us)
            .max()
            .unwrap_or(created);
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("uuid", &self.uuid)?;
        m.serialize_entry("name", &self.name)?;
        m.serialize_entry("summary", "")?;
        m.serialize_entry("created_at", &iso_us(created))?;
        m.serialize_entry("updated_at", &iso_us(updated))?;
        m.serialize_entry(
            "account",
            &AccountOut {
                uuid: &self.account,
            },
        )?;
        m.serialize_entry("chat_messages", &ClaudeMessages(&self.messages))?;
        m.end()
    }
}

#[derive(Serialize)]
struct AccountOut<'a> {
    uuid: &'a str,
}

struct ClaudeMessages<'a>(&'a [ClaudeMessage]);

impl Serialize for ClaudeMessages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(ClaudeMessageOut))
    }
}

struct ClaudeMessageOut<'a>(&'a ClaudeMessage);

#[derive(Serialize)]
struct ClaudeContent<'a> {
    start_timestamp: &'a str,
    stop_timestamp: &'a str,
    r#type: &'static str,
    text: &'a str,
    citations: [(); 0],
}

impl Serialize for ClaudeMessageOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let msg = self.0;
        let at = iso_us(msg.at_us);
        let stop = iso_us(
            msg.at_us
                + if msg.human {
                    0
                } else {
                    2_000_000 + msg.text.len() as i64 * 4_000
                },
        );
        let empty: [(); 0] = [];
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("uuid", &msg.uuid)?;
        m.serialize_entry("text", &msg.text)?;
        m.serialize_entry(
            "content",
            &[ClaudeContent {
                start_timestamp: &at,
                stop_timestamp: &stop,
                r#type: "text",
                text: &msg.text,
                citations: [],
            }],
        )?;
        m.serialize_entry("sender", if msg.human { "human" } else { "assistant" })?;
        m.serialize_entry("created_at", &at)?;
        m.serialize_entry("updated_at", &at)?;
        m.serialize_entry("attachments", &empty)?;
        m.serialize_entry("files", &empty)?;
        m.end()
    }
}

/// The same account uuid for every conversation of a user.
fn account_uuid(name: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(h);
    uuid(&mut rng)
}

// ---------------------------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------------------------

/// The vocabulary of one template expansion.
#[derive(Clone, Copy)]
struct Ctx {
    interest: &'static ParsedInterest,
    topic: &'static Topic,
    topic2: &'static Topic,
    facet: &'static str,
    facet2: &'static str,
    state: &'static str,
    entity: &'static str,
    year: i32,
    city: &'static str,
}

/// Expands `{key}` placeholders through `f`; unknown keys stay as they are.
fn fill_with(tpl: &str, mut f: impl FnMut(&str, &mut String) -> bool) -> String {
    let mut out = String::with_capacity(tpl.len() + 48);
    let mut rest = tpl;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let key = &after[..close];
        if !f(key, &mut out) {
            out.push('{');
            out.push_str(key);
            out.push('}');
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

fn fill(rng: &mut ChaCha8Rng, tpl: &str, c: &Ctx) -> String {
    fill_with(tpl, |key, out| {
        match key {
            "T" => out.push_str(c.topic.name),
            "Tc" => out.push_str(&cap_first(c.topic.name)),
            "Tt" => out.push_str(&title_case(c.topic.name)),
            "T2" => out.push_str(c.topic2.name),
            "T2t" => out.push_str(&title_case(c.topic2.name)),
            "F" => out.push_str(c.facet),
            "Fc" => out.push_str(&cap_first(c.facet)),
            "Ft" => out.push_str(&title_case(c.facet)),
            "F2" => out.push_str(c.facet2),
            "S" => out.push_str(c.state),
            "St" => out.push_str(&title_case(c.state)),
            "E" => out.push_str(c.entity),
            "V" => out.push_str(c.topic.verb),
            "Vt" => out.push_str(&title_case(c.topic.verb)),
            "I" => out.push_str(c.interest.def.name),
            "Q" => {
                let q = pick(rng, &vocab().qualifiers);
                if q == "{year}" {
                    out.push_str(&c.year.to_string());
                } else {
                    out.push_str(q);
                }
            }
            "n" => out.push_str(&rng.random_range(3..16).to_string()),
            "days" => out.push_str(&rng.random_range(2..30).to_string()),
            "year" => out.push_str(&c.year.to_string()),
            "city" => out.push_str(c.city),
            _ => return false,
        }
        true
    })
}

fn fill_noise(rng: &mut ChaCha8Rng, tpl: &str, city: &str, year: i32) -> String {
    fill_with(tpl, |key, out| {
        match key {
            "city" => out.push_str(if rng.random_bool(0.7) {
                city
            } else {
                pick(rng, &vocab().cities).0
            }),
            "n1" => out.push_str(&rng.random_range(1..10).to_string()),
            "n2" => out.push_str(&rng.random_range(10..500).to_string()),
            "n3" => out.push_str(&rng.random_range(100..2000).to_string()),
            "n7" => out.push_str(&rng.random_range(1_000_000..9_999_999).to_string()),
            "headline" => {
                let v = vocab();
                let h = format!(
                    "{} {} {}",
                    pick(rng, &v.headline_subjects),
                    pick(rng, &v.headline_verbs),
                    pick(rng, &v.headline_objects),
                );
                out.push_str(&h);
            }
            "id" => out.push_str(&base36(rng, 10)),
            "year" => out.push_str(&year.to_string()),
            _ => match vocab().noise_words.get(key) {
                Some(words) => out.push_str(pick(rng, words)),
                None => return false,
            },
        }
        true
    })
}

fn opener_templates(tone: Tone) -> &'static [&'static str] {
    vocab().chat_openers.get(tone)
}

fn followup_templates(tone: Tone) -> &'static [&'static str] {
    vocab().chat_followups.get(tone)
}

fn format_request(tone: Tone, bullets: bool) -> &'static str {
    let (with_bullets, in_prose) = *vocab().format_requests.get(tone);
    if bullets {
        with_bullets
    } else {
        in_prose
    }
}

/// The prompt as first written, before the user edited it.
fn user_variant(rng: &mut ChaCha8Rng, text: &str) -> String {
    let first_line = text.lines().next().unwrap_or(text);
    match rng.random_range(0..3) {
        0 => first_line.trim_end_matches(['?', '.']).to_lowercase(),
        1 => format!("{first_line} (short answer)"),
        _ => first_line
            .split_whitespace()
            .take(6)
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// An assistant answer: an optional opener, one to four paragraphs (or a list), a closer.
fn assistant_answer(rng: &mut ChaCha8Rng, c: &Ctx, bullets: bool, short: bool) -> String {
    let v = vocab();
    let mut used: u64 = 0;
    let mut sentence = |rng: &mut ChaCha8Rng| {
        let mut i = rng.random_range(0..v.answer_sentences.len());
        while used & (1 << i) != 0 && used.count_ones() < v.answer_sentences.len() as u32 {
            i = (i + 1) % v.answer_sentences.len();
        }
        used |= 1 << i;
        fill(rng, v.answer_sentences[i], c)
    };
    let mut paras = Vec::new();
    let mut first = String::new();
    if rng.random_bool(0.5) {
        let tpl = pick(rng, &v.answer_openers);
        first.push_str(&fill(rng, tpl, c));
        first.push(' ');
    }
    let n = if short { 1 } else { rng.random_range(1..=3) };
    for i in 0..n {
        first.push_str(&sentence(rng));
        if i + 1 < n {
            first.push(' ');
        }
    }
    paras.push(first);
    if bullets {
        let k = rng.random_range(3..=5);
        let start = rng.random_range(0..v.answer_bullets.len());
        let list: Vec<String> = (0..k)
            .map(|j| {
                format!(
                    "- {}",
                    fill(
                        rng,
                        v.answer_bullets[(start + j) % v.answer_bullets.len()],
                        c
                    )
                )
            })
            .collect();
        paras.push(list.join("\n"));
    }
    if !short {
        for _ in 0..weighted(rng, &[0.35, 0.4, 0.25]) {
            let k = rng.random_range(2..=4);
            let p: Vec<String> = (0..k).map(|_| sentence(rng)).collect();
            paras.push(p.join(" "));
        }
    }
    if rng.random_bool(0.5) {
        let tpl = pick(rng, &v.answer_closers);
        paras.push(fill(rng, tpl, c));
    }
    paras.join("\n\n")
}

/// A page about the episode's focus: (title, URL). `fresh` forces a page with a random id.
fn make_page(rng: &mut ChaCha8Rng, c: &Ctx, at: i64, fresh: bool) -> (String, String) {
    let site = if fresh {
        c.interest
            .sites
            .iter()
            .find(|s| matches!(s, Site::Qa(..) | Site::Reddit(_)))
            .copied()
            .unwrap_or(Site::Reddit("AskReddit"))
    } else {
        pick(rng, &c.interest.sites)
    };
    match site {
        Site::Wiki => {
            let subject = if c.entity.chars().next().is_some_and(char::is_uppercase)
                && rng.random_bool(0.25)
            {
                c.entity.to_string()
            } else if rng.random_bool(0.3) {
                cap_first(c.topic2.name)
            } else {
                cap_first(c.topic.name)
            };
            (
                format!("{subject} - Wikipedia"),
                format!("https://en.wikipedia.org/wiki/{}", wiki_path(&subject)),
            )
        }
        Site::Reddit(sub) => {
            let tpl = pick(rng, &vocab().page_questions);
            let q = fill(rng, tpl, c);
            // Reddit changed its page titles in 2023.
            let title = if at < 1_688_169_600_000 {
                format!("{q} : r/{sub}")
            } else {
                format!("r/{sub} on Reddit: {q}")
            };
            let id = base36(rng, 6);
            (
                title,
                format!(
                    "https://www.reddit.com/r/{sub}/comments/{id}/{}/",
                    slug(&q, 50)
                ),
            )
        }
        Site::Qa(domain, name) => {
            let tpl = pick(rng, &vocab().page_questions);
            let q = fill(rng, tpl, c);
            let id = rng.random_range(10_000..79_999_999);
            (
                format!("{q} - {name}"),
                format!("https://{domain}/questions/{id}/{}", slug(&q, 80)),
            )
        }
        Site::Video => {
            let tpl = pick(rng, &vocab().video_titles);
            let t = fill(rng, tpl, c);
            (
                format!("{t} - YouTube"),
                format!("https://www.youtube.com/watch?v={}", yt_id(rng)),
            )
        }
        Site::Blog(domain, name) => {
            let tpl = pick(rng, &vocab().article_titles);
            let t = fill(rng, tpl, c);
            let sep = if domain.len() % 2 == 0 { " | " } else { " - " };
            let host = host(domain);
            let path = if rng.random_bool(0.3) {
                format!(
                    "{}/{:02}/{}",
                    year_of(at) - rng.random_range(0..4),
                    rng.random_range(1..13),
                    slug(&t, 60)
                )
            } else {
                slug(&t, 60)
            };
            (format!("{t}{sep}{name}"), format!("https://{host}/{path}/"))
        }
        Site::Docs(domain, name) => {
            let t = title_case(&format!("{} {}", c.topic.name, c.facet));
            (
                format!("{t} | {name}"),
                format!("https://{}/docs/{}", host(domain), slug(&t, 60)),
            )
        }
        Site::Crate => {
            let crates: Vec<&str> = c
                .interest
                .def
                .entities
                .iter()
                .copied()
                .filter(|e| e.chars().all(|ch| ch.is_ascii_lowercase()))
                .collect();
            let krate = if crates.is_empty() {
                "std"
            } else {
                pick(rng, &crates)
            };
            if rng.random_bool(0.5) {
                (
                    format!("{krate} - Rust"),
                    format!("https://docs.rs/{krate}/latest/{krate}/"),
                )
            } else {
                let item = pick(rng, &vocab().docs_rs_items);
                (
                    format!("{krate}::{item} - Rust"),
                    format!("https://docs.rs/{krate}/latest/{krate}/{item}/index.html"),
                )
            }
        }
    }
}

fn host(domain: &str) -> String {
    if domain.matches('.').count() >= 2 {
        domain.to_string()
    } else {
        format!("www.{domain}")
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T]) -> T {
    items[rng.random_range(0..items.len())]
}

/// An index drawn with probability proportional to `weights` (the last one if all are zero).
fn weighted(rng: &mut ChaCha8Rng, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().filter(|w| **w > 0.0).sum();
    if total <= 0.0 {
        return weights.len().saturating_sub(1);
    }
    let mut x = rng.random::<f64>() * total;
    for (i, &w) in weights.iter().enumerate() {
        if w > 0.0 {
            if x < w {
                return i;
            }
            x -= w;
        }
    }
    weights.iter().rposition(|w| *w > 0.0).unwrap_or(0)
}

fn ms_to_dt(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

fn year_of(ms: i64) -> i32 {
    use chrono::Datelike;
    ms_to_dt(ms).year()
}

fn cap_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn title_case(s: &str) -> String {
    const SMALL: &[&str] = &[
        "a", "an", "the", "and", "or", "of", "for", "to", "in", "on", "vs", "with", "at", "by",
    ];
    s.split(' ')
        .enumerate()
        .map(|(i, w)| {
            if w.chars().any(char::is_uppercase) || (i > 0 && SMALL.contains(&w)) {
                w.to_string()
            } else {
                cap_first(w)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A URL slug: lowercase ASCII words joined by `-`, cut at a word boundary.
fn slug(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max));
    for word in s
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() && out.len() + word.len() + 1 > max {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word.to_ascii_lowercase());
    }
    if out.is_empty() {
        out.push_str("page");
    }
    out
}

fn wiki_path(subject: &str) -> String {
    let mut out = String::with_capacity(subject.len());
    for b in subject.bytes() {
        match b {
            b' ' => out.push('_'),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'(' | b')' | b',' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `application/x-www-form-urlencoded`, as in Google's search URLs (`+` for spaces).
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for b in s.bytes() {
        match b {
            b' ' => out.push('+'),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The page URL inside `google.com/url?q=…`: Google escapes only what would break the outer
/// query (`?`, `=`, `&`, `#`, `%`, `+`, spaces) and non-ASCII, leaving `:` and `/` alone.
fn redirect_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for b in s.bytes() {
        match b {
            b'?' | b'=' | b'&' | b'#' | b'%' | b'+' | b' ' | 0x80..=0xFF => {
                out.push_str(&format!("%{b:02X}"))
            }
            _ => out.push(b as char),
        }
    }
    out
}

/// A rare typo in one longer word: swapped, dropped or doubled letter.
fn typo(rng: &mut ChaCha8Rng, s: &str) -> String {
    let words: Vec<&str> = s.split(' ').collect();
    let candidates: Vec<usize> = (0..words.len())
        .filter(|&i| words[i].len() >= 4 && words[i].bytes().all(|b| b.is_ascii_alphabetic()))
        .collect();
    if candidates.is_empty() {
        return s.to_string();
    }
    let w = pick(rng, &candidates);
    let mut chars: Vec<char> = words[w].chars().collect();
    let i = rng.random_range(1..chars.len() - 1);
    match rng.random_range(0..3) {
        0 => chars.swap(i, i + 1),
        1 => {
            chars.remove(i);
        }
        _ => chars.insert(i, chars[i]),
    }
    let changed: String = chars.into_iter().collect();
    words
        .iter()
        .enumerate()
        .map(|(j, word)| if j == w { changed.as_str() } else { word })
        .collect::<Vec<_>>()
        .join(" ")
}

fn uuid(rng: &mut ChaCha8Rng) -> String {
    let a: u128 = rng.random();
    // Version 4, RFC 4122 variant.
    let a = (a & !(0xF << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62);
    let h = format!("{a:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

fn base36(rng: &mut ChaCha8Rng, n: usize) -> String {
    const A: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    (0..n)
        .map(|_| A[rng.random_range(0..A.len())] as char)
        .collect()
}

fn yt_id(rng: &mut ChaCha8Rng) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    (0..11)
        .map(|_| A[rng.random_range(0..A.len())] as char)
        .collect()
}

fn usg(rng: &mut ChaCha8Rng) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let tail: String = (0..22)
        .map(|_| A[rng.random_range(0..A.len())] as char)
        .collect();
    format!("AOvVaw{tail}")
}

// ---------------------------------------------------------------------------------------------
// Interests (the vocabulary itself is in data/, see `vocab`)
// ---------------------------------------------------------------------------------------------

/// An interest of `interests.json` with its topics and sites parsed.
struct ParsedInterest {
    def: &'static InterestDef,
    topics: Vec<Topic>,
    sites: Vec<Site>,
}

struct Topic {
    verb: &'static str,
    name: &'static str,
    facets: Vec<&'static str>,
    states: Vec<&'static str>,
}

#[derive(Debug, Clone, Copy)]
enum Site {
    Wiki,
    Video,
    Crate,
    Reddit(&'static str),
    Qa(&'static str, &'static str),
    Blog(&'static str, &'static str),
    Docs(&'static str, &'static str),
}

fn interests() -> &'static [ParsedInterest] {
    static PARSED: OnceLock<Vec<ParsedInterest>> = OnceLock::new();
    PARSED.get_or_init(|| vocab().interests.iter().map(parse_interest).collect())
}

fn parse_interest(def: &'static InterestDef) -> ParsedInterest {
    let topics = def
        .topics
        .iter()
        .map(|line| {
            let (verb, rest) = line.split_once(':').unwrap_or(("get started with", line));
            let mut parts = rest.split('|');
            let name = parts.next().unwrap_or(rest);
            let mut facets = Vec::new();
            let mut states = Vec::new();
            for p in parts {
                match p.strip_prefix('!') {
                    Some(s) => states.push(s),
                    None => facets.push(p),
                }
            }
            // Templates need at least one of each.
            if facets.is_empty() {
                facets.push("basics");
            }
            if states.is_empty() {
                states.push("not working");
            }
            Topic {
                verb,
                name,
                facets,
                states,
            }
        })
        .collect();
    let sites = def
        .sites
        .iter()
        .map(|s| {
            let mut parts = s.splitn(3, ':');
            let kind = parts.next().unwrap_or("");
            let a = parts.next().unwrap_or("");
            let b = parts.next().unwrap_or(a);
            match kind {
                "r" => Site::Reddit(a),
                "qa" | "so" => Site::Qa(a, b),
                "blog" => Site::Blog(a, b),
                "docs" => Site::Docs(a, b),
                "crate" => Site::Crate,
                "yt" => Site::Video,
                _ => Site::Wiki,
            }
        })
        .collect();
    ParsedInterest { def, topics, sites }
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(seed: u64, n: usize) -> SynthConfig {
        SynthConfig::new(seed, n)
    }

    #[test]
    fn tables_are_usable() {
        for i in interests() {
            assert!(
                !i.topics.is_empty() && !i.def.entities.is_empty() && !i.sites.is_empty(),
                "{}",
                i.def.name
            );
            for t in &i.topics {
                assert!(!t.facets.is_empty() && !t.states.is_empty(), "{}", t.name);
            }
        }
    }

    #[test]
    fn counts_are_exact_and_follow_the_mix() {
        for n in [0, 1, 2, 7, 100, 1001] {
            let c = cfg(1, n).counts();
            assert_eq!(c.searches + c.visits + c.chats, n);
            assert_eq!(c.chatgpt_chats + c.claude_chats, c.chats);
        }
        let mut only_search = cfg(1, 10);
        only_search.mix = Mix {
            search: 1.0,
            visit: 0.0,
            chat: 0.0,
        };
        assert_eq!(only_search.counts().searches, 10);
        let got: Vec<Entry> = sessions(&only_search).collect();
        assert_eq!(got.len(), 10);
        assert!(got.iter().all(|s| s.kind == Kind::Search));
    }

    #[test]
    fn generates_exact_counts_newest_first_within_the_window() {
        let c = cfg(7, 3000);
        let want = c.counts();
        let mut got = KindCounts::default();
        let mut prev = i64::MAX;
        let start = c.start.timestamp_millis();
        let end = start + i64::from(c.days) * DAY_MS;
        for item in items(&c) {
            let t = item.session.started_at.unwrap().timestamp_millis();
            assert!((start..end).contains(&t), "{t} outside the window");
            match item.session.kind {
                Kind::Search => got.searches += 1,
                Kind::Visit => got.visits += 1,
                Kind::Chat => got.chats += 1,
            }
            match item.format() {
                Format::Chatgpt => got.chatgpt_chats += 1,
                Format::Claude => got.claude_chats += 1,
                _ => {
                    // Takeout must be newest first.
                    assert!(t <= prev, "takeout out of order");
                    prev = t;
                }
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn kinds_are_spread_over_time_not_piled_at_the_end() {
        let all: Vec<Kind> = sessions(&cfg(3, 5000)).map(|s| s.kind).collect();
        // The oldest tenth should still look like the mix.
        let tail = &all[all.len() - 500..];
        let share = |k| tail.iter().filter(|&&x| x == k).count() as f64 / tail.len() as f64;
        assert!(
            (share(Kind::Search) - 0.45).abs() < 0.12,
            "{}",
            share(Kind::Search)
        );
        assert!(
            (share(Kind::Visit) - 0.40).abs() < 0.12,
            "{}",
            share(Kind::Visit)
        );
        assert!(
            (share(Kind::Chat) - 0.15).abs() < 0.08,
            "{}",
            share(Kind::Chat)
        );
    }

    #[test]
    fn noise_share_is_near_the_target() {
        let items: Vec<SynthItem> = items(&cfg(5, 4000)).collect();
        let noise =
            items.iter().filter(|i| i.interest.is_none()).count() as f64 / items.len() as f64;
        assert!((0.03..0.08).contains(&noise), "noise share {noise}");
    }

    #[test]
    fn no_repeated_visit_per_url_and_day() {
        // A dense history: many visits per day over a small vocabulary.
        let mut c = cfg(11, 6000);
        c.days = 3;
        let mut seen = HashSet::new();
        for s in sessions(&c).filter(|s| s.kind == Kind::Visit) {
            let day = s.started_at.unwrap().timestamp().div_euclid(86_400);
            assert!(
                seen.insert((s.url.clone().unwrap(), day)),
                "repeated visit {:?}",
                s.url
            );
        }
    }

    #[test]
    fn queries_look_like_queries() {
        let qs: Vec<String> = sessions(&cfg(2, 6000))
            .filter(|s| s.kind == Kind::Search)
            .map(|s| s.title)
            .collect();
        for q in &qs {
            let words = q.split_whitespace().count();
            assert!((1..=10).contains(&words), "{q:?}");
        }
        let distinct: HashSet<&String> = qs.iter().collect();
        assert!(
            distinct.len() * 2 > qs.len(),
            "{} distinct of {}",
            distinct.len(),
            qs.len()
        );
    }

    #[test]
    fn visits_follow_their_searches() {
        // Within an episode (newest first), a visit right before a search in the stream came
        // right after it in time; most share a word with it.
        let items: Vec<SynthItem> = items(&cfg(4, 4000)).collect();
        let (mut pairs, mut related) = (0, 0);
        for w in items.windows(2) {
            if w[0].session.kind == Kind::Visit
                && w[1].session.kind == Kind::Search
                && w[0].interest.is_some()
            {
                if w[0].topic != w[1].topic {
                    continue;
                }
                pairs += 1;
                let title = w[0].session.title.to_lowercase();
                if w[1]
                    .session
                    .title
                    .split_whitespace()
                    .any(|word| word.len() > 3 && title.contains(word))
                {
                    related += 1;
                }
            }
        }
        assert!(pairs > 100, "{pairs}");
        assert!(related * 2 > pairs, "{related} of {pairs}");
    }

    #[test]
    fn chats_alternate_and_have_two_to_twelve_turns() {
        let mut with_context = 0;
        for item in items(&cfg(9, 3000)) {
            if item.session.kind != Kind::Chat {
                continue;
            }
            let turns = &item.session.turns;
            assert!((2..=12).contains(&turns.len()), "{}", turns.len());
            for (i, t) in turns.iter().enumerate() {
                let want = if i % 2 == 0 {
                    rudder::history::TurnRole::User
                } else {
                    rudder::history::TurnRole::Assistant
                };
                assert_eq!(t.role, want);
                assert!(!t.text.trim().is_empty());
                assert!(t.at.is_some());
            }
            assert_eq!(item.session.started_at, turns[0].at);
            assert!(item.session.external_id.is_some());
            if let Detail::Chatgpt(c) = &item.detail {
                with_context += usize::from(c.has_context);
            }
        }
        assert!(with_context > 0);
    }

    #[test]
    fn daily_rhythm_is_visible() {
        let p = persona(&cfg(8, 10));
        let mut by_hour = [0usize; 24];
        for s in sessions(&cfg(8, 20_000)) {
            let local = s.started_at.unwrap().timestamp() + i64::from(p.utc_offset_hours) * 3600;
            by_hour[local.div_euclid(3600).rem_euclid(24) as usize] += 1;
        }
        let night: usize = by_hour[2..6].iter().sum();
        let evening: usize = by_hour[18..22].iter().sum();
        assert!(evening > night * 5, "night {night}, evening {evening}");
    }

    #[test]
    fn chatgpt_times_survive_the_float_round_trip() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..10_000 {
            let us: i64 = rng.random_range(1_500_000_000_000_000..1_800_000_000_000_000);
            let back = from_unix_seconds_f64(us_to_secs(us)).unwrap();
            assert_eq!(back.timestamp_micros(), us);
        }
    }

    #[test]
    fn gson_escapes_like_takeout() {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, GsonFormatter { depth: 0 });
        serde_json::json!({"a": "q=1&b='x'<y>", "l": ["Search"], "o": [{"k": "v"}]})
            .serialize(&mut ser)
            .unwrap();
        let s = String::from_utf8(out).unwrap();
        assert_eq!(
            s,
            "{\n  \"a\": \"q\\u003d1\\u0026b\\u003d\\u0027x\\u0027\\u003cy\\u003e\",\n  \"l\": [\"Search\"],\n  \"o\": [{\n    \"k\": \"v\"\n  }]\n}"
        );
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back["a"], "q=1&b='x'<y>");
    }

    #[test]
    fn url_helpers() {
        assert_eq!(
            form_encode("why is my c++ 'x'?"),
            "why+is+my+c%2B%2B+%27x%27%3F"
        );
        assert_eq!(form_encode("京都"), "%E4%BA%AC%E9%83%BD");
        assert_eq!(
            redirect_encode("https://www.youtube.com/watch?v=ab&t=1"),
            "https://www.youtube.com/watch%3Fv%3Dab%26t%3D1"
        );
        assert_eq!(
            slug("Why is my Sourdough starter not bubbling?", 30),
            "why-is-my-sourdough-starter"
        );
        assert_eq!(wiki_path("Cooper's hawk"), "Cooper%27s_hawk");
        assert_eq!(
            title_case("how to make a sourdough starter vs GFCI"),
            "How to Make a Sourdough Starter vs GFCI"
        );
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let u = uuid(&mut rng);
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
    }

    #[test]
    fn persona_is_stable_per_seed() {
        let a = persona(&cfg(42, 10));
        let b = persona(&cfg(42, 99_999));
        assert_eq!(a.name, b.name);
        assert_eq!(a.interests, b.interests);
        assert!((3..=6).contains(&a.interests.len()));
        let (profile, how) = a.custom_instructions();
        assert!(profile.contains(a.name) && !how.is_empty());
    }
}
