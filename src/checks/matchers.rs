//! Two judge-free matchers, each an embedding similarity checked by plain word counting.
//! The evaluation (`rudder eval quality`) calibrates their thresholds on labelled pairs; the
//! research loop uses the support matcher at its calibrated threshold to refuse findings
//! their passages do not support.
//!
//! * [`SupportMatcher`]: "this sentence is supported by this cited passage".
//! * [`NeedMatcher`]: "this sentence addresses this need".
//!
//! # Formulas
//!
//! Words are lower-cased, split on anything but letters and digits (a number keeps its
//! decimal point and loses its thousands commas: `1,200` is `1200`), stop words dropped and
//! stemmed lightly (`-ies` → `-y`, then one of `-ing`, `-ed`, `-es`, `-s`, keeping at least
//! three letters). Two stems match when equal, or when they share a prefix of at least five
//! letters and the shorter has at most two more ("economy"/"economic", not
//! "community"/"communication"). Numbers match only when equal.
//!
//! **Support**: `score = cos_max × 0.8^missing_numbers × (1 − 0.2 × (1 − coverage))`, where
//! * `cos_max` is the highest cosine between the sentence and a unit of the passage: each of
//!   its sentences, each two neighbouring sentences, and the whole passage (a claim may condense
//!   one sentence or join two);
//! * `coverage` is the weighted share of the sentence's content words found in the passage;
//!   numbers and names (capitalised words not opening the sentence) weigh
//!   [`SPECIFIC_WORD_WEIGHT`], other words 1. A sentence with no content word has coverage 1;
//! * `missing_numbers` counts the sentence's numbers (written in digits) absent from the passage.
//!
//! The embedding sees the topic; the counting sees what is asserted. A different number is the
//! clearest sign of an unsupported sentence on the passage's topic, so each one costs a fifth of
//! the score ([`MISSING_NUMBER_FACTOR`]). Words the passage lacks weigh less
//! ([`COVERAGE_WEIGHT`]): a faithful paraphrase brings new words too, so on the shipped pairs a
//! heavier coverage term rejected more paraphrases than invented causes or consequences.
//!
//! **Need**: `score = cos(sentence, statement) × (1 + specifics_share) / 2`, halved
//! ([`STATEMENT_FACTOR`]) when the sentence does not advise its reader, where `specifics_share` is the share of the need's specifics
//! found in the sentence (a specific is found when all its content words are). Hard negatives
//! mention the need's words without addressing it; they lose on cosine (the statement says what
//! is needed, not just the topic), on specifics (a sentence that addresses the need names its
//! particulars), or on form: a sentence meets *this reader's* need only when it speaks to them
//! ("your knee", "you have"), tells them what to do ("Pick …", "Avoid …"), or applies their
//! situation ("Given …", "Within a $120 budget, …") — [`advises_reader`]. A general statement
//! that a knee injury is common addresses nobody. The evaluation calibrates the need threshold
//! for precision (the most recall with precision ≥ 0.8 on its calibration half): without the
//! form term the held-out precision on the planted set was 0.56, so a report that knew nothing
//! about its reader "addressed" 38 % of their needs.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::embed::{cosine, EmbedError, Embedder};

/// How much a number or a name counts in a support sentence's coverage, against 1 for other
/// content words: a wrong figure or a wrong person is what most often turns a topical sentence
/// into an unsupported one.
pub const SPECIFIC_WORD_WEIGHT: f32 = 3.0;

/// What each number of a support sentence absent from the passage multiplies the score by.
pub const MISSING_NUMBER_FACTOR: f32 = 0.8;

/// How much a support sentence's uncovered words can take off its score (all uncovered: 20%).
pub const COVERAGE_WEIGHT: f32 = 0.2;

/// Texts embedded per call to the embedder.
const EMBED_BATCH: usize = 64;

/// The support threshold calibrated by `rudder eval quality` for all-MiniLM-L6-v2 (the
/// midpoint the calibration half picked; held-out P 0.74, R 0.73 on 119 pairs).
pub const SUPPORT_THRESHOLD: f32 = 0.739;

