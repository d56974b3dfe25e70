//! The diagnostics that the checks and the interpreter both give, each
//! built in one place: the checks find most of them before a program runs,
//! and the interpreter finds the same mistakes where the checks cannot see
//! them (a prompt entry, a value known only when it runs).

use crate::declarations::Builtin;
use crate::diagnostic::{Diagnostic, Span, near_miss};
use crate::syntax::tree::{Expr, ExprKind, Name, Routine, TypeName};

/// `n elements`, as a row's length is said.
fn elements(n: usize) -> String {
    if n == 1 {
        "1 element".to_string()
    } else {
        format!("{n} elements")
    }
}

/// Whether `e` is written starting with `[`: a matrix literal, or an
/// operation or element read on one (`[3, 4] * 2`), which a reader takes
/// for a row.
fn starts_with_bracket(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Matrix(_) => true,
        ExprKind::Chain { first, .. } => starts_with_bracket(first),
        ExprKind::Index { target, .. } => starts_with_bracket(target),
        _ => false,
    }
}

/// A ragged matrix literal: the first row of another length; or rows
/// with an item not written in brackets among them (`[[1, 2], 3]`, read
/// as one row whose first element is a matrix), pointing at the first
/// item that does not start with a bracket. Found by the checker, and
/// again at run time for literals it could not see.
pub fn ragged_matrix(rows: &[(Vec<Expr>, Span)]) -> Option<Diagnostic> {
    if let [(items, _)] = rows
        && let [first, ..] = items.as_slice()
        && matches!(first.kind, ExprKind::Matrix(_))
        && let Some(bare) = items.iter().find(|x| !starts_with_bracket(x))
    {
        return Some(
            Diagnostic::new(
                bare.span,
                "a matrix written as rows has each row in brackets, but this is not",
            )
            .with_label(bare.span, "not in brackets")
            .with_label(first.span, "the first row")
            .with_hint(
                "write `[[1, 2], [3, 4]]` for rows, `[1, 2, 3]` for one row, \
                 or `VStack(a, b)` to put a matrix under another",
            ),
        );
    }
    let cols = rows[0].0.len();
    let (row, span) = rows.iter().find(|(r, _)| r.len() != cols)?;
    Some(
        Diagnostic::new(
            *span,
            format!(
                "this row has {} but the first row has {cols}",
                elements(row.len())
            ),
        )
        .with_label(*span, elements(row.len()))
        .with_label(rows[0].1, elements(cols))
        .with_hint("every row of a matrix has the same length"),
    )
}

/// A matrix element (in a literal, or assigned by `m[i, j] := x`) that is
/// not a number; `what` is the value's kind as messages say it.
pub fn element_not_a_number(span: Span, what: &str) -> Diagnostic {
    Diagnostic::new(
        span,
        format!("a matrix element must be a number, but this is {what}"),
    )
    .with_label(span, what)
}

/// `tape` while a tape is open; `span` is the keyword.
pub fn nested_tape(span: Span) -> Diagnostic {
    Diagnostic::new(span, "a tape cannot start inside another tape")
        .with_label(span, "this `tape` is inside a tape that is still open")
        .with_hint("close the first tape with `end;` before starting the next")
}

/// `m[i, j] := x` inside a tape.
pub fn element_in_tape(target: Span, statement: Span) -> Diagnostic {
    Diagnostic::new(target, "an element cannot be changed inside a tape")
        .with_label(statement, "changes a recorded value in place")
        .with_hint("a recorded value is never changed in place: build the matrix before the tape")
}

/// `Blame`, `Nudge` or `CheckBlame` inside a tape.
pub fn blame_in_tape(builtin: &str, span: Span) -> Diagnostic {
    Diagnostic::new(span, format!("{builtin} cannot be used inside a tape"))
        .with_label(span, "the tape is still open here")
        .with_hint("blame is ready once the tape's `end;` has run the reverse walk")
}

/// The `tape` keyword that starts a tape statement.
pub fn tape_keyword(statement: Span) -> Span {
    Span::new(statement.source, statement.start, statement.start + 4)
}

/// A routine assigning a global it did not declare local.
pub fn global_assigned(routine: &Routine, target: &Name) -> Diagnostic {
    let name = &target.text;
    Diagnostic::new(target.span, format!("`{}` cannot assign the global variable `{name}`", routine.name.text))
        .with_label(target.span, format!("`{name}` is a global"))
        .with_label(routine.header, "inside this routine")
        .with_hint(format!(
            "declare a local with `var {name}: ...;` before `begin`, or return the value and assign it outside"
        ))
}

