//! Amounts of money in text, read by code: the prices a finding states ("about 100 to 110
//! dollars", "£400–£700") and the budget a reader has ("I can spend 200 euros on my ears").
//! Comparing a price with a budget is arithmetic, which a 1.5B model gets wrong and code does
//! not; the report uses it to say which findings fit the reader's budget.

use std::fmt;

/// A currency an amount is stated in. Amounts of different currencies are never compared:
/// rates change, and a report that converted them would state a fact no source gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Currency {
    Dollar,
    Euro,
    Pound,
    Yen,
}

impl Currency {
    /// The currency a symbol ("$", "€", "£", "¥", "US$") stands for.
    fn of_symbol(symbol: &str) -> Option<Self> {
        match symbol {
            "$" | "US$" | "A$" | "C$" => Some(Self::Dollar),
            "€" => Some(Self::Euro),
            "£" => Some(Self::Pound),
            "¥" => Some(Self::Yen),
            _ => None,
        }
    }

    /// The currency a word after an amount names ("dollars", "EUR", "quid").
    fn of_word(word: &str) -> Option<Self> {
        if let Some(currency) = Self::of_symbol(word) {
            return Some(currency);
        }
        match word.to_lowercase().as_str() {
            "dollar" | "dollars" | "usd" | "bucks" | "aud" | "cad" => Some(Self::Dollar),
            "euro" | "euros" | "eur" => Some(Self::Euro),
            "pound" | "pounds" | "gbp" | "quid" => Some(Self::Pound),
            "yen" | "jpy" => Some(Self::Yen),
            _ => None,
        }
    }

    fn name(self, amount: f64) -> &'static str {
        match (self, amount == 1.0) {
            (Self::Dollar, true) => "dollar",
            (Self::Dollar, false) => "dollars",
            (Self::Euro, true) => "euro",
            (Self::Euro, false) => "euros",
            (Self::Pound, true) => "pound",
            (Self::Pound, false) => "pounds",
            (Self::Yen, _) => "yen",
        }
    }
}

/// An amount or a range of amounts of one currency ("120 dollars": low = high = 120; "100 to
/// 110 dollars": 100 and 110).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub low: f64,
    pub high: f64,
    pub currency: Currency,
}

/// Every amount of money `text` states, in order. An amount counts when a currency is named
/// by a symbol beside it ("$85", "85€", "£ 600") or a word after it ("120 dollars"); a range
/// ("100 to 110 dollars", "between 400 and 700 pounds", "$100–$110") is one price. A bare
/// number, a percentage and a weight in pounds ("weighs 60 pounds") are not money.
pub fn prices(text: &str) -> Vec<Price> {
    stated(text).into_iter().map(|s| s.price).collect()
}

/// A price and its words as `text` states them ("$85", "100 to 110 dollars").
#[derive(Debug, Clone, PartialEq)]
pub struct Stated {
    pub price: Price,
    pub text: String,
}