/// A sentence and a cited passage, labelled whether the passage supports the sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupportPair {
    /// The passage's id; pairs of one passage stay in one calibration half.
    pub group: String,
    pub passage: String,
    pub sentence: String,
    pub supported: bool,
}

/// A sentence and a need, labelled whether the sentence addresses the need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeedPair {
    /// The need's id; pairs of one need stay in one calibration half.
    pub group: String,
    pub sentence: String,
    pub statement: String,
    pub specifics: Vec<String>,
    pub addresses: bool,
}

/// A need: what the reader needs, and the particulars that a sentence addressing it names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Need {
    pub statement: String,
    /// 1–4 short strings; a sentence that addresses the need normally contains one of them.
    pub specifics: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// Embeddings

/// Embeddings by text, so a sentence scored against many passages or needs is embedded once.
struct EmbeddingCache<'a> {
    embedder: &'a dyn Embedder,
    vectors: Mutex<HashMap<String, Vec<f32>>>,
}

impl<'a> EmbeddingCache<'a> {
    fn new(embedder: &'a dyn Embedder) -> Self {
        EmbeddingCache {
            embedder,
            vectors: Mutex::new(HashMap::new()),
        }
    }

    /// Embeds the texts not cached yet, in batches.
    fn prefetch(&self, texts: &[&str]) -> Result<(), EmbedError> {
        let missing: Vec<&str> = {
            let cached = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
            let mut seen = BTreeSet::new();
            texts
                .iter()
                .copied()
                .filter(|t| !cached.contains_key(*t) && seen.insert(*t))
                .collect()
        };
        for batch in missing.chunks(EMBED_BATCH) {
            let vectors = self.embedder.embed(batch)?;
            let mut cached = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
            for (text, vector) in batch.iter().zip(vectors) {
                cached.insert((*text).to_string(), vector);
            }
        }
        Ok(())
    }

    /// The vectors of `texts`, in order, embedding those not cached.
    fn get(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.prefetch(texts)?;
        let cached = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
        Ok(texts.iter().map(|t| cached[*t].clone()).collect())
    }
}

// ---------------------------------------------------------------------------------------------
// Support

/// The parts of a support score, kept apart for explaining a verdict and for ablations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SupportScore {
    /// The highest cosine between the sentence and a unit of the passage.
    pub cosine: f32,
    /// The weighted share of the sentence's content words found in the passage.
    pub coverage: f32,
    /// The sentence's numbers not in the passage.
    pub missing_numbers: usize,
    /// `cosine × 0.8^missing_numbers × (1 − 0.2 × (1 − coverage))`, compared with the
    /// threshold.
    pub combined: f32,
}

/// "This sentence is supported by this cited passage" (see the module doc for the formula).
pub struct SupportMatcher<'a> {
    cache: EmbeddingCache<'a>,
    threshold: f32,
}

impl<'a> SupportMatcher<'a> {
    pub fn new(embedder: &'a dyn Embedder, threshold: f32) -> Self {
        SupportMatcher {
            cache: EmbeddingCache::new(embedder),
            threshold,
        }
    }

    pub fn threshold(&self) -> f32 {
        self.threshold
    }

    /// Whether the passage supports the sentence: its score reaches the threshold.
    pub fn supports(&self, sentence: &str, passage: &str) -> Result<bool, EmbedError> {
        Ok(self.score(sentence, passage)? >= self.threshold)
    }

    /// The combined score in `[0, 1]` (negative cosines aside).
    pub fn score(&self, sentence: &str, passage: &str) -> Result<f32, EmbedError> {
        Ok(self.score_parts(sentence, passage)?.combined)
    }

