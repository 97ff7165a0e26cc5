//! Grammar pieces a stage puts in its JSON schema (the backend turns the schema into its own
//! constraint: a GBNF grammar on llama.cpp, `response_format` on a server).

/// A JSON-schema string of `min..=max` characters that cannot hold JSON or markup characters
/// (`{ } [ ] " \\ < >`) or a line break: prose a small model writes inside a JSON field, so
/// that debris such as `1}, {"insight":` cannot be decoded in the first place.
pub fn prose_string(min: usize, max: usize) -> serde_json::Value {
    serde_json::json!({
        "type": "string",
        "pattern": format!("^[^{{}}\\[\\]\"\\\\<>\\n]{{{min},{max}}}$"),
    })
}