/// Every amount of money `text` states, as [`prices`] reads them, each with its words.
pub fn stated(text: &str) -> Vec<Stated> {
    let tokens = tokens(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let Some((first, symbol)) = amount(&tokens[i]) else {
            i += 1;
            continue;
        };
        // The currency: the amount's own symbol, or a currency word right after it.
        let word = tokens
            .get(i + 1)
            .and_then(|t| Currency::of_word(t))
            .filter(|_| !weight_before(&tokens, i));
        let mut currency = symbol.or(word);
        let mut next = i + 1 + usize::from(symbol.is_none() && word.is_some());
        let mut high = first;
        // A range: "100 to 110 dollars", "100 and 110", "$100 – $110".
        if let Some(link) = tokens.get(next).map(String::as_str) {
            if matches!(link, "to" | "and" | "-" | "–" | "—") {
                if let Some((second, second_symbol)) = tokens.get(next + 1).and_then(|t| amount(t))
                {
                    let second_word = tokens
                        .get(next + 2)
                        .and_then(|t| Currency::of_word(t))
                        .filter(|_| !weight_before(&tokens, next + 1));
                    let second_currency = second_symbol.or(second_word);
                    let agrees = match (currency, second_currency) {
                        (Some(a), Some(b)) => a == b,
                        _ => true,
                    };
                    if agrees
                        && second >= first
                        && (currency.is_some() || second_currency.is_some())
                    {
                        currency = currency.or(second_currency);
                        high = second;
                        next += 2 + usize::from(second_symbol.is_none() && second_word.is_some());
                    }
                }
            }
        }
        // A rate ("0.30 euros per kWh", "15 euros a month", "20 euros per 100 grams") is not a
        // price to set against what the reader can spend; "20 euros a packet" is.
        let per = tokens.get(next).is_some_and(|t| {
            matches!(
                t.to_lowercase().as_str(),
                "per" | "a" | "an" | "each" | "every"
            )
        });
        let unit_at =
            next + 1 + usize::from(tokens.get(next + 1).is_some_and(|t| amount(t).is_some()));
        let rate = per
            && tokens
                .get(unit_at)
                .map(|unit| unit.to_lowercase())
                .is_some_and(|unit| {
                    RATE_UNITS.contains(&unit.as_str())
                        || unit
                            .strip_suffix('s')
                            .is_some_and(|one| RATE_UNITS.contains(&one))
                });
        if let Some(currency) = currency.filter(|_| !rate) {
            out.push(Stated {
                price: Price {
                    low: first,
                    high,
                    currency,
                },
                text: tokens[i..next].join(" "),
            });
        }
        i = next;
    }
    out
}

/// Units after "per", "a" or "every" that make an amount a rate, not a price.
const RATE_UNITS: &[&str] = &[
    "second", "minute", "hour", "day", "night", "week", "month", "year", "kwh", "kw", "mwh", "kg",
    "kilo", "kilogram", "gram", "g", "tonne", "ton", "litre", "liter", "gallon", "km", "mile",
    "metre", "meter", "m2", "sqm", "head", "person", "user", "seat", "share",
];

/// What a reader can spend: the one amount a sentence about them states, when it speaks of
/// spending ("Has limited budget (120 dollars)", "I can spend 200 euros on my ears this year",
/// "roughly 2000 euros spare at most"). A range stands for its top. None when the sentence
/// states no amount, several different ones, or does not speak of spending ("I paid 90 euros
/// for my last pair").
pub fn budget(text: &str) -> Option<Budget> {
    let found = prices(text);
    let [price] = found.as_slice() else {
        return None;
    };
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let spends = words.iter().any(|w| SPENDING_WORDS.contains(w))
        || SPENDING_PHRASES.iter().any(|p| lower.contains(p));
    spends.then_some(Budget {
        amount: price.high,
        currency: price.currency,
    })
}

/// What the money a sentence about the reader states is for, when it names a particular thing
/// ("120 dollars for sports gear this month" → "sports gear", "200 euros on my ears this year"
/// → "ears", "2000 euros spare at most for improvements" → "improvements"). Read after the
/// amount: the words after the first "for", "on", "towards" or "wants" that name more than a
/// time ("for this year"), up to the end of the clause. None when the sentence states no
/// amount, names no purpose, or one any purchase fits ("on something for myself"): such money
/// is for whatever the reader asks about.
pub fn purpose(text: &str) -> Option<String> {
    let found = stated(text);
    let first = found.first()?;
    let lower = text.to_lowercase();
    let at = lower.find(&first.text.to_lowercase())? + first.text.len();
    let words: Vec<&str> = lower[at..].split_whitespace().collect();
    for (i, marker) in words.iter().enumerate() {
        let word = marker.trim_matches(|c: char| !c.is_alphanumeric());
        if PURPOSE_MARKERS.contains(&word) {
            let mut named = Vec::new();
            for raw in &words[i + 1..] {
                let w = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'');
                if w.is_empty() || PURPOSE_ENDS.contains(&w) || named.len() == 5 {
                    break;
                }
                if !PURPOSE_FILLERS.contains(&w) {
                    named.push(w);
                }
                if raw.ends_with([',', '.', ';', ':', '!', '?', ')']) {
                    break;
                }
            }
            let names_a_time = named.iter().all(|w| PURPOSE_TIMES.contains(w));
            if !named.is_empty() && !names_a_time {
                return (!named.iter().all(|w| PURPOSE_ANY.contains(w))).then(|| named.join(" "));
            }
        }
    }
    None
}

