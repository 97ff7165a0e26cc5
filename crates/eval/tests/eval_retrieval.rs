//! The retrieval-evaluation fixtures (`tests/fixtures/profile-eval/`) and the evaluation runner.
//!
//! The fixtures are three synthetic users (exports written by `rudder_synth`) and a cases
//! file of hand-written queries. Each query's relevant sessions follow a hand-written rule in
//! the spirit of BESPOKE's oracle (Table 24): the topics whose sessions would concretely change
//! the answer for this user, including adjacent constraints from another interest. The rule is
//! applied to the generator's (interest, topic) labels by [`write_fixtures`], which writes the
//! exports and `cases.jsonl`; the relevant sessions are stored as content hashes, so the cases
//! file does not depend on import order. A test checks that the checked-in files are what it
//! writes today.
//!
//! Rebuild (only when the queries, the rules or the generator change):
//! `RUDDER_UPDATE_FIXTURES=1 cargo test --workspace --features rudder-app/custom-protocol \
//!  --test eval_retrieval the_fixtures_are`

use rudder_testkit as common;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use rudder::history::{History, ImportOptions, NoProgress};
use rudder::profile::ExpansionMode;
use rudder_eval::{load_cases, run_retrieval_eval_on, QueryCategory, RetrievalCase};
use rudder_synth::{items, write_export, SynthConfig, SynthItem};

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile-eval")
}

fn cases_path() -> PathBuf {
    fixture_dir().join("cases.jsonl")
}

// ---------------------------------------------------------------------------------------------
// The users and their queries, written by hand
// ---------------------------------------------------------------------------------------------

struct User {
    name: &'static str,
    seed: u64,
    sessions: usize,
    queries: &'static [Query],
}

struct Query {
    id: &'static str,
    category: QueryCategory,
    query: &'static str,
    /// `interest/topic`, optionally `interest/topic [phrase; phrase]` to keep only the
    /// sessions of that topic that mention one of the phrases (one facet of the topic).
    topics: &'static [&'static str],
    why: &'static str,
}

use QueryCategory::{Adjacent, Direct, Unseen};

