//! Whether a statement about the user matters for a question, judged by probability.
//!
//! A grade the model writes ("relevance 3") is not calibrated: the 1.5B model grades a chicken
//! stock problem 2–3 out of 3 for a running-shoe question. The probability it gives to "yes"
//! when asked whether a careful advisor would take the fact into account is: one forward pass
//! per statement ([`crate::llm::probability_of_yes`]), no generation, with the fixed
//! instructions and the question as a prefix every statement of the question shares (the fact
//! comes last in `prompts/profile_relevance.md`, so llama.cpp reads only the fact again).
//!
//! Some statements draw a yes whatever the question; the same statement is asked about
//! [`CONTRAST_QUESTIONS`] too, where nothing personal matters, and the judge's score is how much
//! more the model says yes for this question ([`Judged::score`]). A statement is kept when its
//! score reaches [`RELEVANCE_THRESHOLD`], calibrated by `rudder eval relevance` on labelled
//! (question, statement) pairs.
//!
//! Where the profile has the question's facet lines (the model's guesses at what this person
//! may have said about themselves that would change the answer: "my knee hurts after long
//! runs", "I can spend about 120 dollars"), each statement's closest cosine to them is added
//! to the score ([`with_facets`]), and the bar is [`RELEVANCE_WITH_FACETS_THRESHOLD`]: the
//! embedding reads a situation the 1.5B judge misses, and the judge reads what an embedding
//! of a personal line cannot (a budget for this purchase, not another).

use super::ProfileError;
use crate::embed::{cosine, Embedder};
use crate::llm::{map_concurrent, probability_of_yes, Llm, Message, Usage};

/// The lowest score ([`Judged::score`]) kept. Calibrated with qwen2.5-coder-1.5b-instruct by
/// `rudder eval relevance` on 212 labelled pairs (the planted set's needs against their own and
/// other users' questions, plus `crates/eval/data/relevance_pairs.jsonl`): best F1 on half the
/// questions at 0.248; on the other half precision 0.60, recall 0.61 (P(yes) alone: AUC 0.71,
/// held-out F1 0.46; with the contrast: AUC 0.76, F1 0.60). Other models shift the scale; the
/// threshold is a profile option so a bigger model can be calibrated and given its own.
pub const RELEVANCE_THRESHOLD: f32 = 0.25;

/// How much higher the bar is for a phrase from a session that only a situation probe
/// retrieved ([`super::ProfileOptions::probe_only_margin`]). On the planted set (`rudder eval
/// quality`, 8 questions and 8 users asking another user's question, qwen2.5-coder-1.5b) the
/// probe-only phrases kept at the plain bar scored 0.39–0.40 and were both unrelated ("Wants a
/// shorter email" for a laptop, film photography for a statistics question); 0.1 is twice
/// the ±0.05 the judge's scores move between runs.
pub const PROBE_ONLY_MARGIN: f32 = 0.1;

/// A question with its facet lines (empty when the profile has none).
#[derive(Debug, Clone, Copy)]
pub struct Question<'a> {
    pub text: &'a str,
    pub facets: &'a [String],
}

/// The lowest score of a judgement with its facet similarity (P(yes) less the bias, plus the
/// closest cosine to the question's facet lines). Calibrated by `rudder eval relevance` as
/// above (212 pairs, qwen2.5-coder-1.5b-instruct, all-MiniLM-L6-v2): best F1 on half the
/// questions at 0.366; on the other half precision 0.63, recall 0.78, F1 0.70 (AUC 0.85),
/// where the judge alone scored AUC 0.75 and F1 0.54 in the same run, and facet similarity
/// alone AUC 0.81 and F1 0.69.
pub const RELEVANCE_WITH_FACETS_THRESHOLD: f32 = 0.37;

/// The lowest score of a sentence the person wrote about themselves ([`Judge::Said`]: P(yes)
/// less the bias, plus the closest cosine to the question's facet lines and the
/// [`SITUATION_LINES`]). Calibrated by `rudder eval relevance --said` with
/// qwen2.5-coder-1.5b-instruct and all-MiniLM-L6-v2 on 315 pairs of what the planted users
/// said in their chats (49 relevant): best F1 on half the questions at 0.417; on the other
/// half precision 0.47, recall 0.75 (AUC 0.87, where the profile-statement judge with the
/// facet lines alone scored AUC 0.77, precision 0.57, recall 0.50 on the same pairs).
pub const SAID_RELEVANCE_THRESHOLD: f32 = 0.42;

