//! Finding what a person can do about an error ([`crate::remedy::Remedy`]) through the errors
//! it wraps and its causes. It knows every error type of the engine, so it sits above them all
//! and nothing in the engine uses it; the faces do.

use std::error::Error as StdError;

use crate::remedy::Remedy;

/// The remedy an error names, looking through the errors it wraps and its causes.
pub fn remedy_of(error: &(dyn StdError + 'static)) -> Option<Remedy> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(r) = named_by(e) {
            return Some(r);
        }
        next = e.source();
    }
    None
}

/// The remedy `e` itself names, if it is one of the engine's errors.
fn named_by(e: &(dyn StdError + 'static)) -> Option<Remedy> {
    macro_rules! try_types {
        ($($t:ty),* $(,)?) => {
            $(if let Some(e) = e.downcast_ref::<$t>() {
                return e.remedy();
            })*
        };
    }
    try_types!(
        crate::app::AppError,
        crate::session::runner::RunError,
        crate::research::ResearchError,
        crate::session::SessionError,
        crate::Error,
        crate::models::ModelError,
        crate::llm::OpenError,
        crate::embed::EmbedError,
        crate::history::HistoryError,
        crate::history::store::StoreError,
        crate::sources::docs::DocsError,
    );
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remedy_is_found_through_wrappers_and_causes() {
        let missing = crate::models::ModelError::Missing {
            model: "m".into(),
            path: "/nowhere/m.gguf".into(),
        };
        let message = missing.to_string();
        assert!(!message.contains("rudder "), "{message}");
        let wrapped = crate::session::runner::RunError::Engine(crate::Error::Model(missing));
        assert_eq!(remedy_of(&wrapped), Some(Remedy::FetchModel("m".into())));
        let research = crate::research::ResearchError::NoSources;
        assert_eq!(remedy_of(&research), Some(Remedy::AddSources));
        let io = std::io::Error::other("disk full");
        assert_eq!(remedy_of(&io), None);
    }
}
