//! JSON schema → GBNF grammar for llama.cpp's grammar sampler.
//!
//! llama.cpp's converter allows free whitespace (up to two newlines and twenty spaces) between
//! tokens. Small models happily spend their whole budget there, and every whitespace choice
//! costs a grammar step, so the `space` rule is narrowed to at most one plain space.

use rudder_llm::LlmError;

/// Converts a JSON schema into a compact GBNF grammar whose root rule is `root`.
pub fn schema_to_grammar(schema: &serde_json::Value) -> Result<String, LlmError> {
    let text = serde_json::to_string(schema).map_err(|e| LlmError::Grammar(e.to_string()))?;
    let grammar = llama_cpp_2::json_schema_to_grammar(&text)
        .map_err(|e| LlmError::Grammar(format!("{e}")))?;
    Ok(compact_whitespace(&grammar))
}

/// Replaces the converter's `space` rule with one that allows at most a single space.
pub fn compact_whitespace(grammar: &str) -> String {
    grammar
        .lines()
        .map(|line| {
            if line.trim_start().starts_with("space ::=") {
                "space ::= \" \"?".to_string()
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rudder_llm::grammar::prose_string;

    #[test]
    fn space_rule_is_narrowed() {
        let g = "root ::= \"{\" space \"}\"\nspace ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n";
        let c = compact_whitespace(g);
        assert!(c.contains("space ::= \" \"?"));
        assert!(!c.contains("{0,20}"));
        assert!(c.contains("root ::="));
    }

    #[test]
    fn a_real_schema_converts() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "n": {"type": "integer", "minimum": 0}},
            "required": ["name", "n"],
            "additionalProperties": false
        });
        let g = schema_to_grammar(&schema).unwrap();
        assert!(g.contains("root ::="), "{g}");
        assert!(g.contains("space ::= \" \"?"), "{g}");
    }

    #[test]
    fn properties_keep_their_declared_order() {
        // Evidence before the conclusion: "reason" is declared (and must be generated) before
        // "grade", though it sorts after it.
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"reason": {"type": "string"}, "grade": {"type": "integer"}},
            "required": ["reason", "grade"],
        });
        let g = schema_to_grammar(&schema).unwrap();
        let root = g.lines().find(|l| l.starts_with("root ::=")).unwrap();
        let reason = root.find("reason").expect(root);
        let grade = root.find("grade").expect(root);
        assert!(reason < grade, "{root}");
    }

    #[test]
    fn prose_strings_exclude_json_and_markup_characters() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"text": prose_string(10, 200)},
            "required": ["text"],
        });
        let g = schema_to_grammar(&schema).unwrap();
        assert!(g.contains("{10,200}"), "{g}");
        assert!(g.contains(r#"[^{}\[\]"\\<>\n]"#), "{g}");
    }
}
