//! A tone need is met by the report's form, not by a sentence: a report in short bullet points
//! never says "here are short bullet points", so the sentence matcher cannot see it, and a
//! sentence that says it would not meet it.
//!
//! The form a need asks for is read from its label's own words, independently of how Rudder
//! reads a style from a profile: "bullet" asks for a bulleted list, "checklist" or "tick" for
//! items to tick, "step" or "numbered" for a numbered list, "short" or "brief" for a body of at
//! most [`SHORT_BODY_WORDS`]. Every form the need asks for must hold; a need that asks for none
//! ("honest opinions", "references she can cite") is left to the sentence matcher.

use rudder::research::report::{AnswerStyle, Form};
use rudder_synth::planted::{NeedKind, PlantedNeed};

/// The most words a short report's body may have (the opening answer, sections and needs;
/// not the title, the question, citation marks or references): about a minute's reading.
pub const SHORT_BODY_WORDS: usize = 250;
/// Items a list needs to count as the report's form rather than an accident.
const MIN_ITEMS: usize = 2;

/// The forms a tone need asks for, read from its label's words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Asked {
    pub bullets: bool,
    pub checklist: bool,
    pub steps: bool,
    pub short: bool,
}

impl Asked {
    pub fn any(&self) -> bool {
        self.bullets || self.checklist || self.steps || self.short
    }
}

/// What `need` asks of the report's form (nothing for a need that is not a tone need).
pub fn asked(need: &PlantedNeed) -> Asked {
    if need.kind != NeedKind::Tone {
        return Asked::default();
    }
    let lower = need.statement.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let asks = |cues: &[&str]| words.iter().any(|w| cues.contains(w));
    Asked {
        bullets: asks(&["bullet", "bullets", "bulleted"]),
        checklist: asks(&["checklist", "tick"]),
        steps: asks(&["step", "steps", "numbered"]),
        short: asks(&["short", "brief", "concise"]),
    }
}

/// Whether the style Rudder read from a profile gives every form `asked` asks for (a
/// checklist is also bullet points).
pub fn style_gives(asked: Asked, style: &AnswerStyle) -> bool {
    asked.any()
        && (!asked.bullets || matches!(style.form, Form::Bullets | Form::Checklist))
        && (!asked.checklist || style.form == Form::Checklist)
        && (!asked.steps || style.form == Form::Steps)
        && (!asked.short || style.short)
}

/// Whether `markdown` has the form `need` asks for (false for a need that is not a tone need
/// or asks for no form).
pub fn met_by_form(need: &PlantedNeed, markdown: &str) -> bool {
    let asked = asked(need);
    let body = body_lines(markdown);
    let items = |is_item: &dyn Fn(&str) -> bool| body.iter().filter(|l| is_item(l)).count();
    let mut checks: Vec<bool> = Vec::new();
    if asked.bullets {
        checks.push(items(&|l| l.starts_with("- ") || l.starts_with("* ")) >= MIN_ITEMS);
    }
    if asked.checklist {
        checks.push(items(&|l| l.starts_with("- [ ] ")) >= MIN_ITEMS);
    }
    if asked.steps {
        checks.push(items(&is_numbered) >= MIN_ITEMS);
    }
    if asked.short {
        let words: usize = body
            .iter()
            .flat_map(|l| l.split_whitespace())
            .filter(|w| !w.contains("](#ref-") && *w != "-" && *w != "[" && *w != "]")
            .count();
        checks.push(words <= SHORT_BODY_WORDS);
    }
    !checks.is_empty() && checks.into_iter().all(|c| c)
}

/// "3. Sand the table" (not the escaped "1990\. …" of a sentence that starts with a year).
fn is_numbered(line: &str) -> bool {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && line[digits..].starts_with(". ")
}

/// The report's body: its lines after the title, without the question, italic notes and
/// headings, up to the references.
fn body_lines(markdown: &str) -> Vec<&str> {
    markdown
        .lines()
        .map(str::trim_end)
        .take_while(|l| *l != "## References")
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('*'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(kind: NeedKind, statement: &str) -> PlantedNeed {
        PlantedNeed {
            id: "u0-q0-n3".into(),
            kind,
            statement: statement.into(),
            specifics: Vec::new(),
            sessions: Vec::new(),
            addressing: Vec::new(),
            mentioning: Vec::new(),
        }
    }

    const BULLETS: &str = "# Shoes\n\n*Question:* Which shoes?\n\n*Written as you like answers: short, in bullet points (“Wants short bullet points”).*\n\nCushioned shoes suit beginners. [\\[1\\]](#ref-1)\n\n## Cushioning\n\n- Foam absorbs impact.\n- Thicker foam weighs more. [\\[1\\]](#ref-1)\n\n## References\n\n1. <a id=\"ref-1\"></a>Shoe — Shoe, passage 1\n2. <a id=\"ref-2\"></a>Foam — Foam, passage 1\n";

    #[test]
    fn short_bullet_points_are_met_by_a_short_bulleted_body_only() {
        let maya = need(
            NeedKind::Tone,
            "She wants short answers in bullet points she can read on a break between shifts.",
        );
        assert!(met_by_form(&maya, BULLETS));
        // The same words in paragraphs: no bullets.
        let prose = BULLETS
            .replace("- Foam", "Foam")
            .replace("- Thicker", "Thicker");
        assert!(!met_by_form(&maya, &prose));
        // Bullets, but far from short.
        let long = BULLETS.replace(
            "Cushioned shoes suit beginners.",
            &"Cushioned shoes suit beginners. ".repeat(80),
        );
        assert!(!met_by_form(&maya, &long));
        // The reference list's numbered lines are no steps, and a constraint is never met by
        // form.
        let harold = need(
            NeedKind::Tone,
            "He wants step-by-step numbered instructions he can print and follow.",
        );
        assert!(!met_by_form(&harold, BULLETS));
        assert!(met_by_form(
            &harold,
            &BULLETS
                .replace("- Foam", "1. Foam")
                .replace("- Thicker", "2. Thicker")
        ));
        assert!(!met_by_form(
            &need(
                NeedKind::Constraint,
                "She has a short budget in bullet points."
            ),
            BULLETS
        ));
        // A need that asks for no form is left to the sentence matcher.
        assert!(!met_by_form(
            &need(
                NeedKind::Tone,
                "Sam wants honest opinions, not balanced lists."
            ),
            BULLETS
        ));
        let lena = need(NeedKind::Tone, "She wants a checklist she can tick off.");
        assert!(!met_by_form(&lena, BULLETS));
        assert!(met_by_form(&lena, &BULLETS.replace("- ", "- [ ] ")));
    }

    #[test]
    fn a_style_gives_a_need_only_every_form_it_asks_for() {
        let maya = asked(&need(
            NeedKind::Tone,
            "She wants short answers in bullet points she can read on a break between shifts.",
        ));
        let style = |form, short| AnswerStyle {
            form,
            short,
            ..AnswerStyle::default()
        };
        assert!(style_gives(maya, &style(Form::Bullets, true)));
        assert!(!style_gives(maya, &style(Form::Bullets, false)));
        assert!(!style_gives(maya, &style(Form::Steps, true)));
        let lena = asked(&need(
            NeedKind::Tone,
            "She wants a checklist she can tick off.",
        ));
        assert!(style_gives(lena, &style(Form::Checklist, false)));
        assert!(!style_gives(lena, &style(Form::Bullets, false)));
        let sam = asked(&need(
            NeedKind::Tone,
            "Sam wants honest opinions, not balanced lists.",
        ));
        assert!(!sam.any());
        assert!(!style_gives(sam, &style(Form::Paragraphs, false)));
    }
}