/// The bar for a sentence the person wrote, when memory is judged at `threshold` (the judge
/// alone's scale with the probe-only margin, as [`super::memory::relevant`] is given it):
/// [`SAID_RELEVANCE_THRESHOLD`] at the defaults, moved as far as `threshold` is; a negative
/// `threshold` keeps everything.
pub fn said_bar(threshold: f32) -> f32 {
    if threshold < 0.0 {
        threshold
    } else {
        SAID_RELEVANCE_THRESHOLD + threshold - RELEVANCE_THRESHOLD - PROBE_ONLY_MARGIN
    }
}

/// The closest cosine to the question's facet lines at which a statement is one the question
/// anticipates ([`Judged::anticipated`]): a report names such a need as uncovered when no
/// finding answers it, and leaves any other unsaid. Read off the history reports of `rudder eval
/// quality --guides` (qwen2.5-coder-1.5b, all-MiniLM-L6-v2): the kept statements no finding
/// answered that belong to another subject ("you have a Roth IRA" for a bakery's energy costs,
/// chess openings for a technical interview) lay at 0.17–0.41, the planted needs among them
/// (a deck oven, a toddler on a plane) at 0.45 and above; see the README.
pub const ANTICIPATED_FACET_SIMILARITY: f32 = 0.45;

/// Which prompt judges a statement: one in the profile's form ("Has a budget of 120 dollars"),
/// or a sentence the person wrote about themselves ("I set aside 120 dollars for sports gear"),
/// which is shown to the model as what they told it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judge {
    Statement,
    Said,
}

impl Judge {
    fn prompt(self) -> &'static str {
        match self {
            Judge::Statement => "profile_relevance",
            Judge::Said => "profile_relevance_said",
        }
    }

    /// The prompt for one statement: the question first (shared), the statement last.
    pub fn messages(self, query: &str, statement: &str) -> Result<Vec<Message>, ProfileError> {
        let prompt =
            crate::prompts::render(self.prompt(), minijinja::context! { query, statement })?;
        Ok(vec![Message::user(prompt)])
    }
}

/// Questions where nothing about a person matters. A statement's P(yes) for them is its bias:
/// what the model says for that statement whatever the question ("is a complete novice with
/// computers" gets 0.8 for a training plan). Subtracting it (contextual calibration) lifts the
/// judge's AUC on the labelled pairs (see the README).
pub const CONTRAST_QUESTIONS: &[&str] = &[
    "What is the capital of Australia?",
    "How do I convert degrees Celsius to Fahrenheit?",
];

/// Lines of a person's situation that matter for most questions (money, health, family,
/// skill, what they own, place, time, how they want answers), in the first person as the
/// facet lines are: a sentence the person wrote lies close to one of them whatever the
/// question, where the model's facet lines for the question may miss it.
pub const SITUATION_LINES: &[&str] = &[
    "I can spend about 500 dollars on this",
    "I have a health problem or injury that limits me",
    "my family and kids will use it too",
    "I am a beginner and new to this",
    "I already own some equipment for this",
    "the space I have at home is small",
    "I only have a little time for this each week",
    "please keep answers short and simple",
];

/// The question's facet lines followed by the [`SITUATION_LINES`]: what a sentence the person
/// wrote is compared with.
pub fn with_situation_lines(facets: &[String]) -> Vec<String> {
    facets
        .iter()
        .cloned()
        .chain(SITUATION_LINES.iter().map(|l| l.to_string()))
        .collect()
}

/// One statement's judgement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    /// P(yes) for the question.
    pub probability: f32,
    /// The mean P(yes) for [`CONTRAST_QUESTIONS`].
    pub bias: f32,
    /// The statement's closest cosine to the question's facet lines, when they were given
    /// ([`with_facets`]).
    pub facet_similarity: Option<f32>,
}

impl Judged {
    /// What the threshold is compared with: how much more the model says yes for this
    /// question than for one where nothing personal matters, plus the facet similarity when
    /// there is one.
    pub fn score(&self) -> f32 {
        self.probability - self.bias + self.facet_similarity.unwrap_or(0.0)
    }