/// Words after an amount that introduce what it is for.
const PURPOSE_MARKERS: &[&str] = &["for", "on", "towards", "toward", "wants", "want"];

/// Words that end a purpose: a new clause or a time.
const PURPOSE_ENDS: &[&str] = &[
    "and", "but", "or", "so", "that", "which", "because", "if", "this", "next", "per", "each",
    "every", "until", "by", "before", "after", "since", "in", "at", "from", "is", "was", "to",
];

/// Words of a purpose that name nothing ("my", "the").
const PURPOSE_FILLERS: &[&str] = &[
    "a", "an", "the", "my", "our", "his", "her", "their", "some", "new", "any",
];

/// Purposes that are a time, not a thing ("for the year", "for now").
const PURPOSE_TIMES: &[&str] = &[
    "now", "year", "years", "month", "months", "week", "weeks", "summer", "winter", "spring",
    "autumn", "today", "while", "rest", "day", "days",
];

/// Purposes any purchase fits ("something for myself", "anything", "me").
const PURPOSE_ANY: &[&str] = &[
    "something",
    "anything",
    "everything",
    "whatever",
    "myself",
    "me",
    "us",
    "ourselves",
    "for",
    "things",
    "stuff",
    "extras",
    "treat",
    "treats",
    "fun",
    "it",
    "that",
];

/// Whether `text` speaks of what the reader can spend without saying how much ("you have a
/// budget", "wants to spend less").
pub fn speaks_of_money(text: &str) -> bool {
    let lower = text.to_lowercase();
    prices(text).is_empty()
        && lower
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| MONEY_WORDS.contains(&w))
}

/// Words of money and spending, for [`speaks_of_money`].
const MONEY_WORDS: &[&str] = &[
    "budget",
    "budgets",
    "spend",
    "spending",
    "afford",
    "money",
    "price",
    "prices",
    "cheap",
    "expensive",
    "cost",
    "costs",
];

/// Words that make an amount in a sentence about the reader what they can spend.
const SPENDING_WORDS: &[&str] = &[
    "budget", "budgets", "spend", "spending", "spare", "afford", "max", "maximum", "limit",
    "ceiling", "cap", "under", "below",
];

/// Phrases that do the same.
const SPENDING_PHRASES: &[&str] = &[
    "at most",
    "up to",
    "less than",
    "no more than",
    "set aside",
    "saved up",
];

/// An amount a reader can spend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub amount: f64,
    pub currency: Currency,
}

impl fmt::Display for Budget {
    /// "120 dollars", "2,000 euros".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}",
            grouped(self.amount),
            self.currency.name(self.amount)
        )
    }
}

/// How a price stands to a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fit {
    /// Every amount is at or below the budget.
    Within,
    /// The range starts at or below the budget and ends above it.
    Partly,
    /// Even the lowest amount is above the budget.
    Above,
}

impl Budget {
    /// How the prices of `text` in this budget's currency stand to it: `Within` when all are
    /// at or below it, `Above` when all start above it, else `Partly`. None when `text` states
    /// no price in this currency.
    pub fn fit(&self, text: &str) -> Option<Fit> {
        let fits: Vec<Fit> = prices(text)
            .into_iter()
            .filter(|p| p.currency == self.currency)
            .map(|p| {
                if p.high <= self.amount {
                    Fit::Within
                } else if p.low <= self.amount {
                    Fit::Partly
                } else {
                    Fit::Above
                }
            })
            .collect();
        let first = *fits.first()?;
        Some(if fits.iter().all(|&f| f == first) {
            first
        } else {
            Fit::Partly
        })
    }
}

/// The words of `text` with the punctuation around them dropped; a dash between two amounts
/// ("100–110", "$100-$110") is its own token.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split_whitespace() {
        let word = raw.trim_matches(|c: char| {
            matches!(
                c,
                ',' | '.' | ';' | ':' | '!' | '?' | '(' | ')' | '"' | '“' | '”'
            )
        });
        let dash = word
            .char_indices()
            .skip(1)
            .find(|&(_, c)| matches!(c, '-' | '–' | '—'))
            .filter(|&(at, c)| {
                let before = &word[..at];
                let after = &word[at + c.len_utf8()..];
                amount(before).is_some() && amount(after).is_some()
            });
        match dash {
            Some((at, c)) => {
                out.push(word[..at].to_string());
                out.push(c.to_string());
                out.push(word[at + c.len_utf8()..].to_string());
            }
            None if !word.is_empty() => out.push(word.to_string()),
            None => {}
        }
    }
    out
}