/// Seeds picked for different people: user-00 is polite and asks for prose (marathon,
/// woodworking, birding, cooking), user-01 terse and asks for bullets (photography, tax, ML,
/// renovation, chess), user-02 neutral with no format preference (Japan trip, personal
/// finance, a few tomatoes).
const USERS: &[User] = &[
    User {
        name: "user-00",
        seed: 19,
        sessions: 340,
        queries: &[
            Query {
                id: "u0-q01",
                category: Direct,
                query: "How should I pace my first marathon so I don't fall apart in the last 10 km?",
                topics: &[
                    "marathon training/race day [pacing strategy; negative split]",
                    "marathon training/tempo runs",
                    "marathon training/easy runs [heart rate; zone 2]",
                ],
                why: "Their race pacing questions, threshold work and heart-rate-zone easy runs set the target paces.",
            },
            Query {
                id: "u0-q02",
                category: Adjacent,
                query: "What should I eat in the week before my first marathon?",
                topics: &[
                    "marathon training/race day [dinner the night before]",
                    "marathon training/marathon training plan [taper]",
                    "cooking/fresh pasta",
                    "cooking/risotto",
                ],
                why: "Race-eve dinner and taper questions are direct; they make fresh pasta and risotto themselves, which changes the carb-loading suggestions.",
            },
            Query {
                id: "u0-q03",
                category: Direct,
                query: "The outside of my knee hurts after longer runs. Should I keep following my marathon plan?",
                topics: &[
                    "marathon training/IT band syndrome",
                    "marathon training/marathon training plan",
                    "marathon training/running shoes",
                ],
                why: "Their IT band symptoms are the case; their 16-week plan and missed long runs and their shoes decide rest, mileage or a shoe change.",
            },
            Query {
                id: "u0-q04",
                category: Direct,
                query: "Which running shoes should I race my marathon in?",
                topics: &[
                    "marathon training/running shoes",
                    "marathon training/IT band syndrome",
                ],
                why: "Their shoe-rotation and carbon-plate searches are direct; the IT band trouble is an injury constraint on stack and support.",
            },
            Query {
                id: "u0-q05",
                category: Direct,
                query: "Why do my hand-cut dovetails have gaps, and how can I make them fit tighter?",
                topics: &["woodworking/dovetail joints"],
                why: "Only their dovetail sessions (marking gauge, through vs half blind, gaps) say what they do now.",
            },
            Query {
                id: "u0-q06",
                category: Adjacent,
                query: "What's a food-safe finish for a cutting board I'm making?",
                topics: &[
                    "woodworking/oil finish",
                    "woodworking/hardwood lumber",
                    "cooking/chef knife",
                ],
                why: "Their oil-finish trials and lumber choices decide the finish; the carbon-steel knife they sharpen is an adjacent constraint on board hardness.",
            },
            Query {
                id: "u0-q07",
                category: Direct,
                query: "How do I build a solid workbench for hand planing in a small garage?",
                topics: &[
                    "woodworking/workbench",
                    "woodworking/hand plane",
                    "woodworking/hardwood lumber",
                ],
                why: "Workbench and lumber sessions are direct; heavy hand-plane use (tear out, camber) sets the bench's mass and vise needs.",
            },
            Query {
                id: "u0-q08",
                category: Direct,
                query: "Which binoculars should I get for watching warblers during spring migration?",
                topics: &[
                    "birdwatching/binoculars",
                    "birdwatching/warblers",
                    "birdwatching/spring migration",
                ],
                why: "Their binocular comparisons, warbler ID trouble and migration outings decide magnification and close focus.",
            },
            Query {
                id: "u0-q09",
                category: Adjacent,
                query: "How can I learn to recognise birds by ear on my early-morning runs?",
                topics: &[
                    "birdwatching/bird songs",
                    "birdwatching/warblers [songs]",
                    "marathon training/easy runs",
                ],
                why: "Song recording and warbler-song sessions give their level; their zone-2 easy runs are the setting the method must fit.",
            },
            Query {
                id: "u0-q10",
                category: Direct,
                query: "How long does fermented hot sauce keep, and is the white film on top a problem?",
                topics: &["cooking/hot sauce"],
                why: "Their hot-sauce ferments (salt percentage, kahm yeast, mold) are the whole context.",
            },
            Query {
                id: "u0-q11",
                category: Adjacent,
                query: "What can I cook on Sunday so weeknight dinners are quick during my heaviest training weeks?",
                topics: &[
                    "cooking/chicken stock",
                    "cooking/short ribs",
                    "cooking/sous vide steak",
                    "marathon training/marathon training plan [mileage per week; 16 week plan]",
                ],
                why: "Make-ahead dishes they already cook (stock, braised short ribs, sous vide) and their weekly mileage decide the plan.",
            },
            Query {
                id: "u0-q12",
                category: Unseen,
                query: "How do I pay estimated taxes as a self-employed physiotherapist in Texas?",
                topics: &[],
                why: "They never searched or chatted about taxes; no session would change the answer.",
            },
        ],
    },
    User {
        name: "user-01",
        seed: 44,
        sessions: 380,
        queries: &[
            Query {
                id: "u1-q01",
                category: Direct,
                query: "Which lens and settings should I use to photograph the Milky Way?",
                topics: &[
                    "photography/night sky",
                    "photography/prime lens",
                    "photography/aperture priority [auto ISO]",
                ],
                why: "Their night-sky sessions (500 rule, star trails, noise), the primes they weighed and their auto-ISO habit decide lens and settings.",
            },
            Query {
                id: "u1-q02",
                category: Adjacent,
                query: "Can I write off my camera gear if I start selling prints?",
                topics: &[
                    "tax law/business expenses",
                    "tax law/LLC vs S corp",
                    "tax law/quarterly estimated taxes",
                    "photography/prime lens [used lenses]",
                ],
                why: "Their expense, entity and estimated-tax questions set the tax side; buying used lenses is a prior choice that changes depreciation.",
            },
            Query {
                id: "u1-q03",
                category: Direct,
                query: "How do I set up a one-light portrait at home?",
                topics: &["photography/portrait lighting", "photography/prime lens"],
                why: "Their off-camera-flash and reflector sessions and the 35mm vs 50mm choice decide the setup.",
            },
            Query {
                id: "u1-q04",
                category: Direct,
                query: "What's the cheapest way to serve a fine-tuned 7B model with low latency?",
                topics: &[
                    "machine learning/model serving",
                    "machine learning/LLM [LoRA; QLoRA; fine-tune]",
                ],
                why: "Their serving work (ONNX, quantization, batching) and LoRA/QLoRA fine-tunes decide the stack.",
            },
            Query {
                id: "u1-q05",
                category: Direct,
                query: "How can I improve retrieval quality in my RAG system?",
                topics: &["machine learning/RAG pipeline", "machine learning/embeddings"],
                why: "Their chunking, reranking and hybrid-BM25 sessions and their embedding normalisation issues are what to build on.",
            },
            Query {
                id: "u1-q06",
                category: Direct,
                query: "Should my freelance consulting business be an LLC or an S corp?",
                topics: &[
                    "tax law/LLC vs S corp",
                    "tax law/quarterly estimated taxes",
                    "tax law/business expenses",
                    "tax law/home office deduction",
                ],
                why: "Reasonable salary and payroll questions are direct; their estimated taxes, expenses and home office change the numbers.",
            },
            Query {
                id: "u1-q07",
                category: Adjacent,
                query: "Is a heat pump worth it for an old house, and are there rebates?",
                topics: &[
                    "home renovation/heat pump",
                    "home renovation/attic insulation",
                    "home renovation/drafty windows",
                ],
                why: "Heat-pump sizing is direct; their insulation and draft work is the adjacent constraint on sizing and savings.",
            },
            Query {
                id: "u1-q08",
                category: Direct,
                query: "How do I actually win rook endgames that should be winning?",
                topics: &["chess/rook endgames"],
                why: "Their Lucena/Philidor study and trouble converting are the context.",
            },
            Query {
                id: "u1-q09",
                category: Direct,
                query: "How do I stop getting into time trouble in rapid games?",
                topics: &["chess/time management", "chess/Sicilian Defense"],
                why: "Clock problems are direct; they play sharp Sicilian main lines, where prepared theory saves clock.",
            },
            Query {
                id: "u1-q10",
                category: Adjacent,
                query: "How do I photograph people indoors at a chess club without using flash?",
                topics: &[
                    "photography/aperture priority",
                    "photography/prime lens",
                ],
                why: "Their exposure-mode and auto-ISO questions and fast primes decide the settings; the chess sessions say where, not how, so they are left out.",
            },
            Query {
                id: "u1-q11",
                category: Direct,
                query: "How do I report stock sales and losses on my tax return?",
                topics: &["tax law/capital gains"],
                why: "Their wash-sale, holding-period and cost-basis questions are the context.",
            },
            Query {
                id: "u1-q12",
                category: Direct,
                query: "How do I fix orange skin tones when editing portraits?",
                topics: &[
                    "photography/lightroom presets",
                    "photography/portrait lighting",
                ],
                why: "Their Lightroom masking and grading sessions and their lighting setup decide the fix.",
            },
            Query {
                id: "u1-q13",
                category: Unseen,
                query: "What's a good routine for learning to swim as an adult?",
                topics: &[],
                why: "Nothing in their history touches swimming or fitness.",
            },
        ],
    },
    User {
        name: "user-02",
        seed: 46,
        sessions: 360,
        queries: &[
            Query {
                id: "u2-q01",
                category: Direct,
                query: "Is the JR Pass still worth it for two weeks in Japan after the price increase?",
                topics: &[
                    "japan travel/JR Pass",
                    "japan travel/Japan itinerary [2 weeks; kyoto day trips]",
                ],
                why: "Their JR Pass and Shinkansen questions and the two-week itinerary with Kyoto day trips decide the sums.",
            },
            Query {
                id: "u2-q02",
                category: Adjacent,
                query: "How much money should I set aside for a two-week trip to Japan?",
                topics: &[
                    "japan travel/Japan itinerary",
                    "japan travel/JR Pass",
                    "japan travel/ryokan",
                    "japan travel/Tokyo food",
                    "personal finance/budgeting app",
                ],
                why: "Itinerary, rail pass, ryokan and food plans set the costs; their zero-based/envelope budgeting decides how to set money aside.",
            },
            Query {
                id: "u2-q03",
                category: Direct,
                query: "Where can I eat well in Tokyo without a reservation?",
                topics: &["japan travel/Tokyo food"],
                why: "Their izakaya, ramen-shop and reservation searches are the context.",
            },
            Query {
                id: "u2-q04",
                category: Direct,
                query: "What's the best way to see Mount Fuji from Hakone?",
                topics: &["japan travel/Hakone"],
                why: "Their Hakone free pass and cloudy-view searches are the context.",
            },
            Query {
                id: "u2-q05",
                category: Direct,
                query: "Should I overpay my mortgage or invest the extra money?",
                topics: &[
                    "personal finance/mortgage",
                    "personal finance/index funds",
                    "personal finance/early retirement",
                ],
                why: "Extra-principal and refinance questions are direct; their index investing and early-retirement goal decide the trade-off.",
            },
            Query {
                id: "u2-q06",
                category: Direct,
                query: "How do I do a backdoor Roth conversion without an unexpected tax bill?",
                topics: &["personal finance/Roth IRA [backdoor; income limit]"],
                why: "Only their backdoor-Roth and income-limit sessions bear on the conversion; other Roth sessions do not.",
            },
            Query {
                id: "u2-q07",
                category: Direct,
                query: "How much do I need saved to retire early, and how should it be invested?",
                topics: &[
                    "personal finance/early retirement",
                    "personal finance/index funds",
                    "personal finance/bond funds",
                    "personal finance/target date fund",
                ],
                why: "FIRE number and 4% rule are direct; their fund choices (index, bonds, target date) shape the allocation.",
            },
            Query {
                id: "u2-q08",
                category: Adjacent,
                query: "How should I pay for things day to day while travelling in Japan?",
                topics: &["japan travel/Suica card", "personal finance/budgeting app"],
                why: "Suica and iPhone-wallet questions are direct; the budgeting app they use is how they will track spending abroad.",
            },
            Query {
                id: "u2-q09",
                category: Direct,
                query: "Which ryokan near Kyoto are worth the money?",
                topics: &["japan travel/ryokan", "japan travel/Kyoto temples"],
                why: "Their ryokan (onsen, kaiseki, tattoo) questions and Kyoto temple plans decide where to stay.",
            },
            Query {
                id: "u2-q10",
                category: Direct,
                query: "Why are the leaves on my tomato plants turning yellow?",
                topics: &["vegetable gardening/tomatoes"],
                why: "Their few tomato sessions (staking, pruning, yellow leaves) are the context.",
            },
            Query {
                id: "u2-q11",
                category: Adjacent,
                query: "How do I keep my vegetable garden alive while I'm away for two weeks?",
                topics: &[
                    "vegetable gardening/tomatoes",
                    "japan travel/Japan itinerary [2 weeks]",
                    "japan travel/Japan in spring",
                ],
                why: "They grow tomatoes; the two-week Japan trip and its season are the adjacent constraint on watering and timing.",
            },
            Query {
                id: "u2-q12",
                category: Direct,
                query: "Is a target date fund or a three-fund portfolio better for my retirement account?",
                topics: &[
                    "personal finance/target date fund",
                    "personal finance/index funds",
                    "personal finance/bond funds",
                ],
                why: "Glide-path worries, index-fund and bond-fund sessions decide the comparison.",
            },
            Query {
                id: "u2-q13",
                category: Unseen,
                query: "What's the best way to get started with rock climbing?",
                topics: &[],
                why: "Nothing in their history touches climbing or sport.",
            },
        ],
    },
];

