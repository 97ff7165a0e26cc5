//! Plain-text checks on model output: sentences, content words, near-duplicates, debris
//! (JSON, markup, a prompt's scaffolding, a cut-off end) and the form of a finding.

use std::collections::BTreeSet;

/// Sentences shorter than this are not counted as content (list stubs, "In short.").
pub const MIN_CONTENT_WORDS: usize = 4;
/// Two sentences whose content-word sets overlap at least this much say the same thing.
pub const NEAR_DUPLICATE_JACCARD: f64 = 0.6;

/// The content words of `text`: lowercase alphanumeric tokens of two or more characters, minus
/// stop words (and the words every URL has), each normalised by a light suffix stripping so
/// "shoes", "shoe", "running" and "run" meet ("shoe" → "sho", "running" → "run").
pub fn content_words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 2 && !is_stop(w))
        .map(|w| normalize(&w))
        .filter(|w| !w.is_empty() && !is_stop(w))
        .collect()
}

fn is_stop(w: &str) -> bool {
    STOP_WORDS.binary_search(&w).is_ok()
}

/// Sorted (binary search). Besides function words, the words of every search, chat and page
/// URL (`google`, `com`, `chat`, …), which would make any two sessions look related.
const STOP_WORDS: &[&str] = &[
    "about", "above", "after", "again", "against", "ai", "all", "also", "am", "an", "and", "any",
    "are", "as", "at", "be", "because", "been", "before", "being", "below", "best", "between",
    "both", "but", "by", "can", "chat", "chatgpt", "claude", "com", "could", "did", "do", "does",
    "doing", "don", "down", "during", "each", "else", "even", "ever", "every", "few", "for",
    "from", "further", "get", "gets", "getting", "go", "going", "good", "google", "got", "had",
    "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "html", "http",
    "https", "if", "in", "into", "io", "is", "isn", "it", "its", "just", "ll", "me", "might",
    "more", "most", "much", "must", "my", "need", "needs", "net", "no", "nor", "not", "now", "of",
    "off", "on", "once", "one", "only", "or", "org", "other", "our", "ours", "out", "over", "own",
    "really", "same", "search", "she", "should", "so", "some", "still", "such", "than", "that",
    "the", "their", "them", "then", "there", "these", "they", "thing", "things", "this", "those",
    "through", "to", "too", "under", "until", "up", "us", "use", "using", "ve", "very", "want",
    "was", "way", "we", "well", "were", "what", "when", "where", "which", "while", "who", "whom",
    "why", "will", "with", "would", "www", "yes", "yet", "you", "your", "yours",
];

/// Light suffix stripping: plurals, `-ing`, `-ed`, a doubled final consonant and a final `e`.
fn normalize(w: &str) -> String {
    if !w.is_ascii() || w.bytes().any(|b| b.is_ascii_digit()) {
        return w.to_string();
    }
    let mut s = w.to_string();
    if s.len() > 4 && s.ends_with("ies") {
        s.truncate(s.len() - 3);
        s.push('y');
    } else if s.len() > 4
        && ["sses", "ches", "shes", "xes", "zes"]
            .iter()
            .any(|end| s.ends_with(end))
    {
        s.truncate(s.len() - 2);
    } else if s.len() > 3
        && s.ends_with('s')
        && !s.ends_with("ss")
        && !s.ends_with("us")
        && !s.ends_with("is")
    {
        s.truncate(s.len() - 1);
    }
    let mut stripped = false;
    if s.len() > 5 && s.ends_with("ing") {
        s.truncate(s.len() - 3);
        stripped = true;
    } else if s.len() > 4 && s.ends_with("ed") && !s.ends_with("eed") {
        s.truncate(s.len() - 2);
        stripped = true;
    }
    if stripped {
        let b = s.as_bytes();
        let n = b.len();
        if n >= 2 && b[n - 1] == b[n - 2] && !b"aeioulsz".contains(&b[n - 1]) {
            s.truncate(n - 1);
        }
    }
    if s.len() > 3 && s.ends_with('e') {
        s.truncate(s.len() - 1);
    }
    s
}

