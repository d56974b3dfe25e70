//! What each builtin does. Recorded builtins check their arguments here and
//! hand the work to [`Interpreter::apply`] with an [`Op`]; the others compute
//! their value directly.

use std::io::Write;
use std::rc::Rc;

use ndarray::Array2;

use super::interp::{
    Flow, INTEGER_HINT, Interpreter, MAX_STRING, check_string, fail, from_tensor, nan_at,
};
use super::progress::ProgressBar;
use super::value::Value;
use super::{files, format};
use crate::declarations::{Builtin, Does, Filling, Kind};
use crate::diagnostic::{Diagnostic, Span, counted};
use crate::syntax::lexer::{string_literal, string_literal_clipped};
use crate::syntax::tree::{Arg, TypeName};
use crate::tape::ops::{Elementwise, Unary};
use crate::tape::{Op, Tensor};

/// The error of a builtin's argument of the wrong kind (the checker gives
/// the same for a literal: [`crate::check::errors::wrong_kind`]).
fn kind_error(b: &Builtin, position: usize, v: &Value, span: Span) -> Diagnostic {
    crate::check::errors::wrong_kind(
        b,
        position,
        &v.describe(),
        matches!(v, Value::Int(..) | Value::Real(..)),
        matches!(v, Value::Real(..)),
        span,
    )
}

impl Interpreter {
    fn eval_args(&mut self, args: &[Arg]) -> Flow<smallvec::SmallVec<[(Value, Span); 3]>> {
        let mut values = smallvec::SmallVec::new();
        for a in args {
            values.push((self.eval_int_first(&a.value)?, a.value.span));
        }
        Ok(values)
    }

    /// `Nudge` of a matrix in place, when that is allowed
    /// ([`crate::tape::Tape::only_blame_read`]: the update changes the leaf's
    /// value too) and only the variable and its leaf
    /// record hold the matrix (besides `v`, the copy read for the call).
    /// Gives `v` back when it is not done, and where the new value holds a
    /// NaN (see [`nan_at`]) when it does.
    fn nudge_shared(
        &mut self,
        name: &crate::syntax::tree::Name,
        v: Value,
        node: u32,
        blame: &Tensor,
        rate: f64,
    ) -> Result<Option<String>, Value> {
        let Value::Matrix(mut m, tag) = v else {
            return Err(v);
        };
        let record = node as usize;
        let shared_with_leaf = matches!(&self.tape.records[record].value,
            Tensor::Matrix(r) if Rc::ptr_eq(r, &m));
        if !self.tape.only_blame_read || !shared_with_leaf || Rc::strong_count(&m) != 3 {
            return Err(Value::Matrix(m, tag));
        }
        // Let go of the other two holders, update, and hand the matrix back.
        self.overwrite(name, Value::int(0));
        self.tape.records[record].value = Tensor::Scalar(0.0);
        let x = Rc::get_mut(&mut m).expect("the only holder now");
        let g = blame.view();
        match (x.as_slice_mut(), g.as_slice()) {
            (Some(xs), Some(gs)) if xs.len() == gs.len() => {
                crate::tape::kernels::step_down(xs, gs, rate);
            }
            _ => ndarray::Zip::from(x)
                .and(&g)
                .for_each(|x, g| *x -= rate * g),
        }
        let value = Tensor::Matrix(m.clone());
        // x - rate·g is NaN only where both x and rate·g are infinite: not
        // where the blame's bound keeps rate·g finite (x holds no NaN).
        let nan = if (rate * self.tape.blame_bound(node)).is_finite() {
            None
        } else {
            value
                .first_nan()
                .map(|position| nan_at(value.shape(), position))
        };
        self.tape.records[record].value = value;
        self.overwrite(name, Value::Matrix(m, None));
        Ok(nan)
    }

    /// `Nudge` made a NaN `at` (see [`nan_at`]): the value and its blame
    /// were both infinite there.
    fn nudge_nan(&self, span: Span, at: String) -> Diagnostic {
        Diagnostic::new(span, format!("Nudge made a NaN (not a number){at}"))
            .with_label(span, "this Nudge gives NaN")
            .with_hint("the value there is infinite, and so is the rate times its blame, with the same sign: inf - inf is NaN")
    }

    pub(crate) fn call_builtin(
        &mut self,
        b: &'static Builtin,
        args: &[Arg],
        span: Span,
    ) -> Flow<Option<Value>> {
        let result = self.builtin_value(b, args, span)?;
        Ok(match b.kind {
            Kind::Function => Some(result.expect("functions give a value")),
            Kind::Procedure => None,
        })
    }