/// What makes a session of a topic actually about it: the topic's name or one of its facets
/// and problem states (the generator's vocabulary for the topic). Visits to an entity's page
/// ("I Tried Stockfish for 27 Days") or to another topic's page ("Prime lens - Wikipedia"
/// labelled as a composition session) mention none and carry no signal about the topic.
const ON_TOPIC: &[(&str, &[&str])] = &[
    (
        "cooking/chef knife",
        &[
            "whetstone",
            "honing",
            "carbon steel",
            "dull after sharpening",
        ],
    ),
    (
        "cooking/chicken stock",
        &["pressure cooker", "gelatin", "freezing", "cloudy stock"],
    ),
    (
        "cooking/fresh pasta",
        &[
            "egg yolk",
            "semolina",
            "rolling without a machine",
            "dough too dry",
        ],
    ),
    (
        "cooking/hot sauce",
        &[
            "salt percentage",
            "fermentation time",
            "kahm yeast",
            "mold on top",
        ],
    ),
    (
        "cooking/risotto",
        &["stock ratio", "arborio", "carnaroli", "gluey"],
    ),
    (
        "cooking/short ribs",
        &[
            "oven temperature",
            "red wine braise",
            "make ahead",
            "tough after",
        ],
    ),
    (
        "cooking/sous vide steak",
        &[
            "sous vide",
            "time and temperature",
            "searing after",
            "ribeye",
            "grey band",
        ],
    ),
    (
        "marathon training/IT band syndrome",
        &[
            "foam rolling",
            "strengthening exercises",
            "knee pain outside",
        ],
    ),
    (
        "marathon training/easy runs",
        &["zone 2", "cadence", "heart rate too high"],
    ),
    (
        "marathon training/marathon training plan",
        &[
            "16 week plan",
            "mileage per week",
            "taper",
            "missed a long run",
        ],
    ),
    (
        "marathon training/race day",
        &[
            "pacing strategy",
            "negative split",
            "dinner the night before",
            "nerves",
        ],
    ),
    (
        "marathon training/running shoes",
        &["carbon plate", "stack height", "shoe rotation", "blisters"],
    ),
    (
        "marathon training/tempo runs",
        &["lactate threshold", "heart rate zones", "too hard"],
    ),
    (
        "woodworking/dovetail joints",
        &["dovetail", "marking gauge", "through vs half blind"],
    ),
    (
        "woodworking/hand plane",
        &["blade camber", "chipbreaker", "tear out"],
    ),
    (
        "woodworking/hardwood lumber",
        &["rough sawn", "moisture content", "wood movement"],
    ),
    (
        "woodworking/oil finish",
        &["tung oil", "danish oil", "drying time", "sticky finish"],
    ),
    (
        "woodworking/workbench",
        &["roubo", "leg vise", "top thickness", "racking"],
    ),
    (
        "birdwatching/binoculars",
        &[
            "8x42",
            "10x42",
            "close focus",
            "waterproofing",
            "blurry at distance",
        ],
    ),
    (
        "birdwatching/bird songs",
        &["parabolic microphone", "spectrogram", "wind noise"],
    ),
    (
        "birdwatching/spring migration",
        &["radar forecast", "fallout", "slow day"],
    ),
    (
        "birdwatching/warblers",
        &["warbler", "fall plumage", "songs"],
    ),
    (
        "photography/aperture priority",
        &["depth of field", "auto iso", "photos too dark"],
    ),
    (
        "photography/lightroom presets",
        &["lightroom", "color grading", "masking", "skin tones"],
    ),
    (
        "photography/night sky",
        &["500 rule", "star trails", "milky way", "noisy images"],
    ),
    (
        "photography/portrait lighting",
        &["off camera flash", "reflector", "harsh shadows"],
    ),
    (
        "photography/prime lens",
        &["35mm vs 50mm", "used lenses", "soft corners"],
    ),
    (
        "machine learning/LLM",
        &[
            "lora",
            "qlora",
            "gradient checkpointing",
            "cuda out of memory",
        ],
    ),
    (
        "machine learning/RAG pipeline",
        &[
            "chunking",
            "reranking",
            "bm25 hybrid",
            "hallucinated citations",
        ],
    ),
    (
        "machine learning/embeddings",
        &[
            "cosine similarity",
            "sentence transformers",
            "normalization",
            "poor retrieval",
        ],
    ),
    (
        "machine learning/model serving",
        &["onnx export", "quantization", "batching", "slow inference"],
    ),
    (
        "tax law/LLC vs S corp",
        &["reasonable salary", "payroll", "double taxation"],
    ),
    (
        "tax law/business expenses",
        &["mileage rate", "meals", "depreciation", "receipts lost"],
    ),
    (
        "tax law/capital gains",
        &["wash sale", "short term vs long term", "cost basis"],
    ),
    (
        "tax law/home office deduction",
        &["simplified method", "square footage", "audit risk"],
    ),
    (
        "tax law/quarterly estimated taxes",
        &[
            "safe harbor",
            "due dates",
            "1040-es",
            "underpayment penalty",
        ],
    ),
    (
        "home renovation/attic insulation",
        &[
            "r value",
            "blown in cellulose",
            "vapor barrier",
            "condensation",
        ],
    ),
    (
        "home renovation/drafty windows",
        &["caulk", "weatherstripping", "double glazing", "draft"],
    ),
    (
        "home renovation/heat pump",
        &["sizing btu", "mini split", "rebates", "short cycling"],
    ),
    (
        "chess/Sicilian Defense",
        &["sicilian", "najdorf", "main lines", "2.c3"],
    ),
    (
        "chess/rook endgames",
        &["lucena", "philidor", "convert winning"],
    ),
    (
        "chess/time management",
        &["increment", "premoves", "time trouble"],
    ),
    (
        "japan travel/Hakone",
        &["mount fuji", "hakone free pass", "cloudy"],
    ),
    (
        "japan travel/JR Pass",
        &["japan rail pass", "price increase", "shinkansen"],
    ),
    (
        "japan travel/Japan in spring",
        &["cherry blossom", "rainy season"],
    ),
    (
        "japan travel/Japan itinerary",
        &[
            "itinerary",
            "2 weeks",
            "kyoto day trips",
            "off season",
            "too rushed",
        ],
    ),
    (
        "japan travel/Kyoto temples",
        &["fushimi inari", "arashiyama", "crowds"],
    ),
    (
        "japan travel/Suica card",
        &[
            "suica",
            "iphone wallet",
            "airport train",
            "card not working",
        ],
    ),
    (
        "japan travel/Tokyo food",
        &[
            "izakaya",
            "ramen shops",
            "reservations",
            "vegetarian options",
        ],
    ),
    ("japan travel/ryokan", &["onsen", "kaiseki", "tattoos"]),
    (
        "personal finance/Roth IRA",
        &["roth", "income limit", "excess contribution"],
    ),
    (
        "personal finance/bond funds",
        &["duration", "treasury ladder", "interest rate risk"],
    ),
    (
        "personal finance/budgeting app",
        &["zero based budget", "envelope method", "overspending"],
    ),
    (
        "personal finance/early retirement",
        &["4% rule", "fire number", "sequence of returns"],
    ),
    (
        "personal finance/index funds",
        &[
            "expense ratio",
            "total market",
            "s&p 500",
            "rebalancing",
            "fund dropped",
        ],
    ),
    (
        "personal finance/mortgage",
        &["extra principal", "refinance", "pmi"],
    ),
    (
        "personal finance/target date fund",
        &["glide path", "too conservative"],
    ),
    (
        "vegetable gardening/tomatoes",
        &[
            "pruning suckers",
            "staking",
            "blossom end rot",
            "leaves turning yellow",
        ],
    ),
];

