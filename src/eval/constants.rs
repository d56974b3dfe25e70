//! Operators on operands of kinds they refuse (`'a' + 1`, `1 div 2.0`,
//! `-'a'`, `not 1`, `n div x` of a declared Integer and Real), and values
//! of a kind a declared type refuses (`n := x / 2` of an Integer `n`): the
//! checks cannot judge these, as the operators' rules are the evaluator's,
//! so the evaluator itself judges each operation of an expression made of
//! literals, variables of declared types, calls of functions declared with
//! a type and operators before the program runs, and what it refuses is a
//! check error in the run's own words.
//!
//! Row and column numbers, matrix elements and `Write`'s field widths are
//! judged the same way, by the evaluator's own code: a literal by its
//! value (a field width has a fixed range, 0 to 1000, so `x:2000` is
//! refused as written, while a row number is left to the run, which
//! knows the matrix), anything else only when its kind is a String or a
//! Boolean, which the run refuses whatever the value.
//!
//! It judges kinds, not values: each operation is evaluated on one value of
//! each operand's kind that no operator refuses for its value (1, 1.0,
//! `'s'`, and a Boolean that does not cut `and` or `or` short), at the
//! operands' places. So `1 div 0` and an overflow are still found when
//! they run, and an operand the run would not reach (after `true or`) is
//! judged all the same, as a typed language judges it. A variable of a
//! declared type holds a value of that kind (an Integer given to a Real is
//! made a Real), and a function declared with a type gives one; the checks
//! say which names those are ([`Checked::declared`]) and which values a
//! declared type takes ([`Checked::wants`]).

use std::collections::HashMap;

use crate::check::{self, Checked, Known, Wanted};
use crate::declarations::{self, Does};
use crate::diagnostic::{Diagnostic, Span};
use crate::eval::interp::{Interpreter, Stop};
use crate::eval::value::Value;
use crate::syntax::tree::{
    BinaryOp, Expr, ExprKind, NameId, Program, Stmt, StmtKind, TypeName, UnaryOp,
};

/// The checks ([`check::check_program`]) with the evaluator's judgement of
/// kinds, all in the order of the text: what `tapec check`, a run, the
/// prompt and the language server report.
pub fn check_program(program: &Program, known: &Known, repl: bool) -> Checked {
    let mut checked = check::check_program(program, known, repl);
    let mut found = Kinds {
        interp: Interpreter::new(Box::new(std::io::sink())),
        errors: Vec::new(),
        wants: &checked.wants,
        declared: &checked.declared,
    };
    program.body.iter().for_each(|s| found.stmt(s));
    let errors = found.errors;
    checked.errors.extend(errors);
    checked
        .errors
        .sort_by_key(|d| (d.span.source, d.span.start));
    checked
}

struct Kinds<'a> {
    interp: Interpreter,
    errors: Vec<Diagnostic>,
    wants: &'a HashMap<Span, Wanted>,
    declared: &'a HashMap<NameId, TypeName>,
}

/// An expression that gives a value the run's messages say as they would
/// say `e`'s: `e` itself if it is a literal (negated or not), whose value
/// they may show; else a literal of `e`'s kind when that is a String or a
/// Boolean, which they name by kind alone; else none. A literal's kind
/// is known (`kind`) unless judging it found an error.
fn sample(e: &Expr, kind: Option<Kind>) -> Option<Expr> {
    // No kind: not judged, or already refused (`-'a'`), its error kept.
    let kind = kind?;
    let literal = |x: &Expr| {
        matches!(
            x.kind,
            ExprKind::Integer(_) | ExprKind::Real(_) | ExprKind::Str(_) | ExprKind::Bool(_)
        )
    };
    match &e.kind {
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
            ..
        } if literal(operand) => Some(e.clone()),
        _ if literal(e) => Some(e.clone()),
        _ => match kind {
            k @ (Kind::Str | Kind::Boolean) => Some(k.literal(e.span, None)),
            Kind::Integer | Kind::Real => None,
        },
    }
}

/// The kind of a value known before the run.
#[derive(Clone, Copy)]
enum Kind {
    Integer,
    Real,
    Str,
    Boolean,
}

