//! Retrieval machinery shared by the history and the document library: the SQLite open and
//! migrations ([`sqlite`]), the BM25 index with its one analyzer ([`text_index`]), int8
//! vectors scanned exactly ([`vectors`]) and reciprocal rank fusion ([`fusion`]).
//!
//! The same words rank the same way in both sources, and a fix lands in both. Each source
//! keeps only what is its own: its tables, its import or extraction, the fields it filters
//! on, and how rows add up to results (a history session scores as its best chunk; a document
//! chunk is its own result).

pub mod fusion;
pub mod sqlite;
pub mod text_index;
pub mod vectors;

pub use fusion::{reciprocal_rank_fusion, RRF_K};
pub use text_index::{IndexError, Layout, TextIndex};
pub use vectors::{Int8Matrix, QuantizedVector};