    pub fn score_parts(&self, sentence: &str, passage: &str) -> Result<SupportScore, EmbedError> {
        let units = passage_units(passage);
        let mut texts: Vec<&str> = vec![sentence];
        texts.extend(units.iter().map(String::as_str));
        let vectors = self.cache.get(&texts)?;
        let cosine = vectors[1..]
            .iter()
            .map(|unit| cosine(&vectors[0], unit))
            .fold(f32::MIN, f32::max)
            .max(0.0);
        let (coverage, missing_numbers) = coverage(sentence, passage);
        let combined = cosine
            * MISSING_NUMBER_FACTOR.powi(missing_numbers as i32)
            * (1.0 - COVERAGE_WEIGHT * (1.0 - coverage));
        Ok(SupportScore {
            cosine,
            coverage,
            missing_numbers,
            combined,
        })
    }

    /// Scores labelled pairs, embedding all their texts in batches first.
    pub fn score_pairs(&self, pairs: &[SupportPair]) -> Result<Vec<SupportScore>, EmbedError> {
        let units: Vec<Vec<String>> = pairs.iter().map(|p| passage_units(&p.passage)).collect();
        let mut texts: Vec<&str> = pairs.iter().map(|p| p.sentence.as_str()).collect();
        texts.extend(units.iter().flatten().map(String::as_str));
        self.cache.prefetch(&texts)?;
        pairs
            .iter()
            .map(|p| self.score_parts(&p.sentence, &p.passage))
            .collect()
    }
}

/// The units a claim is compared with: each sentence, each two neighbouring sentences, and
/// the whole passage.
fn passage_units(passage: &str) -> Vec<String> {
    let sentences = split_sentences(passage);
    let mut units = sentences.clone();
    units.extend(sentences.windows(2).map(|w| w.join(" ")));
    if sentences.len() > 2 {
        units.push(passage.trim().to_string());
    }
    if units.is_empty() {
        units.push(passage.trim().to_string());
    }
    units
}

/// Sentences end at `.`, `!` or `?` followed by whitespace (so "3.5" and "e.g." inside a
/// word stay whole).
fn split_sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        current.push(c);
        if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) {
            let sentence = current.trim();
            if !sentence.is_empty() {
                out.push(sentence.to_string());
            }
            current.clear();
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}

/// The weighted share of the sentence's content words found in the passage, and how many of
/// its numbers are not there.
fn coverage(sentence: &str, passage: &str) -> (f32, usize) {
    let passage_words: Vec<Word> = content_words(passage);
    let mut total = 0.0;
    let mut found = 0.0;
    let mut missing_numbers = 0;
    for word in content_words(sentence) {
        let weight = if word.specific {
            SPECIFIC_WORD_WEIGHT
        } else {
            1.0
        };
        total += weight;
        if passage_words.iter().any(|p| word.matches(p)) {
            found += weight;
        } else if word.numeric {
            missing_numbers += 1;
        }
    }
    let share = if total == 0.0 { 1.0 } else { found / total };
    (share, missing_numbers)
}

// ---------------------------------------------------------------------------------------------
// Need

/// The parts of a need score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NeedScore {
    /// Cosine between the sentence and the need's statement.
    pub cosine: f32,
    /// The share of the need's specifics found in the sentence.
    pub specifics: f32,
    /// Whether the sentence advises its reader ([`advises_reader`]).
    pub advises: bool,
    /// `cosine × (1 + specifics) / 2`, times [`STATEMENT_FACTOR`] for a report sentence that
    /// does not advise its reader; compared with the threshold.
    pub combined: f32,
}

/// "This sentence addresses this need" (see the module doc for the formula).
pub struct NeedMatcher<'a> {
    cache: EmbeddingCache<'a>,
    threshold: f32,
    text: NeedText,
}

/// What a [`NeedMatcher`] looks for a need in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeedText {
    /// A report sentence: it meets the need when it applies it for its reader, so a plain
    /// statement about the world keeps only [`STATEMENT_FACTOR`] of its score.
    Report,
    /// A statement of a profile, about the person ("Has knee pain, wants to jog"): it tells its
    /// reader the need, and never advises, so there is no form term.
    Profile,
}

impl<'a> NeedMatcher<'a> {
    /// A matcher of report sentences ([`NeedText::Report`]).
    pub fn new(embedder: &'a dyn Embedder, threshold: f32) -> Self {
        NeedMatcher {
            cache: EmbeddingCache::new(embedder),
            threshold,
            text: NeedText::Report,
        }
    }