impl Kind {
    /// What a variable declared `ty` holds; none for a matrix, whose
    /// shape is not known.
    fn declared(ty: TypeName) -> Option<Kind> {
        match ty {
            TypeName::Integer => Some(Kind::Integer),
            TypeName::Real => Some(Kind::Real),
            TypeName::Str => Some(Kind::Str),
            TypeName::Boolean => Some(Kind::Boolean),
            TypeName::Matrix => None,
        }
    }

    fn of(v: &Value) -> Option<Kind> {
        match v {
            Value::Int(..) => Some(Kind::Integer),
            Value::Real(..) => Some(Kind::Real),
            Value::Str(_) => Some(Kind::Str),
            Value::Bool(_) => Some(Kind::Boolean),
            Value::Matrix(..) => None,
        }
    }

    /// A literal of this kind at `span` that no operator refuses for its
    /// value, on the left of `op` if given.
    fn literal(self, span: Span, op: Option<BinaryOp>) -> Expr {
        let kind = match self {
            Kind::Integer => ExprKind::Integer(1),
            Kind::Real => ExprKind::Real(1.0),
            Kind::Str => ExprKind::Str("s".to_string()),
            // `false and ...` and `true or ...` would not read the right.
            Kind::Boolean => ExprKind::Bool(op != Some(BinaryOp::Or)),
        };
        Expr { kind, span }
    }
}

