//! The report in the language of the question.
//!
//! The sources are read, and every sentence is checked, in the language of the sources: the
//! local embedding model (all-MiniLM-L6-v2) and the support judge read English, and a small
//! model writes best from facts in the words of its passages. So the report is written and
//! checked as always, then each of its texts is translated by one small call (title, headings,
//! paragraphs) and the translation is checked in code: it is in the question's language and
//! writing system, keeps every number, is about as long, has no debris and repeats nothing.
//! A text whose translation fails twice stays as written, and the report says how many did.
//! The labels code writes (*Question*, *References*, …) come from a table for the languages
//! listed in [`labels`], in English otherwise.

use whatlang::Lang;

use super::{Paragraph, Report, NEEDS_HEADING};
use crate::checks::text::{
    dominant_script, foreign_script, heading_debris, near_duplicates, sentence_debris,
    split_sentences, Script,
};
use crate::llm::{complete_schema, Completion, GenerationOptions, Llm, Message};
use crate::research::ResearchError;

/// The language a report for `query` is translated into: None for English, and for a question
/// whose language the detector is not sure of (the report then stays as written). The
/// detector's own "reliable" mark is too strict for a one-line question ("Comment
/// l'imprimerie a-t-elle changé l'Europe ?" scores 0.57 and is not marked), so a confidence of
/// [`MIN_CONFIDENCE`] is enough, unless the question has two of English's commonest words:
/// an English question is never translated by a detector's slip.
pub fn of_question(query: &str) -> Option<Lang> {
    let info = whatlang::detect(query)?;
    (info.lang() != Lang::Eng && info.confidence() >= MIN_CONFIDENCE && english_words(query) < 2)
        .then(|| info.lang())
}

/// Whether a short text the user wrote reads as English: the detector says so, or it has two
/// of English's commonest words. A few words of French ("Pour des invités") are too short for
/// the detector to be sure of, so a text is only taken for English on evidence.
pub fn looks_english(text: &str) -> bool {
    english_words(text) >= 2 || whatlang::detect(text).is_some_and(|i| i.lang() == Lang::Eng)
}

/// How many of [`ENGLISH_WORDS`] `text` has.
fn english_words(text: &str) -> usize {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| ENGLISH_WORDS.contains(&w.to_lowercase().as_str()))
        .count()
}

/// The detector's confidence a question's language needs.
const MIN_CONFIDENCE: f64 = 0.5;

/// Words most English questions have one or two of, and few questions in other languages.
const ENGLISH_WORDS: &[&str] = &[
    "the", "how", "what", "which", "why", "who", "when", "where", "is", "are", "was", "were", "do",
    "does", "did", "should", "can", "i", "my", "of", "to", "for", "and", "with",
];

/// The labels code writes into a report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Labels {
    pub question: &'static str,
    pub for_you: &'static str,
    pub references: &'static str,
    /// Said under the question of a translated report.
    pub translated: &'static str,
    /// Said when `{n}` texts stayed as written.
    pub untranslated: &'static str,
    /// Opens the line that says the report follows how the reader likes answers.
    pub styled: &'static str,
    /// How, in that line.
    pub short: &'static str,
    pub bullets: &'static str,
    pub steps: &'static str,
    pub checklist: &'static str,
    pub plain: &'static str,
}

pub const ENGLISH: Labels = Labels {
    question: "Question",
    for_you: NEEDS_HEADING,
    references: "References",
    translated: "Translated by the local model from the English the sources were read and checked in; the translation may contain errors.",
    untranslated: "{n} texts are left in English: their translation did not pass the checks.",
    styled: "Written as you like answers",
    short: "short",
    bullets: "in bullet points",
    steps: "as numbered steps",
    checklist: "as a checklist",
    plain: "in plain words",
};