    /// A matcher of profile statements ([`NeedText::Profile`]).
    pub fn for_profiles(embedder: &'a dyn Embedder, threshold: f32) -> Self {
        NeedMatcher {
            text: NeedText::Profile,
            ..NeedMatcher::new(embedder, threshold)
        }
    }

    pub fn threshold(&self) -> f32 {
        self.threshold
    }

    /// Whether the sentence addresses the need: its score reaches the threshold.
    pub fn addresses(&self, sentence: &str, need: &Need) -> Result<bool, EmbedError> {
        Ok(self.score(sentence, need)? >= self.threshold)
    }

    pub fn score(&self, sentence: &str, need: &Need) -> Result<f32, EmbedError> {
        Ok(self.score_parts(sentence, need)?.combined)
    }

    pub fn score_parts(&self, sentence: &str, need: &Need) -> Result<NeedScore, EmbedError> {
        let vectors = self.cache.get(&[sentence, &need.statement])?;
        let cosine = cosine(&vectors[0], &vectors[1]).max(0.0);
        let specifics = specifics_share(sentence, &need.specifics);
        let advises = advises_reader(sentence);
        let form = if advises || self.text == NeedText::Profile {
            1.0
        } else {
            STATEMENT_FACTOR
        };
        Ok(NeedScore {
            cosine,
            specifics,
            advises,
            combined: cosine * (1.0 + specifics) / 2.0 * form,
        })
    }

    /// Scores labelled pairs, embedding all their texts in batches first.
    pub fn score_pairs(&self, pairs: &[NeedPair]) -> Result<Vec<NeedScore>, EmbedError> {
        let texts: Vec<&str> = pairs
            .iter()
            .flat_map(|p| [p.sentence.as_str(), p.statement.as_str()])
            .collect();
        self.cache.prefetch(&texts)?;
        pairs
            .iter()
            .map(|p| {
                let need = Need {
                    statement: p.statement.clone(),
                    specifics: p.specifics.clone(),
                };
                self.score_parts(&p.sentence, &need)
            })
            .collect()
    }
}

/// What a sentence that does not advise its reader keeps of its need score: a general
/// statement can still meet a need when it is close and names the need's particulars, but it
/// has to be much closer than advice.
pub const STATEMENT_FACTOR: f32 = 0.5;

/// Verbs that open advice ("Pick a cushioned shoe", "Avoid cloud-only tills").
const ADVICE_VERBS: &[&str] = &[
    "add", "aim", "allow", "apply", "ask", "avoid", "batch", "book", "bring", "budget", "build",
    "buy", "call", "check", "choose", "compare", "consider", "cook", "copy", "cut", "download",
    "drink", "eat", "expect", "favor", "favour", "find", "fit", "focus", "follow", "get", "go",
    "increase", "install", "join", "keep", "lean", "learn", "leave", "limit", "list", "look",
    "lower", "make", "measure", "move", "note", "opt", "order", "pack", "pair", "pick", "plan",
    "practice", "practise", "prefer", "prepare", "print", "put", "raise", "read", "reduce",
    "replace", "request", "reserve", "rest", "run", "save", "schedule", "search", "set", "shop",
    "sign", "skip", "spend", "split", "start", "stick", "store", "swap", "switch", "take", "tell",
    "test", "tick", "track", "train", "try", "turn", "use", "visit", "wait", "walk", "wear",
    "write",
];

/// Openers that apply the reader's situation ("Given your knee, …", "Within a $120 budget, …").
const SITUATION_OPENERS: &[&str] = &[
    "as", "at", "because", "below", "for", "given", "if", "on", "since", "under", "when", "while",
    "with", "within",
];