/// For each sentence, whether another one in the list is a near-duplicate of it.
pub fn near_duplicates(sentences: &[&str]) -> Vec<bool> {
    let sets: Vec<BTreeSet<String>> = sentences.iter().map(|s| content_words(s)).collect();
    let mut dup = vec![false; sentences.len()];
    for i in 0..sets.len() {
        for j in i + 1..sets.len() {
            if jaccard(&sets[i], &sets[j]) >= NEAR_DUPLICATE_JACCARD {
                dup[i] = true;
                dup[j] = true;
            }
        }
    }
    dup
}

pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    // Two or fewer content words say too little to call a repeat.
    if a.len() < 3 || b.len() < 3 {
        return 0.0;
    }
    let inter = a.intersection(b).count();
    inter as f64 / (a.len() + b.len() - inter) as f64
}

/// Whether a sentence has enough words to count as content.
pub fn is_content(sentence: &str) -> bool {
    sentence
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .count()
        >= MIN_CONTENT_WORDS
}

/// Splits prose into sentences at `.`, `!`, `?` (or `…`) followed by whitespace and a capital,
/// digit or quote, so decimals ("2.5"), initials mid-sentence ("e.g. a") and citation marks
/// stay inside their sentence. Line breaks end sentences too (list items).
pub fn split_sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        let mut start = 0;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if matches!(c, '.' | '!' | '?' | '…') {
                // Closing quotes and brackets stay with their sentence.
                let mut end = i + 1;
                while end < chars.len() && matches!(chars[end], '"' | '\'' | ')' | '”' | '’') {
                    end += 1;
                }
                let next = chars[end..].iter().position(|c| !c.is_whitespace());
                let boundary = match next {
                    None => true,
                    Some(0) => false,
                    Some(k) => {
                        let n = chars[end + k];
                        n.is_uppercase() || n.is_ascii_digit() || matches!(n, '"' | '“' | '(' | '*')
                    }
                };
                if boundary && !is_abbreviation(&chars[start..=i]) {
                    push_trimmed(&mut out, &chars[start..end]);
                    start = end;
                }
                i = end;
                continue;
            }
            i += 1;
        }
        push_trimmed(&mut out, &chars[start..]);
    }
    out
}

fn push_trimmed(out: &mut Vec<String>, chars: &[char]) {
    let s: String = chars.iter().collect();
    let s = s.trim();
    if !s.is_empty() {
        out.push(s.to_string());
    }
}

/// "e.g.", "i.e.", "Dr.", "U.S.": a full stop that ends a short abbreviation, not a sentence.
fn is_abbreviation(upto: &[char]) -> bool {
    let s: String = upto.iter().collect();
    let last = s.split_whitespace().last().unwrap_or("").to_lowercase();
    matches!(
        last.as_str(),
        "e.g."
            | "i.e."
            | "etc."
            | "vs."
            | "dr."
            | "mr."
            | "mrs."
            | "ms."
            | "st."
            | "no."
            | "approx."
    ) || (last.len() <= 4 && last.matches('.').count() >= 2)
}

/// Why a sentence is debris, if it is: JSON or code punctuation, markup, the prompt's own
/// scaffolding, or a cut-off end.
pub fn sentence_debris(sentence: &str) -> Option<String> {
    let s = sentence.trim();
    if let Some(why) = markup_or_json(s) {
        return Some(why);
    }
    if s.ends_with('…') || s.ends_with("...") {
        return Some("cut off (ends with an ellipsis)".into());
    }
    let last = s.chars().last()?;
    if !matches!(last, '.' | '!' | '?' | '"' | '\'' | ')' | '”' | '’' | ':') {
        return Some("cut off (no closing punctuation)".into());
    }
    None
}

