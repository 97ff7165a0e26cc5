//! The reader's needs, for *What this means for you*: the profile's statements of what to
//! emphasise and the persona checklist, each turned into a short label a sentence can name.

use std::collections::BTreeSet;

use super::outline::tidy_sentence;
use super::prose::Fact;
use crate::checks::money::{Budget, Fit};
use crate::checks::text::{
    content_words, heading_debris, jaccard, split_sentences, NEAR_DUPLICATE_JACCARD,
};

/// Needs answered at most: each costs a small call, and a long list reads as a form.
pub const MAX_NEEDS: usize = 8;

/// Profile criteria whose statements are needs a finding can answer. Tone, depth and style
/// shape how a report reads; no finding answers them, so listing them as "not covered" would
/// only be noise. `Avoid` statements are the opposite of needs.
const NEED_CRITERIA: &[&str] = &["emphasize", "emphasise", "need", "needs"];

/// A need of the reader, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// Said to the reader ("you have a knee injury") or as the checklist words it.
    pub text: String,
    /// The statement it comes from, as the profile or the user has it ("Has a knee injury").
    pub statement: String,
    /// In the user's own words: a profile line they said ("They said: …") or a sentence they
    /// wrote for this question, not a phrase inferred from their history.
    pub own_words: bool,
}

/// The needs of a profile (the `- statement` lines under its *Emphasize* criterion, as
/// [`crate::profile::QueryProfile::to_prompt_text`] writes them) and the sentences the user
/// wrote about themselves (`told`), without repeats, at most [`MAX_NEEDS`].
pub fn needs_from(profile: &str, told: &[String]) -> Vec<Need> {
    let mut statements = Vec::new();
    let mut taking = false;
    for line in profile.lines() {
        let line = line.trim();
        if let Some(item) = line.strip_prefix("- ") {
            let said = item.strip_prefix(crate::profile::query_profile::SAID_PREFIX);
            let statement = said.unwrap_or(item).trim();
            if taking && !is_field(statement) {
                statements.push((to_reader(statement), statement.to_string(), said.is_some()));
            }
        } else if !line.is_empty() {
            // A criterion header ("Emphasize:") or another line ("Domain: work — …").
            let header = line.strip_suffix(':').unwrap_or("").trim().to_lowercase();
            taking = NEED_CRITERIA.contains(&header.as_str());
        }
    }
    statements.extend(
        told.iter()
            .filter(|t| !is_field(t))
            .map(|t| (to_reader(t.trim()), t.trim().to_string(), true)),
    );
    let mut out: Vec<Need> = Vec::new();
    let mut seen: Vec<BTreeSet<String>> = Vec::new();
    for (need, statement, own_words) in statements {
        let need = need
            .trim()
            .trim_end_matches(['.', ';', ','])
            .trim()
            .to_string();
        let label = need_label(&need);
        // A need with markup or brackets in it cannot be named in a clean sentence.
        if label.split_whitespace().count() < 2 || heading_debris(&label).is_some() {
            continue;
        }
        let words = content_words(&label);
        let repeat = out.iter().any(|n| n.text.eq_ignore_ascii_case(&need))
            || seen
                .iter()
                .any(|w| *w == words || jaccard(w, &words) >= NEAR_DUPLICATE_JACCARD);
        if !repeat {
            seen.push(words);
            out.push(Need {
                text: need,
                statement,
                own_words,
            });
        }
        if out.len() == MAX_NEEDS {
            break;
        }
    }
    out
}

/// A field of the user's custom instructions ("Preferred name: Maya", "Role: nurse"): who
/// they are, which the persona carries, not a need a finding can meet. Printed back as "not
/// covered", it read as a profile pasted into the report.
fn is_field(statement: &str) -> bool {
    statement.split_once(':').is_some_and(|(field, value)| {
        let words = field.split_whitespace().count();
        (1..=3).contains(&words)
            && !value.trim().is_empty()
            && field.chars().all(|c| c.is_alphabetic() || c == ' ')
    })
}

