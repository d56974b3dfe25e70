//! The values a program computes with.

use std::rc::Rc;

use ndarray::Array2;

use crate::syntax::tree::TypeName;
use crate::tape::NodeRef;

/// A value. Numbers and matrices may remember the tape record that made them
/// (`Some`), which is how `Blame(x)` finds a variable's blame. An Integer on
/// a tape keeps its exact value; its record holds it as an f64.
///
/// The tag is a whole word (`repr(u64)`): with a one-byte tag, copying a
/// value read the seven bytes after it in overlapping pieces, each a stall
/// when the value had just been written.
#[derive(Debug, Clone)]
#[repr(u64)]
pub enum Value {
    Int(i64, Option<NodeRef>),
    Real(f64, Option<NodeRef>),
    Bool(bool),
    Str(Rc<String>),
    Matrix(Rc<Array2<f64>>, Option<NodeRef>),
}

impl Value {
    /// Whether `self` is `other` itself: the same number (bit for bit), or
    /// the same matrix (not an equal copy).
    pub fn same(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Int(a, _), Value::Int(b, _)) => a == b,
            (Value::Real(a, _), Value::Real(b, _)) => a.to_bits() == b.to_bits(),
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => Rc::ptr_eq(a, b),
            (Value::Matrix(a, _), Value::Matrix(b, _)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// An Integer on no tape.
    pub fn int(n: i64) -> Value {
        Value::Int(n, None)
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Int(..) => "Integer",
            Value::Real(..) => "Real",
            Value::Bool(_) => "Boolean",
            Value::Str(_) => "String",
            Value::Matrix(..) => "Matrix",
        }
    }

    /// "an Integer", "a 2×3 matrix": for messages.
    pub fn describe(&self) -> String {
        match self {
            Value::Int(..) => "an Integer".to_string(),
            Value::Real(..) => "a Real".to_string(),
            Value::Bool(_) => "a Boolean".to_string(),
            Value::Str(_) => "a String".to_string(),
            Value::Matrix(m, _) => format!("a {}×{} matrix", m.nrows(), m.ncols()),
        }
    }

    /// Whether the value may be stored where `ty` was declared (an Integer
    /// may stand where a Real is wanted).
    pub fn fits(&self, ty: TypeName) -> bool {
        matches!(
            (self, ty),
            (Value::Int(..), TypeName::Integer | TypeName::Real)
                | (Value::Real(..), TypeName::Real)
                | (Value::Bool(_), TypeName::Boolean)
                | (Value::Str(_), TypeName::Str)
                | (Value::Matrix(..), TypeName::Matrix)
        )
    }

    pub fn tag(&self) -> Option<NodeRef> {
        match self {
            Value::Int(_, t) | Value::Real(_, t) | Value::Matrix(_, t) => *t,
            _ => None,
        }
    }

    pub fn untagged(self) -> Value {
        match self {
            Value::Int(n, _) => Value::Int(n, None),
            Value::Real(x, _) => Value::Real(x, None),
            Value::Matrix(m, _) => Value::Matrix(m, None),
            other => other,
        }
    }

    pub fn as_number(&self) -> Option<f64> {
        match self {
            Value::Int(n, _) => Some(*n as f64),
            Value::Real(x, _) => Some(*x),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value is three words with its tag a whole word, and a value's
    /// record is one word: a value is then written and read in words, not
    /// in pieces that a later whole read must wait for (7.8% of a small
    /// training step).
    #[test]
    fn a_value_is_three_words_written_whole() {
        assert_eq!(std::mem::size_of::<Value>(), 3 * 8);
        assert_eq!(std::mem::size_of::<Option<NodeRef>>(), 8);
    }
}
