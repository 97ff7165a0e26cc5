//! Guides: a small library of neutral documents on the subjects of some planted questions, for
//! the reports to search beside the Wikipedia corpus (`rudder eval quality --guides`).
//!
//! The Wikipedia summaries hold nothing on which running shoes to buy or which earplugs a
//! drummer needs, so a report on a planted question has nothing to address a need *with*, and
//! need uptake is 0 for every system whatever the profile knows. A guide is what a person
//! might keep in their documents: a buying guide that states facts (cushioning and knees, wide
//! fittings, prices) and says nothing about the reader. Both systems search the same guides,
//! so what history adds is the only difference: a report without history can state "a
//! well-cushioned shoe lowers the load on the knee"; only one that knows the reader's knee can
//! tell *her* to pick one.

use std::path::{Path, PathBuf};

use crate::EvalError;
use rudder::embed::Embedder;
use rudder::history::Progress;
use rudder::sources::docs::Library;

/// The guides, by the planted question whose subject they cover (`data/guides/`).
pub const GUIDES: &[(&str, &str)] = &[
    ("u0-q0", include_str!("../../data/guides/u0-q0.md")),
    ("u1-q0", include_str!("../../data/guides/u1-q0.md")),
    ("u2-q0", include_str!("../../data/guides/u2-q0.md")),
    ("u3-q0", include_str!("../../data/guides/u3-q0.md")),
    ("u4-q0", include_str!("../../data/guides/u4-q0.md")),
    ("u5-q0", include_str!("../../data/guides/u5-q0.md")),
    ("u6-q0", include_str!("../../data/guides/u6-q0.md")),
    ("u7-q0", include_str!("../../data/guides/u7-q0.md")),
];

/// The planted questions a guide covers.
pub fn questions() -> Vec<&'static str> {
    GUIDES.iter().map(|(q, _)| *q).collect()
}

/// The folder of the guides' document library under the run's scratch folder.
pub fn library_dir(work_dir: &Path) -> PathBuf {
    work_dir.join("guides-library")
}

/// Writes the guides under `work_dir/guides/` and indexes them (text and embeddings) as a
/// document library in [`library_dir`]. Idempotent: a second run re-reads nothing that did
/// not change.
pub fn index(
    work_dir: &Path,
    embedder: &dyn Embedder,
    embed_model: &str,
    progress: &dyn Progress,
) -> Result<(), EvalError> {
    let files = work_dir.join("guides");
    std::fs::create_dir_all(&files).map_err(|source| EvalError::Io {
        path: files.clone(),
        source,
    })?;
    for (question, text) in GUIDES {
        let path = files.join(format!("{question}.md"));
        if std::fs::read_to_string(&path).ok().as_deref() != Some(*text) {
            std::fs::write(&path, text).map_err(|source| EvalError::Io {
                path: path.clone(),
                source,
            })?;
        }
    }
    let dir = library_dir(work_dir);
    let docs_error = |e: rudder::sources::docs::DocsError| {
        EvalError::Config(format!("guides library {}: {e}", dir.display()))
    };
    let mut library = Library::open(&dir).map_err(docs_error)?;
    library
        .add(&files, Some((embedder, embed_model)), progress)
        .map_err(docs_error)?;
    library.release_writer().map_err(docs_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_guide_covers_its_question_s_needs_and_names_no_reader() {
        let dir = tempfile::tempdir().unwrap();
        let set = rudder_synth::planted::write_planted_set(0, dir.path()).unwrap();
        for (question, text) in GUIDES {
            let planted = set
                .users
                .iter()
                .flat_map(|u| u.questions.iter())
                .find(|q| q.id == *question)
                .unwrap_or_else(|| panic!("{question} is no planted question"));
            // The guide holds something a report could address each need with (a tone need
            // is met by the report's form, not by a fact).
            let lower = text.to_lowercase();
            for need in &planted.needs {
                if need.kind == rudder_synth::planted::NeedKind::Tone {
                    continue;
                }
                assert!(
                    need.specifics
                        .iter()
                        .any(|s| lower.contains(&s.to_lowercase())),
                    "{question}: the guide names none of {:?} ({})",
                    need.specifics,
                    need.statement
                );
            }
            // Neutral: a guide states facts; only a report that knows its reader addresses them.
            let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
            for pronoun in ["you", "your", "she", "her", "he", "his"] {
                assert!(
                    !words.contains(&pronoun),
                    "{question}: the guide says \"{pronoun}\""
                );
            }
        }
    }
}
