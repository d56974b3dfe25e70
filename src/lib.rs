//! tapec: an interpreter for the tape language.

pub mod diagnostic;
pub mod syntax;
