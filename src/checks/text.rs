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

/// Abbreviations that end in a full stop without ending a sentence (lowercase). "etc." is not
/// here: it usually does end one.
const ABBREVIATIONS: &[&str] = &[
    "al.", "approx.", "apr.", "aug.", "c.", "ca.", "capt.", "cf.", "co.", "col.", "corp.", "dec.",
    "dept.", "dr.", "e.g.", "ed.", "eds.", "esp.", "est.", "feb.", "fig.", "fl.", "ft.", "gen.",
    "gov.", "i.e.", "inc.", "jan.", "jr.", "jul.", "jun.", "lt.", "ltd.", "mar.", "mr.", "mrs.",
    "ms.", "mt.", "no.", "nos.", "nov.", "oct.", "op.", "pp.", "prof.", "rev.", "sen.", "sep.",
    "sept.", "sgt.", "sr.", "st.", "vol.", "vols.", "vs.",
];

/// "e.g.", "c.", "Dr.", "U.S.", "J.": a full stop that ends an abbreviation or an initial, not
/// a sentence.
fn is_abbreviation(upto: &[char]) -> bool {
    let s: String = upto.iter().collect();
    let raw = s
        .split_whitespace()
        .last()
        .unwrap_or("")
        .trim_start_matches(['(', '"', '“', '\'']);
    let last = raw.to_lowercase();
    if ABBREVIATIONS.contains(&last.as_str()) {
        return true;
    }
    // "U.S.", "a.d.": letters between full stops.
    if last.chars().count() <= 5
        && last.matches('.').count() >= 2
        && last.chars().all(|c| c == '.' || c.is_alphabetic())
    {
        return true;
    }
    // An initial ("John F. Kennedy"); "I." is a sentence's end more often than a name's.
    let mut chars = raw.chars();
    matches!((chars.next(), chars.next(), chars.next()), (Some(c), Some('.'), None) if c.is_uppercase() && c != 'I')
}

/// Words a sentence cannot end on: it was cut off there ("… the Renaissance and the.").
const DANGLING_ENDS: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "to", "with", "by", "from", "as", "than", "such", "its",
    "their", "whose", "nor", "but", "into", "onto", "via",
];

/// Why a sentence stops where it should not, if it does: on an abbreviation ("The early modern
/// period, c.") or on a word that cannot end a sentence.
fn cut_at_end(s: &str) -> Option<String> {
    let body = s.trim_end_matches(['"', '\'', ')', '”', '’']);
    let last = body.split_whitespace().last().unwrap_or("");
    let lower = last.to_lowercase();
    // As written: "c." and "e.g." in lower case, "Dr." and "No." capitalised ("… or no." ends
    // a sentence; "vitamin C." too).
    let capitalised = last.chars().next().is_some_and(char::is_uppercase)
        && last.chars().skip(1).all(|c| !c.is_uppercase());
    let abbreviation = ABBREVIATIONS.contains(&lower.as_str())
        && ((last == lower && !matches!(last, "no." | "nos.")) || (capitalised && lower.len() > 2));
    // "(Bolker et al.)" closes a citation; "(Bolker et al." was cut inside it.
    let closed_bracket = s.trim_end_matches(['"', '\'', '”', '’']).ends_with(')');
    if (abbreviation || lower == "e.g" || lower == "i.e") && !closed_bracket {
        return Some(format!("cut off (ends with the abbreviation {last:?})"));
    }
    let bare = lower.trim_matches(|c: char| !c.is_alphanumeric());
    if body.ends_with('.') && DANGLING_ENDS.contains(&bare) {
        return Some(format!("cut off (ends with {bare:?})"));
    }
    None
}

/// Words that open a clause hanging off the one before its comma ("…, especially when …"):
/// what comes before the comma says something whole.
const CLAUSE_OPENERS: &[&str] = &[
    "especially",
    "particularly",
    "which",
    "where",
    "when",
    "while",
    "whereas",
    "although",
    "though",
    "because",
    "since",
    "unless",
    "including",
    "such as",
    "for example",
    "for instance",
    "e.g.",
    "i.e.",
    "as well as",
    "but",
    "so",
    "depending",
];

