//! Warnings about layout: a statement indented as if it belonged to the
//! `for`, `while` or `if` before it, when only one statement does (Pascal's
//! most common trap: the second line of a loop's body without `begin`).

use crate::diagnostic::{Diagnostic, Span};
use crate::syntax::tree::{Stmt, StmtKind};

/// `errors` with the layout warnings of `stmts` among them, in the order
/// of the text: a misleading layout is often what an error comes from (a
/// second statement indented into an `if` without `begin`).
pub fn among_errors(mut errors: Vec<Diagnostic>, stmts: &[Stmt], text: &str) -> Vec<Diagnostic> {
    errors.extend(indentation_warnings(stmts, text));
    errors.sort_by_key(|d| (d.span.source, d.span.start));
    errors
}

/// Every such statement of `stmts` (routines' bodies and blocks included),
/// with `text` the source they were parsed from.
pub fn indentation_warnings(stmts: &[Stmt], text: &str) -> Vec<Diagnostic> {
    let mut warnings = Vec::new();
    list(stmts, text, &mut warnings);
    hidden_blocks(stmts, text, &mut warnings);
    warnings
}

/// `if x > 0 then {` with statements on the lines after it, up to a `}`:
/// braces written as C writes a block, where `{` opens a comment, so the
/// statements in it never run and the `if` takes the statement after the
/// `}`. Looked for only in a text that parses; where one does not, the
/// parser's error says it (`braces_as_a_block`).
fn hidden_blocks(stmts: &[Stmt], text: &str, warnings: &mut Vec<Diagnostic>) {
    let Some(first) = stmts.first() else {
        return;
    };
    let source = first.span.source;
    let (_, comments, _) = crate::syntax::lexer::lex_with_comments(text, source);
    for comment in comments {
        if !text[comment.start..].starts_with('{')
            || !crate::syntax::lexer::opens_like_a_block(text, comment.start)
        {
            continue;
        }
        let line = text[..comment.end].matches('\n').count() + 1;
        let open = Span::new(source, comment.start, comment.start + 1);
        let close = Span::new(source, comment.end - 1, comment.end);
        warnings.push(
            Diagnostic::warning(
                open,
                format!(
                    "this `{{` starts a comment, not a block: the statements in it, up to line {line}, never run"
                ),
            )
            .with_label(open, "a comment starts here")
            .with_label(close, "and ends here")
            .with_hint(crate::syntax::lexer::BRACES_HINT),
        );
    }
}

/// The column (from 0, in characters) where `at` stands, and whether
/// only blanks stand before it on its line.
fn column(text: &str, at: usize) -> Option<(usize, bool)> {
    let before = text.get(..at)?;
    let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    Some((line.chars().count(), line.trim().is_empty()))
}

/// The column of `at` (from 0, in characters) if only blanks stand before
/// it on its line.
fn starts_line(text: &str, at: usize) -> Option<usize> {
    let before = text.get(..at)?;
    let blanks = before.len() - before.trim_end_matches([' ', '\t']).len();
    let line_start = at - blanks;
    (line_start == 0 || before[..line_start].ends_with('\n')).then_some(blanks)
}

fn list(stmts: &[Stmt], text: &str, warnings: &mut Vec<Diagnostic>) {
    for (k, stmt) in stmts.iter().enumerate() {
        inner(stmt, text, warnings);
        let at_start = |keyword: &'static str| {
            let start = stmt.span.start;
            (
                keyword,
                Span::new(stmt.span.source, start, start + keyword.len()),
            )
        };
        let ((keyword, header), body) = match &stmt.kind {
            StmtKind::For { body, .. } => (at_start("for"), &**body),
            StmtKind::While { body, .. } => (at_start("while"), &**body),
            StmtKind::If {
                branches,
                otherwise: None,
            } => match branches.last() {
                Some((_, then)) => (at_start("if"), then),
                None => continue,
            },
            StmtKind::If {
                branches,
                otherwise: Some(otherwise),
            } => match branches
                .last()
                .and_then(|(_, then)| else_keyword(then, otherwise, text))
            {
                Some(header) => (("else", header), &**otherwise),
                None => continue,
            },
            _ => continue,
        };
        if matches!(body.kind, StmtKind::Block(_)) || body.span.source != stmt.span.source {
            continue;
        }
        if body.kind == StmtKind::Empty {
            warnings.extend(empty_body(keyword, header, body, text));
            continue;
        }
        let Some(next) = stmts.get(k + 1) else {
            continue;
        };
        if matches!(next.kind, StmtKind::Empty | StmtKind::Error) {
            continue;
        }
        // Only a statement that starts a line below the body can look
        // inside; that is asked first, looking no further back than the
        // blanks before it, so that a long line is not read once for each
        // statement on it.
        let Some(next_col) = starts_line(text, next.span.start) else {
            continue;
        };
        if !text
            .get(body.span.end..next.span.start)
            .is_some_and(|between| between.contains('\n'))
        {
            continue;
        }
        let (Some((head, _)), Some((body_col, body_first))) =
            (column(text, header.start), column(text, body.span.start))
        else {
            continue;
        };
        // The body on its own line sets the body's indentation; on the
        // header's line, anything indented past the header looks inside.
        let looks_inside = if body_first {
            next_col >= body_col
        } else {
            next_col > head
        };
        if looks_inside && next_col > head {
            let whole = if keyword == "else" { "if" } else { keyword };
            warnings.push(
                Diagnostic::warning(
                    next.span,
                    format!("this statement is indented as if it were part of the `{keyword}`, but it is not"),
                )
                .with_label(body.span, format!("only this statement belongs to the `{keyword}`"))
                .with_label(next.span, format!("this one runs after the `{whole}`"))
                .with_label(header, format!("this `{keyword}` holds one statement"))
                .with_hint(format!(
                    "put the statements of the `{keyword}` between `begin` and `end`, or indent this one less"
                )),
            );
        }
    }
}

