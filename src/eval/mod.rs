//! The evaluation side: values, scopes, statements and the builtins.

pub mod builtins;
pub mod constants;
pub mod files;
pub mod format;
pub mod globals;
pub mod interp;
pub mod plot;
pub mod progress;
pub mod random;
pub mod value;

pub use interp::{Flow, Interpreter, Stop};
pub use value::Value;