impl Kinds<'_> {
    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Empty
            | StmtKind::Error
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Var(_) => {}
            StmtKind::Assign { value, .. } | StmtKind::Expr(value) => {
                self.expr(value);
            }
            StmtKind::AssignIndex {
                row, col, value, ..
            } => {
                self.index(row, "row");
                self.index(col, "column");
                self.element(value);
            }
            StmtKind::Block(body) | StmtKind::Tape { body, .. } => {
                body.iter().for_each(|s| self.stmt(s));
            }
            StmtKind::If {
                branches,
                otherwise,
            } => {
                for (cond, then) in branches {
                    self.expr(cond);
                    self.stmt(then);
                }
                if let Some(o) = otherwise {
                    self.stmt(o);
                }
            }
            StmtKind::For { from, to, body, .. } => {
                self.expr(from);
                self.expr(to);
                self.stmt(body);
            }
            StmtKind::While { cond, body } => {
                self.expr(cond);
                self.stmt(body);
            }
            StmtKind::Repeat { body, cond } => {
                body.iter().for_each(|s| self.stmt(s));
                self.expr(cond);
            }
            StmtKind::Routine(r) => r.body.iter().for_each(|s| self.stmt(s)),
        }
    }

    /// The kind of `e`'s value if it is made only of literals, variables of
    /// declared types and operators that take their operands' kinds; `None`
    /// for anything else. Each operation that refuses its operands' kinds
    /// is an error, kept, as is a value of a kind its declared type refuses;
    /// every part of `e` is looked at once.
    fn expr(&mut self, e: &Expr) -> Option<Kind> {
        let kind = self.kind(e);
        if let (Some(kind), Some(want)) = (kind, self.wants.get(&e.span)) {
            let value = self.interp.eval(&kind.literal(e.span, None));
            if let Ok(value) = value
                && !value.fits(want.ty)
            {
                self.errors.push(check::errors::not_of_declared_type(
                    want.at,
                    &want.name,
                    want.ty,
                    &value.describe(),
                    matches!(kind, Kind::Real),
                ));
            }
        }
        kind
    }

    fn kind(&mut self, e: &Expr) -> Option<Kind> {
        match &e.kind {
            ExprKind::Integer(_) => Some(Kind::Integer),
            ExprKind::Real(_) => Some(Kind::Real),
            ExprKind::Str(_) => Some(Kind::Str),
            ExprKind::Bool(_) => Some(Kind::Boolean),
            ExprKind::Unary {
                op,
                op_span,
                operand,
            } => {
                let operand = self.expr(operand)?.literal(operand.span, None);
                self.judge(Expr {
                    kind: ExprKind::Unary {
                        op: *op,
                        op_span: *op_span,
                        operand: Box::new(operand),
                    },
                    span: e.span,
                })
            }
            ExprKind::Chain { first, rest } => {
                // Grouped to the left, as the run evaluates it: each
                // operation takes what the ones before it gave.
                let mut acc = self.expr(first);
                let mut acc_span = first.span;
                for (op, op_span, operand) in rest {
                    let right = self.expr(operand);
                    acc = match (acc, right) {
                        (Some(left), Some(right)) => self.judge(Expr {
                            kind: ExprKind::Chain {
                                first: Box::new(left.literal(acc_span, Some(*op))),
                                rest: vec![(*op, *op_span, right.literal(operand.span, None))],
                            },
                            span: acc_span.to(operand.span),
                        }),
                        _ => None,
                    };
                    acc_span = acc_span.to(operand.span);
                }
                acc
            }
            ExprKind::Matrix(rows) => {
                // Rows of other lengths are the literal's error (the
                // checker's, and the run's before any element's).
                let ragged = check::errors::ragged_matrix(rows).is_some();
                for x in rows.iter().flat_map(|(row, _)| row) {
                    if ragged {
                        self.expr(x);
                    } else {
                        self.element(x);
                    }
                }
                None
            }
            ExprKind::Call { name, args } => {
                let writes = declarations::find(&name.text)
                    .is_some_and(|b| matches!(b.does, Does::Write(_)));
                for arg in args {
                    let value = self.expr(&arg.value);
                    // Decimals of a String or a Boolean are the run's
                    // error about the value, before their own.
                    let text = matches!(value, Some(Kind::Str | Kind::Boolean));
                    for (x, what, judged) in [
                        (&arg.width, "field width", true),
                        (&arg.decimals, "number of decimals", !text),
                    ] {
                        let Some(x) = x else { continue };
                        let kind = self.expr(x);
                        if writes
                            && judged
                            && let Some(sample) = sample(x, kind)
                        {
                            let judged = self.interp.field_number(&sample, what).map(|_| ());
                            self.keep(judged);
                        }
                    }
                }
                self.declared
                    .get(&name.id)
                    .and_then(|&ty| Kind::declared(ty))
            }
            ExprKind::Index { target, row, col } => {
                self.expr(target);
                self.index(row, "row");
                self.index(col, "column");
                None
            }
            ExprKind::Name(name) => self
                .declared
                .get(&name.id)
                .and_then(|&ty| Kind::declared(ty)),
            ExprKind::Error => None,
        }
    }

    /// A row or column number (`what`) of an element read or set: one
    /// that is not an Integer is the error the run gives.
    fn index(&mut self, e: &Expr, what: &str) {
        let kind = self.expr(e);
        if let Some(sample) = sample(e, kind)
            && let Ok(value) = self.interp.eval(&sample)
            && !matches!(value, Value::Int(..))
        {
            let judged = self.interp.index(&value, e.span, 1, what).map(|_| ());
            self.keep(judged);
        }
    }

    /// An element of a matrix literal, or a value `m[i, j] :=` sets: a
    /// String or a Boolean is the error the run gives.
    fn element(&mut self, e: &Expr) {
        if let Some(kind @ (Kind::Str | Kind::Boolean)) = self.expr(e) {
            let value = kind.literal(e.span, None);
            if let Ok(value) = self.interp.eval(&value) {
                self.errors.push(check::errors::element_not_a_number(
                    e.span,
                    &value.describe(),
                ));
            }
        }
    }

    /// Keeps the error of an evaluation, if it gave one.
    fn keep<T>(&mut self, judged: Result<T, Stop>) {
        if let Err(Stop::Error(d)) = judged {
            self.errors.push(*d);
        }
    }

    /// Evaluates one operation on literals: the kind it gives, or `None`
    /// with its error kept.
    fn judge(&mut self, e: Expr) -> Option<Kind> {
        match self.interp.eval(&e) {
            Ok(v) => Kind::of(&v),
            Err(Stop::Error(d)) => {
                self.errors.push(*d);
                None
            }
            Err(Stop::Interrupted) => None,
        }
    }
}