/// A parsed `interest/topic [phrase; …]` rule.
struct Rule {
    interest: String,
    topic: String,
    /// Empty: any session of the topic that is about it.
    phrases: Vec<String>,
}

fn parse_rule(rule: &str) -> Rule {
    let (label, phrases) = match rule.split_once('[') {
        Some((label, rest)) => {
            let inner = rest.trim_end().strip_suffix(']').expect("rule ends with ]");
            let phrases = inner
                .split(';')
                .map(|p| p.trim().to_lowercase())
                .filter(|p| !p.is_empty())
                .collect();
            (label.trim(), phrases)
        }
        None => (rule.trim(), Vec::new()),
    };
    let (interest, topic) = label.split_once('/').expect("rule is interest/topic");
    assert!(
        ON_TOPIC.iter().any(|(k, _)| *k == label),
        "{label}: add its on-topic phrases to ON_TOPIC"
    );
    Rule {
        interest: interest.to_string(),
        topic: topic.to_string(),
        phrases,
    }
}

/// Whether the generated session is relevant under `rules`: its labels name a rule's topic,
/// it is about that topic, and it mentions one of the rule's phrases when the rule has any.
/// Noise (no labels) is never relevant.
fn is_relevant(item: &SynthItem, rules: &[Rule]) -> bool {
    let (Some(interest), Some(topic)) = (item.interest, item.topic) else {
        return false;
    };
    let text = item.session.full_text().to_lowercase();
    let words = words_of(&text);
    let mentions = |phrase: &str| text.contains(phrase) || fuzzy_contains(&words, phrase);
    rules.iter().any(|r| {
        if r.interest != interest || r.topic != topic {
            return false;
        }
        let label = format!("{interest}/{topic}");
        let on_topic = mentions(&topic.to_lowercase())
            || ON_TOPIC
                .iter()
                .find(|(k, _)| *k == label)
                .is_some_and(|(_, phrases)| phrases.iter().any(|p| mentions(p)));
        on_topic && (r.phrases.is_empty() || r.phrases.iter().any(|p| mentions(p)))
    })
}