/// A routine passing a global to a `var` parameter, which would assign it.
pub fn global_passed(routine: &str, name: &Name) -> Diagnostic {
    Diagnostic::new(
        name.span,
        format!(
            "`{routine}` may not pass the global `{}` to a `var` parameter: a routine does not assign globals",
            name.text
        ),
    )
    .with_label(name.span, "a global")
    .with_hint(format!(
        "give `{routine}` a `var` parameter for it, and pass `{}` from the top level",
        name.text
    ))
}

/// A builtin or routine called with the wrong number of arguments.
pub fn wrong_count(b: &Builtin, got: usize, span: Span) -> Diagnostic {
    let (name, min, max, takes) = (b.name, b.min_args(), b.max_args(), b.takes);
    let count = match (min, max) {
        (1, 1) => "1 argument".to_string(),
        (min, max) if min == max => format!("{min} arguments"),
        (min, usize::MAX) => format!("at least {min} argument{}", if min == 1 { "" } else { "s" }),
        (min, max) => format!("{min} to {max} arguments"),
    };
    Diagnostic::new(
        span,
        format!(
            "`{name}` takes {count}, but {got} {} given",
            if got == 1 { "was" } else { "were" }
        ),
    )
    .with_label(span, "this call")
    .with_hint(format!("{name} takes {takes}"))
}

/// A user routine called with the wrong number of arguments.
pub fn routine_arity(name: &str, params: usize, got: usize, span: Span) -> Diagnostic {
    Diagnostic::new(
        span,
        format!(
            "`{name}` takes {params} argument{}, but {got} {} given",
            if params == 1 { "" } else { "s" },
            if got == 1 { "was" } else { "were" }
        ),
    )
    .with_label(span, "this call")
}

/// A procedure where a value is needed.
pub fn gives_no_value(name: &str, span: Span) -> Diagnostic {
    Diagnostic::new(span, format!("`{name}` is a procedure: it gives no value"))
        .with_label(span, "used here as a value")
}

/// `x:w:d` in a call of anything but `Write` and `WriteLn`.
pub fn field_width_outside_write(span: Span) -> Diagnostic {
    Diagnostic::new(
        span,
        "field widths (`x:w:d`) are only for Write and WriteLn",
    )
    .with_label(span, "a field width")
}

/// `Blame`, `Nudge` or `CheckBlame` of something that is not a variable.
pub fn takes_a_variable_name(builtin: &str, span: Span) -> Diagnostic {
    Diagnostic::new(span, format!("{builtin} takes a variable's name"))
        .with_label(span, "not a variable")
        .with_hint(format!(
            "assign the value to a variable inside the tape, then write `{}`",
            call_with_a_name(builtin)
        ))
}

/// `Nudge(name, rate)`: a call of `builtin` with `name` for the variable
/// and its other parameters' names, as its declaration has them.
fn call_with_a_name(builtin: &str) -> String {
    let rest = crate::declarations::find(builtin)
        .map(|b| b.params.iter().skip(1).map(|p| p.name).collect::<Vec<_>>())
        .unwrap_or_default();
    let args: Vec<&str> = std::iter::once("name").chain(rest).collect();
    format!("{builtin}({})", args.join(", "))
}

/// A call of a name that is neither a builtin nor a declared routine.
pub fn unknown_routine<'a>(
    name: &Name,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Diagnostic {
    let d = Diagnostic::new(
        name.span,
        format!("unknown function or procedure `{}`", name.text),
    )
    .with_label(name.span, "not a builtin and not declared");
    // Pascal's `Exit` and `Halt`, which this language leaves out.
    if ["exit", "halt"].contains(&name.text.to_ascii_lowercase().as_str()) {
        return d.with_hint(
            "there is none: a routine ends at its `end` (a function gives back `Result`), \
             `break` leaves a loop, and a program ends after its last statement",
        );
    }
    let candidates: Vec<&str> = candidates.into_iter().chain(["end"]).collect();
    // Other languages' names for what this one spells otherwise, unless
    // the program has the name in another case (`Print` declared, `print`
    // called).
    let differs_in_case = candidates
        .iter()
        .any(|c| c.eq_ignore_ascii_case(&name.text));
    let other = match name.text.to_ascii_lowercase().as_str() {
        "print" | "println" | "printf" | "puts" | "echo" => {
            Some("`WriteLn(...)` prints a line (`Write(...)` without the newline)")
        }
        "readln" | "read" | "input" | "scanf" => Some(
            "there is no keyboard input: a program reads the words after its path on the \
             command line (`ParamStr(1)`, a number by `StrToInt` or `StrToFloat`) or a file \
             (`ReadText`, `Load`)",
        ),
        "size" | "shape" | "dim" | "dims" => Some("`Rows(m)` and `Cols(m)` give a matrix's shape"),
        "matmul" | "dot" | "mm" => {
            Some("the matrix product is `a * b`; the elementwise product is `Hadamard(a, b)`")
        }
        "softmax" => Some("`RowSoftmax(m)` takes the softmax of each row"),
        _ => None,
    };
    if let Some(hint) = other
        && !differs_in_case
    {
        return d.with_hint(hint);
    }
    // `edn;` is a call of a routine named `edn`: `end` is a candidate too.
    with_near_miss(d, &name.text, candidates)
}