    /// Whether the question anticipates the statement: its facet similarity reaches
    /// [`ANTICIPATED_FACET_SIMILARITY`], or there are no facet lines to tell.
    pub fn anticipated(&self) -> bool {
        self.facet_similarity
            .is_none_or(|s| s >= ANTICIPATED_FACET_SIMILARITY)
    }

    /// Whether the statement is kept at `threshold`, a threshold for the judge alone (as
    /// [`RELEVANCE_THRESHOLD`]): with a facet similarity the bar is raised by as much as
    /// [`RELEVANCE_WITH_FACETS_THRESHOLD`] lies above it, so a profile option that keeps
    /// everything (-1) still does.
    pub fn passes(&self, threshold: f32) -> bool {
        let bar = match self.facet_similarity {
            Some(_) => threshold + (RELEVANCE_WITH_FACETS_THRESHOLD - RELEVANCE_THRESHOLD),
            None => threshold,
        };
        self.score() >= bar
    }
}

/// Each statement's closest cosine to `facets` (the question's facet lines), in order; empty
/// when there are no facet lines.
pub fn facet_similarities(
    embedder: &dyn Embedder,
    facets: &[String],
    statements: &[&str],
) -> Result<Vec<f32>, ProfileError> {
    if facets.is_empty() || statements.is_empty() {
        return Ok(Vec::new());
    }
    let facet_refs: Vec<&str> = facets.iter().map(String::as_str).collect();
    let embed = |texts: &[&str]| embedder.embed(texts).map_err(ProfileError::from);
    let facet_vectors = embed(&facet_refs)?;
    Ok(embed(statements)?
        .iter()
        .map(|v| {
            facet_vectors
                .iter()
                .map(|f| cosine(v, f))
                .fold(f32::MIN, f32::max)
        })
        .collect())
}

/// Adds each statement's facet similarity to its judgement (nothing without facet lines).
pub fn with_facets(
    judged: &mut [Judged],
    embedder: &dyn Embedder,
    facets: &[String],
    statements: &[&str],
) -> Result<(), ProfileError> {
    let similarities = facet_similarities(embedder, facets, statements)?;
    for (j, s) in judged.iter_mut().zip(similarities) {
        j.facet_similarity = Some(s);
    }
    Ok(())
}

/// Judges each statement for `query`, in order, with what the calls cost: one forward pass for
/// the question and one per contrast question. The calls are independent and made as many at
/// once as the model serves.
pub fn relevance(
    llm: &dyn Llm,
    query: &str,
    statements: &[&str],
) -> Result<(Vec<Judged>, Usage), ProfileError> {
    relevance_by(llm, Judge::Statement, query, statements)
}