/// A token as an amount ("120", "1,200", "$85", "85€", "1.5") and the currency its symbol
/// names.
fn amount(token: &str) -> Option<(f64, Option<Currency>)> {
    let (symbol, rest) = ["US$", "A$", "C$", "$", "€", "£", "¥"]
        .iter()
        .find_map(|s| token.strip_prefix(s).map(|rest| (Some(*s), rest)))
        .unwrap_or((None, token));
    let (number, suffix) = match rest.strip_suffix(['€', '£']) {
        Some(number) if symbol.is_none() => (number, rest.get(number.len()..)),
        _ => (rest, None),
    };
    let first_digit = number.chars().next().is_some_and(|c| c.is_ascii_digit());
    let well_formed = first_digit
        && number
            .chars()
            .all(|c| c.is_ascii_digit() || c == ',' || c == '.')
        && !number.ends_with([',', '.']);
    if !well_formed {
        return None;
    }
    // "1,200" is twelve hundred; "1.5" one and a half.
    let value: f64 = number.replace(',', "").parse().ok()?;
    let currency = symbol.or(suffix).and_then(Currency::of_symbol);
    Some((value, currency))
}

/// Whether the amount at `at` is a weight ("weighs 60 pounds", "a 50 pound bag of flour"
/// keeps its money reading only without a weighing word just before it).
fn weight_before(tokens: &[String], at: usize) -> bool {
    tokens[at.saturating_sub(3)..at].iter().any(|t| {
        let t = t.to_lowercase();
        t.starts_with("weigh") || t == "lb" || t == "lbs"
    })
}