/// A read of a name that holds nothing: `label` says why (never assigned
/// anywhere, for the checks; not assigned yet, at run time).
pub fn unknown_variable<'a>(
    name: &Name,
    label: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Diagnostic {
    let d = Diagnostic::new(name.span, format!("unknown variable `{}`", name.text))
        .with_label(name.span, label);
    with_near_miss(d, &name.text, candidates)
}

fn with_near_miss<'a>(
    d: Diagnostic,
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Diagnostic {
    match near_miss(name, candidates) {
        Some(close) => d.with_hint(format!("did you mean `{close}`?")),
        None => d,
    }
}

/// A `var` declaration of a variable that already holds a value its type
/// does not take (assigned before the declaration, or at an earlier prompt
/// entry); `ty` is the declared type at `ty_span`.
pub fn declared_after_assignment(
    name: &Name,
    ty_span: Span,
    ty: TypeName,
    holds: &str,
) -> Diagnostic {
    Diagnostic::new(
        ty_span,
        format!(
            "`{}` cannot be declared {}: it already holds {holds}",
            name.text,
            ty.name()
        ),
    )
    .with_label(ty_span, format!("{} here", ty.name()))
    .with_label(name.span, format!("already holds {holds}"))
    .with_hint("declare a variable before its first assignment, or give this one another name")
}

/// How to make an Integer of a whole Real.
pub const INTEGER_HINT: &str = "use Round(x) or Trunc(x) to make a whole number an Integer";

/// The error of argument `position` of `b` (0 the first) being `what`
/// (`a String`): with how to make a matrix of a number (`number`), or an
/// Integer of a Real (`real`), where the builtin wants one.
pub fn wrong_kind(
    b: &Builtin,
    position: usize,
    what: &str,
    number: bool,
    real: bool,
    span: Span,
) -> Diagnostic {
    let which = if b.max_args() == 1 {
        "its argument".to_string()
    } else {
        format!("argument {}", position + 1)
    };
    let mut d = Diagnostic::new(
        span,
        format!("{} takes {}, but {which} is {}", b.name, b.takes, what),
    )
    .with_label(span, what);
    let wants_a_matrix = match b.params.get(position) {
        Some(p) => p.kind == crate::declarations::ParamKind::Matrix,
        None => b.takes.contains("matri"),
    };
    if number && wants_a_matrix {
        d = d.with_hint("a number is not turned into a matrix: write `[[x]]` for a 1×1");
    }
    // `Row(W, c)` with `c` a Real (read from a matrix, or `2.0`): a whole
    // number, where the sample shows one, is the Integer the Real is not.
    if real && b.params.get(position).is_some_and(|p| p.wants_an_integer()) {
        d = d.with_hint(INTEGER_HINT);
    }
    d
}

/// `message`, of a value given where `ty` is declared, with `label` at
/// `span` and how to make an Integer where a Real (`real`) was given for
/// one.
pub fn given_another_type(
    span: Span,
    message: String,
    label: String,
    ty: TypeName,
    real: bool,
) -> Diagnostic {
    let d = Diagnostic::new(span, message).with_label(span, label);
    if real && ty == TypeName::Integer {
        d.with_hint(INTEGER_HINT)
    } else {
        d
    }
}

/// `name` (at `span`), declared of type `ty`, given `what` (`a Real`): the
/// words of the run and of the checks, which find a literal so given.
pub fn not_of_declared_type(
    span: Span,
    name: &str,
    ty: TypeName,
    what: &str,
    real: bool,
) -> Diagnostic {
    given_another_type(
        span,
        format!("`{name}` is declared {} but is given {what}", ty.name()),
        format!("wants {}", ty.name()),
        ty,
        real,
    )
}
