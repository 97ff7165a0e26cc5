//! Checks on model output that need no model: whether a cited passage supports a sentence
//! ([`matchers`]), and the plain-text checks of [`text`] (sentences, repetition, debris, the
//! form of a finding). The research loop refuses output that fails them (and asks once more
//! with the reason); `rudder eval quality` measures reports with the same code.

pub mod matchers;
pub mod text;

pub use matchers::{SupportMatcher, SUPPORT_THRESHOLD};