/// The labels in `lang`, where the table has them.
pub fn labels(lang: Option<Lang>) -> Labels {
    match lang {
        Some(Lang::Fra) => Labels {
            question: "Question",
            for_you: "Ce que cela signifie pour vous",
            references: "Références",
            translated: "Traduit par le modèle local depuis l'anglais, la langue dans laquelle les sources ont été lues et vérifiées ; la traduction peut contenir des erreurs.",
            untranslated: "{n} textes restent en anglais : leur traduction n'a pas passé les vérifications.",
            styled: "Rédigé comme vous aimez les réponses",
            short: "court",
            bullets: "sous forme de puces",
            steps: "en étapes numérotées",
            checklist: "sous forme de liste à cocher",
            plain: "en mots simples",
        },
        Some(Lang::Deu) => Labels {
            question: "Frage",
            for_you: "Was das für Sie bedeutet",
            references: "Quellen",
            translated: "Vom lokalen Modell übersetzt aus dem Englischen, in dem die Quellen gelesen und geprüft wurden; die Übersetzung kann Fehler enthalten.",
            untranslated: "{n} Texte bleiben auf Englisch: ihre Übersetzung hat die Prüfungen nicht bestanden.",
            styled: "Geschrieben, wie Sie Antworten mögen",
            short: "kurz",
            bullets: "in Stichpunkten",
            steps: "in nummerierten Schritten",
            checklist: "als Checkliste",
            plain: "in einfachen Worten",
        },
        Some(Lang::Spa) => Labels {
            question: "Pregunta",
            for_you: "Qué significa esto para usted",
            references: "Referencias",
            translated: "Traducido por el modelo local del inglés, el idioma en que se leyeron y comprobaron las fuentes; la traducción puede contener errores.",
            untranslated: "{n} textos quedan en inglés: su traducción no pasó las comprobaciones.",
            styled: "Escrito como le gustan las respuestas",
            short: "breve",
            bullets: "en viñetas",
            steps: "en pasos numerados",
            checklist: "como lista de verificación",
            plain: "con palabras sencillas",
        },
        Some(Lang::Ita) => Labels {
            question: "Domanda",
            for_you: "Cosa significa per te",
            references: "Riferimenti",
            translated: "Tradotto dal modello locale dall'inglese, la lingua in cui le fonti sono state lette e verificate; la traduzione può contenere errori.",
            untranslated: "{n} testi restano in inglese: la loro traduzione non ha superato i controlli.",
            styled: "Scritto come preferisci le risposte",
            short: "breve",
            bullets: "per punti",
            steps: "in passi numerati",
            checklist: "come lista di controllo",
            plain: "con parole semplici",
        },
        Some(Lang::Por) => Labels {
            question: "Pergunta",
            for_you: "O que isto significa para você",
            references: "Referências",
            translated: "Traduzido pelo modelo local do inglês, a língua em que as fontes foram lidas e verificadas; a tradução pode conter erros.",
            untranslated: "{n} textos ficam em inglês: a tradução não passou nas verificações.",
            styled: "Escrito como você gosta das respostas",
            short: "curto",
            bullets: "em tópicos",
            steps: "em passos numerados",
            checklist: "como lista de verificação",
            plain: "em palavras simples",
        },
        Some(Lang::Nld) => Labels {
            question: "Vraag",
            for_you: "Wat dit voor u betekent",
            references: "Bronnen",
            translated: "Door het lokale model vertaald uit het Engels, waarin de bronnen zijn gelezen en gecontroleerd; de vertaling kan fouten bevatten.",
            untranslated: "{n} teksten blijven in het Engels: hun vertaling doorstond de controles niet.",
            styled: "Geschreven zoals u antwoorden wilt",
            short: "kort",
            bullets: "in opsommingstekens",
            steps: "in genummerde stappen",
            checklist: "als checklist",
            plain: "in eenvoudige woorden",
        },
        _ => ENGLISH,
    }
}

/// Most characters of a translated text.
const MAX_CHARS: usize = 1600;
/// A translation this much shorter or longer than its text left something out or added it.
const LENGTH_RATIO: (f32, f32) = (0.5, 2.2);
/// Below this many words the detector cannot tell the language (a heading, a name).
const DETECTABLE_WORDS: usize = 6;