fn words_of(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether `phrase` occurs in `words` allowing one typo per word of four letters or more
/// (searches carry the generator's typos, "hardwwood lumber", which a human labeller reads
/// through).
fn fuzzy_contains(words: &[&str], phrase: &str) -> bool {
    let want = words_of(phrase);
    !want.is_empty()
        && words.windows(want.len()).any(|w| {
            w.iter()
                .zip(&want)
                .all(|(a, b)| a == b || (b.chars().count() >= 4 && one_edit(a, b)))
        })
}

/// One deleted, inserted, substituted or transposed character.
fn one_edit(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    match long.len() - short.len() {
        0 => {
            let diff: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
            match diff.as_slice() {
                [_] => true,
                [i, j] => *j == i + 1 && a[*i] == b[*j] && a[*j] == b[*i],
                _ => false,
            }
        }
        1 => {
            let i = (0..short.len())
                .find(|&i| short[i] != long[i])
                .unwrap_or(short.len());
            short[i..] == long[i + 1..]
        }
        _ => false,
    }
}

fn config(user: &User) -> SynthConfig {
    // Default mix (45% searches, 40% visits, 15% chats, a fifth of chats in Claude) and 5%
    // noise over 2024.
    SynthConfig::new(user.seed, user.sessions)
}

/// The exports and `cases.jsonl` under `root`, from the generator and the label rules above.
/// With `EVAL_SHOW_LABELS` set (to a case id such as `u0-q02`, or `all`), also prints per
/// query the sessions its rules keep (+) and the labelled ones they drop (-), for checking the
/// rules by eye.
fn write_fixtures(root: &Path) {
    let show = std::env::var("EVAL_SHOW_LABELS").ok();
    let mut lines = Vec::new();
    for user in USERS {
        let cfg = config(user);
        let dir = root.join(user.name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).unwrap();
        }
        write_export(&cfg, &dir).unwrap();
        let all: Vec<SynthItem> = items(&cfg).collect();
        for q in user.queries {
            let rules: Vec<Rule> = q.topics.iter().map(|t| parse_rule(t)).collect();
            if show.as_deref().is_some_and(|o| o == "all" || o == q.id) {
                show_labels(q, &all, &rules);
            }
            let mut relevant: Vec<String> = all
                .iter()
                .filter(|it| is_relevant(it, &rules))
                .map(|it| it.session.content_hash())
                .collect();
            // Two sessions with the same content are one session once imported.
            let mut seen = HashSet::new();
            relevant.retain(|h| seen.insert(h.clone()));
            let case = RetrievalCase {
                id: q.id.into(),
                user: user.name.into(),
                history: user.name.into(),
                query: q.query.into(),
                category: q.category,
                relevant_topics: q.topics.iter().map(|t| t.to_string()).collect(),
                why: q.why.into(),
                relevant,
            };
            lines.push(serde_json::to_string(&case).unwrap());
        }
    }
    std::fs::write(root.join("cases.jsonl"), lines.join("\n") + "\n").unwrap();
}