/// The `else` keyword between an `if`'s last branch and `otherwise`.
fn else_keyword(then: &Stmt, otherwise: &Stmt, text: &str) -> Option<Span> {
    let (from, to) = (then.span.end, otherwise.span.start);
    let between = text.get(from..to)?;
    let (tokens, _) = crate::syntax::lexer::lex(between, then.span.source);
    let (_, at) = tokens
        .iter()
        .find(|(t, _)| *t == crate::syntax::lexer::Token::Else)?;
    Some(Span::new(then.span.source, from + at.start, from + at.end))
}

/// A `;` right after `do`, `then` or `else`: it ends the statement there,
/// so the loop repeats nothing (or the branch does nothing) and the
/// statement after it runs once, whatever the condition. Pascal's other
/// common trap, the more so as `while ... do;` never ends.
fn empty_body(keyword: &str, header: Span, body: &Stmt, text: &str) -> Option<Diagnostic> {
    let at = body.span.start;
    if text.get(at..at + 1) != Some(";") {
        return None;
    }
    let semicolon = Span::new(body.span.source, at, at + 1);
    let (word, ends) = match keyword {
        "if" => ("then", "if"),
        "else" => ("else", "if"),
        _ => ("do", keyword),
    };
    let what = match keyword {
        "if" => "the `if` does nothing, and what follows runs whatever the condition",
        "else" => "the `else` does nothing, and what follows runs whatever the condition",
        "while" => "the loop repeats nothing, and never ends once its condition holds",
        _ => "the loop repeats nothing, and what follows runs once, after it",
    };
    Some(
        Diagnostic::warning(
            semicolon,
            format!("this `;` right after `{word}` ends the `{ends}`: {what}"),
        )
        .with_label(semicolon, format!("the `{ends}` ends here"))
        .with_label(header, format!("this `{keyword}` holds no statement"))
        .with_hint(format!(
            "remove the `;` after `{word}`, so that the statement after it belongs to the `{keyword}`"
        )),
    )
}

/// The statement lists inside `stmt`.
fn inner(stmt: &Stmt, text: &str, warnings: &mut Vec<Diagnostic>) {
    match &stmt.kind {
        StmtKind::Block(body) | StmtKind::Tape { body, .. } | StmtKind::Repeat { body, .. } => {
            list(body, text, warnings)
        }
        StmtKind::Routine(r) => list(&r.body, text, warnings),
        StmtKind::For { body, .. } | StmtKind::While { body, .. } => inner(body, text, warnings),
        StmtKind::If {
            branches,
            otherwise,
        } => {
            for (_, then) in branches {
                inner(then, text, warnings);
            }
            if let Some(o) = otherwise {
                inner(o, text, warnings);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warned(text: &str) -> Vec<String> {
        let (program, errors) = crate::syntax::parse(text, 0);
        assert!(errors.is_empty(), "{errors:?}");
        indentation_warnings(&program.body, text)
            .into_iter()
            .map(|d| d.message)
            .collect()
    }

    #[test]
    fn a_semicolon_right_after_do_or_then_is_warned_with_its_own_fix() {
        let trap = "for i := 1 to 3 do;\n  x := i;\n";
        assert_eq!(
            warned(trap),
            [
                "this `;` right after `do` ends the `for`: the loop repeats nothing, and what follows runs once, after it"
            ]
        );
        let trap = "while x < 3 do; x := x + 1;\nif x > 2 then; y := 1;\n";
        let said = warned(trap);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].contains("right after `do` ends the `while`"),
            "{said:?}"
        );
        assert!(
            said[1].contains("right after `then` ends the `if`"),
            "{said:?}"
        );
        // An empty statement that is not a `;` there, and a body that is
        // there, are not warned.
        assert!(warned("for i := 1 to 3 do x := i;\nif x > 2 then y := 1;\n").is_empty());
        assert!(warned("begin\n  while x < 3 do\nend;\n").is_empty());
    }

    #[test]
    fn a_second_indented_line_after_a_loop_without_begin_is_warned() {
        let trap = "for i := 1 to 3 do\n  x := i;\n  y := x;\n";
        assert_eq!(warned(trap).len(), 1);
        assert!(warned(trap)[0].contains("`for`"));
        let trap = "if a then\n    b := 1;\n    c := 2;\n";
        assert_eq!(warned(trap).len(), 1);
        let same_line = "while n > 0 do n := n - 1;\n   m := 2;\n";
        assert_eq!(warned(same_line).len(), 1);
        let inside = "begin\n  for i := 1 to 3 do\n    x := i;\n    y := x;\nend;\n";
        assert_eq!(warned(inside).len(), 1);
    }

    #[test]
    fn what_is_laid_out_as_it_runs_is_not_warned() {
        for fine in [
            "for i := 1 to 3 do\n  x := i;\ny := x;\n",
            "for i := 1 to 3 do\nbegin\n  x := i;\n  y := x;\nend;\n",
            "for i := 1 to 3 do x := i;\ny := 2;\n",
            "if a then\n  b := 1\nelse\n  b := 2;\nc := 3;\n",
            "for i := 1 to 3 do x := i; y := 2;\n",
        ] {
            assert!(warned(fine).is_empty(), "{fine}");
        }
    }
}