/// Fewest words of what is kept of a text cut short: less says too little to be a finding.
const MIN_WORDS_BEFORE_THE_CUT: usize = 8;

/// What stands whole of a text cut short by a length bound ("… the visit (Bolker et al. ",
/// "… surveys, especially when the same ponds, e"): everything before its first unclosed
/// bracket; else before the last clause its last sentence opens with a comma and a
/// subordinating word, a semicolon or a dash; else its whole sentences. `None` when that leaves
/// fewer than [`MIN_WORDS_BEFORE_THE_CUT`] words or ends on a word no sentence ends on. A list
/// is never shortened ("…, a coding round, and a" stays cut): a shorter list says less than
/// it seems to.
pub fn whole_before_the_cut(text: &str) -> Option<String> {
    let t = text.trim_end();
    let mut open = Vec::new();
    for (i, c) in t.char_indices() {
        match c {
            '(' | '[' => open.push(i),
            ')' | ']' => {
                open.pop();
            }
            _ => {}
        }
    }
    let cut = match open.first() {
        Some(&i) => Some(i),
        None => {
            let sentences = split_sentences(t);
            let last = sentences.last()?;
            let start = t.rfind(last.as_str()).unwrap_or(0);
            let lower = last.to_lowercase();
            let clause = CLAUSE_OPENERS
                .iter()
                .filter_map(|w| lower.rfind(&format!(", {w} ")))
                .chain(["; ", " — ", " – "].iter().filter_map(|m| lower.rfind(m)))
                .max();
            match clause {
                Some(at) => Some(start + at),
                None if sentences.len() > 1 => Some(start),
                None => None,
            }
        }
    }?;
    let kept = t[..cut].trim_end_matches(|c: char| {
        c.is_whitespace() || matches!(c, ',' | ';' | ':' | '—' | '–' | '-')
    });
    if kept.split_whitespace().count() < MIN_WORDS_BEFORE_THE_CUT {
        return None;
    }
    let kept = if kept.ends_with(['.', '!', '?']) {
        kept.to_string()
    } else {
        format!("{kept}.")
    };
    cut_at_end(&kept).is_none().then_some(kept)
}

/// Why a text stops on an abbreviation or a word no sentence ends on, if it does.
pub fn cut_off(text: &str) -> Option<String> {
    cut_at_end(text.trim())
}

/// The writing systems a report can be in, as far as the checks need to tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    Latin,
    Greek,
    Cyrillic,
    Armenian,
    Hebrew,
    Arabic,
    Devanagari,
    Thai,
    Georgian,
    Hangul,
    /// Han, Hiragana and Katakana: Chinese and Japanese text mix them.
    Cjk,
    Other,
}

/// The script of one letter (None for what is not a letter: digits, punctuation, marks).
pub fn script_of(c: char) -> Option<Script> {
    if !c.is_alphabetic() {
        return None;
    }
    let u = c as u32;
    Some(match u {
        0x0041..=0x024F | 0x1E00..=0x1EFF | 0x2C60..=0x2C7F | 0xA720..=0xA7FF | 0xFB00..=0xFB06 => {
            Script::Latin
        }
        0x0370..=0x03FF | 0x1F00..=0x1FFF => Script::Greek,
        0x0400..=0x052F | 0x1C80..=0x1C8F | 0x2DE0..=0x2DFF | 0xA640..=0xA69F => Script::Cyrillic,
        0x0530..=0x058F => Script::Armenian,
        0x0590..=0x05FF => Script::Hebrew,
        0x0600..=0x06FF | 0x0750..=0x077F | 0x08A0..=0x08FF | 0xFB50..=0xFDFF | 0xFE70..=0xFEFF => {
            Script::Arabic
        }
        0x0900..=0x097F => Script::Devanagari,
        0x0E00..=0x0E7F => Script::Thai,
        0x10A0..=0x10FF => Script::Georgian,
        0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF => Script::Hangul,
        0x3040..=0x30FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xF900..=0xFAFF
        | 0x20000..=0x3134F => Script::Cjk,
        _ => Script::Other,
    })
}