/// `amount` with thousands grouped ("2,000") and no decimals when it is whole.
fn grouped(amount: f64) -> String {
    if amount.fract() != 0.0 {
        return format!("{amount:.2}");
    }
    let digits = format!("{amount:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<(f64, f64, Currency)> {
        prices(text)
            .into_iter()
            .map(|p| (p.low, p.high, p.currency))
            .collect()
    }

    #[test]
    fn the_purpose_of_a_budget_is_the_thing_it_names_after_the_amount() {
        assert_eq!(
            purpose(
                "I set aside 120 dollars for sports gear this month and that is my hard ceiling."
            )
            .as_deref(),
            Some("sports gear")
        );
        assert_eq!(
            purpose("I can spend 200 euros on my ears this year.").as_deref(),
            Some("ears")
        );
        assert_eq!(
            purpose("After paying the flour supplier I have roughly 2000 euros spare at most for improvements this year.")
                .as_deref(),
            Some("improvements")
        );
        assert_eq!(
            purpose("Has a hard ceiling of 120 dollars for sports gear").as_deref(),
            Some("sports gear")
        );
        assert_eq!(
            purpose("Has 200 euros, wants custom molds").as_deref(),
            Some("custom molds")
        );
        // Money any purchase fits, a time, or no purpose at all.
        assert_eq!(
            purpose("I have about 600 pounds left from this year's pension lump sum that I can spend on something for myself."),
            None
        );
        assert_eq!(purpose("I have 500 dollars for the year."), None);
        assert_eq!(purpose("My budget is 300 euros."), None);
        // A want that is not a thing to buy.
        assert_eq!(
            purpose("Has limited budget (120 dollars), wants to track spending"),
            None
        );
        assert_eq!(
            purpose("I have 900 dollars and want to spend it on a laptop.").as_deref(),
            Some("laptop")
        );
        assert_eq!(purpose("I like sports gear."), None);
    }

    #[test]
    fn prices_are_read_with_their_currency_and_ranges_as_one_price() {
        use Currency::*;
        assert_eq!(
            read("Cushioned daily trainers are often found for about 100 to 110 dollars."),
            vec![(100.0, 110.0, Dollar)]
        );
        assert_eq!(
            read("Good everyday laptops cost between 400 and 700 pounds."),
            vec![(400.0, 700.0, Pound)]
        );
        assert_eq!(
            read("Racing shoes cost $200–$275, and a pair of socks $12."),
            vec![(200.0, 275.0, Dollar), (12.0, 12.0, Dollar)]
        );
        assert_eq!(
            read("A pair costs about 150 to 200 euros including the impression."),
            vec![(150.0, 200.0, Euro)]
        );
        assert_eq!(read("Seals cost 100-300 €."), vec![(100.0, 300.0, Euro)]);
        assert_eq!(
            read("I have roughly 2,000 euros spare, or £1,700."),
            vec![(2000.0, 2000.0, Euro), (1700.0, 1700.0, Pound)]
        );
        assert_eq!(read("It cost 85€ in 2019."), vec![(85.0, 85.0, Euro)]);
        assert_eq!(read("It cost 85 € new."), vec![(85.0, 85.0, Euro)]);
        assert_eq!(
            read("Tea costs 20 euros a packet."),
            vec![(20.0, 20.0, Euro)]
        );
        let words: Vec<String> = stated("From $85 (or 100 to 110 dollars).")
            .into_iter()
            .map(|s| s.text)
            .collect();
        assert_eq!(words, ["$85", "100 to 110 dollars"]);
    }

    #[test]
    fn numbers_that_are_not_money_are_not_prices() {
        for text in [
            "Jobsite saws weigh 20 to 40 kilograms.",
            "Night electricity is often 20 to 30 % cheaper.",
            "The press spread after 1450 to 1500 cities.",
            "A contractor saw weighs about 250 pounds.",
            "Version 1.5 came out in 2024.",
            "Screens are 13, 14, 15.6 or 17 inches.",
            "Night electricity costs 0.25 euros per kWh.",
            "A streaming plan costs $10 a month, or $100/year.",
            "Oolong costs 300 euros per kilogram.",
            "Loose-leaf tea costs about 10 to 20 euros per 100 grams.",
        ] {
            assert_eq!(read(text), vec![], "{text}");
        }
    }

    #[test]
    fn a_budget_is_one_amount_the_reader_can_spend() {
        for (text, amount, currency) in [
            (
                "Has limited budget (120 dollars), wants to track spending",
                120.0,
                Currency::Dollar,
            ),
            (
                "I can spend 200 euros on my ears this year",
                200.0,
                Currency::Euro,
            ),
            (
                "After paying the flour supplier I have roughly 2000 euros spare at most",
                2000.0,
                Currency::Euro,
            ),
            ("you want shoes under $100", 100.0, Currency::Dollar),
            ("Budget of £500–£600 for a laptop", 600.0, Currency::Pound),
        ] {
            assert_eq!(budget(text), Some(Budget { amount, currency }), "{text}");
        }
        for text in [
            "I paid 90 euros for my last pair",
            "Has knee pain, wants to jog",
            "Wants to spend less",
            "Can spend 100 dollars or 90 euros",
        ] {
            assert_eq!(budget(text), None, "{text}");
        }
        assert!(speaks_of_money("you have a budget"));
        assert!(!speaks_of_money("you have a budget of 120 dollars"));
        assert!(!speaks_of_money("you have knee pain"));
        let budget = budget("I can spend 2000 euros").expect("a budget");
        assert_eq!(budget.to_string(), "2,000 euros");
    }

    #[test]
    fn a_price_fits_a_budget_within_partly_or_above() {
        let budget = Budget {
            amount: 120.0,
            currency: Currency::Dollar,
        };
        assert_eq!(
            budget.fit("Trainers cost about 100 to 110 dollars."),
            Some(Fit::Within)
        );
        assert_eq!(budget.fit("They cost exactly $120."), Some(Fit::Within));
        assert_eq!(
            budget.fit("Prices run from $90 to $160."),
            Some(Fit::Partly)
        );
        assert_eq!(
            budget.fit("Carbon-plated shoes cost 200 to 275 dollars."),
            Some(Fit::Above)
        );
        assert_eq!(
            budget.fit("Trainers cost 110 dollars, racing flats 200 dollars."),
            Some(Fit::Partly)
        );
        assert_eq!(budget.fit("Trainers cost 100 euros."), None);
        assert_eq!(budget.fit("Cushioning protects the knee."), None);
    }
}