    fn builtin_value(
        &mut self,
        b: &'static Builtin,
        args: &[Arg],
        span: Span,
    ) -> Flow<Option<Value>> {
        // Builtins that take a variable rather than a value, or print,
        // evaluate their arguments themselves.
        let vals = if b.takes_a_variable() || matches!(b.does, Does::Write(_)) {
            smallvec::SmallVec::new()
        } else {
            self.eval_args(args)?
        };
        if self.tape.open
            && !b.recorded
            && b.kind == Kind::Function
            && vals
                .iter()
                .any(|(v, _)| v.tag().is_some_and(|t| t.tape() == self.tape.id))
        {
            self.note_unrecorded(b.name, span);
        }
        let v = |i: usize| &vals[i].0;
        let s = |i: usize| vals[i].1;

        let value = match b.does {
            Does::Blame => {
                let (_, _, node) = self.variable_on_tape("Blame", &args[0])?;
                return Ok(Some(from_tensor(self.tape.blame_of(node), None)));
            }
            Does::Nudge => {
                let (name, v, node) = self.variable_on_tape("Nudge", &args[0])?;
                if let Some(d) = self.nudges_a_counter(&name, span) {
                    return fail(d);
                }
                self.remember_nudge(node, span);
                let rate = self.eval(&args[1].value)?;
                let Some(rate_number) = rate.as_number() else {
                    return fail(kind_error(b, 1, &rate, args[1].value.span));
                };
                self.last_nudge = Some(rate);
                let rate = rate_number;
                let blame = self.tape.blame_of(node);
                let v = match self.nudge_shared(&name, v, node, &blame, rate) {
                    Ok(None) => return Ok(None),
                    Ok(Some(at)) => return fail(self.nudge_nan(span, at)),
                    Err(v) => v,
                };
                let new = match (&v, blame) {
                    (Value::Real(x, _), Tensor::Scalar(g)) => Value::Real(x - rate * g, None),
                    // Nudge makes an Integer a Real (`knob := 0;` trains).
                    (Value::Int(n, _), Tensor::Scalar(g)) => {
                        // Refused where what `Nudge` changes is declared
                        // Integer: the variable (for a `var` parameter, the
                        // caller's variable it names), or a running
                        // routine's `var` parameter that names it (the
                        // parameter itself, or the global a routine it
                        // calls nudges by name). Each: the name declared,
                        // why and the label where that is not the name
                        // nudged, and the hint.
                        let declared = if self.declared_type(&name) == Some(TypeName::Integer) {
                            let shown = self.shown_name(&name);
                            let names = (*shown != *name.text).then(|| {
                                (
                                    format!(
                                        "it names the caller's `{shown}`, which is declared Integer"
                                    ),
                                    format!("names `{shown}`, declared Integer"),
                                )
                            });
                            Some((names, format!("declare `{shown}: Real` to train it")))
                        } else if let Some((param, routine)) = self.integer_parameter_naming(&name)
                        {
                            let names = (*param != *name.text).then(|| {
                                (
                                    format!("`{routine}`'s `var` parameter `{param}`, declared Integer, names it"),
                                    format!("named by `{param}`, declared Integer"),
                                )
                            });
                            Some((
                                names,
                                format!(
                                    "declare `{param}: Real` in `{routine}`'s header to train it"
                                ),
                            ))
                        } else {
                            None
                        };
                        if let Some((names, hint)) = declared {
                            let (why, label) = names.unwrap_or_else(|| {
                                (
                                    "it is declared Integer".to_string(),
                                    "declared Integer".to_string(),
                                )
                            });
                            return fail(
                                Diagnostic::new(
                                    span,
                                    format!("Nudge would make `{}` a Real, but {why}", name.text),
                                )
                                .with_label(args[0].value.span, label)
                                .with_hint(hint),
                            );
                        }
                        Value::Real(*n as f64 - rate * g, None)
                    }
                    (Value::Matrix(m, _), g) => {
                        // The tape still holds the old value, so the new one is
                        // written fresh, in one pass over both.
                        let step =
                            crate::tape::ops::combine(&m.view(), &g.view(), m.dim(), |x, g| {
                                x - rate * g
                            });
                        Value::Matrix(Rc::new(step), None)
                    }
                    (other, _) => other.clone(),
                };
                let nan = match &new {
                    Value::Real(x, _) => x.is_nan().then(String::new),
                    Value::Matrix(m, _) => Tensor::Matrix(m.clone())
                        .first_nan()
                        .map(|position| nan_at(m.dim(), position)),
                    _ => None,
                };
                if let Some(at) = nan {
                    return fail(self.nudge_nan(span, at));
                }
                self.overwrite(&name, new);
                return Ok(None);
            }
            Does::CheckBlame => return self.check_blame(&args[0]).map(Some),
            Does::Write(line) => {
                let mut text = String::new();
                let mut pieces = Vec::with_capacity(args.len());
                for arg in args {
                    let v = self.eval(&arg.value)?;
                    let width = match &arg.width {
                        Some(w) => Some(self.field_number(w, "field width")?),
                        None => None,
                    };
                    let decimals = match &arg.decimals {
                        Some(d) => {
                            if v.as_number().is_none() && !matches!(v, Value::Matrix(..)) {
                                return fail(
                                    Diagnostic::new(
                                        arg.value.span,
                                        format!(
                                            "`:w:d` needs a number, but this is {}",
                                            v.describe()
                                        ),
                                    )
                                    .with_label(arg.value.span, v.describe()),
                                );
                            }
                            Some(self.field_number(d, "number of decimals")?)
                        }
                        None => None,
                    };
                    pieces.push((v, width, decimals));
                }
                for (v, width, decimals) in &pieces {
                    match width {
                        Some(w) => text.push_str(&format::field(v, *w, *decimals)),
                        None => text.push_str(&format::value(v)),
                    }
                }
                if line {
                    text.push('\n');
                }
                self.print(&text);
                return Ok(None);
            }
            Does::Unary(u) => {
                return match v(0) {
                    Value::Int(n, _) if u == Unary::Abs => match n.checked_abs() {
                        Some(n) => Ok(Some(self.exact(n, Op::Unary(u), &[(v(0), s(0))], span))),
                        None => fail(
                            Diagnostic::new(
                                span,
                                "integer overflow: Abs of the smallest Integer does not fit in 64 bits",
                            )
                            .with_label(s(0), "this value"),
                        ),
                    },
                    Value::Int(n, _) if u == Unary::Sqr => match n.checked_mul(*n) {
                        Some(n) => Ok(Some(self.exact(n, Op::Unary(u), &[(v(0), s(0))], span))),
                        None => fail(
                            Diagnostic::new(
                                span,
                                format!("integer overflow: Sqr({n}) does not fit in 64 bits"),
                            )
                            .with_label(s(0), "this value")
                            .with_hint("write `Sqr(1.0 * x)` for a Real square"),
                        ),
                    },
                    Value::Int(..) | Value::Real(..) | Value::Matrix(..) => {
                        self.apply(Op::Unary(u), &[(v(0), s(0))], span).map(Some)
                    }
                    other => fail(kind_error(b, 0, other, s(0))),
                };
            }
            Does::Power => {
                // The exponent is read, never blamed: a Real on the tape
                // that a variable's value reaches (not a constant such as
                // `-1`, nor an Integer: a loop's counter, a whole power)
                // is warned about when the tape closes.
                if self.tape.open
                    && matches!(v(1), Value::Real(..))
                    && let Some(node) = self.tape.find(v(1).tag())
                    && self.tape.depends_on_another_variable(node, "")
                {
                    self.note_unrecorded("Power", s(1));
                }
                let p = match v(1) {
                    Value::Int(n, _) => *n as f64,
                    Value::Real(x, _) => *x,
                    other => return fail(kind_error(b, 1, other, s(1))),
                };
                // An Integer beyond 2^53 is no f64 of its parity.
                let odd = match v(1) {
                    Value::Int(n, _) if n.unsigned_abs() > 1 << 53 => Some(n % 2 != 0),
                    _ => None,
                };
                return match v(0) {
                    Value::Int(..) | Value::Real(..) | Value::Matrix(..) => {
                        let a = match v(0) {
                            Value::Int(n, tag) => Value::Real(*n as f64, *tag),
                            other => other.clone(),
                        };
                        self.apply(Op::Power(p, odd), &[(&a, s(0))], span).map(Some)
                    }
                    other => fail(kind_error(b, 0, other, s(0))),
                };
            }
            Does::Matrix(op) => {
                let op = op.op();
                for (i, (value, at)) in vals.iter().enumerate() {
                    if !matches!(value, Value::Matrix(..)) {
                        return fail(kind_error(b, i, value, *at));
                    }
                }
                if matches!(op, Op::HStack | Op::VStack) {
                    let (a, c) = (
                        self.matrix(b, &vals, 0)?.dim(),
                        self.matrix(b, &vals, 1)?.dim(),
                    );
                    let (rows, cols) = if op == Op::HStack {
                        (a.0, a.1 + c.1)
                    } else {
                        (a.0 + c.0, a.1)
                    };
                    self.check_size(rows, cols, span)?;
                }
                let refs: smallvec::SmallVec<[(&Value, Span); 2]> =
                    vals.iter().map(|(v, s)| (v, *s)).collect();
                return self.apply(op, &refs, span).map(Some);
            }
            Does::Hadamard => {
                for (i, (value, at)) in vals.iter().enumerate() {
                    if !matches!(value, Value::Int(..) | Value::Real(..) | Value::Matrix(..)) {
                        return fail(kind_error(b, i, value, *at));
                    }
                }
                return self
                    .apply(
                        Op::Elementwise(Elementwise::Hadamard),
                        &[(v(0), s(0)), (v(1), s(1))],
                        span,
                    )
                    .map(Some);
            }
            Does::RowOrCol(is_row) => {
                let m = self.matrix(b, &vals, 0)?;
                let (count, what) = if is_row {
                    (m.nrows(), "row")
                } else {
                    (m.ncols(), "column")
                };
                self.int_arg(b, &vals, 1)?;
                let i = self.index(v(1), s(1), count, what)?;
                let op = if is_row {
                    Op::RowRange(i, 1)
                } else {
                    Op::ColRange(i, 1)
                };
                return self.apply(op, &[(v(0), s(0))], span).map(Some);
            }
            Does::Range(is_row) => {
                let m = self.matrix(b, &vals, 0)?;
                let (count, what) = if is_row {
                    (m.nrows(), "row")
                } else {
                    (m.ncols(), "column")
                };
                self.int_arg(b, &vals, 1)?;
                let first = self.index(v(1), s(1), count, what)?;
                let n = self.int_arg(b, &vals, 2)?;
                if n < 1 || n as u64 > (count - first) as u64 {
                    let has = if count == 1 { "" } else { "s" };
                    return fail(Diagnostic::new(s(2), format!(
                        "{} cannot take {n} {what}s from {what} {}: the matrix has {count} {what}{has}",
                        b.name,
                        first + 1
                    ))
                    .with_label(s(2), format!("must be between 1 and {}", count - first))
                    .with_label(s(0), format!("this is a {}×{}", m.nrows(), m.ncols())));
                }
                let op = if is_row {
                    Op::RowRange(first, n as usize)
                } else {
                    Op::ColRange(first, n as usize)
                };
                return self.apply(op, &[(v(0), s(0))], span).map(Some);
            }
            Does::Embed => {
                let table = self.matrix(b, &vals, 0)?;
                let ids = self.selectors(b, &vals, 1, table.nrows(), "row", "table")?;
                self.check_size(ids.len(), table.ncols(), span)?;
                return self
                    .apply(Op::Embed(Rc::new(ids)), &[(v(0), s(0))], span)
                    .map(Some);
            }
            Does::CrossEntropy => {
                let logits = self.matrix(b, &vals, 0)?;
                let targets = self.selectors(b, &vals, 1, logits.ncols(), "column", "logits")?;
                if targets.len() != logits.nrows() {
                    return fail(Diagnostic::new(span, format!(
                        "CrossEntropy needs one target per row of logits, but the logits are a {}×{} and the targets a 1×{}",
                        logits.nrows(),
                        logits.ncols(),
                        targets.len()
                    ))
                    .with_label(s(0), counted(logits.nrows(), "row"))
                    .with_label(s(1), counted(targets.len(), "target")));
                }
                return self
                    .apply(Op::CrossEntropy(Rc::new(targets)), &[(v(0), s(0))], span)
                    .map(Some);
            }
            Does::Filled(filling) => {
                let (rows, cols) = self.dims(b, &vals, 0, span)?;
                let m = match filling {
                    Filling::Zeros => Array2::zeros((rows, cols)),
                    Filling::Ones => Array2::ones((rows, cols)),
                    Filling::Random => {
                        Array2::from_shape_simple_fn((rows, cols), || self.rng.uniform())
                    }
                    Filling::Randn => {
                        Array2::from_shape_simple_fn((rows, cols), || self.rng.normal())
                    }
                };
                Value::Matrix(Rc::new(m), None)
            }
            Does::Fill => {
                let (rows, cols) = self.dims(b, &vals, 0, span)?;
                let x = self.number(b, &vals, 2)?;
                Value::Matrix(Rc::new(Array2::from_elem((rows, cols), x)), None)
            }
            Does::Eye | Does::CausalMask => {
                let n = self.size(b, &vals, 0)?;
                self.check_size(n, n, span)?;
                let m = if b.does == Does::Eye {
                    Array2::eye(n)
                } else {
                    Array2::from_shape_fn(
                        (n, n),
                        |(i, j)| if j > i { f64::NEG_INFINITY } else { 0.0 },
                    )
                };
                Value::Matrix(Rc::new(m), None)
            }
            Does::Seed => {
                let n = self.int_arg(b, &vals, 0)?;
                self.rng.seed(n);
                return Ok(None);
            }
            Does::RandInt => {
                let lo = self.int_arg(b, &vals, 0)?;
                let hi = self.int_arg(b, &vals, 1)?;
                if lo > hi {
                    return fail(
                        Diagnostic::new(
                            span,
                            format!("RandInt({lo}, {hi}): the lowest value is above the highest"),
                        )
                        .with_label(s(0), format!("{lo}"))
                        .with_label(s(1), format!("{hi}")),
                    );
                }
                Value::int(self.rng.int_in(lo, hi))
            }
            Does::Sample => {
                let p = self.row_arg(b, &vals, 0)?;
                if let Some(k) = p.iter().position(|w| *w < 0.0) {
                    return fail(
                        Diagnostic::new(
                            s(0),
                            format!(
                                "Sample's weights must not be negative, but column {} is {}",
                                k + 1,
                                format::real(p[k], 6)
                            ),
                        )
                        .with_label(s(0), "these weights"),
                    );
                }
                let total: f64 = p.iter().sum();
                if total <= 0.0 || !total.is_finite() {
                    return fail(
                        Diagnostic::new(s(0), "Sample's weights must have a positive, finite sum")
                            .with_label(
                                s(0),
                                format!("these weights sum to {}", format::real(total, 6)),
                            ),
                    );
                }
                Value::int(self.rng.pick(&p, total) as i64)
            }
            Does::Argmax => {
                let p = self.row_arg(b, &vals, 0)?;
                let mut best = 0;
                for (k, x) in p.iter().enumerate() {
                    if *x > p[best] {
                        best = k;
                    }
                }
                Value::int(best as i64 + 1)
            }
            Does::Rows => Value::int(self.matrix(b, &vals, 0)?.nrows() as i64),
            Does::Cols => Value::int(self.matrix(b, &vals, 0)?.ncols() as i64),
            Does::Length => Value::int(self.string(b, &vals, 0)?.chars().count() as i64),
            Does::Round(round) => match v(0) {
                Value::Int(n, _) => Value::int(*n),
                Value::Real(x, _) => {
                    let r = if round { x.round() } else { x.trunc() };
                    if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r) {
                        return fail(
                            Diagnostic::new(
                                s(0),
                                format!(
                                    "{}({}) does not fit in an Integer",
                                    b.name,
                                    // Large numbers in short form (1e300).
                                    if x.abs() < 1e16 {
                                        format::real(*x, 6)
                                    } else {
                                        format!("{x:e}")
                                    }
                                ),
                            )
                            .with_label(s(0), "too large for 64 bits"),
                        );
                    }
                    Value::int(r as i64)
                }
                other => return fail(kind_error(b, 0, other, s(0))),
            },
            Does::Min(min) => match (v(0), v(1)) {
                (Value::Int(a, _), Value::Int(c, _)) => {
                    Value::int(if min { *a.min(c) } else { *a.max(c) })
                }
                _ => {
                    let a = self.number(b, &vals, 0)?;
                    let c = self.number(b, &vals, 1)?;
                    Value::Real(if min { a.min(c) } else { a.max(c) }, None)
                }
            },
            Does::Save => {
                self.save(b, &vals)?;
                return Ok(None);
            }
            Does::Load => self.load(b, &vals, span)?,
            Does::ReadText => {
                let path = self.string(b, &vals, 0)?;
                if path.is_empty() {
                    return fail(empty_path(b, s(0)));
                }
                let (full, paths_from) = self.path_from(s(0), &path);
                let read = files::read_at_most(&full, MAX_STRING);
                if let Ok(bytes) = &read
                    && bytes.len() > MAX_STRING
                {
                    return fail(
                        about_path(
                            s(0),
                            format!("`{path}` is too large to read: it holds more than {MAX_STRING} bytes"),
                        )
                        .with_hint("a string may hold at most 256 MiB"),
                    );
                }
                match read {
                    Ok(bytes) => match String::from_utf8(bytes) {
                        // A byte-order mark is no character of the text, as
                        // in a program file and for `Load`.
                        Ok(text) => match text.strip_prefix('\u{feff}') {
                            Some(rest) => Value::Str(rest.to_string().into()),
                            None => Value::Str(text.into()),
                        },
                        Err(e) => {
                            return fail(about_path(
                                s(0),
                                format!(
                                    "`{path}` is not UTF-8 text (a bad byte at offset {})",
                                    e.utf8_error().valid_up_to()
                                ),
                            ));
                        }
                    },
                    Err(e) => {
                        return fail(cannot_read(s(0), &path, &full, &e, paths_from));
                    }
                }
            }
            Does::Vocab => {
                let text = self.string(b, &vals, 0)?;
                let mut chars: Vec<char> = text.chars().collect();
                chars.sort_unstable();
                chars.dedup();
                Value::Str(chars.into_iter().collect::<String>().into())
            }
            Does::Encode => {
                let text = self.string(b, &vals, 0)?;
                let vocab: Vec<char> = self.string(b, &vals, 1)?.chars().collect();
                if text.is_empty() {
                    return fail(
                        Diagnostic::new(
                            s(0),
                            "Encode of an empty string: there are no empty matrices",
                        )
                        .with_label(s(0), "this string is empty"),
                    );
                }
                self.check_size(1, text.chars().count(), span)?;
                let mut ids = Vec::with_capacity(text.len());
                for ch in text.chars() {
                    match vocab
                        .binary_search(&ch)
                        .ok()
                        .or_else(|| vocab.iter().position(|c| *c == ch))
                    {
                        Some(k) => ids.push(k as f64 + 1.0),
                        None => {
                            return fail(
                                Diagnostic::new(
                                    s(0),
                                    format!(
                                        "the character {} is not in the vocabulary",
                                        string_literal(&ch.to_string())
                                    ),
                                )
                                .with_label(s(1), "this vocabulary")
                                .with_hint(
                                    "build the vocabulary with Vocab(text) from the same text",
                                ),
                            );
                        }
                    }
                }
                let n = ids.len();
                Value::Matrix(
                    Rc::new(Array2::from_shape_vec((1, n), ids).expect("1×n")),
                    None,
                )
            }
            Does::Decode => {
                let vocab: Vec<char> = self.string(b, &vals, 1)?.chars().collect();
                let ids = self.selectors(b, &vals, 0, vocab.len(), "character", "vocabulary")?;
                check_string(ids.iter().map(|&k| vocab[k].len_utf8()).sum(), span)?;
                Value::Str(ids.into_iter().map(|k| vocab[k]).collect::<String>().into())
            }
            Does::ParamCount => Value::int(self.params.len() as i64 - 1),
            Does::ParamStr => {
                let i = self.int_arg(b, &vals, 0)?;
                match usize::try_from(i).ok().and_then(|i| self.params.get(i)) {
                    Some(p) => Value::Str(Rc::new(p.clone())),
                    None => {
                        return fail(
                            Diagnostic::new(
                                s(0),
                                format!(
                                    "there is no argument {i}: ParamCount is {}",
                                    self.params.len() - 1
                                ),
                            )
                            .with_label(s(0), "out of range")
                            .with_hint(
                                "give arguments after the program: `tapec run FILE ARGS...`",
                            ),
                        );
                    }
                }
            }
            Does::StrToInt => {
                let text = self.string(b, &vals, 0)?;
                let digits = text.strip_prefix(['-', '+']).unwrap_or(&text);
                let parsed = text.parse::<i64>().ok();
                let digits_only = !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit());
                match parsed {
                    Some(n) => Value::int(n),
                    None if digits_only => {
                        return fail(
                            Diagnostic::new(
                                s(0),
                                format!(
                                    "StrToInt: {} is too large for an Integer",
                                    string_literal_clipped(&text)
                                ),
                            )
                            .with_label(s(0), "this string")
                            .with_hint(format!(
                                "an Integer lies between {} and {}; `StrToFloat` reads it as a Real",
                                i64::MIN,
                                i64::MAX
                            )),
                        );
                    }
                    None => {
                        return fail(
                            Diagnostic::new(
                                s(0),
                                format!(
                                    "StrToInt: {} is not an Integer",
                                    string_literal_clipped(&text)
                                ),
                            )
                            .with_label(s(0), "this string")
                            .with_hint("an Integer is an optional sign and digits, within 64 bits"),
                        );
                    }
                }
            }
            Does::StrToFloat => {
                let text = self.string(b, &vals, 0)?;
                match files::real_number(&text) {
                    Ok(x) => Value::Real(x, None),
                    Err(what) => {
                        return fail(
                            Diagnostic::new(
                                s(0),
                                format!("StrToFloat: {} {what}", string_literal_clipped(&text)),
                            )
                            .with_label(s(0), "this string")
                            .with_hint(
                                "a number is an optional sign, digits with an optional dot \
                                 and exponent (`-1.5e-3`), or `inf`",
                            ),
                        );
                    }
                }
            }
            Does::Progress => {
                let i = self.int_arg(b, &vals, 0)?;
                let n = self.int_arg(b, &vals, 1)?;
                self.progress(i, n);
                return Ok(None);
            }
            Does::Plot => {
                let m = self.matrix(b, &vals, 0)?;
                let path = match vals.len() {
                    1 => Rc::default(),
                    _ => self.string(b, &vals, 1)?,
                };
                let title = match vals.len() {
                    3 => self.string(b, &vals, 2)?,
                    _ => Rc::default(),
                };
                if path.is_empty() {
                    let chart = crate::eval::plot::braille(&m, &title);
                    self.print(&chart);
                    return Ok(None);
                }
                let (full, paths_from) = self.path_from(s(1), &path);
                let ending = std::path::Path::new(&*path)
                    .extension()
                    .map(|e| e.to_string_lossy().to_ascii_lowercase());
                if ending.as_ref().is_some_and(|e| e != "svg") {
                    return fail(
                        about_path(
                            s(1),
                            format!("Plot draws SVG, but `{path}` names another kind of file"),
                        )
                        .with_hint("give the file an .svg ending"),
                    );
                }
                let chart = crate::eval::plot::svg(&m, &title).map_err(|e| {
                    Diagnostic::new(span, format!("Plot could not draw the chart: {e}"))
                        .with_label(span, "this Plot")
                })?;
                if let Err(e) = std::fs::write(&full, chart) {
                    return fail(cannot_write(s(1), &path, &full, &e, paths_from));
                }
                self.notice(format!("Plot wrote {}", full.display()));
                return Ok(None);
            }
            Does::Show => {
                let m = self.matrix(b, &vals, 0)?;
                let text = format::show(&m);
                self.print(&text);
                return Ok(None);
            }
        };
        Ok(Some(value))
    }

    /// A line for stderr (where a file was written): kept in `notices`,
    /// or written at once, after the output before it, to `notices_now`.
    pub fn notice(&mut self, text: String) {
        match &mut self.notices_now {
            Some(err) => {
                let _ = self.out.flush();
                let _ = err.write_all(format!("{text}\n").as_bytes());
                let _ = err.flush();
            }
            None => self.notices.push(text),
        }
    }

    pub fn print(&mut self, text: &str) {
        // Output that cannot be written (a closed pipe) is dropped. Under a
        // progress bar the bar steps aside while the text is written.
        if let Some(&last) = text.as_bytes().last() {
            self.line_open = last != b'\n';
        }
        let out = &mut self.out;
        match &self.progress {
            Some(bar) => bar.suspend(|| {
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
            }),
            None => {
                let _ = out.write_all(text.as_bytes());
            }
        }
    }

    /// A field width (`w` of `x:w:d`) or number of decimals (`d`).
    pub(crate) fn field_number(
        &mut self,
        e: &crate::syntax::tree::Expr,
        what: &str,
    ) -> Flow<usize> {
        let v = self.eval(e)?;
        match v {
            Value::Int(n, _) if (0..=1000).contains(&n) => Ok(n as usize),
            other => {
                // An Integer out of range is shown; anything else by its
                // kind, a Real with its value.
                let this = match &other {
                    Value::Int(n, _) => n.to_string(),
                    Value::Real(x, _) => format!("the Real {}", super::format::real(*x, 6)),
                    other => other.describe(),
                };
                let d = Diagnostic::new(
                    e.span,
                    format!("a {what} must be an Integer from 0 to 1000, but this is {this}"),
                )
                .with_label(e.span, what);
                fail(if matches!(other, Value::Real(..)) {
                    d.with_hint(INTEGER_HINT)
                } else {
                    d
                })
            }
        }
    }

    fn matrix(&self, b: &Builtin, vals: &[(Value, Span)], i: usize) -> Flow<Rc<Array2<f64>>> {
        match &vals[i].0 {
            Value::Matrix(m, _) => Ok(m.clone()),
            other => fail(kind_error(b, i, other, vals[i].1)),
        }
    }

    /// An Integer argument; anything else is named against the builtin.
    fn int_arg(&self, b: &Builtin, vals: &[(Value, Span)], i: usize) -> Flow<i64> {
        match &vals[i].0 {
            Value::Int(n, _) => Ok(*n),
            other => fail(kind_error(b, i, other, vals[i].1)),
        }
    }

    fn number(&self, b: &Builtin, vals: &[(Value, Span)], i: usize) -> Flow<f64> {
        vals[i]
            .0
            .as_number()
            .map_or_else(|| fail(kind_error(b, i, &vals[i].0, vals[i].1)), Ok)
    }

    fn string(&self, b: &Builtin, vals: &[(Value, Span)], i: usize) -> Flow<Rc<String>> {
        match &vals[i].0 {
            Value::Str(s) => Ok(s.clone()),
            other => fail(kind_error(b, i, other, vals[i].1)),
        }
    }

    /// A 1×n row of reals.
    fn row_arg(&self, b: &Builtin, vals: &[(Value, Span)], i: usize) -> Flow<Vec<f64>> {
        let m = self.matrix(b, vals, i)?;
        if m.nrows() != 1 {
            return fail(
                Diagnostic::new(
                    vals[i].1,
                    format!(
                        "{} takes a 1×n row, but this is a {}×{}",
                        b.name,
                        m.nrows(),
                        m.ncols()
                    ),
                )
                .with_label(vals[i].1, format!("{} rows", m.nrows())),
            );
        }
        Ok(m.iter().copied().collect())
    }

    /// A 1×T row of whole numbers from 1 to `count`, made 0-based.
    /// `Save(m, path)`.
    #[inline(never)]
    fn save(&mut self, b: &Builtin, vals: &[(Value, Span)]) -> Flow<()> {
        let s = |i: usize| vals[i].1;
        let m = self.matrix(b, vals, 0)?;
        let path = self.string(b, vals, 1)?;
        let (full, paths_from) = self.path_from(s(1), &path);
        if path.is_empty() || full.is_dir() {
            let what = if path.is_empty() {
                "the path is empty".to_string()
            } else {
                format!("`{path}` is a folder")
            };
            return fail(
                about_path(s(1), format!("Save needs a file's name, but {what}"))
                    .with_hint("name the file to write, such as 'weights.txt'"),
            );
        }
        if self
            .program
            .as_deref()
            .is_some_and(|p| files::same_file(p, &full))
        {
            return fail(
                about_path(
                    s(1),
                    format!("Save would write over the program itself, `{path}`"),
                )
                .with_hint("save the matrix to a file of its own, such as 'weights.txt'"),
            );
        }
        if files::is_special(&full) {
            return fail(
                about_path(
                    s(1),
                    format!("Save writes files, but `{path}` is not a file (a pipe or a device)"),
                )
                .with_hint("name a file to write, such as 'weights.txt'"),
            );
        }
        if let Err(e) = files::write_whole(&full, &files::matrix_text(&m)) {
            return fail(cannot_write(s(1), &path, &full, &e, paths_from));
        }

        Ok(())
    }

    /// `Load(path)`.
    #[inline(never)]
    fn load(&mut self, b: &Builtin, vals: &[(Value, Span)], span: Span) -> Flow<Value> {
        let s = |i: usize| vals[i].1;
        let path = self.string(b, vals, 0)?;
        if path.is_empty() {
            return fail(empty_path(b, s(0)));
        }
        let (full, paths_from) = self.path_from(s(0), &path);
        let text = match files::read_at_most(&full, MAX_STRING) {
            Ok(bytes) if bytes.len() > MAX_STRING => {
                return fail(about_path(
                    s(0),
                    format!("`{path}` is too large to load: it holds more than {MAX_STRING} bytes"),
                ));
            }
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                return fail(cannot_read(s(0), &path, &full, &e, paths_from));
            }
        };
        match files::parse_matrix(&text) {
            Ok((rows, cols, values)) => {
                self.check_size(rows, cols, span)?;
                let m = Array2::from_shape_vec((rows, cols), values).expect("rows × cols numbers");
                Ok(Value::Matrix(Rc::new(m), None))
            }
            Err(refused) => fail(
                about_path(
                    s(0),
                    format!(
                        "`{path}` is not a matrix: line {}, column {}: {}",
                        refused.line, refused.column, refused.why
                    ),
                )
                .with_hint("Load reads rows of numbers separated by spaces, as Save writes them"),
            ),
        }
    }

    fn selectors(
        &self,
        b: &Builtin,
        vals: &[(Value, Span)],
        i: usize,
        count: usize,
        what: &str,
        of: &str,
    ) -> Flow<Vec<usize>> {
        let span = vals[i].1;
        let row = self.row_arg(b, vals, i)?;
        let mut out = Vec::with_capacity(row.len());
        for (k, x) in row.iter().enumerate() {
            if x.fract() != 0.0 || !x.is_finite() {
                return fail(
                    Diagnostic::new(
                        span,
                        format!(
                            "{}: element {} is {}, not a whole {what} number",
                            b.name,
                            k + 1,
                            format::real(*x, 6)
                        ),
                    )
                    .with_label(span, "these must be whole numbers"),
                );
            }
            if *x < 1.0 || *x > count as f64 {
                let have = if of.ends_with('s') { "have" } else { "has" };
                let whats = if count == 1 {
                    what.to_string()
                } else {
                    format!("{what}s")
                };
                let mut d = Diagnostic::new(
                    span,
                    format!(
                        "{}: element {} is {}, but the {of} {have} {count} {whats}",
                        b.name,
                        k + 1,
                        format::real(*x, 0)
                    ),
                )
                .with_label(
                    span,
                    if count == 0 {
                        format!("there is no {what} for it to name")
                    } else {
                        format!("each must be from 1 to {count}")
                    },
                );
                if *x == 0.0 {
                    d = d.with_hint(format!(
                        "{what}s count from 1: the first {what} is 1, not 0 (add 1 to targets that count from 0)"
                    ));
                }
                return fail(d);
            }
            out.push(*x as usize - 1);
        }
        Ok(out)
    }

    /// A size for a constant matrix: an Integer of at least 1.
    fn size(&self, b: &Builtin, vals: &[(Value, Span)], i: usize) -> Flow<usize> {
        let n = self.int_arg(b, vals, i)?;
        let span = vals[i].1;
        if n < 1 {
            return fail(
                Diagnostic::new(
                    span,
                    format!("a matrix size must be at least 1, but this is {n}"),
                )
                .with_label(span, "there are no empty matrices"),
            );
        }
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn dims(
        &self,
        b: &Builtin,
        vals: &[(Value, Span)],
        first: usize,
        span: Span,
    ) -> Flow<(usize, usize)> {
        let rows = self.size(b, vals, first)?;
        let cols = self.size(b, vals, first + 1)?;
        self.check_size(rows, cols, span)?;
        Ok((rows, cols))
    }

    fn progress(&mut self, i: i64, n: i64) {
        if !self.progress_on_terminal || n <= 0 {
            return;
        }
        let total = n as u64;
        if self.progress.as_ref().is_none_or(|p| p.total() != total) {
            self.progress = Some(ProgressBar::new(total));
        }
        if let Some(p) = &self.progress
            && p.at(i.clamp(0, n) as u64)
        {
            self.progress = None;
        }
    }

    /// `CheckBlame(x)`: central differences of the tape's result, got by
    /// replaying the recorded operations with each element of x nudged,
    /// against the blame the walk computed.
    fn check_blame(&mut self, arg: &Arg) -> Flow<Value> {
        let (_, _, node) = self.variable_on_tape("CheckBlame", arg)?;
        let result = self.tape.result.expect("a walked tape has a result");
        let blame = self.tape.blame_of(node);
        let base = self.tape.records[node as usize].value.clone();
        let (rows, cols) = base.shape();
        let step = 1e-6;
        let mut worst: f64 = 0.0;
        for i in 0..rows {
            for j in 0..cols {
                self.interrupted()?;
                let nudged = |delta: f64| match &base {
                    Tensor::Scalar(x) => Tensor::Scalar(x + delta),
                    Tensor::Matrix(m) => {
                        let mut m = (**m).clone();
                        m[(i, j)] += delta;
                        Tensor::Matrix(Rc::new(m))
                    }
                };
                let up = self.tape.replay(node, nudged(step), result);
                let down = self.tape.replay(node, nudged(-step), result);
                let (Some(up), Some(down)) = (up, down) else {
                    return fail(Diagnostic::new(arg.value.span, "CheckBlame could not replay the tape: a nudged value broke an operation")
                        .with_label(arg.value.span, "nudging this"));
                };
                let numeric = (up - down) / (2.0 * step);
                let gap = (numeric - blame.view()[(i, j)]).abs();
                if gap.is_nan() {
                    let at = nan_at((rows, cols), (i + 1, j + 1));
                    // A nudge out of an operation's domain (`Sqrt` of a
                    // value 1e-6 from 0), found by replaying again: one of
                    // those that make a NaN of finite inputs. Any other's
                    // NaN comes of an infinity (`Exp(x) - Exp(x)`).
                    let outside = [step, -step].into_iter().find_map(|delta| {
                        let record = self.tape.replay_first_nan(node, nudged(delta), result)?;
                        let record = &self.tape.records[record as usize];
                        DOMAINS
                            .contains(&record.op.name())
                            .then_some((delta, record))
                    });
                    if let Some((delta, record)) = outside {
                        let op = record.op.name();
                        return fail(
                            Diagnostic::new(
                                arg.value.span,
                                format!("CheckBlame made a NaN (not a number){at}: nudged by {delta:e}, this value gives `{op}` a NaN"),
                            )
                            .with_label(arg.value.span, "nudging this")
                            .with_label(record.span, format!("NaN here, with the value nudged by {delta:e}"))
                            .with_hint(format!("the value is within {step:e} of where `{op}` is defined, so finite differences cannot check its blame here")),
                        );
                    }
                    return fail(
                        Diagnostic::new(
                            arg.value.span,
                            format!("CheckBlame made a NaN (not a number){at}"),
                        )
                        .with_label(arg.value.span, "this value's check gives NaN")
                        .with_hint("near this value the tape's result, or its blame, is infinite, and inf - inf is NaN"),
                    );
                }
                worst = worst.max(gap);
            }
        }
        Ok(Value::Real(worst, None))
    }
}