/// Whether `sentence` is advice to its reader: it speaks to them (you, your), opens with a verb
/// of advice (an imperative), or opens by applying a situation. Plain statements about the
/// world ("Knee injuries are common among runners") are not.
pub fn advises_reader(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    // Hyphenated words stay whole: "Pick-up trucks" opens with no verb.
    let words: Vec<&str> = lower
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '-' || c == '\'')))
        .filter(|w| !w.is_empty())
        .collect();
    let first = words.first().copied().unwrap_or("");
    let second = words.get(1).copied().unwrap_or("");
    // "Budget is one factor", "Go is a board game": a noun that happens to be a verb.
    let opens_statement = matches!(
        second,
        "is" | "are" | "was" | "were" | "has" | "have" | "had" | "can" | "will" | "may"
    );
    words.iter().any(|w| {
        matches!(
            w.split('\'').next().unwrap_or(""),
            "you" | "your" | "yours" | "yourself" | "yourselves"
        )
    }) || (ADVICE_VERBS.contains(&first) && !opens_statement)
        || SITUATION_OPENERS.contains(&first)
}

/// The share of `specifics` found in the sentence; a specific is found when each of its
/// content words is. A specific of stop words only counts as not found. No specifics: 0.
fn specifics_share(sentence: &str, specifics: &[String]) -> f32 {
    if specifics.is_empty() {
        return 0.0;
    }
    let words = content_words(sentence);
    let found = specifics
        .iter()
        .filter(|specific| {
            let needed = content_words(specific);
            !needed.is_empty() && needed.iter().all(|n| words.iter().any(|w| n.matches(w)))
        })
        .count();
    found as f32 / specifics.len() as f32
}

// ---------------------------------------------------------------------------------------------
// Words

/// A content word: its stem, and whether it is a number or a name.
#[derive(Debug, Clone, PartialEq)]
struct Word {
    stem: String,
    numeric: bool,
    specific: bool,
}

impl Word {
    fn matches(&self, other: &Word) -> bool {
        if self.numeric || other.numeric {
            return self.stem == other.stem;
        }
        if self.stem == other.stem {
            return true;
        }
        let common = self
            .stem
            .chars()
            .zip(other.stem.chars())
            .take_while(|(a, b)| a == b)
            .count();
        let shorter = self.stem.chars().count().min(other.stem.chars().count());
        common >= 5 && shorter - common <= 2
    }
}

/// The content words of a text, in order (see the module doc).
fn content_words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut first = true;
    for raw in text.split_whitespace() {
        // A word after a sentence end opens a sentence: its capital says nothing.
        let opens_sentence = first;
        first = raw.ends_with(['.', '!', '?', ':']);
        let trimmed = raw.trim_matches(|c: char| !c.is_alphanumeric());
        if trimmed.chars().any(|c| c.is_ascii_digit()) {
            let number: String = trimmed.chars().filter(|c| *c != ',').collect();
            // "3.5kg", "40%": the number and the unit are two words.
            let digits_end = number
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(number.len());
            let (digits, unit) = number.split_at(digits_end);
            if !digits.is_empty() {
                out.push(Word {
                    stem: digits.trim_end_matches('.').to_string(),
                    numeric: true,
                    specific: true,
                });
            }
            push_plain_words(unit, false, &mut out);
            continue;
        }
        let capitalised = trimmed.chars().next().is_some_and(char::is_uppercase);
        push_plain_words(trimmed, capitalised && !opens_sentence, &mut out);
    }
    out
}

fn push_plain_words(text: &str, name: bool, out: &mut Vec<Word>) {
    for part in text.split(|c: char| !c.is_alphanumeric()) {
        let lower = part.to_lowercase();
        if lower.chars().count() < 2 || STOP_WORDS.contains(&lower.as_str()) {
            continue;
        }
        out.push(Word {
            stem: stem(&lower),
            numeric: false,
            specific: name,
        });
    }
}

