//! Bounds on structured output, so that a grammar-constrained answer always closes within its
//! token budget.
//!
//! A schema with an array that has no `maxItems` or a string that has no `maxLength` lets a
//! small model go on until `max_tokens` cuts the JSON open ("EOF while parsing"): SmolLM2-135M
//! asked for an array of questions writes questions until the limit. [`bound`] gives every
//! such array and string a bound, [`worst_case_chars`] says how long the longest answer the
//! bounded schema allows can be (one token per character, as every budget in Rudder is sized),
//! and [`fit`] tightens the bounds until that fits a token budget.

use serde_json::{Map, Value};

use crate::LlmError;

/// `maxItems` given to an array that has none.
pub const DEFAULT_MAX_ITEMS: u64 = 8;
/// `maxLength` given to a free string (no length, pattern, enum or format) that has none.
pub const DEFAULT_MAX_LENGTH: u64 = 160;
/// Characters of the longest number the grammar writes (sign, digits, fraction, exponent).
const NUMBER_CHARS: usize = 24;
/// How many times [`fit`] halves the bounds before it gives up.
const MAX_TIGHTENINGS: usize = 12;

/// `schema` with a bound on every array and free string that has none
/// ([`DEFAULT_MAX_ITEMS`], [`DEFAULT_MAX_LENGTH`]). Bounds the schema already has are kept.
pub fn bound(schema: &Value) -> Value {
    let mut out = schema.clone();
    walk(&mut out, &mut |node| {
        let kind = node.get("type").and_then(Value::as_str).map(str::to_owned);
        match kind.as_deref() {
            Some("array") if !node.contains_key("maxItems") => {
                let min = node.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                node.insert("maxItems".into(), DEFAULT_MAX_ITEMS.max(min).into());
            }
            Some("string") if free_string(node) && !node.contains_key("maxLength") => {
                let min = node.get("minLength").and_then(Value::as_u64).unwrap_or(0);
                node.insert("maxLength".into(), DEFAULT_MAX_LENGTH.max(min).into());
            }
            _ => {}
        }
    });
    out
}

/// The longest JSON text (characters) an answer under `schema` can be, allowing a space at
/// every place the grammar allows one; `None` when something in it is unbounded (an array
/// without `maxItems`, a free string without `maxLength`, an object without properties).
pub fn worst_case_chars(schema: &Value) -> Option<usize> {
    let node = schema.as_object()?;
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        return values.iter().map(|v| v.to_string().len()).max();
    }
    if let Some(value) = node.get("const") {
        return Some(value.to_string().len());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = node.get(key).and_then(Value::as_array) {
            return options
                .iter()
                .map(worst_case_chars)
                .try_fold(0, |m, c| c.map(|c| m.max(c)));
        }
    }
    match node.get("type").and_then(Value::as_str)? {
        "string" => {
            let chars = match node.get("maxLength").and_then(Value::as_u64) {
                Some(max) => max as usize,
                None => pattern_max(node)?,
            };
            Some(chars + 2)
        }
        "integer" | "number" => Some(NUMBER_CHARS),
        "boolean" => Some(5),
        "null" => Some(4),
        "array" => {
            let items = node.get("maxItems").and_then(Value::as_u64)? as usize;
            let item = match node.get("items") {
                Some(items) => worst_case_chars(items)?,
                None => return None,
            };
            // "[", each item with ", " before it, "]", and a space inside each bracket.
            Some(4 + items * (item + 2))
        }
        "object" => {
            let properties = node.get("properties").and_then(Value::as_object)?;
            // "{ ", then `"key": value` with ", " between, then " }".
            let mut chars = 4;
            for (key, value) in properties {
                chars += key.len() + 2 + 2 + worst_case_chars(value)? + 2;
            }
            Some(chars)
        }
        _ => None,
    }
}

/// `schema`, bounded ([`bound`]) and with its bounds halved as often as needed for the longest
/// answer to fit `max_tokens`. An error when even the tightest bounds (each `maxItems` and
/// `maxLength` at its minimum) do not fit, or the schema has a part no bound can close.
pub fn fit(schema: &Value, max_tokens: u32) -> Result<Value, LlmError> {
    let budget = max_tokens as usize;
    let mut out = bound(schema);
    for _ in 0..=MAX_TIGHTENINGS {
        match worst_case_chars(&out) {
            None => {
                return Err(LlmError::Grammar(
                    "the schema has a part with no bound (an object without properties, or a \
                     string pattern without a length): its answer could run past any token \
                     limit"
                        .into(),
                ))
            }
            Some(chars) if chars <= budget => return Ok(out),
            Some(_) => {
                if !halve(&mut out) {
                    break;
                }
            }
        }
    }
    let needed = worst_case_chars(&out).unwrap_or(usize::MAX);
    Err(LlmError::Grammar(format!(
        "the shortest bounds this schema allows still need {needed} tokens, more than the \
         {max_tokens} allowed: raise the token limit or lower the schema's minItems and \
         minLength"
    )))
}

