//! The generator's vocabulary: the JSON files in `crates/synth/data/`, embedded at build time
//! and parsed once. Editing a file changes what the generator writes (the same seed still gives
//! the same files for the same data).
//!
//! * `persona.json`: first names, occupations, and cities with their UTC offset and position.
//! * `interests.json`: the interests a user can have. Topics are `verb:topic|facet|!state|…`
//!   (facets are noun phrases that follow the topic; `!` marks a problem state, "not
//!   bubbling"). Sites: `wiki`, `yt`, `crate`, `r:<subreddit>`, `qa:<domain>:<name>` (Stack
//!   Exchange), `blog:<domain>:<name>`, `docs:<domain>:<name>`.
//! * `templates.json`: search queries, chat prompts and titles, assistant answers and page
//!   titles, with `{key}` placeholders (see `fill` in the generator).
//! * `noise.json`: everyday searches, pages and chats unrelated to any interest, and the words
//!   their placeholders draw from.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::Tone;

// ---------------------------------------------------------------------------------------------
// The files
// ---------------------------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PersonaFile {
    pub names: Vec<String>,
    pub occupations: Vec<String>,
    pub cities: Vec<CityFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CityFile {
    pub name: String,
    pub utc_offset_hours: i32,
    pub latitude: f64,
    pub longitude: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InterestFile {
    pub name: String,
    pub about: String,
    pub episodic: bool,
    pub topics: Vec<String>,
    pub entities: Vec<String>,
    pub sites: Vec<String>,
    /// Code a user pastes into chats about this interest.
    pub snippets: Vec<SnippetFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SnippetFile {
    pub language: String,
    pub code: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ByTone<T> {
    pub terse: T,
    pub neutral: T,
    pub polite: T,
}

impl<T> ByTone<T> {
    pub fn get(&self, tone: Tone) -> &T {
        match tone {
            Tone::Terse => &self.terse,
            Tone::Neutral => &self.neutral,
            Tone::Polite => &self.polite,
        }
    }

    fn map<U>(self, mut f: impl FnMut(T) -> U) -> ByTone<U> {
        ByTone {
            terse: f(self.terse),
            neutral: f(self.neutral),
            polite: f(self.polite),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct QueryTemplateFile {
    /// How often the template is drawn, relative to the others.
    pub weight: f64,
    /// Whether the query is phrased as a question ("how to …").
    pub question: bool,
    pub template: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FormatRequestFile {
    /// Appended to a first prompt by a user who wants lists.
    pub bullets: String,
    /// … and by one who wants prose.
    pub prose: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TemplatesFile {
    pub query_templates: Vec<QueryTemplateFile>,
    /// What `{Q}` becomes in a query (`{year}` is the year of the search).
    pub qualifiers: Vec<String>,
    /// A chat's first prompt, by the user's tone.
    pub chat_openers: ByTone<Vec<String>>,
    /// Later prompts, by the user's tone.
    pub chat_followups: ByTone<Vec<String>>,
    pub format_requests: ByTone<FormatRequestFile>,
    pub chat_titles: Vec<String>,
    pub answer_openers: Vec<String>,
    /// At most 63: an answer tracks the sentences it used in a `u64`.
    pub answer_sentences: Vec<String>,
    pub answer_bullets: Vec<String>,
    pub answer_closers: Vec<String>,
    /// Question titles of forum and Q&A pages.
    pub page_questions: Vec<String>,
    pub video_titles: Vec<String>,
    pub article_titles: Vec<String>,
    /// Modules of a crate's page on docs.rs.
    pub docs_rs_items: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoiseFile {
    pub queries: Vec<String>,
    /// Pages visited again and again (a day may repeat them).
    pub pages: Vec<PageFile>,
    /// One-off pages (a day does not repeat them).
    pub articles: Vec<PageFile>,
    pub chats: Vec<ChatFile>,
    pub followups: Vec<FollowupFile>,
    /// What each `{key}` of the templates above draws from (besides `city`, `year`, `id`,
    /// `headline` and the numbers `n1`, `n2`, `n3`, `n7`).
    pub words: BTreeMap<String, Vec<String>>,
    /// `{headline}`: subject, verb and object drawn in that order.
    pub headline: HeadlineFile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageFile {
    pub title: String,
    pub url: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChatFile {
    pub title: String,
    pub prompt: String,
    pub answer: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FollowupFile {
    pub prompt: String,
    pub answer: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HeadlineFile {
    pub subjects: Vec<String>,
    pub verbs: Vec<String>,
    pub objects: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// What the generator uses
// ---------------------------------------------------------------------------------------------

type S = &'static str;

/// One interest, as in `interests.json`.
pub(crate) struct InterestDef {
    pub name: S,
    pub about: S,
    pub episodic: bool,
    pub topics: Vec<S>,
    pub entities: Vec<S>,
    pub sites: Vec<S>,
    /// (language, code).
    pub snippets: Vec<(S, S)>,
}

/// The whole vocabulary, with `'static` strings (parsed once, kept for the process).
pub(crate) struct Vocab {
    pub names: Vec<S>,
    pub occupations: Vec<S>,
    /// (city, UTC offset in hours, latitude, longitude).
    pub cities: Vec<(S, i32, f64, f64)>,
    pub interests: Vec<InterestDef>,
    /// (weight, is a question form, template).
    pub query_templates: Vec<(f64, bool, S)>,
    pub qualifiers: Vec<S>,
    pub chat_openers: ByTone<Vec<S>>,
    pub chat_followups: ByTone<Vec<S>>,
    /// (with bullets, in prose).
    pub format_requests: ByTone<(S, S)>,
    pub chat_titles: Vec<S>,
    pub answer_openers: Vec<S>,
    pub answer_sentences: Vec<S>,
    pub answer_bullets: Vec<S>,
    pub answer_closers: Vec<S>,
    pub page_questions: Vec<S>,
    pub video_titles: Vec<S>,
    pub article_titles: Vec<S>,
    pub docs_rs_items: Vec<S>,
    pub noise_queries: Vec<S>,
    /// (title, URL).
    pub noise_pages: Vec<(S, S)>,
    pub noise_articles: Vec<(S, S)>,
    /// (title, prompt, answer).
    pub noise_chats: Vec<(S, S, S)>,
    /// (prompt, answer).
    pub noise_followups: Vec<(S, S)>,
    pub noise_words: BTreeMap<S, Vec<S>>,
    pub headline_subjects: Vec<S>,
    pub headline_verbs: Vec<S>,
    pub headline_objects: Vec<S>,
}

pub(crate) const PERSONA_JSON: &str = include_str!("../data/persona.json");
pub(crate) const INTERESTS_JSON: &str = include_str!("../data/interests.json");
pub(crate) const TEMPLATES_JSON: &str = include_str!("../data/templates.json");
pub(crate) const NOISE_JSON: &str = include_str!("../data/noise.json");

/// The vocabulary (the embedded files, parsed on first use).
pub(crate) fn vocab() -> &'static Vocab {
    static VOCAB: OnceLock<Vocab> = OnceLock::new();
    VOCAB.get_or_init(|| {
        fn parse<T: serde::de::DeserializeOwned>(file: &str, json: &str) -> T {
            serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("crates/synth/data/{file} is not valid: {e}"))
        }
        let vocab = Vocab::from_files(
            parse("persona.json", PERSONA_JSON),
            parse("interests.json", INTERESTS_JSON),
            parse("templates.json", TEMPLATES_JSON),
            parse("noise.json", NOISE_JSON),
        );
        if let Err(problem) = vocab.check() {
            panic!("crates/synth/data: {problem}");
        }
        vocab
    })
}

fn leak(s: String) -> S {
    Box::leak(s.into_boxed_str())
}

fn leak_all(v: Vec<String>) -> Vec<S> {
    v.into_iter().map(leak).collect()
}

impl Vocab {
    fn from_files(
        persona: PersonaFile,
        interests: Vec<InterestFile>,
        templates: TemplatesFile,
        noise: NoiseFile,
    ) -> Vocab {
        let pages = |v: Vec<PageFile>| {
            v.into_iter()
                .map(|p| (leak(p.title), leak(p.url)))
                .collect()
        };
        Vocab {
            names: leak_all(persona.names),
            occupations: leak_all(persona.occupations),
            cities: persona
                .cities
                .into_iter()
                .map(|c| (leak(c.name), c.utc_offset_hours, c.latitude, c.longitude))
                .collect(),
            interests: interests
                .into_iter()
                .map(|i| InterestDef {
                    name: leak(i.name),
                    about: leak(i.about),
                    episodic: i.episodic,
                    topics: leak_all(i.topics),
                    entities: leak_all(i.entities),
                    sites: leak_all(i.sites),
                    snippets: i
                        .snippets
                        .into_iter()
                        .map(|s| (leak(s.language), leak(s.code)))
                        .collect(),
                })
                .collect(),
            query_templates: templates
                .query_templates
                .into_iter()
                .map(|t| (t.weight, t.question, leak(t.template)))
                .collect(),
            qualifiers: leak_all(templates.qualifiers),
            chat_openers: templates.chat_openers.map(leak_all),
            chat_followups: templates.chat_followups.map(leak_all),
            format_requests: templates
                .format_requests
                .map(|f| (leak(f.bullets), leak(f.prose))),
            chat_titles: leak_all(templates.chat_titles),
            answer_openers: leak_all(templates.answer_openers),
            answer_sentences: leak_all(templates.answer_sentences),
            answer_bullets: leak_all(templates.answer_bullets),
            answer_closers: leak_all(templates.answer_closers),
            page_questions: leak_all(templates.page_questions),
            video_titles: leak_all(templates.video_titles),
            article_titles: leak_all(templates.article_titles),
            docs_rs_items: leak_all(templates.docs_rs_items),
            noise_queries: leak_all(noise.queries),
            noise_pages: pages(noise.pages),
            noise_articles: pages(noise.articles),
            noise_chats: noise
                .chats
                .into_iter()
                .map(|c| (leak(c.title), leak(c.prompt), leak(c.answer)))
                .collect(),
            noise_followups: noise
                .followups
                .into_iter()
                .map(|f| (leak(f.prompt), leak(f.answer)))
                .collect(),
            noise_words: noise
                .words
                .into_iter()
                .map(|(k, v)| (leak(k), leak_all(v)))
                .collect(),
            headline_subjects: leak_all(noise.headline.subjects),
            headline_verbs: leak_all(noise.headline.verbs),
            headline_objects: leak_all(noise.headline.objects),
        }
    }

    /// What the generator relies on: no empty table (it draws from each), at most 63 answer
    /// sentences, no noise word list named like a built-in key.
    fn check(&self) -> Result<(), String> {
        let lists: [(&str, usize); 25] = [
            ("persona.json: names", self.names.len()),
            ("persona.json: occupations", self.occupations.len()),
            ("persona.json: cities", self.cities.len()),
            ("interests.json", self.interests.len()),
            (
                "templates.json: query_templates",
                self.query_templates.len(),
            ),
            ("templates.json: qualifiers", self.qualifiers.len()),
            (
                "templates.json: chat_openers.terse",
                self.chat_openers.terse.len(),
            ),
            (
                "templates.json: chat_openers.neutral",
                self.chat_openers.neutral.len(),
            ),
            (
                "templates.json: chat_openers.polite",
                self.chat_openers.polite.len(),
            ),
            (
                "templates.json: chat_followups.terse",
                self.chat_followups.terse.len(),
            ),
            (
                "templates.json: chat_followups.neutral",
                self.chat_followups.neutral.len(),
            ),
            (
                "templates.json: chat_followups.polite",
                self.chat_followups.polite.len(),
            ),
            ("templates.json: chat_titles", self.chat_titles.len()),
            ("templates.json: answer_openers", self.answer_openers.len()),
            (
                "templates.json: answer_sentences",
                self.answer_sentences.len(),
            ),
            ("templates.json: answer_bullets", self.answer_bullets.len()),
            ("templates.json: answer_closers", self.answer_closers.len()),
            ("templates.json: page_questions", self.page_questions.len()),
            ("templates.json: video_titles", self.video_titles.len()),
            ("templates.json: article_titles", self.article_titles.len()),
            ("templates.json: docs_rs_items", self.docs_rs_items.len()),
            ("noise.json: queries", self.noise_queries.len()),
            ("noise.json: pages", self.noise_pages.len()),
            ("noise.json: articles", self.noise_articles.len()),
            ("noise.json: chats", self.noise_chats.len()),
        ];
        let more = [
            ("noise.json: followups", self.noise_followups.len()),
            (
                "noise.json: headline.subjects",
                self.headline_subjects.len(),
            ),
            ("noise.json: headline.verbs", self.headline_verbs.len()),
            ("noise.json: headline.objects", self.headline_objects.len()),
        ];
        let words = self
            .noise_words
            .iter()
            .map(|(k, v)| (*k, v.len()))
            .collect::<Vec<_>>();
        for (what, n) in lists.into_iter().chain(more) {
            if n == 0 {
                return Err(format!("{what} is empty"));
            }
        }
        for (key, n) in words {
            if n == 0 {
                return Err(format!("noise.json: words.{key} is empty"));
            }
        }
        if self.answer_sentences.len() >= 64 {
            return Err("templates.json: more than 63 answer_sentences".into());
        }
        for key in self.noise_words.keys() {
            if matches!(
                *key,
                "city" | "year" | "id" | "headline" | "n1" | "n2" | "n3" | "n7"
            ) {
                return Err(format!("noise.json: words.{key} is a built-in key"));
            }
        }
        Ok(())
    }
}
