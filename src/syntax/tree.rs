//! The syntax tree. Every node carries the span of the text it came from.
//!
//! Chains of one precedence level (`a + b - c`) are kept flat, as a first
//! operand and a list of (operator, operand) pairs, so that a 200,000-term
//! sum is a wide node rather than a 200,000-deep one: evaluating and dropping
//! it needs no deep recursion.

use std::rc::Rc;

use crate::diagnostic::Span;

#[derive(Debug, Clone)]
pub struct Name {
    /// Shared, so that the interpreter names records and results without
    /// copying it.
    pub text: Rc<str>,
    pub span: Span,
    /// The name's number, unique in the process: the key under which the
    /// checker's resolver says what the name means (`check::resolve`).
    pub id: NameId,
}

/// A name's number. Numbers come from one counter for the whole process, so
/// names of different REPL entries, and of routines kept from earlier ones,
/// never share one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NameId(pub u32);

static NEXT_NAME: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Name {
    pub fn new(text: impl Into<Rc<str>>, span: Span) -> Name {
        let id = NEXT_NAME.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Name {
            text: text.into(),
            span,
            id: NameId(id),
        }
    }
}

/// Two names are equal when their text and place are: the number only
/// tells occurrences apart for the resolver.
impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.text == other.text && self.span == other.span
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
    pub const ALL: [TypeName; 5] = [
        TypeName::Integer,
        TypeName::Real,
        TypeName::Boolean,
        TypeName::Str,
        TypeName::Matrix,
    ];

    pub fn from_name(name: &str) -> Option<TypeName> {
        TypeName::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The type `name` names in any case (`real`), for a hint.
    pub fn from_name_in_any_case(name: &str) -> Option<TypeName> {
        TypeName::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }

    /// What `:help` prints for the type, and hover shows over its name.
    pub fn help_line(self) -> String {
        format!("{} (a type): {}\n", self.name(), self.help())
    }

    /// What a value of the type is.
    pub fn help(self) -> &'static str {
        match self {
            TypeName::Integer => {
                "a whole number of 64 bits; arithmetic that leaves that range is an error"
            }
            TypeName::Real => {
                "a 64-bit floating-point number; an Integer given to a Real widens to it"
            }
            TypeName::Boolean => "`true` or `false`, as comparisons give",
            TypeName::Str => "text in single quotes; `+` joins two",
            TypeName::Matrix => "rows and columns of Reals, written `[[1, 2], [3, 4]]`",
        }
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
    /// A `var` parameter: it names the caller's variable.
    pub by_ref: bool,
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
    /// Leaves the innermost loop.
    Break,
    /// Goes on with the innermost loop's next turn.
    Continue,
    Error,
}

/// A whole file (or one REPL entry).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Program {
    pub name: Option<Name>,
    pub body: Vec<Stmt>,
}

/// Calls `f` on every name `stmts` hold, routines' headers and bodies
/// included: what the resolver and the tools that follow names walk.
pub fn each_name<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a Name)) {
    for stmt in stmts {
        stmt_names(stmt, f);
    }
}

fn stmt_names<'a>(stmt: &'a Stmt, f: &mut dyn FnMut(&'a Name)) {
    match &stmt.kind {
        StmtKind::Empty | StmtKind::Error | StmtKind::Break | StmtKind::Continue => {}
        StmtKind::Assign { target, value } => {
            f(target);
            expr_names(value, f);
        }
        StmtKind::AssignIndex {
            target,
            row,
            col,
            value,
        } => {
            f(target);
            for e in [row, col, value] {
                expr_names(e, f);
            }
        }
        StmtKind::Expr(e) => expr_names(e, f),
        StmtKind::Block(body) | StmtKind::Tape { body, .. } => each_name(body, f),
        StmtKind::If {
            branches,
            otherwise,
        } => {
            for (cond, then) in branches {
                expr_names(cond, f);
                stmt_names(then, f);
            }
            if let Some(o) = otherwise {
                stmt_names(o, f);
            }
        }
        StmtKind::For {
            var,
            from,
            to,
            body,
            ..
        } => {
            f(var);
            expr_names(from, f);
            expr_names(to, f);
            stmt_names(body, f);
        }
        StmtKind::While { cond, body } => {
            expr_names(cond, f);
            stmt_names(body, f);
        }
        StmtKind::Repeat { body, cond } => {
            each_name(body, f);
            expr_names(cond, f);
        }
        StmtKind::Var(decls) => decls.iter().for_each(|d| f(&d.name)),
        StmtKind::Routine(r) => {
            f(&r.name);
            r.params.iter().for_each(|p| f(&p.name));
            r.locals.iter().for_each(|d| f(&d.name));
            each_name(&r.body, f);
        }
    }
}

fn expr_names<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Name)) {
    match &e.kind {
        ExprKind::Integer(_)
        | ExprKind::Real(_)
        | ExprKind::Str(_)
        | ExprKind::Bool(_)
        | ExprKind::Error => {}
        ExprKind::Name(name) => f(name),
        ExprKind::Matrix(rows) => rows
            .iter()
            .flat_map(|(r, _)| r)
            .for_each(|x| expr_names(x, f)),
        ExprKind::Call { name, args } => {
            f(name);
            for arg in args {
                expr_names(&arg.value, f);
                arg.width
                    .iter()
                    .chain(&arg.decimals)
                    .for_each(|x| expr_names(x, f));
            }
        }
        ExprKind::Index { target, row, col } => {
            for x in [target, row, col] {
                expr_names(x, f);
            }
        }
        ExprKind::Unary { operand, .. } => expr_names(operand, f),
        ExprKind::Chain { first, rest } => {
            expr_names(first, f);
            rest.iter().for_each(|(_, _, x)| expr_names(x, f));
        }
    }
}