/// Why `translation` is not a faithful translation of `text` into `lang`, if it is not.
pub fn translation_problem(
    text: &str,
    translation: &str,
    lang: Lang,
    script: Script,
) -> Option<String> {
    let t = translation.trim();
    if t.is_empty() {
        return Some("the answer was empty".into());
    }
    // A name may read the same in every language; three words and more are translated.
    if t.eq_ignore_ascii_case(text.trim()) && t.split_whitespace().count() >= 3 {
        return Some(format!("it is not translated into {}", lang.eng_name()));
    }
    // The 1.5B model answered a clarifying question instead of translating it ("… est
    // l'introduction de l'imprimante faciale.").
    if text.trim_end().ends_with('?') && !t.ends_with(['?', '？', '؟']) {
        return Some("the text is a question: translate it as a question, ending with a question mark, and do not answer it".into());
    }
    let sentences = split_sentences(t);
    let debris = if is_prose(text) {
        sentences.iter().find_map(|s| sentence_debris(s))
    } else {
        heading_debris(t)
    };
    if let Some(why) = debris {
        return Some(why);
    }
    let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
    if near_duplicates(&refs).into_iter().any(|d| d) {
        return Some("it repeats a sentence".into());
    }
    // The 1.5B model can loop on a phrase inside a sentence ("… un important figure dans …,
    // était un important figure …, car il était un important figure …").
    let repeats = most_repeated_phrase(t);
    if repeats.1 >= 3 && repeats.1 > most_repeated_phrase(text).1 {
        return Some(format!("it repeats \"{}\"; say it once", repeats.0));
    }
    let missing: Vec<String> = numbers(text)
        .into_iter()
        .filter(|n| !numbers(t).contains(n))
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "it leaves out the number(s) {}",
            missing.join(", ")
        ));
    }
    let ratio = t.chars().count() as f32 / text.trim().chars().count().max(1) as f32;
    if ratio < LENGTH_RATIO.0 {
        return Some("it leaves part of the text out; translate all of it".into());
    }
    if ratio > LENGTH_RATIO.1 {
        return Some("it adds to the text; translate only what it says".into());
    }
    if let Some(word) = foreign_script(t, script, &[text]) {
        return Some(format!("it has a word in another writing system: {word}"));
    }
    if t.split_whitespace().count() >= DETECTABLE_WORDS {
        match whatlang::detect(t) {
            Some(info) if info.lang() != lang && info.is_reliable() => {
                return Some(format!("it is not in {}", lang.eng_name()));
            }
            _ => {}
        }
    }
    None
}