/// Light English stemming, enough for plurals and common verb endings: `-ies` → `-y`, else one
/// of `-ing`, `-ed`, `-es` (after s, x, z, ch, sh), `-s` (not `-ss`), keeping three letters;
/// then a final `e` goes ("reduce", "reduced", "reducing" → "reduc"; "shoe", "shoes" → "sho").
fn stem(word: &str) -> String {
    if let Some(base) = word.strip_suffix("ies") {
        if base.chars().count() >= 2 {
            return format!("{base}y");
        }
    }
    let sibilant = |b: &str| ["s", "x", "z", "ch", "sh"].iter().any(|s| b.ends_with(s));
    let mut base = word;
    if let Some(b) = word.strip_suffix("ing").or_else(|| word.strip_suffix("ed")) {
        if b.chars().count() >= 3 {
            base = b;
        }
    } else if let Some(b) = word.strip_suffix("es").filter(|b| sibilant(b)) {
        base = b;
    } else if let Some(b) = word.strip_suffix('s').filter(|b| !b.ends_with('s')) {
        if b.chars().count() >= 3 {
            base = b;
        }
    }
    match base.strip_suffix('e') {
        Some(b) if b.chars().count() >= 3 => b.to_string(),
        _ => base.to_string(),
    }
}

/// Words that carry no claim of their own.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing",
    "during", "each", "for", "from", "had", "has", "have", "having", "he", "her", "here", "hers",
    "him", "his", "how", "if", "in", "into", "is", "it", "its", "itself", "just", "may", "me",
    "might", "more", "most", "much", "must", "my", "of", "on", "once", "only", "or", "other",
    "our", "ours", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than",
    "that", "the", "their", "theirs", "them", "then", "there", "these", "they", "this", "those",
    "through", "to", "too", "under", "until", "up", "us", "very", "was", "we", "were", "what",
    "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you",
    "your", "yours", "one", "many", "often", "usually", "because", "since", "both", "either",
    "while", "within", "without", "via", "per",
];

// ---------------------------------------------------------------------------------------------
#[cfg(test)]
mod tests {
    use super::*;

    fn stems(text: &str) -> Vec<String> {
        content_words(text).into_iter().map(|w| w.stem).collect()
    }

    #[test]
    fn advice_speaks_to_the_reader_statements_do_not() {
        for advice in [
            "Given your recovering knee, pick a max-cushion trainer.",
            "Stick to models priced below $120.",
            "Within a $120 budget, last season's colourways are cheaper.",
            "You have about 30 minutes a day for this.",
            "Avoid minimalist shoes.",
        ] {
            assert!(advises_reader(advice), "{advice}");
        }
        for statement in [
            "Knee injuries are among the most common complaints of runners.",
            "Budget is one of many factors runners weigh.",
            "Go is an ancient board game.",
            "Pick-up trucks are popular.",
            "Carbon-plated racers often cost well over $120.",
            "Younger runners recover faster.",
        ] {
            assert!(!advises_reader(statement), "{statement}");
        }
    }

    #[test]
    fn words_are_stemmed_numbers_kept_whole() {
        assert_eq!(
            stems("The Cushioning reduced 1,200 injuries by 3.5%."),
            vec!["cushion", "reduc", "1200", "injury", "3.5"]
        );
        let words = content_words("Tests began in Lyon. Lyon hosted them.");
        let names: Vec<bool> = words.iter().map(|w| w.specific).collect();
        // "Tests" and "Lyon" after a full stop open sentences; the first "Lyon" is a name.
        assert_eq!(names, vec![false, false, true, false, false]);
    }

    #[test]
    fn coverage_drops_for_a_different_number() {
        let passage = "The bridge opened in 1932 after six years of work.";
        assert_eq!(coverage("The bridge opened in 1932.", passage), (1.0, 0));
        let (share, missing) = coverage("The bridge opened in 1936.", passage);
        assert!(share < 0.5 && missing == 1, "{share} {missing}");
    }

    #[test]
    fn specifics_match_across_endings() {
        let specifics = vec!["knee".to_string(), "cushion".to_string()];
        assert_eq!(
            specifics_share("Cushioned shoes spare the knees.", &specifics),
            1.0
        );
        assert_eq!(
            specifics_share("Knee injuries are common.", &specifics),
            0.5
        );
    }

    #[test]
    fn sentences_split_at_ends_not_decimals() {
        assert_eq!(
            split_sentences("It costs 3.5 euros. Really? Yes!"),
            vec!["It costs 3.5 euros.", "Really?", "Yes!"]
        );
    }
}
