//! The syntax side: source text to tokens to a syntax tree.
//!
//! It knows nothing of matrices, values or the tape: what it hands on is a
//! [`tree::Program`] and diagnostics.

pub mod lexer;
pub mod parser;
pub mod tree;

pub use parser::parse;