/// The operations that make a NaN of finite inputs outside their domain,
/// which `CheckBlame` names when its nudge takes a value there (as the
/// exported runtime's `check_blame` does).
const DOMAINS: [&str; 4] = ["Sqrt", "Log", "Power", "/"];

/// An error about a file a program names, with the path's argument marked.
fn about_path(span: Span, message: String) -> Diagnostic {
    Diagnostic::new(span, message).with_label(span, "this path")
}

/// A file that could not be read, at the path written at `span`.
fn cannot_read(
    span: Span,
    written: &str,
    full: &std::path::Path,
    e: &std::io::Error,
    paths_from: &str,
) -> Diagnostic {
    let reason = crate::diagnostic::io_reason(e);
    about_file(
        span,
        written,
        format!("cannot read `{}`: {reason}", shown(full)),
        paths_from,
    )
}

/// A file that could not be written, at the path written at `span`.
fn cannot_write(
    span: Span,
    written: &str,
    full: &std::path::Path,
    e: &std::io::Error,
    paths_from: &str,
) -> Diagnostic {
    let reason = crate::diagnostic::io_write_reason(e, full);
    about_file(
        span,
        written,
        format!("cannot write `{}`: {reason}", shown(full)),
        paths_from,
    )
}

/// A path as a message shows it: without the `./` of the current folder,
/// and that folder itself as `.` (`Load('.')`), not as nothing.
fn shown(full: &std::path::Path) -> std::path::Display<'_> {
    match full.strip_prefix(".") {
        Ok(rest) if rest.as_os_str().is_empty() => std::path::Path::new(".").display(),
        Ok(rest) => rest.display(),
        Err(_) => full.display(),
    }
}

/// `Load('')`, `ReadText('')`: no file is named (joined to the program's
/// folder, the empty path would be read as that folder).
fn empty_path(b: &Builtin, span: Span) -> Diagnostic {
    about_path(
        span,
        format!("{} needs a file's name, but the path is empty", b.name),
    )
    .with_hint("name the file to read, such as 'weights.txt'")
}

/// [`about_path`], with a hint of where a relative path starts; a path
/// written absolute needs none.
fn about_file(span: Span, written: &str, message: String, paths_from: &str) -> Diagnostic {
    let d = about_path(span, message);
    if std::path::Path::new(written).is_absolute() {
        return d;
    }
    d.with_hint(format!("a path is relative to {paths_from}"))
}
