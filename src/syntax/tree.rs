//! The syntax tree. Every node carries the span of the text it came from.
//!
//! Chains of one precedence level (`a + b - c`) are kept flat, as a first
//! operand and a list of (operator, operand) pairs, so that a 200,000-term
//! sum is a wide node rather than a 200,000-deep one: evaluating and dropping
//! it needs no deep recursion.

use std::rc::Rc;

use crate::diagnostic::Span;

#[derive(Debug, Clone, PartialEq)]
pub struct Name {
    pub text: String,
    pub span: Span,
    /// What the interpreter found this name to be, kept so that a name read
    /// in a loop is looked up once rather than on every turn.
    pub found: Found,
}

impl Name {
    pub fn new(text: String, span: Span) -> Name {
        Name {
            text,
            span,
            found: Found::default(),
        }
    }
}

/// A name's lookups, remembered: the global variable it named (the globals
/// table's number and the slot's index in it) and the builtin it names, if
/// any. Only the interpreter writes it; two names are equal whatever it holds.
#[derive(Clone, Default)]
pub struct Found {
    pub global: std::cell::Cell<(u32, u32)>,
    /// 0: not looked up yet; 1: no builtin; `i + 2`: the builtin at index `i`.
    pub builtin: std::cell::Cell<u16>,
}

impl PartialEq for Found {
    fn eq(&self, _: &Found) -> bool {
        true
    }
}

impl std::fmt::Debug for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Found")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Divide,
    IntDiv,
    Mod,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "or",
            BinaryOp::And => "and",
            BinaryOp::Eq => "=",
            BinaryOp::Ne => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Divide => "/",
            BinaryOp::IntDiv => "div",
            BinaryOp::Mod => "mod",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Not,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Integer(i64),
    Real(f64),
    Str(String),
    Bool(bool),
    /// A variable, a builtin constant (`Inf`) or a routine called without
    /// parentheses; which one is decided when it runs.
    Name(Name),
    /// Rows of element expressions; `[a, b]` is one row.
    Matrix(Vec<(Vec<Expr>, Span)>),
    Call {
        name: Name,
        args: Vec<Arg>,
    },
    Index {
        target: Box<Expr>,
        row: Box<Expr>,
        col: Box<Expr>,
    },
    Unary {
        op: UnaryOp,
        op_span: Span,
        operand: Box<Expr>,
    },
    /// `first op1 e1 op2 e2 ...`, grouped to the left.
    Chain {
        first: Box<Expr>,
        rest: Vec<(BinaryOp, Span, Expr)>,
    },
    /// Stands in for text that did not parse; its error is already reported.
    Error,
}

/// A call argument; `width` and `decimals` are the `x:w:d` field specifiers
/// that only `Write` and `WriteLn` accept.
#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    pub value: Expr,
    pub width: Option<Expr>,
    pub decimals: Option<Expr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeName {
    Integer,
    Real,
    Boolean,
    Str,
    Matrix,
}

impl TypeName {
    pub fn from_name(name: &str) -> Option<TypeName> {
        Some(match name {
            "Integer" => TypeName::Integer,
            "Real" => TypeName::Real,
            "Boolean" => TypeName::Boolean,
            "String" => TypeName::Str,
            "Matrix" => TypeName::Matrix,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TypeName::Integer => "Integer",
            TypeName::Real => "Real",
            TypeName::Boolean => "Boolean",
            TypeName::Str => "String",
            TypeName::Matrix => "Matrix",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct VarDecl {
    pub name: Name,
    pub ty: Option<(TypeName, Span)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: Name,
    pub ty: Option<(TypeName, Span)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Routine {
    pub name: Name,
    pub is_function: bool,
    pub params: Vec<Param>,
    pub result: Option<(TypeName, Span)>,
    pub locals: Vec<VarDecl>,
    pub body: Vec<Stmt>,
    /// The header, `procedure Name(...)`, for messages about the routine.
    pub header: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    Empty,
    Assign {
        target: Name,
        value: Expr,
    },
    AssignIndex {
        target: Name,
        row: Expr,
        col: Expr,
        value: Expr,
    },
    /// A procedure call, or at the REPL a bare expression to print.
    Expr(Expr),
    Block(Vec<Stmt>),
    /// `if c1 then s1 else if c2 then s2 ... else s`: a chain is one
    /// statement with its branches in order, so a long chain nests nothing.
    If {
        branches: Vec<(Expr, Stmt)>,
        otherwise: Option<Box<Stmt>>,
    },
    For {
        var: Name,
        from: Expr,
        to: Expr,
        down: bool,
        body: Box<Stmt>,
    },
    While {
        cond: Expr,
        body: Box<Stmt>,
    },
    Repeat {
        body: Vec<Stmt>,
        cond: Expr,
    },
    Tape {
        body: Vec<Stmt>,
        end: Span,
    },
    Var(Vec<VarDecl>),
    Routine(Rc<Routine>),
    Error,
}

/// A whole file (or one REPL entry).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Program {
    pub name: Option<Name>,
    pub body: Vec<Stmt>,
}