/// A profile statement about the user ("Has wide feet", "She is recovering from knee pain",
/// "Recovering from knee pain") as said to them ("you have wide feet", "you are recovering
/// from knee pain"), so the report speaks to its reader instead of pasting a profile line.
/// A statement that does not open with a verb about the user is returned as it is.
pub fn to_reader(statement: &str) -> String {
    let words: Vec<&str> = statement.split_whitespace().collect();
    let Some(&first) = words.first() else {
        return String::new();
    };
    // "The user has …", "She is …": the subject goes, "you" takes its place.
    let subject = matches!(
        first.to_lowercase().as_str(),
        "she" | "he" | "they" | "user"
    ) || (first.eq_ignore_ascii_case("the")
        && words.get(1).is_some_and(|w| w.eq_ignore_ascii_case("user")));
    let skip = match (subject, first.eq_ignore_ascii_case("the")) {
        (true, true) => 2,
        (true, false) => 1,
        _ => 0,
    };
    let Some(verb) = words.get(skip) else {
        return statement.to_string();
    };
    let rest = words[skip + 1..].join(" ");
    let lower = verb.to_lowercase();
    let said = match lower.as_str() {
        "has" => Some("you have".to_string()),
        "is" => Some("you are".to_string()),
        "was" => Some("you were".to_string()),
        "does" => Some("you do".to_string()),
        "doesn't" => Some("you don't".to_string()),
        "isn't" => Some("you aren't".to_string()),
        "can" | "cannot" | "can't" | "will" | "would" | "should" | "must" => {
            Some(format!("you {lower}"))
        }
        // "wants", "prefers", "owns", "works": the third-person -s goes.
        v if third_person_base(v).is_some() => {
            Some(format!("you {}", third_person_base(v).unwrap_or(v)))
        }
        // "Recovering from knee pain", "Training for a half marathon".
        v if v.len() > 4 && v.ends_with("ing") && v.chars().all(|c| c.is_ascii_lowercase()) => {
            Some(format!("you are {v}"))
        }
        _ => None,
    };
    match said {
        Some(opening) if rest.is_empty() => opening,
        // Profile statements join clauses of one subject ("Has limited budget, wants to
        // track spending"): each clause's verb is turned too, and so are the words that
        // point back to the user ("for themselves").
        Some(opening) => format!(
            "{opening} {}",
            pronouns_to_reader(&later_clauses_to_reader(&rest))
        ),
        None => first_person_to_reader(statement),
    }
}

/// `text` with the speaker's first person turned to the reader ("My shop lease says I can't
/// alter the building" → "your shop lease says you can't alter the building"): a sentence the
/// user wrote in a chat, said back to them. Text without a first-person word is unchanged.
pub fn first_person_to_reader(text: &str) -> String {
    let mut swapped = false;
    let words: Vec<&str> = text.split(' ').collect();
    let turned: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(i, word)| {
            let bare = word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'));
            let Some(at) = word.find(bare).filter(|_| !bare.is_empty()) else {
                return word.to_string();
            };
            let (lead, tail) = (&word[..at], &word[at + bare.len()..]);
            let normal = bare.replace('’', "'");
            let new = match normal.as_str() {
                "I" => "you",
                "I'm" => "you're",
                "I've" => "you've",
                "I'd" => "you'd",
                "I'll" => "you'll",
                "me" | "Me" => "you",
                "my" | "My" => "your",
                "mine" | "Mine" => "yours",
                "myself" | "Myself" => "yourself",
                "we" | "We" => "you",
                "we're" | "We're" => "you're",
                "we've" | "We've" => "you've",
                "our" | "Our" => "your",
                "ours" | "Ours" => "yours",
                "us" => "you",
                "ourselves" => "yourselves",
                // "I am" → "you are"; "I was" → "you were".
                "am" if swapped => "are",
                "was" if i > 0 && words[i - 1] == "I" => "were",
                _ => return word.to_string(),
            };
            swapped = true;
            format!("{lead}{new}{tail}")
        })
        .collect();
    turned.join(" ")
}