/// [`relevance`] with the prompt of `judge`.
pub fn relevance_by(
    llm: &dyn Llm,
    judge: Judge,
    query: &str,
    statements: &[&str],
) -> Result<(Vec<Judged>, Usage), ProfileError> {
    let questions: Vec<&str> = std::iter::once(query)
        .chain(CONTRAST_QUESTIONS.iter().copied())
        .collect();
    let calls: Vec<(&str, &str)> = statements
        .iter()
        .flat_map(|s| questions.iter().map(move |q| (*q, *s)))
        .collect();
    let answers = map_concurrent(llm.parallelism(), &calls, |_, (question, statement)| {
        let messages = judge.messages(question, statement)?;
        probability_of_yes(llm, messages).map_err(ProfileError::from)
    });
    let mut usage = Usage::default();
    let mut probabilities = Vec::with_capacity(calls.len());
    for answer in answers {
        let (p, completion) = answer?;
        usage += completion.usage;
        probabilities.push(p);
    }
    let judged = probabilities
        .chunks(questions.len())
        .map(|ps| Judged {
            probability: ps[0],
            bias: ps[1..].iter().sum::<f32>() / (ps.len() - 1) as f32,
            facet_similarity: None,
        })
        .collect();
    Ok((judged, usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScriptedLlm;

    #[test]
    fn a_facet_similarity_adds_to_the_score_and_raises_the_bar() {
        let facets = vec![
            "my knee hurts after long runs".to_string(),
            "I can spend about 120 dollars".to_string(),
        ];
        let statements = ["Has knee pain after long shifts", "Bakes sourdough bread"];
        let judged_alone = Judged {
            probability: 0.45,
            bias: 0.15,
            facet_similarity: None,
        };
        let mut judged = vec![judged_alone; 2];
        with_facets(
            &mut judged,
            &crate::test_support::WordsEmbedder,
            &facets,
            &statements,
        )
        .unwrap();
        let knee = judged[0].facet_similarity.unwrap();
        let bread = judged[1].facet_similarity.unwrap();
        assert!(knee > 0.3 && bread.abs() < 1e-6, "{judged:?}");
        assert!((judged[0].score() - (0.3 + knee)).abs() < 1e-6);
        // 0.30 passes the judge's bar alone; with the facets the bar is 0.37 + the same margin.
        assert!(judged_alone.passes(RELEVANCE_THRESHOLD));
        assert!(judged[0].passes(RELEVANCE_THRESHOLD));
        assert!(!judged[1].passes(RELEVANCE_THRESHOLD));
        // -1 keeps everything, with facets or not.
        assert!(judged[1].passes(-1.0));
        // No facet lines: the judgement is left as it was.
        let mut unchanged = vec![judged_alone];
        with_facets(
            &mut unchanged,
            &crate::test_support::WordsEmbedder,
            &[],
            &statements[..1],
        )
        .unwrap();
        assert_eq!(unchanged[0], judged_alone);
    }

    #[test]
    fn the_said_bar_is_calibrated_at_the_defaults_and_moves_with_the_threshold() {
        let default = RELEVANCE_THRESHOLD + PROBE_ONLY_MARGIN;
        assert!((said_bar(default) - SAID_RELEVANCE_THRESHOLD).abs() < 1e-6);
        assert!((said_bar(default + 0.1) - (SAID_RELEVANCE_THRESHOLD + 0.1)).abs() < 1e-6);
        assert_eq!(said_bar(-1.0), -1.0);
    }

    #[test]
    fn a_statement_is_anticipated_when_a_facet_line_is_close_or_none_was_given() {
        let with = |facet_similarity| Judged {
            probability: 0.6,
            bias: 0.2,
            facet_similarity,
        };
        assert!(with(None).anticipated());
        assert!(with(Some(ANTICIPATED_FACET_SIMILARITY)).anticipated());
        // "Has a Roth IRA" for a bakery's energy costs: kept by the judge, 0.17 to the facets.
        assert!(with(Some(0.17)).passes(RELEVANCE_THRESHOLD));
        assert!(!with(Some(0.17)).anticipated());
    }

    #[test]
    fn each_statement_is_one_call_with_the_question_before_the_fact() {
        let llm = ScriptedLlm::new(|prompt| {
            if !prompt.contains("running shoes") {
                // A contrast question: the statement's bias.
                r#"{"probabilities":[0.2,0.6]}"#.to_string()
            } else if prompt.ends_with("Has knee pain") {
                r#"{"probabilities":[0.6,0.2]}"#.to_string()
            } else {
                r#"{"probabilities":[0.1,0.7]}"#.to_string()
            }
        });
        let (judged, usage) = relevance(
            &llm,
            "Which running shoes should I buy?",
            &["Has knee pain", "Has a problem with chicken stock"],
        )
        .unwrap();
        assert_eq!(judged.len(), 2);
        assert!((judged[0].probability - 0.75).abs() < 1e-6, "{judged:?}");
        assert!((judged[0].bias - 0.25).abs() < 1e-6, "{judged:?}");
        assert!((judged[0].score() - 0.5).abs() < 1e-6, "{judged:?}");
        assert!(
            (judged[1].score() - (0.125 - 0.25)).abs() < 1e-6,
            "{judged:?}"
        );
        assert_eq!(usage.calls, 2 * (1 + CONTRAST_QUESTIONS.len()) as u64);
        let prompts = llm.prompts_with("running shoes");
        assert_eq!(prompts.len(), 2);
        let first = &prompts[0];
        let question = first.find("Which running shoes").unwrap();
        let fact = first.find("Has knee pain").unwrap();
        assert!(
            question < fact,
            "the fact must come last so the question is a shared prefix"
        );
        // The two statements' prompts for the question share everything up to the fact.
        let shared = first
            .chars()
            .zip(prompts[1].chars())
            .take_while(|(a, b)| a == b)
            .count();
        assert!(
            shared >= first.find("Fact:").unwrap(),
            "shared prefix {shared}"
        );
    }
}