/// Halves every `maxItems` and `maxLength` (not below its minimum, nor below 1); false when
/// none could shrink.
pub fn halve(schema: &mut Value) -> bool {
    let mut shrunk = false;
    walk(schema, &mut |node| {
        for (max_key, min_key) in [("maxItems", "minItems"), ("maxLength", "minLength")] {
            let Some(max) = node.get(max_key).and_then(Value::as_u64) else {
                continue;
            };
            let min = node
                .get(min_key)
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .max(1);
            let half = (max / 2).max(min);
            if half < max {
                node.insert(max_key.into(), half.into());
                shrunk = true;
            }
        }
    });
    shrunk
}

/// A string whose length only `maxLength` bounds: no pattern, enum, const or format of its own.
fn free_string(node: &Map<String, Value>) -> bool {
    !["pattern", "enum", "const", "format"]
        .iter()
        .any(|k| node.contains_key(*k))
}

/// The largest repeat count a string pattern ends with (`…{10,200}$` gives 200), the way
/// [`crate::grammar::prose_string`] bounds prose.
fn pattern_max(node: &Map<String, Value>) -> Option<usize> {
    let pattern = node.get("pattern")?.as_str()?;
    let body = pattern.trim_end_matches('$').strip_suffix('}')?;
    let open = body.rfind('{')?;
    let counts = &body[open + 1..];
    counts.rsplit(',').next()?.trim().parse().ok()
}

/// Calls `visit` on every schema object in `value`, the outermost first.
fn walk(value: &mut Value, visit: &mut dyn FnMut(&mut Map<String, Value>)) {
    match value {
        Value::Object(node) => {
            visit(node);
            for child in node.values_mut() {
                walk(child, visit);
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, visit);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The schema of the report in #31: questions with a confidence, no bounds at all.
    fn questions() -> Value {
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"type": "string"},
                            "confidence": {"type": "number"},
                        },
                        "required": ["question", "confidence"],
                    },
                },
            },
            "required": ["questions"],
        })
    }

    #[test]
    fn an_unbounded_schema_has_no_worst_case_until_it_is_bounded() {
        assert_eq!(worst_case_chars(&questions()), None);
        let bounded = bound(&questions());
        let array = &bounded["properties"]["questions"];
        assert_eq!(array["maxItems"], DEFAULT_MAX_ITEMS);
        assert_eq!(
            array["items"]["properties"]["question"]["maxLength"],
            DEFAULT_MAX_LENGTH
        );
        // Numbers need no bound; the rest of the schema is as it was.
        assert!(array["items"]["properties"]["confidence"]
            .get("maxLength")
            .is_none());
        assert_eq!(bounded["required"], json!(["questions"]));
        let chars = worst_case_chars(&bounded).unwrap();
        // Eight items of a 160-character question and a number, and the JSON around them.
        assert!(
            (8 * (160 + 24)..8 * (160 + 24) + 400).contains(&chars),
            "{chars}"
        );
    }

    #[test]
    fn bounds_the_schema_has_are_kept_and_minimums_respected() {
        let schema = json!({
            "type": "array", "minItems": 12,
            "items": {"type": "string", "maxLength": 30},
        });
        let bounded = bound(&schema);
        assert_eq!(bounded["maxItems"], 12, "never below minItems");
        assert_eq!(bounded["items"]["maxLength"], 30);
        // Strings bounded otherwise are left alone.
        let patterned = bound(&crate::grammar::prose_string(10, 200));
        assert!(patterned.get("maxLength").is_none());
        assert_eq!(worst_case_chars(&patterned), Some(202));
        let choice = json!({"type": "string", "enum": ["yes", "no"]});
        assert_eq!(worst_case_chars(&bound(&choice)), Some(5));
    }

    #[test]
    fn fit_halves_the_bounds_until_the_longest_answer_fits() {
        let fitted = fit(&questions(), 512).unwrap();
        let chars = worst_case_chars(&fitted).unwrap();
        assert!(chars <= 512, "{chars}");
        let array = &fitted["properties"]["questions"];
        assert!(array["maxItems"].as_u64().unwrap() < DEFAULT_MAX_ITEMS);
        // A budget that holds the defaults keeps them.
        let roomy = fit(&questions(), 4096).unwrap();
        assert_eq!(roomy, bound(&questions()));
    }

    #[test]
    fn what_no_bound_can_close_is_an_error_that_says_why() {
        let free = json!({"type": "object"});
        let err = fit(&free, 512).unwrap_err().to_string();
        assert!(err.contains("no bound"), "{err}");
        let long = json!({"type": "array", "minItems": 50, "items": {"type": "integer"}});
        let err = fit(&long, 100).unwrap_err().to_string();
        assert!(err.contains("raise the token limit"), "{err}");
    }
}