fn show_labels(q: &Query, all: &[SynthItem], rules: &[Rule]) {
    println!("== {} {}", q.id, q.query);
    for it in all {
        let labelled = rules.iter().any(|r| {
            it.interest == Some(r.interest.as_str()) && it.topic == Some(r.topic.as_str())
        });
        if !labelled {
            continue;
        }
        let mark = if is_relevant(it, rules) { "+" } else { "-" };
        let text: String = it.session.full_text().replace('\n', " / ");
        let text: String = text.chars().take(150).collect();
        println!(
            "  {mark} {:<6} {}/{}: {text}",
            it.session.kind.as_str(),
            it.interest.unwrap_or(""),
            it.topic.unwrap_or("")
        );
    }
}

/// Every file under `dir`, relative to it, with its bytes.
fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// The checked-in exports and labels are what the generator and the rules give today, so a
/// change to either shows up here instead of silently measuring stale fixtures. After an
/// intended change, `RUDDER_UPDATE_FIXTURES=1` writes them anew.
#[test]
fn the_fixtures_are_what_the_generator_and_the_rules_give() {
    if std::env::var_os("RUDDER_UPDATE_FIXTURES").is_some() {
        write_fixtures(&fixture_dir());
        return;
    }
    let fresh = tempfile::tempdir().unwrap();
    write_fixtures(fresh.path());
    let fresh = files_under(fresh.path());
    let stored = files_under(&fixture_dir());
    let names = |m: &BTreeMap<PathBuf, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&fresh),
        names(&stored),
        "the fixture files differ; regenerate with RUDDER_UPDATE_FIXTURES=1"
    );
    for (name, bytes) in &fresh {
        assert!(
            stored[name] == *bytes,
            "{} differs from what the generator writes; regenerate with \
             RUDDER_UPDATE_FIXTURES=1",
            name.display()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The fixtures are well-formed
// ---------------------------------------------------------------------------------------------

fn import_user(dir: &Path, export: &Path) -> History {
    let mut history = History::open(dir).unwrap();
    let report = history
        .import(
            &[export.to_path_buf()],
            &ImportOptions::default(),
            &NoProgress,
        )
        .unwrap();
    assert_eq!(report.failed_files, 0, "{report:?}");
    history
}

fn hashes(history: &History) -> HashSet<String> {
    let mut out = HashSet::new();
    history
        .store()
        .for_each_entry(512, |batch| {
            out.extend(batch.iter().map(|s| s.content_hash.clone()));
            Ok(())
        })
        .unwrap();
    out
}

#[test]
fn fixtures_are_well_formed() {
    let cases = load_cases(&cases_path()).unwrap();
    let mut by_user: BTreeMap<&str, Vec<&RetrievalCase>> = BTreeMap::new();
    for c in &cases {
        by_user.entry(&c.user).or_default().push(c);
    }
    assert!(by_user.len() >= 3, "{} users", by_user.len());
    let tmp = tempfile::tempdir().unwrap();
    for (user, cases) in &by_user {
        assert!(cases.len() >= 10, "{user}: {} queries", cases.len());
        let export = fixture_dir().join(&cases[0].history);
        let history = import_user(&tmp.path().join(user), &export);
        let stored = hashes(&history);
        assert!(stored.len() >= 300, "{user}: {} sessions", stored.len());
        let mut categories = HashSet::new();
        for c in cases {
            categories.insert(c.category);
            if c.category != QueryCategory::Unseen {
                assert!(!c.relevant.is_empty(), "{}: no relevant session", c.id);
                assert!(!c.relevant_topics.is_empty(), "{}: no rule", c.id);
            }
            // A label set covering much of the history would make any ranking look good.
            assert!(
                c.relevant.len() * 3 < stored.len(),
                "{}: {} of {} sessions relevant",
                c.id,
                c.relevant.len(),
                stored.len()
            );
            assert!(!c.why.is_empty(), "{}: no why", c.id);
            for h in &c.relevant {
                assert!(
                    stored.contains(h),
                    "{}: {h} is not in {user}'s export",
                    c.id
                );
            }
        }
        assert!(
            categories.contains(&QueryCategory::Direct)
                && categories.contains(&QueryCategory::Adjacent)
                && categories.contains(&QueryCategory::Unseen),
            "{user}: {categories:?}"
        );
    }
    // The fixtures are checked in: keep them small.
    let mut bytes = 0u64;
    let mut stack = vec![fixture_dir()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                bytes += meta.len();
            }
        }
    }
    assert!(bytes < 3_000_000, "fixtures are {bytes} bytes");
}