/// Why a heading is debris, if it is. Headings have no closing punctuation, so "cut off"
/// means ending on a word that cannot end a title, or an unclosed bracket.
pub fn heading_debris(heading: &str) -> Option<String> {
    let h = heading.trim();
    if h.is_empty() {
        return Some("empty heading".into());
    }
    if let Some(why) = markup_or_json(h) {
        return Some(why);
    }
    if h.matches('(').count() > h.matches(')').count() {
        return Some("cut off (unclosed bracket)".into());
    }
    let last = h
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .rsplit(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("")
        .to_lowercase();
    const CANNOT_END: &[&str] = &[
        "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "by", "from", "as",
        "at", "but", "that", "which", "its", "their", "is", "are", "was", "were",
    ];
    if CANNOT_END.contains(&last.as_str()) || h.ends_with([',', ';', '-', '–']) {
        return Some(format!("cut off (ends with {last:?})"));
    }
    None
}

fn markup_or_json(s: &str) -> Option<String> {
    const SCAFFOLDING: &[&str] = &["(from:", "learning ", "passage ", "```", "**", "##", "\\n"];
    let lower = s.to_lowercase();
    for marker in SCAFFOLDING {
        let hit = if marker.ends_with(' ') {
            // "Learning 3:" / "Passage 2:" — the prompt's numbering leaking into prose.
            lower.match_indices(marker).any(|(i, _)| {
                lower[i + marker.len()..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .is_some_and(|d| !d.is_empty())
            })
        } else {
            lower.contains(marker)
        };
        if hit {
            return Some(format!("prompt scaffolding or markup ({})", marker.trim()));
        }
    }
    if s.contains(['{', '}']) || s.contains("\":") || s.contains("\\\"") {
        return Some("JSON or code punctuation".into());
    }
    // "[" outside a citation mark like "[3]".
    let mut rest = s;
    while let Some(i) = rest.find('[') {
        let after = &rest[i + 1..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 || !after[digits..].starts_with(']') {
            return Some("bracket that is not a citation".into());
        }
        rest = &after[digits..];
    }
    if s.contains(']') && !s.contains('[') {
        return Some("stray bracket".into());
    }
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'<' {
            if let Some(&n) = bytes.get(i + 1) {
                if n.is_ascii_alphabetic() || n == b'/' || n == b'!' {
                    return Some("markup tag".into());
                }
            }
        }
    }
    None
}

/// Words that open a question.
const QUESTION_OPENERS: &[&str] = &[
    "what", "how", "why", "which", "who", "whom", "whose", "where", "when", "should", "can",
    "could", "would", "do", "does", "did", "is", "are", "was", "were", "will", "shall", "may",
];

/// Verbs that open an instruction ("Consider …", "Make sure …") rather than a statement.
const IMPERATIVE_OPENERS: &[&str] = &[
    "consider",
    "use",
    "check",
    "make",
    "avoid",
    "try",
    "look",
    "find",
    "ensure",
    "remember",
    "note",
    "research",
    "explore",
    "compare",
    "learn",
    "ask",
    "choose",
    "visit",
    "read",
    "keep",
    "focus",
    "start",
    "think",
    "be",
    "don't",
    "do not",
    "never",
    "always",
    "please",
    "let's",
    "search",
    "see",
    "discuss",
    "describe",
    "explain",
    "identify",
    "investigate",
    "list",
];

/// Words that open a fragment: a sentence cannot start with them on its own.
const FRAGMENT_OPENERS: &[&str] = &["and", "or", "but", "which", "that", "because", "while"];

/// First-person openers: the user's own words from a history session, not a finding.
const FIRST_PERSON: &[&str] = &["i", "i'm", "i've", "i'd", "my", "we", "we're", "our", "me"];

/// Why `text` is not a finding — one declarative sentence stating a fact — if it is not:
/// a question, an instruction, a fragment, the user speaking, or debris. A finding is what the
/// research loop keeps from a passage; a small model often returns the research question back,
/// advice to the reader, or half a sentence.
pub fn finding_form(text: &str) -> Option<String> {
    let t = text.trim();
    if let Some(why) = sentence_debris_or_markup(t) {
        return Some(why);
    }
    let words: Vec<String> = t
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_lowercase()
        })
        .collect();
    if words
        .iter()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .count()
        < 5
    {
        return Some("a fragment, not a sentence (fewer than five words)".into());
    }
    if t.ends_with('?') || QUESTION_OPENERS.contains(&words[0].as_str()) && t.contains('?') {
        return Some("a question, not a statement of fact".into());
    }
    let first = words[0].as_str();
    let first_two = format!("{} {}", words[0], words.get(1).map_or("", String::as_str));
    if IMPERATIVE_OPENERS.contains(&first) || IMPERATIVE_OPENERS.contains(&first_two.as_str()) {
        return Some("an instruction to the reader, not a statement of fact".into());
    }
    if FRAGMENT_OPENERS.contains(&first) || t.chars().next().is_some_and(char::is_lowercase) {
        return Some("a fragment, not a whole sentence".into());
    }
    if FIRST_PERSON.contains(&first) {
        return Some("the user's own words, not a fact from a source".into());
    }
    if split_sentences(t).len() > 2 {
        return Some("several sentences; one finding is one sentence".into());
    }
    None
}