/// `text` with the words that point back to the user in the third person said to them:
/// "for themselves" → "for yourself", "his dad" → "your dad". "her" is turned only before a
/// word it can own ("her dad", not "helps her with").
fn pronouns_to_reader(text: &str) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    words
        .iter()
        .enumerate()
        .map(|(i, word)| {
            let bare = word.trim_end_matches(|c: char| !c.is_alphanumeric());
            let tail = &word[bare.len()..];
            let turned = match bare {
                "themselves" | "himself" | "herself" => "yourself",
                "their" | "his" => "your",
                "her"
                    if tail.is_empty()
                        && words.get(i + 1).is_some_and(|next| {
                            !matches!(
                                next.trim_end_matches(|c: char| !c.is_alphanumeric()),
                                "to" | "with"
                                    | "for"
                                    | "and"
                                    | "or"
                                    | "a"
                                    | "an"
                                    | "the"
                                    | "in"
                                    | "on"
                                    | "at"
                                    | "about"
                                    | "from"
                                    | "that"
                                    | ""
                            )
                        }) =>
                {
                    "your"
                }
                _ => return word.to_string(),
            };
            format!("{turned}{tail}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The base of a third-person verb ("wants" → "want", "watches" → "watch"), or None for a
/// word that is not one.
fn third_person_base(v: &str) -> Option<&str> {
    if v.len() <= 3
        || !v.ends_with('s')
        || v.ends_with("ss")
        || !v.chars().all(|c| c.is_ascii_lowercase())
    {
        return None;
    }
    let es = v
        .strip_suffix("es")
        .filter(|b| b.ends_with("sh") || b.ends_with("ch"));
    Some(es.unwrap_or(&v[..v.len() - 1]))
}

/// `rest` with the third-person verb that opens each later clause (", wants …") turned to
/// the second person (", want …").
fn later_clauses_to_reader(rest: &str) -> String {
    rest.split(", ")
        .enumerate()
        .map(|(i, clause)| {
            let Some((verb, tail)) = clause.split_once(' ').filter(|_| i > 0) else {
                return clause.to_string();
            };
            let turned = match verb {
                "has" => "have",
                "is" => "are",
                "was" => "were",
                "does" => "do",
                v => third_person_base(v).unwrap_or(v),
            };
            format!("{turned} {tail}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Openers of checklist items and profile statements that say how the need was phrased, not
/// what it is ("Covers the cost of tea" → "the cost of tea").
const LABEL_OPENERS: &[&str] = &[
    "covers ",
    "cover ",
    "covering ",
    "includes ",
    "explains ",
    "discusses ",
    "addresses ",
    "mentions ",
    "describes ",
    "compares ",
    // Checklist items a clarification summary writes as tasks ("Identifies the impact of …").
    "identifies ",
    "identify ",
    "analyzes ",
    "analyses ",
    "analyze ",
    "examines ",
    "examine ",
    "evaluates ",
    "assesses ",
    "explores ",
    "investigates ",
    "outlines ",
    "highlights ",
    "lists ",
    "provides ",
    "wants ",
    "needs ",
    "prefers ",
    "is interested in ",
    "interested in ",
    "is looking for ",
    "looking for ",
    "the user wants ",
    "the user needs ",
    "the reader wants ",
    "the reader needs ",
    "i want ",
    "i need ",
    "i'm looking for ",
];

/// A need as a phrase that can follow "For …" or stand in a list: its phrasing opener
/// dropped, the user's first person turned to "you", no closing punctuation.
pub fn need_label(need: &str) -> String {
    let mut text = crate::research::tree::one_line(need, 200)
        .trim()
        .trim_end_matches(['.', '!', '?', ';', ',', ':'])
        .to_string();
    let lower = text.to_lowercase();
    if let Some(opener) = LABEL_OPENERS.iter().find(|o| lower.starts_with(*o)) {
        text = text[opener.len()..].trim().to_string();
    }
    let text = and_before_the_last(first_person_to_reader(&text));
    // "The cost" → "the cost", but "AI tools" and "Japan" keep their capitals.
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(first), Some(second)) if first.is_uppercase() && second.is_lowercase() => {
            let rest: String = text.chars().skip(1).collect();
            let word = text.split_whitespace().next().unwrap_or("");
            if is_common_word(word) {
                format!("{}{rest}", first.to_lowercase())
            } else {
                text
            }
        }
        _ => text,
    }
}

/// Whether a capitalised first word is an ordinary word (lower-cased mid-sentence) rather
/// than a name: a crude test that keeps names like "Japan" and lowers "The", "Cost", "How".
fn is_common_word(word: &str) -> bool {
    const COMMON: &[&str] = &[
        "the",
        "a",
        "an",
        "how",
        "what",
        "which",
        "when",
        "where",
        "why",
        "whether",
        "cost",
        "costs",
        "price",
        "prices",
        "budget",
        "safety",
        "health",
        "history",
        "daily",
        "best",
        "practical",
        "clear",
        "simple",
        "short",
        "detailed",
        "your",
        "you",
        "you're",
        "you've",
        "options",
        "steps",
        "tips",
        "evidence",
        "risks",
        "benefits",
        "time",
        "quality",
        "any",
        "low",
        "high",
        "cheap",
        "affordable",
        "beginner",
        "advanced",
        "recent",
        "current",
    ];
    COMMON.contains(&word.to_lowercase().as_str())
}

/// A need's finding as one sentence that names the need, for when the model's sentences fail
/// their checks: "On the cost of tea: Prices range widely." or, for a need in the reader's own
/// words, "Since you have a knee injury, cushioned shoes cut the load by 20%."
/// Whether a need's label is said to the reader ("you have …", "you're …", "your …").
fn speaks_to_the_reader(label: &str) -> bool {
    ["you ", "your ", "you're ", "you've ", "you'd ", "you'll "]
        .iter()
        .any(|o| label.starts_with(o))
}

/// A statement about the reader made of several notes ("you use statistical tests, are
/// interested in ecology") read as one sentence: "… tests and are interested in ecology".
fn and_before_the_last(text: String) -> String {
    if !speaks_to_the_reader(&text) || text.starts_with("your ") {
        return text;
    }
    match text.rsplit_once(", ") {
        Some((before, last))
            if !last.starts_with("and ")
                && !last.starts_with("or ")
                && !before.ends_with(" and")
                && !before.ends_with(" or") =>
        {
            format!("{before} and {last}")
        }
        _ => text,
    }
}

pub(super) fn for_need(label: &str, fact: &Fact) -> String {
    let text = tidy_sentence(&fact.text);
    let first = text.split_whitespace().next().unwrap_or("");
    let lowerable = OPENERS_TO_LOWER.contains(&first.to_lowercase().as_str());
    if label.starts_with("you") && lowerable {
        let mut chars = text.chars();
        let lowered = chars
            .next()
            .map(|c| c.to_lowercase().collect::<String>() + chars.as_str())
            .unwrap_or_default();
        format!("Since {label}, {lowered}")
    } else if speaks_to_the_reader(label) {
        // "On you have knee pain: …" is not English, nor "On your ears ring after gigs: …"; a
        // finding that opens on a name stays whole.
        format!("Since {label}: {text}")
    } else {
        format!("On {label}: {text}")
    }
}

/// A need's sentences as the reader gets them: when none of them names the need (the small
/// model often restates the fact alone: "Custom-moulded earplugs are made from an impression
/// of the ear canal" under "What this means for you"), the first is said with the need, in
/// code, so the reader sees why it is there.
/// A sentence names the need when it has at least half of the need's own words, those the
/// question does not have ("ear" is in a sentence on earplugs whatever the need).
pub(super) fn naming_the_need(query: &str, label: &str, mut sentences: Vec<String>) -> Vec<String> {
    use crate::checks::text::content_words;
    let asked = content_words(query);
    let need: BTreeSet<String> = content_words(label).difference(&asked).cloned().collect();
    let names = |s: &String| 2 * need.intersection(&content_words(s)).count() >= need.len();
    if !need.is_empty() && !sentences.iter().any(names) {
        if let Some(first) = sentences.first_mut() {
            *first = for_need(
                label,
                &Fact {
                    text: first.clone(),
                    passages: Vec::new(),
                },
            );
        }
    }
    sentences
}

/// The findings that state a price in the reader's budget's currency, each said with how it
/// stands to the budget, by code: "Within your budget of 120 dollars: Cushioned daily trainers
/// cost about 100 to 110 dollars." Those within it come first, then those partly within, then
/// those above; returns the paragraph and the findings (ids) in its order. The comparison is
/// arithmetic, which the small model gets wrong ("you have a budget" was listed as not covered
/// two lines below shoes at 100 to 110 dollars for a reader with 120).
pub(super) fn for_budget(budget: &Budget, findings: &[(usize, &str)]) -> (String, Vec<usize>) {
    let mut fitted: Vec<(Fit, usize, String)> = findings
        .iter()
        .filter_map(|&(l, text)| {
            let text = priced_part(budget, text);
            Some((budget.fit(&text)?, l, text))
        })
        .collect();
    // A price said twice is said once: a list a node learned whole gives its priced item, and
    // the item can also have been learned on its own.
    let mut said = BTreeSet::new();
    fitted.retain(|(_, _, text)| said.insert(text.to_lowercase()));
    // Stable: findings of one fit keep their order.
    fitted.sort_by_key(|f| f.0);
    let sentences: Vec<String> = fitted
        .iter()
        .map(|(fit, _, text)| {
            let how = match fit {
                Fit::Within => "Within",
                Fit::Partly => "Partly within",
                Fit::Above => "Above",
            };
            format!("{how} your budget of {budget}: {text}")
        })
        .collect();
    (
        sentences.join(" "),
        fitted.into_iter().map(|(_, l, _)| l).collect(),
    )
}

/// The sentences or list items of a finding that state a price in the budget's currency, as
/// one tidy sentence: a finding a passage's list became ("- Heating the oven only as long as
/// needed … - New door seals …, and a set of seals costs 100 to 300 euros. - LED lighting …")
/// is said by its priced item alone. The whole finding when no part alone has the price.
fn priced_part(budget: &Budget, finding: &str) -> String {
    let flat = finding.split_whitespace().collect::<Vec<_>>().join(" ");
    let items: Vec<&str> = flat
        .trim_start_matches("- ")
        .split(" - ")
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .collect();
    let parts: Vec<String> = items
        .iter()
        .flat_map(|item| split_sentences(item))
        .filter(|part| budget.fit(part).is_some())
        .map(|part| tidy_sentence(&part))
        .collect();
    if parts.is_empty() {
        tidy_sentence(finding)
    } else {
        parts.join(" ")
    }
}

/// First words of a finding that are lower-cased mid-sentence (not names).
const OPENERS_TO_LOWER: &[&str] = &[
    "the", "a", "an", "it", "its", "this", "these", "those", "there", "most", "many", "some",
    "each", "all", "every", "one", "two", "three", "in", "on", "at", "for", "by", "when", "while",
    "if", "after", "before", "during", "over", "under", "about", "around", "more", "less", "fewer",
    "several", "both", "such", "their", "they", "people", "research", "studies",
];

/// The needs no finding answers, as the list the closing sentence of the needs section gives
/// ("The sources found do not cover: a; b.").
pub(super) fn uncovered_sentence(labels: &[String]) -> String {
    format!("{NOT_COVERED_OPENING}{}.", labels.join("; "))
}

/// How the sentence listing the needs no finding answers opens.
pub const NOT_COVERED_OPENING: &str = "The sources found do not cover: ";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_come_from_emphasis_and_what_the_user_wrote_without_repeats() {
        let profile = "Domain: hobby — runs on weekends\nEmphasize:\n- Has a knee injury\n- \
                       Wants shoes under $100\nAvoid:\n- racing spikes\nTone:\n- casual\n";
        let told = vec![
            "I run three times a week.".to_string(),
            "i run three times a week".to_string(),
            "Role: nurse".to_string(),
            "I want {json}".to_string(),
        ];
        let needs = needs_from(profile, &told);
        assert_eq!(
            needs
                .iter()
                .map(|n| n.statement.as_str())
                .collect::<Vec<_>>(),
            vec![
                "Has a knee injury",
                "Wants shoes under $100",
                "I run three times a week."
            ]
        );
        assert_eq!(
            needs.iter().map(|n| n.text.as_str()).collect::<Vec<_>>(),
            vec![
                "you have a knee injury",
                "you want shoes under $100",
                "you run three times a week"
            ]
        );
    }

    #[test]
    fn a_fallback_sentence_names_the_need() {
        let fact = |t: &str| Fact {
            text: t.into(),
            passages: Vec::new(),
        };
        assert_eq!(
            for_need("the cost of tea", &fact("Prices range widely")),
            "On the cost of tea: Prices range widely."
        );
        assert_eq!(
            for_need(
                "you have a knee injury",
                &fact("The gel sole cuts the load by 20%.")
            ),
            "Since you have a knee injury, the gel sole cuts the load by 20%."
        );
        assert_eq!(
            for_need(
                "you have knee pain",
                &fact("Brooks makes many road shoes in wide fittings.")
            ),
            "Since you have knee pain: Brooks makes many road shoes in wide fittings."
        );
        assert_eq!(
            for_need(
                "your ears ring after gigs",
                &fact("Custom-moulded earplugs seal better.")
            ),
            "Since your ears ring after gigs: Custom-moulded earplugs seal better."
        );
        assert_eq!(
            uncovered_sentence(&["a budget".into(), "safety".into()]),
            "The sources found do not cover: a budget; safety."
        );
    }

    #[test]
    fn a_need_s_paragraph_that_does_not_name_it_is_said_with_it() {
        let said = |label: &str, s: &[&str]| {
            naming_the_need(
                "What earplugs should I use for band rehearsals?",
                label,
                s.iter().map(|s| s.to_string()).collect(),
            )
        };
        assert_eq!(
            said(
                "your ears ring after gigs",
                &["Custom-moulded earplugs are made from an impression of the ear canal.", "They last four years."]
            ),
            vec![
                "Since your ears ring after gigs: Custom-moulded earplugs are made from an impression of the ear canal.".to_string(),
                "They last four years.".to_string()
            ]
        );
        // A paragraph that names it stays as written.
        let named = ["Flat filters help with ringing ears."];
        assert_eq!(
            said("your ears ring after gigs", &named),
            vec![named[0].to_string()]
        );
        assert!(said("your ears ring after gigs", &[]).is_empty());
        assert_eq!(
            said(
                "you're a drummer in a loud band",
                &["Custom-moulded earplugs are made from an impression of the ear canal."]
            ),
            vec!["Since you're a drummer in a loud band: Custom-moulded earplugs are made from an impression of the ear canal.".to_string()]
        );
    }

    #[test]
    fn prices_are_said_with_how_they_stand_to_the_budget_within_first() {
        let budget = crate::checks::money::budget("you have limited budget (120 dollars)")
            .expect("a budget");
        let (text, order) = for_budget(
            &budget,
            &[
                (3, "carbon-plated racing shoes cost 200 to 275 dollars"),
                (5, "Cushioning protects the knee."),
                (7, "Cushioned daily trainers cost about 100 to 110 dollars."),
            ],
        );
        assert_eq!(
            text,
            "Within your budget of 120 dollars: Cushioned daily trainers cost about 100 to 110 \
             dollars. Above your budget of 120 dollars: Carbon-plated racing shoes cost 200 to \
             275 dollars."
        );
        assert_eq!(order, vec![7, 3]);
        // A finding made of a passage's list is said by its priced item.
        let budget =
            crate::checks::money::budget("roughly 2000 euros spare at most").expect("a budget");
        let (text, _) = for_budget(
            &budget,
            &[(
                0,
                "- Heating the oven only as long as needed saves 5 to 10 % of its energy. - New \
                 door seals: worn seals waste several hundred kWh a year, and a set of seals \
                 costs 100 to 300 euros. - LED lighting pays back in one to two years.",
            )],
        );
        assert_eq!(
            text,
            "Within your budget of 2,000 euros: New door seals: worn seals waste several \
             hundred kWh a year, and a set of seals costs 100 to 300 euros."
        );
    }

    #[test]
    fn profile_statements_are_said_to_the_reader() {
        for (statement, said) in [
            (
                "Has wide feet with flat arches",
                "you have wide feet with flat arches",
            ),
            (
                "She is recovering from patellofemoral knee pain",
                "you are recovering from patellofemoral knee pain",
            ),
            (
                "Recovering from patellofemoral knee pain",
                "you are recovering from patellofemoral knee pain",
            ),
            (
                "Wants short answers in bullet points",
                "you want short answers in bullet points",
            ),
            ("The user owns a 2015 Civic", "you own a 2015 Civic"),
            ("Watches cooking videos", "you watch cooking videos"),
            ("Can run 5 km", "you can run 5 km"),
            (
                "Has limited budget, wants to track spending",
                "you have limited budget, want to track spending",
            ),
            ("Budget of $120 for shoes", "Budget of $120 for shoes"),
            (
                "Has a pension pot, wants to spend it on something for themselves",
                "you have a pension pot, want to spend it on something for yourself",
            ),
            (
                "Wants a gift for her dad, asks friends to help her with it",
                "you want a gift for your dad, ask friends to help her with it",
            ),
            (
                "Is training for his first marathon",
                "you are training for your first marathon",
            ),
            ("Wide feet", "Wide feet"),
            (
                "My shop lease says I can't alter the building without the landlord's consent.",
                "your shop lease says you can't alter the building without the landlord's consent.",
            ),
            (
                "After paying the flour supplier I have roughly 2000 euros spare at most.",
                "After paying the flour supplier you have roughly 2000 euros spare at most.",
            ),
            ("I am new to all of this", "you are new to all of this"),
            (
                "We live in the US with our son",
                "you live in the US with your son",
            ),
        ] {
            assert_eq!(to_reader(statement), said, "{statement}");
        }
        let profile = "Domain: hobby — runs\nEmphasize:\n- Preferred name: Maya\n- Role: \
                       nurse\n- Has a knee injury\n- They said: I cook most evenings.\n";
        assert_eq!(
            needs_from(profile, &[]),
            vec![
                Need {
                    text: "you have a knee injury".into(),
                    statement: "Has a knee injury".into(),
                    own_words: false,
                },
                Need {
                    text: "you cook most evenings".into(),
                    statement: "I cook most evenings.".into(),
                    own_words: true,
                }
            ]
        );
    }

    #[test]
    fn labels_drop_the_phrasing_and_speak_to_the_reader() {
        assert_eq!(need_label("Covers the cost of tea."), "the cost of tea");
        assert_eq!(need_label("I have a knee injury"), "you have a knee injury");
        assert_eq!(need_label("Wants shoes under $100"), "shoes under $100");
        assert_eq!(need_label("Japan's tea farms"), "Japan's tea farms");
        assert_eq!(need_label("Budget under 50 euros"), "budget under 50 euros");
        assert_eq!(
            need_label("Identifies the impact of this technology on Europe."),
            "the impact of this technology on Europe"
        );
        assert_eq!(need_label("Analyzes running costs"), "running costs");
        assert_eq!(
            need_label(&to_reader(
                "Uses statistical tests, is interested in ecology"
            )),
            "you use statistical tests and are interested in ecology"
        );
        assert_eq!(
            need_label(&to_reader(
                "Has a family, enjoys travel, likes quiet beaches"
            )),
            "you have a family, enjoy travel and like quiet beaches"
        );
    }
}