#[test]
fn the_rules_in_the_source_match_the_cases_file() {
    // The cases file is generated from USERS; a query edited in one place only would make the
    // labels describe a different question.
    let cases = load_cases(&cases_path()).unwrap();
    let written: Vec<(&str, &str, Vec<String>)> = cases
        .iter()
        .map(|c| (c.id.as_str(), c.query.as_str(), c.relevant_topics.clone()))
        .collect();
    let source: Vec<(&str, &str, Vec<String>)> = USERS
        .iter()
        .flat_map(|u| u.queries)
        .map(|q| {
            (
                q.id,
                q.query,
                q.topics.iter().map(|t| t.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(
        written, source,
        "cases.jsonl is stale: regenerate it with RUDDER_UPDATE_FIXTURES=1 (see the top of this file)"
    );
}

#[test]
fn rules_keep_on_topic_sessions_and_drop_passing_mentions() {
    // One user's labels against the session texts: every relevant session of a single-topic
    // rule mentions the topic or its vocabulary, and a facet restriction really narrows.
    let cfg = config(&USERS[0]);
    let all: Vec<SynthItem> = items(&cfg).collect();
    let dovetails = [parse_rule("woodworking/dovetail joints")];
    let kept: Vec<&SynthItem> = all.iter().filter(|i| is_relevant(i, &dovetails)).collect();
    let labelled = all
        .iter()
        .filter(|i| i.topic == Some("dovetail joints"))
        .count();
    assert!(!kept.is_empty() && kept.len() <= labelled);
    for i in &kept {
        let text = i.session.full_text().to_lowercase();
        assert!(
            text.contains("dovetail") || text.contains("marking gauge"),
            "{text}"
        );
    }
    let whole = [parse_rule("marathon training/race day")];
    let dinner = [parse_rule(
        "marathon training/race day [dinner the night before]",
    )];
    let n_whole = all.iter().filter(|i| is_relevant(i, &whole)).count();
    let n_dinner = all.iter().filter(|i| is_relevant(i, &dinner)).count();
    assert!(
        0 < n_dinner && n_dinner < n_whole,
        "{n_dinner} of {n_whole}"
    );
    // Typos are read through, other words are not.
    assert!(fuzzy_contains(
        &words_of("how to buy hardwwood lumber"),
        "hardwood lumber"
    ));
    assert!(fuzzy_contains(
        &words_of("is it worth it for hand plnae"),
        "hand plane"
    ));
    assert!(fuzzy_contains(
        &words_of("dratfy windows"),
        "drafty windows"
    ));
    assert!(!fuzzy_contains(&words_of("hand saw"), "hand plane"));
    assert!(!fuzzy_contains(&words_of("race days"), "race day"));
    // Noise is never relevant.
    assert!(all
        .iter()
        .filter(|i| i.interest.is_none())
        .all(|i| !is_relevant(i, &whole)));
}

// ---------------------------------------------------------------------------------------------
// End to end with the real small models
// ---------------------------------------------------------------------------------------------

#[test]
fn evaluation_runs_end_to_end_with_the_small_model() {
    let store = common::store();
    let settings = common::llama_settings();
    let llm = rudder::llm::llama::LlamaLlm::load(
        common::CHAT_MODEL,
        &store.ready_path(common::CHAT_MODEL).unwrap(),
        &settings,
    )
    .unwrap();
    let embedder = rudder::embed::FastEmbedder::from_store(&store, common::EMBED_MODEL, 2).unwrap();
    // One user, three queries: one that shares its words with the history, one adjacent, one
    // with nothing relevant.
    let wanted = ["u0-q10", "u0-q02", "u0-q12"];
    let cases: Vec<RetrievalCase> = load_cases(&cases_path())
        .unwrap()
        .into_iter()
        .filter(|c| wanted.contains(&c.id.as_str()))
        .collect();
    assert_eq!(cases.len(), 3);
    let work = tempfile::tempdir().unwrap();
    let report = run_retrieval_eval_on(
        &cases,
        &fixture_dir(),
        "subset",
        &llm,
        (&embedder, common::EMBED_MODEL),
        work.path(),
        &NoProgress,
    )
    .unwrap();

    assert_eq!(report.model, common::CHAT_MODEL);
    assert_eq!(report.users.len(), 1);
    assert!(report.users[0].sessions >= 300);
    assert!(report.failed_ids.is_empty(), "{:?}", report.cases);
    assert_eq!(report.scored, 2);
    assert_eq!(report.skipped_ids, vec!["u0-q12".to_string()]);
    let modes: Vec<ExpansionMode> = report.modes.iter().map(|m| m.mode).collect();
    assert_eq!(modes, ExpansionMode::ALL.to_vec());
    for m in &report.modes {
        assert_eq!(m.queries, 2);
        for v in [m.ndcg_at_10, m.ndcg_at_20, m.recall_at_20] {
            assert!((0.0..=1.0).contains(&v), "{m:?}");
        }
    }
    // Three model calls per scored query (CoT, pseudo-history and facet probes; raw is free).
    assert_eq!(report.expansion_usage.calls, 6);
    assert!(report.expansion_usage.generated_tokens > 0);
    // "hot sauce" is in many of this user's sessions: raw hybrid search must find them.
    let hot = report.cases.iter().find(|c| c.id == "u0-q10").unwrap();
    let raw = hot
        .scores
        .iter()
        .find(|s| s.mode == ExpansionMode::Raw)
        .unwrap();
    assert!(raw.hits_at_20 >= 1, "{raw:?}");
    assert!(raw.ndcg_at_10 > 0.3, "{raw:?}");
    assert!(raw.top.iter().any(|t| t.relevant), "{raw:?}");
    let texts: Vec<&str> = hot.expansions.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(texts.len(), 4);
    assert!(texts.iter().all(|t| t.starts_with(hot.query.as_str())));
    let md = report.to_markdown();
    assert!(md.contains("| Original query |") && md.contains("| +Pseudo-history |"));
    assert!(md.contains("| +Facet probes |"));
}

#[test]
fn cli_names_the_line_of_a_bad_case_before_loading_any_model() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = tmp.path().join("cases.jsonl");
    let good = load_cases(&cases_path()).unwrap().remove(0);
    let mut good = serde_json::to_value(&good).unwrap();
    good["history"] = serde_json::json!(fixture_dir().join("user-00"));
    std::fs::write(
        &cases,
        format!("{good}\n{{\"id\": \"x\", \"query\": \"no user\"}}\n"),
    )
    .unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_rudder-eval"))
            .arg("--data-dir")
            .arg(tmp.path().join("data"))
            .args(["eval", "retrieval"])
            .arg(&cases)
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cases.jsonl:2:"), "{stderr}");
    // A valid file with nothing selected says so.
    std::fs::write(&cases, format!("{good}\n")).unwrap();
    let out = run(&["--user", "nobody"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no cases selected"), "{stderr}");
}