/// The script most letters of `text` are in (Latin for a text without letters).
pub fn dominant_script(text: &str) -> Script {
    let mut counts: Vec<(Script, usize)> = Vec::new();
    for s in text.chars().filter_map(script_of) {
        match counts.iter_mut().find(|(k, _)| *k == s) {
            Some((_, n)) => *n += 1,
            None => counts.push((s, 1)),
        }
    }
    counts
        .into_iter()
        .max_by_key(|&(_, n)| n)
        .map_or(Script::Latin, |(s, _)| s)
}

/// Why a sentence has debris of another writing system, if it has: a word with letters of a
/// script other than `script` ("… and human主义") that none of `sources` contains (a quoted
/// name from a source is fine).
pub fn foreign_script(sentence: &str, script: Script, sources: &[&str]) -> Option<String> {
    for word in sentence.split(|c: char| c.is_whitespace() || ",;:()\"“”".contains(c)) {
        let foreign: String = word
            .chars()
            .filter(|&c| script_of(c).is_some_and(|s| s != script))
            .collect();
        if foreign.is_empty() {
            continue;
        }
        if sources.iter().any(|p| p.contains(&foreign)) {
            continue;
        }
        return Some(format!("a word in another script ({word})"));
    }
    None
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
    // The prompt's material named in the prose: "… enabled a much faster rate of printing, as
    // evidenced by the sources stating that Gutenberg's invention … enabled a much faster rate
    // of printing" says the fact twice and the sources once.
    const ABOUT_THE_PROMPT: &[&str] = &[
        "the sources stat",
        "the sources say",
        "the facts stat",
        "the facts say",
        "the passage stat",
        "the passage say",
        "the passages stat",
        "the passages say",
    ];
    let lower = s.to_lowercase();
    if let Some(marker) = ABOUT_THE_PROMPT.iter().find(|m| lower.contains(*m)) {
        return Some(format!(
            "it talks about the sources ({marker}…) instead of saying what they say"
        ));
    }
    let last = s.chars().last()?;
    if !matches!(last, '.' | '!' | '?' | '"' | '\'' | ')' | '”' | '’' | ':') {
        return Some("cut off (no closing punctuation)".into());
    }
    cut_at_end(s)
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
    // A word cut to its first letters ("… and Behavioral St"): one or two letters, not an
    // acronym ("AI", "UK") and not a short word a heading can end on ("Set Up").
    let last_word = h
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .rsplit(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    const SHORT_ENDS: &[&str] = &["up", "go", "me", "us", "it", "ok", "do", "be"];
    let letters = last_word.chars().count();
    if (1..=2).contains(&letters)
        && last_word.chars().all(char::is_alphabetic)
        && !last_word.chars().all(char::is_uppercase)
        && !SHORT_ENDS.contains(&last.as_str())
        && h.split_whitespace().count() > 1
    {
        return Some(format!("cut off (ends with the fragment {last_word:?})"));
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
    let lower = t.to_lowercase();
    if SOURCE_DESCRIPTIONS.iter().any(|d| lower.contains(d)) {
        return Some("it says what a source is about, not what it states; state the fact".into());
    }
    None
}

/// Phrases of a sentence that describes a source instead of stating what it says ("A buyer's
/// guide to laptops also offers information on prices in the UK"): a small model writes them
/// when a passage is a table of contents or an introduction.
const SOURCE_DESCRIPTIONS: &[&str] = &[
    "offers information",
    "provides information",
    "gives information",
    "contains information",
    "includes information",
    "offers an overview",
    "provides an overview",
    "gives an overview",
    "provides details on",
    "provides details about",
    "offers details on",
    "the passage says",
    "the passage states",
    "the passage describes",
    "the passage discusses",
    "the article discusses",
    "the article describes",
    "the guide discusses",
    "the guide describes",
];

/// Whether a finding needs a sentence before it to be understood: it opens on a pronoun or a
/// demonstrative ("This technological advance …", "It …"), points at a time it does not name
/// ("… later that century"), or is one more of something said before ("Bosch REAXX is another
/// example of a flesh-sensing saw").
pub fn leans_on_context(text: &str) -> bool {
    const OPENERS: &[&str] = &[
        "this", "these", "that", "those", "it", "its", "they", "their", "he", "she", "his", "her",
        "such", "another",
    ];
    const POINTERS: &[&str] = &[
        "that century",
        "that year",
        "that decade",
        "that time",
        "the same year",
        "the same time",
    ];
    // "One more" points back only in the sentence's first clause: "SawStop makes …, and the
    // Bosch REAXX was another …" names what it is one more of.
    const ONE_MORE: &[&str] = &["is another", "was another", "another example"];
    let lower = text.trim().to_lowercase();
    let first = lower
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    let first_clause = lower.split([',', ';']).next().unwrap_or("");
    let first_clause = first_clause.split(" and ").next().unwrap_or("");
    OPENERS.contains(&first)
        || POINTERS.iter().any(|p| lower.contains(p))
        || ONE_MORE.iter().any(|p| first_clause.contains(p))
}

/// The first `n` words of `sentence`, lowercased, without the punctuation around them.
fn first_words(sentence: &str, n: usize) -> Vec<String> {
    sentence
        .split_whitespace()
        .take(n)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .collect()
}

/// Whether a sentence defines a term of the question ("A saw is a tool consisting of a tough
/// blade …" for "Which table saw should I buy?"): its subject, one to three words before "is"
/// or "are" and an article, is all words of the question. A reader who asked knows the term;
/// such a sentence may stay in the body but does not open the report.
pub fn defines_a_question_term(sentence: &str, question: &str) -> bool {
    let words = first_words(sentence, 6);
    let Some(verb) = words.iter().position(|w| w == "is" || w == "are") else {
        return false;
    };
    let article = words
        .get(verb + 1)
        .is_some_and(|w| matches!(w.as_str(), "a" | "an" | "the" | "any"));
    let subject: Vec<&String> = words[..verb]
        .iter()
        .filter(|w| !matches!(w.as_str(), "a" | "an" | "the"))
        .collect();
    let asked = content_words(question);
    article
        && (1..=3).contains(&subject.len())
        && subject.iter().all(|w| {
            asked.contains(w.as_str()) || w.strip_suffix('s').is_some_and(|one| asked.contains(one))
        })
}

/// Whether a sentence is one item of a numbered plan ("Week 2: trees, graphs …", "Step 3: …"):
/// a label word, a number and a colon. It reads well in the plan's paragraph, after the items
/// before it, and not as the opening answer of a report.
pub fn numbered_plan_item(text: &str) -> bool {
    let mut words = text.split_whitespace();
    let (Some(label), Some(number)) = (words.next(), words.next()) else {
        return false;
    };
    label.chars().all(char::is_alphabetic)
        && label.chars().next().is_some_and(char::is_uppercase)
        && number
            .strip_suffix(':')
            .is_some_and(|n| (1..=2).contains(&n.len()) && n.chars().all(|c| c.is_ascii_digit()))
}

/// Why a sentence gives advice to someone the passages never name, if it does: "The reviewer
/// should use a generalized linear mixed model …" where the guide says "A generalized linear
/// mixed model adds a random effect …". A 1.5B model turns a fact into advice for a person it
/// makes up from the persona ("the reviewer", "the user"); the support checks pass it, since
/// the rest is the passage's words. Advice to a person a source does name ("Beginners should
/// …" from a guide that says so) is the source's own.
pub fn advice_to_someone_unnamed(sentence: &str, sources: &[&str]) -> Option<String> {
    const DETERMINERS: &[&str] = &["the", "a", "an", "each", "every", "this", "our"];
    const MODALS: &[&str] = &["should", "must", "needs", "need", "has", "have", "ought"];
    let words = first_words(sentence, 4);
    let at = usize::from(
        words
            .first()
            .is_some_and(|d| DETERMINERS.contains(&d.as_str())),
    );
    let (Some(subject), Some(modal)) = (words.get(at), words.get(at + 1)) else {
        return None;
    };
    // "needs", "has", "ought" advise only as "needs to", "has to", "ought to".
    let needs_to = matches!(modal.as_str(), "needs" | "need" | "has" | "have" | "ought");
    if !MODALS.contains(&modal.as_str()) || needs_to && words.get(at + 2).is_none_or(|w| w != "to")
    {
        return None;
    }
    if subject == "you" || subject.is_empty() || subject.chars().any(|c| !c.is_alphabetic()) {
        return None;
    }
    let stem = subject.trim_end_matches('s');
    let named = sources.iter().any(|p| {
        p.split(|c: char| !c.is_alphanumeric())
            .any(|w| w.to_lowercase().trim_end_matches('s') == stem)
    });
    (!named).then(|| {
        format!(
            "advice to \"the {subject}\", whom the passages do not name; state the fact as the passage does"
        )
    })
}

/// The content words of a question that a sentence may not add to what its passage says: all
/// but the action asked about, the word after "I" or "we" ("How can I *reduce* energy costs at
/// my bakery?"), which an answer names in other words than its sources ("To reduce energy
/// costs, switch off unused decks" from a guide that says "save").
pub fn question_terms(question: &str) -> BTreeSet<String> {
    let mut terms = content_words(question);
    let tokens: Vec<String> = question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    for pair in tokens.windows(2) {
        if pair[0] == "i" || pair[0] == "we" {
            for action in content_words(&pair[1]) {
                terms.remove(&action);
            }
        }
    }
    terms
}

/// What the question names as the thing it asks about: each two neighbouring terms of the
/// question ([`question_terms`]) as they stand in it ("table saw", "technical interview",
/// "family holiday", "holiday summer"), or its one term. A passage that names none of them is
/// about something else that shares a word with the question ("A chainsaw is a portable
/// handheld power saw", "Technical geography is the branch of geography …").
pub fn question_phrases(question: &str) -> Vec<Vec<String>> {
    let terms = question_terms(question);
    let sequence: Vec<String> = word_sequence(question)
        .into_iter()
        .filter(|w| terms.contains(w))
        .collect();
    match sequence.as_slice() {
        [] => Vec::new(),
        [one] => vec![vec![one.clone()]],
        _ => {
            let mut phrases: Vec<Vec<String>> = Vec::new();
            for pair in sequence.windows(2) {
                if pair[0] != pair[1] && !phrases.iter().any(|p| p.as_slice() == pair) {
                    phrases.push(pair.to_vec());
                }
            }
            phrases
        }
    }
}

/// Whether `text` names one of `phrases` ([`question_phrases`]): the one term, or the two
/// terms side by side in either order ("summer holidays" for "holiday this summer"), as
/// content words, spelt alike ([`said_alike`]).
pub fn names_a_phrase(text: &str, phrases: &[Vec<String>]) -> bool {
    let words = word_sequence(text);
    let alike = |a: &str, b: &String| spelt_alike(a, b);
    phrases.iter().any(|phrase| match phrase.as_slice() {
        [one] => words.iter().any(|w| alike(one, w)),
        [a, b] => words
            .windows(2)
            .any(|w| (alike(a, &w[0]) && alike(b, &w[1])) || (alike(b, &w[0]) && alike(a, &w[1]))),
        _ => false,
    })
}

/// The content words of `text` in order, normalised as [`content_words`] does.
fn word_sequence(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter_map(|w| content_words(w).into_iter().next())
        .collect()
}

/// The words of `sentence` that are among the question's `terms` and in none of `sources`, as
/// the sentence spells them: how a 1.5B model frames what it read in the question's words.
/// From Wikipedia's "Toronto", which speaks of no holidays, it wrote "Toronto is a popular
/// destination for a family holiday in Canada" for "Where should we go on a family holiday
/// this summer?", and the support checks pass it on the rest of the passage's words.
pub fn borrowed_from_the_question(
    sentence: &str,
    terms: &BTreeSet<String>,
    sources: &[&str],
) -> Vec<String> {
    let said: BTreeSet<String> = sources.iter().flat_map(|s| content_words(s)).collect();
    let mut borrowed: Vec<String> = Vec::new();
    for word in sentence.split(|c: char| !c.is_alphanumeric()) {
        let normal = content_words(word);
        let Some(w) = normal.iter().next() else {
            continue;
        };
        let word = word.to_lowercase();
        if terms.contains(w) && !said_alike(w, &said) && !borrowed.contains(&word) {
            borrowed.push(word);
        }
    }
    borrowed
}

/// Whether `word` or a word of its stem is in `said`: the same first five letters, for words
/// that long ("analyze" is said by "Analysing").
fn said_alike(word: &str, said: &BTreeSet<String>) -> bool {
    said.contains(word) || said.iter().any(|s| spelt_alike(word, s))
}

/// Whether two words are one, or share their first five letters (both that long).
fn spelt_alike(a: &str, b: &str) -> bool {
    const STEM: usize = 5;
    a == b
        || (a.chars().count() >= STEM
            && b.chars().count() >= STEM
            && a.chars().take(STEM).eq(b.chars().take(STEM)))
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
    fn advice_to_someone_the_passages_never_name_is_told_apart() {
        let guide = "A generalized linear mixed model (GLMM) adds a random effect for the site. \
                     Beginners should choose a cushioned shoe.";
        assert!(advice_to_someone_unnamed(
            "The reviewer should use a generalized linear mixed model with a random effect.",
            &[guide]
        )
        .is_some());
        assert!(advice_to_someone_unnamed(
            "The user needs to fit a GLMM with a random effect for the site.",
            &[guide]
        )
        .is_some());
        // The source's own advice, the fact itself, and advice to the reader pass.
        assert!(
            advice_to_someone_unnamed("Beginners should choose a cushioned shoe.", &[guide])
                .is_none()
        );
        assert!(advice_to_someone_unnamed(
            "A generalized linear mixed model adds a random effect for the site.",
            &[guide]
        )
        .is_none());
        assert!(advice_to_someone_unnamed("You should fit a GLMM.", &[guide]).is_none());
        assert!(
            advice_to_someone_unnamed("The site has to be a random effect.", &[guide]).is_none()
        );
        assert!(advice_to_someone_unnamed("The model has four decks.", &[guide]).is_none());
    }

    #[test]
    fn the_question_s_words_a_passage_lacks_are_named() {
        let terms = question_terms("Where should we go on a family holiday this summer?");
        let toronto = "Toronto is the most populous city in Canada, with 2,794,356 residents \
                       in 2021; it is a popular destination for visitors.";
        assert_eq!(
            borrowed_from_the_question(
                "Toronto is a popular destination for a family holiday in Canada.",
                &terms,
                &[toronto],
            ),
            vec!["family".to_string(), "holiday".to_string()]
        );
        // Said by the passage (in another inflection), or not the question's words: none.
        let guide = "Families on summer holidays find large resorts crowded in August.";
        assert!(borrowed_from_the_question(
            "Large resorts are crowded in August for a family on holiday in the summer.",
            &terms,
            &[guide]
        )
        .is_empty());
        assert!(borrowed_from_the_question(
            "Toronto is a popular destination.",
            &terms,
            &[toronto]
        )
        .is_empty());
        // Another spelling of the same stem is said.
        let terms = question_terms("Which approach should I use to analyze my survey data?");
        let guide = "Analysing count data from repeated field surveys.";
        assert!(borrowed_from_the_question(
            "Ecologists fit a model to analyze counts from surveys.",
            &terms,
            &[guide]
        )
        .is_empty());
    }

    #[test]
    fn the_action_asked_about_is_not_a_term_of_the_question() {
        let terms = question_terms("How can I reduce energy costs at my bakery?");
        assert_eq!(terms, content_words("energy costs bakery"));
        let terms = question_terms("Where should we go on a family holiday this summer?");
        assert_eq!(terms, content_words("family holiday summer"));
        let terms = question_terms("What is the relationship between ecology and statistics?");
        assert_eq!(terms, content_words("relationship ecology statistics"));
    }

    #[test]
    fn a_passage_on_another_thing_that_shares_a_word_names_no_phrase_of_the_question() {
        let phrases = question_phrases("Which table saw should I buy?");
        assert_eq!(phrases.len(), 1, "{phrases:?}");
        assert!(names_a_phrase(
            "Table saws: jobsite, contractor and cabinet saws compared",
            &phrases
        ));
        assert!(!names_a_phrase(
            "A chainsaw is a portable handheld power saw that cuts with a set of teeth.",
            &phrases
        ));
        assert!(!names_a_phrase(
            "A table is a piece of furniture.",
            &phrases
        ));
        let holiday = question_phrases("Where should we go on a family holiday this summer?");
        assert!(names_a_phrase(
            "Summer holidays with a small child",
            &holiday
        ));
        assert!(!names_a_phrase(
            "Toronto is the most populous city in Canada, with 2,794,356 people.",
            &holiday
        ));
        let one = question_phrases("Which laptop should I buy?");
        assert_eq!(one.len(), 1, "{one:?}");
        assert_eq!(one[0].len(), 1, "{one:?}");
        assert!(names_a_phrase("Laptops with 16 GB of memory", &one));
    }

    #[test]
    fn a_finding_that_leans_on_a_sentence_before_it_is_told_apart() {
        assert!(leans_on_context(
            "This technological advance has had a significant impact."
        ));
        assert!(leans_on_context(
            "Printing by pressing an inked image onto paper appeared later that century."
        ));
        assert!(leans_on_context("It was invented around 1440."));
        assert!(!leans_on_context(
            "Johannes Gutenberg invented the printing press around 1440."
        ));
        assert!(!leans_on_context("Thistles grow in Scotland."));
        assert!(leans_on_context(
            "Bosch REAXX is another example of a flesh-sensing jobsite saw."
        ));
        assert!(leans_on_context("Another option is a mobile base."));
        assert!(!leans_on_context(
            "SawStop makes jobsite and cabinet saws, and the Bosch REAXX was another flesh-sensing saw."
        ));
        let asked = "Which table saw should I buy?";
        assert!(defines_a_question_term(
            "A saw is a tool consisting of a tough blade, wire, or chain with a hard toothed edge.",
            asked
        ));
        assert!(!defines_a_question_term(
            "Cabinet saws weigh over 200 kilograms and are the most accurate.",
            asked
        ));
        assert!(!defines_a_question_term(
            "Lumber is mainly used for construction framing.",
            asked
        ));
        assert!(numbered_plan_item(
            "Week 2: trees, graphs, binary search and heaps."
        ));
        assert!(numbered_plan_item("Step 3: sand with 220 grit."));
        assert!(!numbered_plan_item("Week two is for trees and graphs."));
        assert!(!numbered_plan_item("In 2019: prices rose."));
        assert!(!leans_on_context(
            "A mobile base lets a saw be moved from one place to another."
        ));
        assert!(!leans_on_context(""));
    }

    #[test]
    fn a_text_cut_short_keeps_its_whole_clauses_and_never_a_shortened_list() {
        let kept = |t: &str| whole_before_the_cut(t);
        assert_eq!(
            kept("Use a mixed model with a random effect for the site and, where needed, for the year (Bolker et al. ")
                .as_deref(),
            Some("Use a mixed model with a random effect for the site and, where needed, for the year.")
        );
        assert_eq!(
            kept("A negative binomial model suits count data from repeated field surveys, especially when the same ponds, plots, or transects, e")
                .as_deref(),
            Some("A negative binomial model suits count data from repeated field surveys.")
        );
        assert_eq!(
            kept("Jobsite saws weigh 20 to 40 kilograms and fold onto a stand. Contractor and hybrid saws are he")
                .as_deref(),
            Some("Jobsite saws weigh 20 to 40 kilograms and fold onto a stand.")
        );
        // A list cut short is not made into a shorter list; too little left is nothing.
        assert_eq!(
            kept("The interview has a coding round, a system design round, and a"),
            None
        );
        assert_eq!(kept("Penicillin (discovered in"), None);
        // A closed citation ends a sentence; an open one does not.
        assert_eq!(cut_off("It varies by year (Bolker et al.)"), None);
        assert!(cut_off("It varies by year (Bolker et al.").is_some());
    }

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
    fn abbreviations_and_initials_do_not_end_sentences() {
        let s = split_sentences(
            "The early modern period, c. 1500 to 1800, followed it. St. Paul's and Dr. Smith \
             agree, cf. No. 5 of the U.S. list. John F. Kennedy spoke in 1961. It cost $1.5 \
             million, i.e. More than planned.",
        );
        assert_eq!(
            s,
            vec![
                "The early modern period, c. 1500 to 1800, followed it.",
                "St. Paul's and Dr. Smith agree, cf. No. 5 of the U.S. list.",
                "John F. Kennedy spoke in 1961.",
                "It cost $1.5 million, i.e. More than planned.",
            ]
        );
    }

    #[test]
    fn a_sentence_cut_at_an_abbreviation_or_a_dangling_word_is_debris() {
        assert!(sentence_debris("The early modern period, c.").is_some());
        assert!(sentence_debris("It was printed by Dr.").is_some());
        assert!(sentence_debris("Presses spread to cities such as.").is_some());
        assert!(sentence_debris("It changed the economy and the.").is_some());
        assert!(sentence_debris("Paper, ink and type were needed, etc.").is_none());
        assert!(sentence_debris("Oranges are rich in vitamin C.").is_none());
        assert!(sentence_debris("The treaty was signed in the U.S.").is_none());
        assert!(sentence_debris("Asked whether it helped, most said no.").is_none());
    }

    #[test]
    fn words_of_another_script_are_debris_unless_a_source_has_them() {
        let latin = dominant_script("How did the printing press change Europe?");
        assert_eq!(latin, Script::Latin);
        assert!(foreign_script(
            "It shaped the Renaissance, Reformation, and human主义.",
            latin,
            &["The Renaissance was a period of humanism."],
        )
        .is_some());
        assert!(foreign_script(
            "Tea is called 茶 in Chinese.",
            latin,
            &["The Chinese word for tea is 茶 (chá)."],
        )
        .is_none());
        assert!(foreign_script("Café culture spread in Paris.", latin, &[]).is_none());
        assert_eq!(dominant_script("印刷术如何改变了欧洲？"), Script::Cjk);
        assert!(foreign_script("印刷术改变了欧洲 Europe。", Script::Cjk, &[]).is_some());
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
        // The prompt's sources talked about, not what they say.
        assert!(sentence_debris(
            "Printing got faster, as evidenced by the sources stating that printing got faster."
        )
        .is_some());
        assert!(sentence_debris("The facts say that presses spread.").is_some());
        assert!(sentence_debris("The sources found do not cover: costs.").is_none());
        assert!(heading_debris("Religion and the (from: Printing press; Printing").is_some());
        assert!(heading_debris("How printing changed the").is_some());
        assert!(heading_debris("Religion and reform").is_none());
        assert!(heading_debris("Costs (1450–1500)").is_none());
        // A word cut to its first letters, beside acronyms and short words a heading ends on.
        assert!(heading_debris("Coding Practice and Behavioral St").is_some());
        assert!(heading_debris("Vitamin D").is_none());
        assert!(heading_debris("Laptops for AI").is_none());
        assert!(heading_debris("Setting Up").is_none());
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
        assert!(finding_form(
            "A buyer's guide to laptops for everyday use also offers information on prices in the UK."
        )
        .is_some());
        assert!(finding_form("The passage describes how green tea is brewed at home.").is_some());
        assert!(finding_form("The clinic offers free hearing tests on Mondays.").is_none());
    }
}
