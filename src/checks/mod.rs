//! Checks on model output: whether a cited passage supports a sentence
//! ([`matchers`]), and the plain-text checks of [`text`] (sentences, repetition, debris, the
//! form of a finding), and amounts of money read by code ([`money`]: prices and a reader's
//! budget, compared in code). One check asks the model: whether a passage states a sentence, which way
//! round ([`judge`]), the relation an embedding cannot see. The research loop refuses output
//! that fails them (and asks once more with the reason); `rudder eval quality` measures reports
//! with the same code.

pub mod judge;
pub mod matchers;
pub mod money;
pub mod text;

pub use judge::SUPPORT_JUDGE_THRESHOLD;
pub use matchers::{SupportMatcher, SUPPORT_THRESHOLD};