/// The three-word phrase `text` repeats most, and how often it occurs.
fn most_repeated_phrase(text: &str) -> (String, usize) {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for w in words.windows(3) {
        *counts.entry(w.join(" ")).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .unwrap_or_default()
}

/// Whether `text` is prose (it ends as a sentence does), not a heading or a title, which have
/// no closing punctuation and whose translations have none either.
fn is_prose(text: &str) -> bool {
    text.trim_end().ends_with(['.', '!', '?', '"', ')', ':'])
}

/// The runs of digits in `text` ("1,000" is 1 and 000, as its translation "1 000" is).
fn numbers(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `text` translated into `lang` and checked, asked once more with the reasons; None when no
/// answer passed.
fn translate_one(
    llm: &dyn Llm,
    text: &str,
    lang: Lang,
    script: Script,
    completions: &mut Vec<Completion>,
) -> Result<Option<String>, ResearchError> {
    let mut problems = String::new();
    for _ in 0..2 {
        let prompt = crate::prompts::render(
            "translate",
            minijinja::context! { language => lang.eng_name(), text, problems },
        )?;
        // Room for a translation as long as the check allows, at about three characters a
        // token for the languages the labels are in.
        let max_tokens = (text.chars().count() as f32 * LENGTH_RATIO.1 / 3.0) as u32 + 32;
        let reply = complete_schema::<serde_json::Value>(
            llm,
            vec![Message::user(prompt)],
            GenerationOptions::greedy(max_tokens),
            super::prose::field_schema("text", 1, MAX_CHARS),
        )?;
        completions.push(reply.completion.clone());
        let answer = reply
            .parsed
            .ok()
            .and_then(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_string))
            .unwrap_or_default();
        // A heading has no full stop, whatever its translation ends with.
        let answer = if is_prose(text) {
            answer.trim().to_string()
        } else {
            answer.trim().trim_end_matches('.').trim_end().to_string()
        };
        match translation_problem(text, &answer, lang, script) {
            None => return Ok(Some(answer)),
            Some(why) => {
                tracing::debug!("report: translation refused ({why}): {answer}");
                problems = format!("- {why}");
            }
        }
    }
    Ok(None)
}

/// The question in English, for the research to read and check English sources with: the
/// embedding model and the support judge read English, and a French question retrieves
/// "European integration" and the Congress of Berlin for the printing press. None when no
/// translation passes the checks (the question is then researched as asked). Returns the
/// call(s) made.
pub fn question_in_english(
    llm: &dyn Llm,
    question: &str,
) -> Result<(Option<String>, Vec<Completion>), ResearchError> {
    let mut completions = Vec::new();
    let english = translate_one(llm, question, Lang::Eng, Script::Latin, &mut completions)?;
    Ok((english, completions))
}

/// Short texts said to the user before the report (a clarifying question and its suggested
/// answers), in the language of the question `asked`: each translated and checked as the
/// report's texts are, and left in English when its translation fails twice. Unchanged when
/// the question is in English. Returns the calls made.
pub fn into_language_of(
    llm: &dyn Llm,
    asked: &str,
    texts: &[String],
) -> Result<(Vec<String>, Vec<Completion>), ResearchError> {
    let Some(lang) = of_question(asked) else {
        return Ok((texts.to_vec(), Vec::new()));
    };
    let script = dominant_script(asked);
    let results = crate::llm::map_concurrent(llm.parallelism(), texts, |_, text| {
        let mut completions = Vec::new();
        let translated = translate_one(llm, text, lang, script, &mut completions)?;
        Ok::<_, ResearchError>((translated.unwrap_or_else(|| text.clone()), completions))
    });
    let mut out = Vec::with_capacity(texts.len());
    let mut all = Vec::new();
    for r in results {
        let (text, mut completions) = r?;
        out.push(text);
        all.append(&mut completions);
    }
    Ok((out, all))
}

/// Translates the report's texts into `lang` (the model's calls run together) and returns the
/// calls and how many texts stayed as written.
pub(super) fn translate(
    llm: &dyn Llm,
    report: &mut Report,
    lang: Lang,
) -> Result<(Vec<Completion>, usize), ResearchError> {
    let query = report.query.clone();
    let script = dominant_script(&query);
    let table = labels(Some(lang));
    // Every text, in reading order; the needs heading comes from the table when it has it.
    let mut texts: Vec<String> = vec![report.title.clone(), report.summary.text.clone()];
    for s in &report.sections {
        texts.push(s.heading.clone());
        texts.extend(s.paragraphs.iter().map(|p| p.text.clone()));
    }
    let results = crate::llm::map_concurrent(llm.parallelism(), &texts, |_, text| {
        let mut completions = Vec::new();
        if text.trim().is_empty() || (text == NEEDS_HEADING && table != ENGLISH) {
            return Ok((None, completions));
        }
        // A title that fell back to the question is in the question's language already.
        if text.trim() == query.trim() {
            return Ok((Some(text.clone()), completions));
        }
        let translated = translate_one(llm, text, lang, script, &mut completions)?;
        Ok::<_, ResearchError>((translated, completions))
    });
    let mut all = Vec::new();
    let mut translated = Vec::with_capacity(texts.len());
    for r in results {
        let (t, mut c) = r?;
        all.append(&mut c);
        translated.push(t);
    }
    let mut kept_english = 0;
    let mut next = translated.into_iter().zip(texts);
    let mut take = |into: &mut String| {
        if let Some((t, original)) = next.next() {
            match t {
                Some(t) => *into = t,
                None if original == NEEDS_HEADING => *into = table.for_you.to_string(),
                None if !original.trim().is_empty() => kept_english += 1,
                None => {}
            }
        }
    };
    take(&mut report.title);
    take(&mut report.summary.text);
    for s in &mut report.sections {
        take(&mut s.heading);
        for Paragraph { text, .. } in &mut s.paragraphs {
            take(text);
        }
    }
    Ok((all, kept_english))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_names_the_language_when_the_detector_is_sure() {
        assert_eq!(
            of_question("How did the printing press change Europe?"),
            None
        );
        assert_eq!(
            of_question("Comment l'imprimerie a-t-elle changé la vie en Europe ?"),
            Some(Lang::Fra)
        );
        assert_eq!(
            of_question("Wie hat der Buchdruck das Leben in Europa verändert?"),
            Some(Lang::Deu)
        );
        assert_eq!(
            of_question("¿Cómo cambió la imprenta la vida en Europa?"),
            Some(Lang::Spa)
        );
    }

    #[test]
    fn an_answer_is_taken_for_english_only_on_evidence() {
        assert!(looks_english("For my guests, on weekends"));
        assert!(looks_english("Mostly for my book club"));
        assert!(!looks_english("Pour des invités"));
        assert!(!looks_english("Für meine Familie am Wochenende"));
    }

    #[test]
    fn a_translation_that_loops_on_a_phrase_is_refused() {
        let text = "Geoffrey Chaucer was an important figure in developing the legitimacy of the \
                    English vernacular when the dominant literary languages in England were \
                    still French and Latin.";
        let looped = "Geoffrey Chaucer, un important figure dans la développement du vernaculaire \
                      anglais, était un important figure dans ce processus, car il était un \
                      important figure développant la légitimité du vernaculaire anglais.";
        let why = translation_problem(text, looped, Lang::Fra, Script::Latin).unwrap();
        assert!(why.contains("un important figure"), "{why}");
        let once = "Geoffrey Chaucer a joué un rôle important dans la légitimité de l'anglais \
                    vernaculaire, quand les langues littéraires dominantes en Angleterre \
                    étaient encore le français et le latin.";
        assert_eq!(
            translation_problem(text, once, Lang::Fra, Script::Latin),
            None
        );
    }

    #[test]
    fn a_translation_keeps_numbers_language_and_length() {
        let fr = Script::Latin;
        let text =
            "Gutenberg printed the first Bible in Europe around 1455, using metal movable type.";
        let good = "Gutenberg a imprimé la première Bible en Europe vers 1455, avec des caractères mobiles en métal.";
        assert_eq!(translation_problem(text, good, Lang::Fra, fr), None);
        let no_year = "Gutenberg a imprimé la première Bible en Europe, avec des caractères mobiles en métal.";
        assert!(translation_problem(text, no_year, Lang::Fra, fr)
            .unwrap()
            .contains("1455"));
        assert!(translation_problem(text, text, Lang::Fra, fr)
            .unwrap()
            .contains("not translated into French"));
        let english =
            "Around 1455, Gutenberg printed the first Bible of Europe with movable type of metal.";
        assert!(translation_problem(text, english, Lang::Fra, fr)
            .unwrap()
            .contains("not in French"));
        assert!(translation_problem(text, "Gutenberg 1455.", Lang::Fra, fr)
            .unwrap()
            .contains("leaves part"));
        let question = "Which change in printing affected Europe the most?";
        assert_eq!(
            translation_problem(
                question,
                "Quel changement de l'imprimerie a le plus marqué l'Europe ?",
                Lang::Fra,
                fr
            ),
            None
        );
        assert!(translation_problem(
            question,
            "Le plus grand changement de l'imprimerie en Europe est la presse.",
            Lang::Fra,
            fr
        )
        .unwrap()
        .contains("a question"));
        let cjk = "Gutenberg a imprimé la première Bible 圣经 en Europe vers 1455, avec des caractères en métal.";
        assert!(translation_problem(text, cjk, Lang::Fra, fr)
            .unwrap()
            .contains("another writing system"));
    }

    #[test]
    fn the_labels_are_in_the_question_language_where_the_table_has_it() {
        assert_eq!(labels(Some(Lang::Fra)).references, "Références");
        assert_eq!(labels(None), ENGLISH);
        assert_eq!(labels(Some(Lang::Jpn)), ENGLISH);
    }
}