/// Debris in a text that may still lack its final full stop (a finding the model left open).
fn sentence_debris_or_markup(t: &str) -> Option<String> {
    markup_or_json(t).or_else(|| {
        (t.ends_with('…') || t.ends_with("...")).then(|| "cut off (ends with an ellipsis)".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_at_ends_not_at_decimals_or_abbreviations() {
        let s = split_sentences(
            "Prices rose 2.5% in 1450. Printers, e.g. Gutenberg, used metal type! Did it \
             spread? \"Yes.\" Then (in 1500) it did.\n- a list item",
        );
        assert_eq!(
            s,
            vec![
                "Prices rose 2.5% in 1450.",
                "Printers, e.g. Gutenberg, used metal type!",
                "Did it spread?",
                "\"Yes.\"",
                "Then (in 1500) it did.",
                "- a list item",
            ]
        );
    }

    #[test]
    fn near_duplicates_are_found_and_distinct_sentences_are_not() {
        let d = near_duplicates(&[
            "The printing press spread literacy across Europe quickly.",
            "Literacy spread quickly across Europe with the printing press.",
            "Paper mills multiplied in Italian towns.",
            "It did.",
        ]);
        assert_eq!(d, vec![true, true, false, false]);
    }

    #[test]
    fn debris_is_json_markup_scaffolding_or_a_cut_off_end() {
        assert!(sentence_debris("} ] }.get(").is_some());
        assert!(sentence_debris("See <b>this</b> now.").is_some());
        assert!(sentence_debris("As Learning 3: says, presses spread.").is_some());
        assert!(sentence_debris("The press changed how people").is_some());
        assert!(sentence_debris("Printing spread to 200 towns [3].").is_none());
        assert!(sentence_debris("Costs fell (by half).").is_none());
        assert!(heading_debris("Religion and the (from: Printing press; Printing").is_some());
        assert!(heading_debris("How printing changed the").is_some());
        assert!(heading_debris("Religion and reform").is_none());
        assert!(heading_debris("Costs (1450–1500)").is_none());
    }

    #[test]
    fn content_words_normalise_plurals_and_suffixes() {
        let w = content_words("Which running SHOES should I buy? shoe, runs, batteries, boxes");
        for want in ["run", "sho", "buy", "battery", "box"] {
            assert!(w.contains(want), "{want} not in {w:?}");
        }
        assert!(!w.contains("which") && !w.contains("should"));
        assert_eq!(content_words("baked baking bake"), content_words("bake"));
        assert_eq!(content_words("planned planning"), content_words("plan"));
        assert!(content_words("https://www.google.com/search?q=x").len() <= 3);
    }

    #[test]
    fn stop_words_are_sorted() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn findings_are_declarative_sentences() {
        assert!(finding_form("The press printed 180 copies of the Bible by 1455.").is_none());
        assert!(finding_form("Gutenberg's press used movable metal type").is_none());
        assert!(finding_form("What did the press cost in 1450?").is_some());
        assert!(finding_form("Consider buying shoes with extra cushioning.").is_some());
        assert!(finding_form("Make sure the shoes fit well.").is_some());
        assert!(finding_form("and then it spread to Venice.").is_some());
        assert!(finding_form("Movable type.").is_some());
        assert!(finding_form("I have a knee injury and run 20 km a week.").is_some());
        assert!(finding_form("{\"insight\": \"x\"} was printed in Mainz.").is_some());
    }
}
