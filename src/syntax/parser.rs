//! The parser: tokens to a syntax tree, built with chumsky over the token slice.
//!
//! No chumsky type leaves this module: [`parse`] returns the tree and a list
//! of [`Diagnostic`]s. Recovery happens at statement boundaries (skipping
//! whole blocks inside a broken statement), so one run
//! reports several independent syntax errors. Before chumsky sees the tokens,
//! [`check_nesting`] refuses source nested deeper than [`MAX_NESTING`], so no
//! later recursive walk (parser, checker, evaluator, drop) can go deep.

use std::rc::Rc;

use chumsky::error::RichPattern;
use chumsky::input::ValueInput;
use chumsky::prelude::*;

use super::lexer::{BRACES_HINT, KEYWORDS, Token, lex, opens_like_a_block};
use super::tree::*;
use crate::diagnostic::{Diagnostic, SourceId, Span};

/// Deepest nesting of brackets, blocks and prefix operators the source may have.
pub const MAX_NESTING: usize = 256;

type Extra<'t> = extra::Err<Rich<'t, Token, SimpleSpan>>;

/// One `op operand` step of a chain, with the operator's span.
type OperatorAndOperand = ((BinaryOp, Span), Expr);
/// One `cond then stmt` of an `if` chain.
type Branch = (Expr, Stmt);

/// Lexes and parses one text. The tree is returned even when there are
/// errors; the parts that did not parse are `Error` nodes.
pub fn parse(text: &str, source: SourceId) -> (Program, Vec<Diagnostic>) {
    let (mut tokens, mut errors) = lex(text, source);
    quote_inside_string(&mut tokens, &mut errors, text);
    if let Some(deep) = check_nesting(&tokens) {
        errors.push(deep);
        return (Program::default(), errors);
    }
    let (program, parse_errors) = parse_tokens(&tokens, text, source);
    errors.extend(parse_errors);
    errors.sort_by_key(|d| d.span.start);
    (program, errors)
}

/// `WriteLn('it's fine');`: a quote inside a string, written once, ends
/// the string, the rest reads as code, and the line's last quote opens a
/// string that runs past the line's end. A string with a word right after
/// it, on a line that ends in an open string, is taken for that: one error
/// says how a quote is written, and the parser is given the string the
/// line meant, so nothing after it is reported. The lexer's tokens stay
/// as they are (an editor colours the line as the lexer reads it).
fn quote_inside_string(tokens: &mut Vec<(Token, Span)>, errors: &mut Vec<Diagnostic>, text: &str) {
    let mut i = 0;
    while i + 1 < tokens.len() {
        let (Token::Str(_), string) = tokens[i] else {
            i += 1;
            continue;
        };
        let glued = matches!(&tokens[i + 1], (Token::Ident(_), word) if word.start == string.end);
        if !glued {
            i += 1;
            continue;
        }
        let line_end = text[string.end..]
            .find(['\n', '\r'])
            .map_or(text.len(), |n| string.end + n);
        let on_line = tokens[i + 1..].partition_point(|(_, span)| span.start < line_end);
        let open = tokens[i + 1..i + 1 + on_line]
            .iter()
            .position(|(t, span)| *t == Token::Error && text[span.start..].starts_with('\''))
            .map(|at| i + 1 + at);
        // A line holds one open string at most (it runs to the line's
        // end): with none, or none to mend, the rest of the line is
        // passed over, so that each line is read once.
        let Some(open) = open else {
            i += 1 + on_line;
            continue;
        };
        let open_span = tokens[open].1;
        let last = open_span.start
            + text[open_span.start..open_span.end]
                .rfind('\'')
                .unwrap_or(0);
        // What follows the meant string's closing quote, lexed again.
        let (rest, rest_errors) = lex(&text[last + 1..open_span.end], string.source);
        if !rest_errors.is_empty() {
            i = open + 1;
            continue;
        }
        let quote = string.end - 1;
        let meant = format!(
            "{}''{}",
            &text[string.start..quote],
            &text[string.end..=last]
        );
        let value = meant[1..meant.len() - 1].replace("''", "'");
        let quote_span = Span::new(string.source, quote, string.end);
        errors.retain(|d| d.span != open_span);
        errors.push(
            Diagnostic::new(quote_span, "a quote inside a string is written `''`")
                .with_label(quote_span, "this `'` ends the string")
                .with_hint(format!("write {meant}")),
        );
        let meant_span = Span::new(string.source, string.start, last + 1);
        let shifted = rest.into_iter().map(|(t, span)| {
            (
                t,
                Span::new(span.source, span.start + last + 1, span.end + last + 1),
            )
        });
        let replacement: Vec<(Token, Span)> = std::iter::once((Token::Str(value), meant_span))
            .chain(shifted)
            .collect();
        let next = i + replacement.len();
        tokens.splice(i..=open, replacement);
        i = next;
    }
}

/// Parses tokens that are already lexed.
pub fn parse_tokens(
    tokens: &[(Token, Span)],
    text: &str,
    source: SourceId,
) -> (Program, Vec<Diagnostic>) {
    // The end of the input is placed just after its last visible
    // character, so that an error there is shown on that line, not on the
    // blank lines after it.
    let len = text.trim_end().len();
    let simple: Vec<(Token, SimpleSpan)> = tokens
        .iter()
        .map(|(t, s)| (t.clone(), SimpleSpan::from(s.start..s.end)))
        .collect();
    let input = simple
        .as_slice()
        .map(SimpleSpan::from(len..len), |(t, s)| (t, s));
    let closing = closing_brackets(tokens);
    let rows_of = Rc::new(brackets_of_rows(tokens, &closing));
    let (program, errors) = program_parser(source, rows_of)
        .parse(input)
        .into_output_errors();
    let mut diagnostics = rows_without_comma(tokens, &closing);
    let mut placed = std::collections::HashSet::new();
    let (closed, declarations) = if errors.is_empty() {
        (Vec::new(), Declarations::of(&[]))
    } else {
        (closed_brackets(tokens), Declarations::of(tokens))
    };
    // The headers with an error told: the parser's recovery inside one
    // reads the rest of its parameters as statements, each an error more.
    let mut broken_headers = std::collections::HashSet::new();
    for error in errors {
        // Tokens the lexer refused were reported already.
        if matches!(error.found(), Some(Token::Error)) {
            continue;
        }
        let at = tokens.partition_point(|(_, s)| s.start < error.span().start);
        if let Some((open, _)) = declarations.header[at]
            && !broken_headers.insert(open)
        {
            continue;
        }
        let d = to_diagnostic(&error, source);
        let d = common_mistake(d, &error, tokens, &declarations, text);
        let d = unclosed_bracket(d, &error, tokens, &closed);
        let d = braces_as_a_block(d, &error, tokens, text);
        if placed.insert((d.span.start, d.span.end)) {
            diagnostics.push(d);
        }
    }
    (program.unwrap_or_default(), diagnostics)
}

/// `if x > 0 {` with statements on the lines after: braces written as C
/// writes a block, where `{` starts a comment that hides the statements up
/// to its `}`. Said where the error comes right after such a comment: one
/// opened at the end of a line of code, holding a `;`.
fn braces_as_a_block(
    d: Diagnostic,
    error: &Rich<'_, Token, SimpleSpan>,
    tokens: &[(Token, Span)],
    text: &str,
) -> Diagnostic {
    let at = tokens.partition_point(|(_, s)| s.start < error.span().start);
    let from = at.checked_sub(1).map_or(0, |i| tokens[i].1.end);
    let to = error.span().start.clamp(from, text.len());
    // The comments between the two tokens (only blanks and comments lie
    // there), as the lexer finds them, from the text's start.
    let (_, comments, _) = super::lexer::lex_with_comments(&text[from..to], d.span.source);
    let Some(start) = comments
        .into_iter()
        .map(|c| from + c.start)
        .find(|&start| text[start..].starts_with('{') && opens_like_a_block(text, start))
    else {
        return d;
    };
    let brace = Span::new(d.span.source, start, start + 1);
    let end = start + text[start..].find('}').unwrap_or(0);
    let line = text[..end].matches('\n').count() + 1;
    let mut d = d.with_label(
        brace,
        format!("a comment from here to the `}}` on line {line}"),
    );
    d.hints.insert(0, BRACES_HINT.to_string());
    d
}

/// Where a walk back from the end of `tokens` through the statement they
/// end stopped.
#[derive(PartialEq)]
enum Back {
    /// At this bracket, the innermost still open.
    Bracket(usize),
    /// At a `for`, with no bracket open: the tokens are its bounds.
    For,
    /// At the start of the statement, or of the file, with none open.
    Start,
}

/// The innermost bracket still open at the end of `tokens`, back to the
/// start of their statement: no bracket stays open across a `;`, a
/// `begin` or the like (one before them was told about there).
fn back_to_open_bracket(tokens: &[(Token, Span)]) -> Back {
    let mut depth = 0usize;
    for (i, (t, _)) in tokens.iter().enumerate().rev() {
        match t {
            Token::RParen | Token::RBracket => depth += 1,
            Token::LParen | Token::LBracket if depth > 0 => depth -= 1,
            Token::LParen | Token::LBracket => return Back::Bracket(i),
            Token::For => return Back::For,
            Token::Semi => return Back::Start,
            t if opens_or_closes_a_part(t) => return Back::Start,
            _ => {}
        }
    }
    Back::Start
}

/// Whether `t` begins or ends a part of a statement or a block (`begin`,
/// `then`, `until`, ...), which no bracket holds: the reach of an open
/// bracket ends there.
fn opens_or_closes_a_part(t: &Token) -> bool {
    matches!(
        t,
        Token::Begin
            | Token::End
            | Token::Do
            | Token::Then
            | Token::Else
            | Token::Tape
            | Token::Repeat
            | Token::Until
    )
}

/// Whether the `(` or `[` at each place is closed (by its own kind of
/// closer) before its statement ends: before a token no bracket holds
/// (`:=`, `begin`, `then`, ...; a `;` too, except inside a routine's
/// header, whose parameter groups it separates) or the end of the input.
/// One pass over the tokens, made once for all of a parse's errors.
fn closed_brackets(tokens: &[(Token, Span)]) -> Vec<bool> {
    let mut closed = vec![false; tokens.len()];
    let mut open: Vec<usize> = Vec::new();
    let header = |at: usize| {
        at >= 2
            && matches!(tokens[at - 1].0, Token::Ident(_))
            && matches!(tokens[at - 2].0, Token::Procedure | Token::Function)
    };
    for (i, (t, _)) in tokens.iter().enumerate() {
        match t {
            Token::LParen | Token::LBracket => open.push(i),
            Token::RParen | Token::RBracket => {
                if let Some(o) = open.pop() {
                    let pair = matches!(
                        (&tokens[o].0, t),
                        (Token::LParen, Token::RParen) | (Token::LBracket, Token::RBracket)
                    );
                    closed[o] = pair;
                }
            }
            Token::Semi => {
                while open.last().is_some_and(|&o| !header(o)) {
                    open.pop();
                }
            }
            t if matches!(
                t,
                Token::Assign
                    | Token::While
                    | Token::For
                    | Token::If
                    | Token::Procedure
                    | Token::Function
            ) || opens_or_closes_a_part(t) =>
            {
                open.clear()
            }
            _ => {}
        }
    }
    closed
}

/// Where each point of the tokens stands in a declaration, found in one
/// pass for every error: `header[i]` is, when the tokens before `i` end
/// inside a routine's header, the index of its `(` and of the first
/// token of the parameter group they end in; `section[i]` is, when they
/// end in the names of a `var` section's group, the index of the `var`
/// or `;` before them, and whether that is the `var`.
struct Declarations {
    header: Vec<Option<(usize, usize)>>,
    section: Vec<Option<(usize, bool)>>,
}

/// How far the tokens have come into a `var` section.
#[derive(Clone, Copy)]
enum Section {
    Outside,
    /// In a group's names, after the `var` or `;` at this index.
    Names(usize, bool),
    /// After a group's `:`.
    Colon,
    /// After a group's type, where a `;` may start another group.
    Typed,
}

impl Declarations {
    fn of(tokens: &[(Token, Span)]) -> Declarations {
        let mut header = Vec::with_capacity(tokens.len() + 1);
        let mut section = Vec::with_capacity(tokens.len() + 1);
        let (mut h, mut v) = (None, Section::Outside);
        let names = |v: Section| match v {
            Section::Names(at, first) => Some((at, first)),
            _ => None,
        };
        for (i, (t, _)) in tokens.iter().enumerate() {
            header.push(h);
            section.push(names(v));
            h = match t {
                Token::LParen => (i >= 2
                    && matches!(tokens[i - 1].0, Token::Ident(_))
                    && matches!(tokens[i - 2].0, Token::Procedure | Token::Function))
                .then_some((i, i + 1)),
                Token::Semi => h.map(|(open, _)| (open, i + 1)),
                Token::Ident(_) | Token::Comma | Token::Colon | Token::Var => h,
                _ => None,
            };
            v = match (t, v) {
                (Token::Var, _) => Section::Names(i, true),
                (Token::Ident(_) | Token::Comma, Section::Names(..)) => v,
                (Token::Colon, Section::Names(..)) => Section::Colon,
                (Token::Ident(_), Section::Colon) => Section::Typed,
                (Token::Semi, Section::Typed) => Section::Names(i, false),
                _ => Section::Outside,
            };
        }
        header.push(h);
        section.push(names(v));
        Declarations { header, section }
    }

    /// The tokens of the parameter group that the tokens before `at` end
    /// in, after its `(` or `;`, when they end inside a routine's header.
    fn header_group<'t>(
        &self,
        tokens: &'t [(Token, Span)],
        at: usize,
    ) -> Option<&'t [(Token, Span)]> {
        self.header[at].map(|(_, group)| &tokens[group..at])
    }
}

/// The most tokens of a declaration a hint writes out again.
const SHOWN_GROUP: usize = 16;
/// The most parameter groups a hint writes out again.
const SHOWN_GROUPS: usize = 6;

/// Words other languages put before a parameter, where this one has
/// `var` or nothing.
const PARAMETER_MODES: [&str; 10] = [
    "const", "constref", "ref", "out", "in", "inout", "byref", "byval", "final", "mut",
];

/// Whether `word` is one of [`PARAMETER_MODES`], in any case.
fn is_mode_word(word: &str) -> bool {
    PARAMETER_MODES.iter().any(|m| word.eq_ignore_ascii_case(m))
}

/// Whether a parameter mode word asks for a copy (`const`, `in`), where
/// a parameter without `var` is one already.
fn copies(word: &str) -> bool {
    ["const", "constref", "in", "byval", "final"]
        .iter()
        .any(|m| word.eq_ignore_ascii_case(m))
}

/// `word` (`ref`, `out` ...) written before a parameter, at `span`.
fn not_a_mode(word: &str, span: Span, hint: String) -> Diagnostic {
    Diagnostic::new(
        span,
        format!("`{word}` does not mark a parameter: a parameter is marked `var` or nothing"),
    )
    .with_label(span, "a word of another language")
    .with_hint(hint)
}

/// A mistake in a routine's parameters or a `var` section, in the words
/// of the language it comes from: `(x: Real, y: Real)` with C's comma,
/// `(const x: Real)` or `(ref x: Real)`, and `x Real` with no `:`.
fn declaration_mistake(
    found: Option<&Token>,
    at: usize,
    tokens: &[(Token, Span)],
    declarations: &Declarations,
) -> Option<Diagnostic> {
    let &(_, span) = tokens.get(at)?;
    let in_header = declarations.header[at].is_some();
    // Whether the group is surely a declaration's: in a header, or the
    // first after `var` (after a `;` a statement may start instead).
    let (group, sure) = match declarations.header_group(tokens, at) {
        Some(group) => (group, true),
        None => {
            let (start, first) = declarations.section[at]?;
            (&tokens[start + 1..at], first)
        }
    };
    // The group's names, as written (its last few in a long one).
    let names = || {
        let shown = &group[group.len().saturating_sub(SHOWN_GROUP)..];
        let names: Vec<&str> = names_in(shown).collect();
        let cut = if shown.len() < group.len() {
            "…, "
        } else {
            ""
        };
        format!("{cut}{}", names.join(", "))
    };
    match found? {
        Token::Comma if in_header && matches!(tokens.get(at + 1), Some((Token::RParen, _))) => {
            Some(
                Diagnostic::new(span, "a `,` before `)` leaves a parameter out")
                    .with_label(span, "nothing follows this `,`")
                    .with_hint("remove the `,`"),
            )
        }
        Token::Comma if in_header && group.iter().any(|(t, _)| *t == Token::Colon) => {
            // The header as it should be: this group, `;`, the next (as
            // it should be written too).
            let var = matches!(tokens.get(at + 1), Some((Token::Var, _)));
            let next = foreign_group(tokens, at + 1 + usize::from(var));
            let hint = match next {
                Some(next) if group.len() <= SHOWN_GROUP => {
                    let var = if var { "var " } else { "" };
                    format!("write `{}; {var}{}`", written(group), next.written)
                }
                _ => "write `;` between the groups".to_string(),
            };
            Some(
                Diagnostic::new(
                    span,
                    "a routine's parameter groups are separated by `;`, not `,`",
                )
                .with_label(span, "write `;` here")
                .with_hint(hint),
            )
        }
        Token::Ident(word) => {
            let (Token::Ident(before), before_span) = &tokens[at.checked_sub(1)?] else {
                return None;
            };
            // `(out y: Real)`, or `(var out y: Real)` with both words.
            let after_var = group.len() == 2 && group[0].0 == Token::Var;
            if in_header && (group.len() == 1 || after_var) && is_mode_word(before) {
                // A second such word: `(in out x: Real)`.
                let second =
                    is_mode_word(word) && matches!(tokens.get(at + 1), Some((Token::Ident(_), _)));
                // The group from `word` on as it should be, if it reads
                // as a group at all (`x, y: Real`, C's `int n`).
                let hint = match foreign_group(tokens, at).filter(|_| !second) {
                    None if second && after_var => format!(
                        "remove `{before} {word}`: `var` alone marks a parameter the routine can change"
                    ),
                    None if second => format!(
                        "remove `{before} {word}`, or write `var` in their place for a parameter the routine can change"
                    ),
                    Some(group) => {
                        let (each, variables) = if group.names > 1 {
                            ("each value", "variables")
                        } else {
                            ("the value", "variable")
                        };
                        let group = group.written;
                        if after_var {
                            format!(
                                "write `var {group}`, which lets the routine change the caller's {variables}"
                            )
                        } else {
                            format!(
                                "`{group}` gives the routine a copy of {each}; `var {group}` lets it change the caller's {variables}"
                            )
                        }
                    }
                    None if after_var => format!(
                        "remove `{before}`: `var` alone marks a parameter the routine can change"
                    ),
                    None => format!(
                        "remove `{before}`, or write `var` in its place for a parameter the routine can change"
                    ),
                };
                return Some(not_a_mode(before, *before_span, hint));
            }
            // `(x, out y: Real)`: a word of another language after a `,`.
            if in_header
                && is_mode_word(before)
                && at >= 2
                && tokens[at - 2].0 == Token::Comma
                && !group.iter().any(|(t, _)| *t == Token::Colon)
            {
                let earlier: Vec<&str> = names_in(&group[..group.len() - 2]).collect();
                let typed = foreign_group(tokens, at)
                    .filter(|_| earlier.len() < SHOWN_GROUP)
                    .and_then(|g| Some((g.ty?, g)));
                let hint = match typed {
                    _ if group[0].0 == Token::Var => format!(
                        "remove `{before}`: the `var` before `{}` marks every name of the group",
                        earlier.first().unwrap_or(&word.as_str())
                    ),
                    _ if copies(before) => {
                        format!("remove `{before}`: a parameter not marked `var` is a copy already")
                    }
                    Some((ty, g)) => {
                        // C's `out int y` types `y` alone; `out y: Real`
                        // the names before it too.
                        let earlier = earlier.join(", ");
                        let earlier = if g.c_typed {
                            earlier
                        } else {
                            format!("{earlier}: {}", ty.name())
                        };
                        format!(
                            "write `{earlier}; var {}` to let the routine change `{}`, or remove `{before}`",
                            g.written, g.names_written
                        )
                    }
                    None => format!(
                        "remove `{before}`; a `var` marks a whole group, so a name the routine can change goes in a group of its own"
                    ),
                };
                return Some(not_a_mode(before, *before_span, hint));
            }
            // `var out x: Real;`: such a word in a `var` section.
            if !in_header && sure && group.len() == 1 && is_mode_word(before) {
                let hint = match foreign_group(tokens, at) {
                    Some(g) => format!("write `var {}`", g.written),
                    None => format!("remove `{before}`"),
                };
                return Some(
                    Diagnostic::new(
                        *before_span,
                        format!("`{before}` does not belong in a `var` section, which lists names and their type"),
                    )
                    .with_label(*before_span, "a word of another language")
                    .with_hint(hint),
                );
            }
            // `(int n)`, `(var int n)`, `var Real x;`: a type first, as
            // C writes it; in a `var` section's later group too, where no
            // statement starts with two names.
            if (group.len() == 1 || in_header && after_var)
                && (sure || matches!(tokens.get(at + 1), Some((Token::Semi | Token::Comma, _))))
                && let Some(ty) = type_as_c_names_it(before)
            {
                let var = if after_var { "var " } else { "" };
                // `(int n, double x)`: every group of the header so; else
                // this group (`int a, b`), or at least its first name.
                let end = if in_header {
                    Token::RParen
                } else {
                    Token::Semi
                };
                let hint = (!after_var)
                    .then(|| c_parameters(tokens, at - 1, &end))
                    .flatten()
                    .map(|groups| format!("`{groups}`"))
                    .or_else(|| {
                        let g = foreign_group(tokens, at - 1)?;
                        let more = tokens[g.end].0 != end;
                        let each = if more {
                            ", each name before its type"
                        } else {
                            ""
                        };
                        Some(format!("`{var}{}`{each}", g.written))
                    })
                    .unwrap_or_else(|| match tokens.get(at + 1) {
                        // `(double n: Integer)`: typed twice.
                        Some((Token::Colon, _)) => {
                            format!("`{var}{word}` and its type after the `:`")
                        }
                        _ if type_as_c_names_it(word).is_some() => {
                            format!("the name first, then `: {}`", ty.name())
                        }
                        Some((Token::Comma, _)) => {
                            format!(
                                "`{var}{word}, …: {}`, the names and then their type",
                                ty.name()
                            )
                        }
                        _ => format!("`{var}{word}: {}`", ty.name()),
                    });
                return Some(
                    Diagnostic::new(*before_span, "a type comes after the name it is given to")
                        .with_label(*before_span, "a type before a name, as C writes it")
                        .with_hint(format!("write {hint}")),
                );
            }
            // `(x, int y)`: a type first after a `,`, the names before it
            // without one.
            let len = group.len();
            if in_header
                && len >= 3
                && group[len - 2].0 == Token::Comma
                && type_as_c_names_it(before).is_some()
                && type_as_c_names_it(word).is_none()
                && group[..len - 2]
                    .iter()
                    .enumerate()
                    .all(|(i, (t, _))| match t {
                        Token::Ident(n) => type_as_c_names_it(n).is_none() && !is_mode_word(n),
                        Token::Comma => true,
                        Token::Var => i == 0,
                        _ => false,
                    })
                && let Some(g) = foreign_group(tokens, at - 1)
            {
                // One `var` before the names marks this group's too.
                let var = if group[0].0 == Token::Var { "var " } else { "" };
                let earlier = written(&group[..len - 2]);
                // The rest of the header written as groups, where it reads
                // as C's; else this group, and a `;` for the `,` after it.
                let hint = match c_parameters(tokens, at - 1, &Token::RParen) {
                    Some(rest) if var.is_empty() || !rest.contains(';') => {
                        format!("write `{earlier}; {var}{rest}`")
                    }
                    _ if tokens[g.end].0 == Token::Comma => format!(
                        "write `{earlier}; {var}{}`, and `;` for the `,` after `{}`",
                        g.written, g.names_written
                    ),
                    _ => format!("write `{earlier}; {var}{}`", g.written),
                };
                return Some(
                    Diagnostic::new(*before_span, "a type comes after the name it is given to")
                        .with_label(*before_span, "a type before a name, as C writes it")
                        .with_hint(hint),
                );
            }
            let gap = Span::new(before_span.source, before_span.end, span.start);
            // `(x: Real y: Real)`: a group typed already, then the next.
            if group.iter().any(|(t, _)| *t == Token::Colon) {
                return (in_header
                    && matches!(tokens.get(at + 1), Some((Token::Colon | Token::Comma, _))))
                .then(|| {
                    Diagnostic::new(span, "a `;` is missing between two parameter groups")
                        .with_label(gap, "`;` missing here")
                        .with_hint(if group.len() <= SHOWN_GROUP {
                            format!("write `{}; {word}`", written(group))
                        } else {
                            format!("write `{before}; {word}`")
                        })
                });
            }
            // `(var x Real)`: the `var` is written again with the group.
            let var = if in_header && group[0].0 == Token::Var {
                "var "
            } else {
                ""
            };
            // `(x Real)`, or Go's `(n int)`.
            match type_as_c_names_it(word) {
                Some(ty) => Some(
                    Diagnostic::new(span, "a `:` is missing between a name and its type")
                        .with_label(gap, "`:` missing here")
                        .with_hint(format!("write `{var}{}: {}`", names(), ty.name())),
                ),
                // `(x y: Real)`: two names with nothing between them.
                None if matches!(tokens.get(at + 1), Some((Token::Colon | Token::Comma, _)))
                    || sure && matches!(tokens.get(at + 1), Some((Token::Ident(_), _)))
                    || in_header && matches!(tokens.get(at + 1), Some((Token::RParen, _))) =>
                {
                    Some(
                        Diagnostic::new(span, "a `,` is missing between two names")
                            .with_label(gap, "`,` missing here")
                            .with_hint(format!("write `{}, {word}`", names())),
                    )
                }
                None => None,
            }
        }
        _ => None,
    }
}

/// A type as this language, C, Go or Rust names it (`Real`, `double`,
/// `int`, `float64`, `f64`).
fn type_as_c_names_it(word: &str) -> Option<TypeName> {
    TypeName::from_name_in_any_case(word).or(match word.to_ascii_lowercase().as_str() {
        "int" | "long" | "short" | "unsigned" | "uint" | "int8" | "int16" | "int32" | "int64"
        | "uint8" | "uint16" | "uint32" | "uint64" | "i8" | "i16" | "i32" | "i64" | "u8"
        | "u16" | "u32" | "u64" | "isize" | "usize" => Some(TypeName::Integer),
        "double" | "float" | "float32" | "float64" | "f32" | "f64" => Some(TypeName::Real),
        "bool" => Some(TypeName::Boolean),
        "char" => Some(TypeName::Str),
        _ => None,
    })
}

/// A parameter group, or a `var` section's, written as another language
/// writes it, read again: as it should be written, and how many names it
/// has.
struct ForeignGroup {
    written: String,
    /// Its names, as written again (`y, z`), and how many.
    names_written: String,
    names: usize,
    /// Whether its type came first, as C writes it.
    c_typed: bool,
    /// Its type, if it has one.
    ty: Option<TypeName>,
    /// The index of the `,`, `;` or `)` that ends it.
    end: usize,
}

/// The group from `from` on, if it is C's `int n` (or `int a, b`), or
/// names with or without `: Type`, ended by `;` or `)` (or by `,`, as C
/// separates groups, after a type), in [`SHOWN_GROUP`] tokens at most.
fn foreign_group(tokens: &[(Token, Span)], from: usize) -> Option<ForeignGroup> {
    let run = shown_run(tokens, from);
    let ident = |i: usize| match run.get(i) {
        Some((Token::Ident(n), _)) => Some(n.as_str()),
        _ => None,
    };
    // A name, not a type word (`(int n, double)` is not two names).
    let name = |i: usize| ident(i).filter(|&n| type_as_c_names_it(n).is_none());
    // C's type first, not followed by a second type word (`long long n`).
    let c_type = ident(1)
        .filter(|&name| type_as_c_names_it(name).is_none())
        .and(ident(0))
        .and_then(type_as_c_names_it);
    let mut i = usize::from(c_type.is_some());
    let mut names = vec![name(i)?];
    i += 1;
    // Another name after a `,`, unless it starts the next group: C's
    // (`, int m`), or one with its type after it (`int n, x: Real`). A
    // type word after the name is Go's type of the group (`a, b int`).
    let go_type = |i: usize| c_type.is_none() && ident(i).and_then(type_as_c_names_it).is_some();
    while matches!(run.get(i), Some((Token::Comma, _)))
        && (ident(i + 2).is_none() || go_type(i + 2))
        && !(c_type.is_some() && matches!(run.get(i + 2), Some((Token::Colon, _))))
    {
        names.push(name(i + 1)?);
        i += 2;
    }
    let mut ty = c_type;
    if ty.is_none() && matches!(run.get(i), Some((Token::Colon, _))) {
        ty = Some(type_as_c_names_it(ident(i + 1)?)?);
        i += 2;
    } else if go_type(i) {
        ty = ident(i).and_then(type_as_c_names_it);
        i += 1;
    }
    match run.get(i) {
        Some((Token::Semi | Token::RParen, _)) => {}
        Some((Token::Comma, _)) if ty.is_some() => {}
        _ => return None,
    }
    let names_written = names.join(", ");
    Some(ForeignGroup {
        written: match ty {
            Some(ty) => format!("{names_written}: {}", ty.name()),
            None => names_written.clone(),
        },
        names_written,
        names: names.len(),
        c_typed: c_type.is_some(),
        ty,
        end: from + i,
    })
}

/// `int n, double x)` (or with `;`) from `from` on, written as groups
/// (`n: Integer; x: Real`) when the rest of the header, or of the
/// `var` section's line, up to `end` (`)` or `;`) reads as groups
/// ([`foreign_group`]), [`SHOWN_GROUPS`] of them at most.
fn c_parameters(tokens: &[(Token, Span)], from: usize, end: &Token) -> Option<String> {
    let mut groups = Vec::new();
    let mut at = from;
    while groups.len() < SHOWN_GROUPS {
        let group = foreign_group(tokens, at)?;
        groups.push(group.written);
        match &tokens[group.end].0 {
            t if t == end => return Some(groups.join("; ")),
            Token::Comma | Token::Semi => at = group.end + 1,
            _ => return None,
        }
    }
    None
}

/// The tokens from `from` on, [`SHOWN_GROUP`] at most: the part of a
/// declaration a hint reads again.
fn shown_run(tokens: &[(Token, Span)], from: usize) -> &[(Token, Span)] {
    let rest = &tokens[from.min(tokens.len())..];
    &rest[..rest.len().min(SHOWN_GROUP)]
}

/// The names among declaration tokens, in order.
fn names_in(tokens: &[(Token, Span)]) -> impl Iterator<Item = &str> {
    tokens.iter().filter_map(|(t, _)| match t {
        Token::Ident(n) => Some(n.as_str()),
        _ => None,
    })
}

/// Declaration tokens as written: `var a, b: Real`.
fn written(tokens: &[(Token, Span)]) -> String {
    let mut text = String::new();
    for (t, _) in tokens {
        match t {
            Token::Ident(n) => {
                if !text.is_empty() && !text.ends_with(' ') {
                    text.push(' ');
                }
                text.push_str(n);
            }
            Token::Var => text.push_str("var "),
            Token::Colon => text.push_str(": "),
            Token::Comma => text.push_str(", "),
            _ => {}
        }
    }
    text.trim_end().to_string()
}

/// `x := [[1, 2], [3, 4];` or an entry that ends at `Sum(a`: a plain
/// "expected ..." error where the innermost bracket still open could be
/// closed also points at that bracket, as a `begin` with no `end` is. A
/// bracket closed later in its statement (`WriteLn(1 2)`, a `,` missing)
/// is not called unclosed.
fn unclosed_bracket(
    d: Diagnostic,
    error: &Rich<'_, Token, SimpleSpan>,
    tokens: &[(Token, Span)],
    closed: &[bool],
) -> Diagnostic {
    if !d.message.starts_with("expected ") {
        return d;
    }
    let at = tokens.partition_point(|(_, s)| s.start < error.span().start);
    let Back::Bracket(i) = back_to_open_bracket(&tokens[..at]) else {
        return d;
    };
    if closed[i] {
        return missing_comma(d, error, tokens, i);
    }
    let (bracket, span) = (&tokens[i].0, tokens[i].1);
    let (opener, closer) = if *bracket == Token::LBracket {
        ("[", Token::RBracket)
    } else {
        ("(", Token::RParen)
    };
    let closes = error
        .expected()
        .any(|p| matches!(p, RichPattern::Token(x) if **x == closer));
    if error.found().is_none() || closes {
        d.with_label(span, format!("this `{opener}` is not closed"))
    } else {
        d
    }
}

/// `WriteLn('x = ' x)`, `[1 2]`: a value where a `,` or the closer of a
/// call's or a matrix's bracket (`open`, closed later) was expected.
fn missing_comma(
    d: Diagnostic,
    error: &Rich<'_, Token, SimpleSpan>,
    tokens: &[(Token, Span)],
    open: usize,
) -> Diagnostic {
    let starts_a_value = matches!(
        error.found(),
        Some(
            Token::Ident(_)
                | Token::Integer(_)
                | Token::Real(_)
                | Token::Str(_)
                | Token::LParen
                | Token::LBracket
        )
    );
    let expects_comma = error
        .expected()
        .any(|p| matches!(p, RichPattern::Token(x) if **x == Token::Comma));
    if !starts_a_value || !expects_comma {
        return d;
    }
    let before = open.checked_sub(1).map(|b| &tokens[b].0);
    let header = open
        .checked_sub(2)
        .is_some_and(|b| matches!(tokens[b].0, Token::Procedure | Token::Function));
    let hint = match (&tokens[open].0, before) {
        (Token::LBracket, Some(Token::Ident(_) | Token::RParen | Token::RBracket)) => {
            "an element's row and column are separated by `,`: `m[1, 2]`"
        }
        (Token::LBracket, _) => "a matrix's elements are separated by `,`: `[1, 2]`",
        (Token::LParen, Some(Token::Ident(_))) if !header => {
            "a call's arguments are separated by `,`: `WriteLn('x = ', x)`"
        }
        _ => return d,
    };
    d.with_hint(hint)
}

/// The index of a routine's name, if `tokens[at]` comes right after its
/// header's name or its parameters: `function F` or `procedure P(a: Real)`.
fn routine_name_before(tokens: &[(Token, Span)], at: usize) -> Option<usize> {
    let name = match tokens.get(at.checked_sub(1)?)?.0 {
        Token::RParen => match back_to_open_bracket(&tokens[..at - 1]) {
            Back::Bracket(open) if tokens[open].0 == Token::LParen => open.checked_sub(1)?,
            _ => return None,
        },
        _ => at - 1,
    };
    let keyword = &tokens.get(name.checked_sub(1)?)?.0;
    (matches!(tokens[name].0, Token::Ident(_))
        && matches!(keyword, Token::Function | Token::Procedure))
    .then_some(name)
}

/// The header of the routine whose name is at `name`, as this language
/// writes it, for a hint: "write `function F(a: Real): Real;`" where a
/// result type follows its parameters (after `:` or `->`, or after
/// nothing, as Go writes it), else a procedure or a function of that
/// name. The parameters are the text written between the brackets.
fn routine_written(tokens: &[(Token, Span)], name: usize, text: &str) -> String {
    let Some((Token::Ident(word), _)) = tokens.get(name) else {
        return "write `function F(a: Real): Real;`".to_string();
    };
    let mut head = word.clone();
    let mut after = name + 1;
    if let Some((Token::LParen, open)) = tokens.get(name + 1) {
        let close = tokens[name + 2..]
            .iter()
            .take_while(|(t, _)| !matches!(t, Token::Semi | Token::Begin | Token::LParen))
            .position(|(t, _)| *t == Token::RParen)
            .map(|i| name + 2 + i);
        match close {
            // Groups written as C, Go or Rust write them (`a: f64`,
            // `a float64`, `int a`) as this language does; else as written.
            Some(close) => {
                match c_parameters(tokens, name + 2, &Token::RParen) {
                    Some(groups) => head.push_str(&format!("({groups})")),
                    None if tokens[close].1.end - open.start <= 80 => {
                        head.push_str(&text[open.start..tokens[close].1.end])
                    }
                    None => head.push_str("(...)"),
                }
                after = close + 1;
            }
            _ => head.push_str("(...)"),
        }
    }
    let ty = match (
        tokens.get(after),
        tokens.get(after + 1),
        tokens.get(after + 2),
    ) {
        (Some((Token::Minus, _)), Some((Token::Gt, _)), Some((Token::Ident(ty), _)))
        | (Some((Token::Colon, _)), Some((Token::Ident(ty), _)), _)
        | (Some((Token::Ident(ty), _)), _, _) => type_as_c_names_it(ty),
        _ => None,
    };
    match ty {
        Some(ty) => format!("write `function {head}: {};`", ty.name()),
        None => format!(
            "write `procedure {head};`, or `function {head}: Real;` for a routine that gives back a value"
        ),
    }
}

/// The keywords a statement starts with, for a misspelled one.
const STATEMENT_KEYWORDS: [&str; 9] = [
    "while",
    "for",
    "if",
    "repeat",
    "begin",
    "tape",
    "var",
    "procedure",
    "function",
];

/// What an element is, for an element written with one index or none.
const ELEMENT_HINT: &str = "only a matrix has elements; rows and columns count from 1, \
                            a whole row is `Row(x, i)`, a column `Col(x, j)`";

/// A parse error told in the words of the mistake a learner most likely
/// made: a `;` missing at the end of a line, `return`, an element with one
/// index, a block left open; any other error as it was.
fn common_mistake(
    d: Diagnostic,
    error: &Rich<'_, Token, SimpleSpan>,
    tokens: &[(Token, Span)],
    declarations: &Declarations,
    text: &str,
) -> Diagnostic {
    let at = tokens.partition_point(|(_, s)| s.start < error.span().start);
    let before = at.checked_sub(1).map(|i| &tokens[i]);
    let expects = |t: Token| {
        error
            .expected()
            .any(|p| matches!(p, RichPattern::Token(x) if **x == t))
    };
    let found = error.found();
    if let Some(d) = declaration_mistake(found, at, tokens, declarations) {
        return d;
    }
    // `Step(var w, 0.1)`: `var` at a call, or `(var a, var b: Real)`
    // in a header, where one `var` marks the whole group.
    if let Some(Token::Var) = found
        && let Some(&(_, span)) = tokens.get(at)
    {
        let name = match tokens.get(at + 1) {
            Some((Token::Ident(name), _)) => name.as_str(),
            _ => "w",
        };
        match declarations.header_group(tokens, at) {
            Some(group) if matches!(before, Some((Token::Comma, _))) => {
                // The names before the `,`, and the group from the name
                // after `var` on as it should be (`b: Real`, C's `int b`).
                let earlier = &group[..group.len() - 1];
                let first_var = earlier.first().is_some_and(|(t, _)| *t == Token::Var);
                let next = foreign_group(tokens, at + 1);
                let typed = |next: &ForeignGroup| next.ty.map(|t| format!(": {}", t.name()));
                let both = |next: &ForeignGroup| {
                    let names: Vec<&str> = names_in(earlier).collect();
                    let ty = typed(next).unwrap_or_default();
                    format!("var {}, {}{ty}", names.join(", "), next.names_written)
                };
                let hint = match next {
                    Some(next) if first_var && earlier.len() <= SHOWN_GROUP => {
                        format!(
                            "write `var` once, before the group's first name: `{}`",
                            both(&next)
                        )
                    }
                    Some(next) if earlier.len() <= SHOWN_GROUP => format!(
                        "write `{}; var {}` to let the routine change `{}` alone, or `{}` for every name",
                        // The names before take the type they were given
                        // with, unless it was C's, which types one name.
                        written(earlier)
                            + &typed(&next).filter(|_| !next.c_typed).unwrap_or_default(),
                        next.written,
                        next.names_written,
                        both(&next)
                    ),
                    _ => "write `var` once, before the group's first name".to_string(),
                };
                let label = if first_var {
                    "a second `var` in one group"
                } else {
                    "`var` after a `,`, inside a group"
                };
                return Diagnostic::new(span, "one `var` marks every name of its group")
                    .with_label(span, label)
                    .with_hint(hint);
            }
            Some(_) => {}
            None => {
                if let Back::Bracket(open) = back_to_open_bracket(&tokens[..at])
                    && tokens[open].0 == Token::LParen
                    && open
                        .checked_sub(1)
                        .is_some_and(|b| matches!(tokens[b].0, Token::Ident(_)))
                {
                    return Diagnostic::new(
                        span,
                        "`var` is written in a routine's header, not in a call",
                    )
                    .with_label(span, "not in a call")
                    .with_hint(format!(
                        "pass the variable's name alone, `{name}`: the header's `var` is what lets the routine change it"
                    ));
                }
            }
        }
    }
    // `for i := 1..3 do`, `x := 1..3`, `m[1..2]`: a range of another
    // language, which this one has nowhere. The innermost bracket open
    // around the `..`, or whether it is in a `for`'s bounds.
    if let Some(Token::DotDot) = found
        && let Some(&(_, span)) = tokens.get(at)
    {
        let back = back_to_open_bracket(&tokens[..at]);
        // `end..`: one dot too many after the program's last `end`.
        if matches!(before, Some((Token::End, _))) {
            return Diagnostic::new(span, "one `.` ends the program, not two")
                .with_label(span, "two dots")
                .with_hint("write `end.`");
        }
        if back == Back::For {
            return Diagnostic::new(span, "`..` is not how a `for` loop counts: write `to`")
                .with_label(span, "a range of another language")
                .with_hint("`for i := 1 to 3 do` counts up, `for i := 3 downto 1 do` counts down");
        }
        // `m[1..2]`: a bracket right after a name or a closing bracket
        // holds an element's indices.
        let index = matches!(back, Back::Bracket(i) if {
            tokens[i].0 == Token::LBracket
                && i.checked_sub(1).is_some_and(|b| {
                    matches!(
                        tokens[b].0,
                        Token::Ident(_) | Token::RParen | Token::RBracket
                    )
                })
        });
        let hint = if index {
            "an element is `m[row, column]`; whole rows are `RowRange(m, first, count)`, whole columns `ColRange(m, first, count)`"
        } else {
            "a `for` loop counts from one bound to another: `for i := 1 to 3 do`"
        };
        return Diagnostic::new(
            span,
            "there are no ranges: `..` is not part of the language",
        )
        .with_label(span, "a range of another language")
        .with_hint(hint);
    }
    // `Load(data.txt)`, `m.rows`: a dot between two names, as a path or
    // a field is written in other languages. The parser stops at the dot,
    // or takes it for the program's final `.` and stops after it.
    let dot = match (found, before) {
        (Some(Token::Dot), _) => Some(at),
        (_, Some((Token::Dot, _))) => Some(at - 1),
        _ => None,
    };
    if let Some(dot) = dot
        && let Some((Token::Ident(name), name_span)) = dot.checked_sub(1).map(|i| &tokens[i])
        && let Some((Token::Ident(field), field_span)) = tokens.get(dot + 1)
        && name_span.end == tokens[dot].1.start
        && field_span.start == tokens[dot].1.end
    {
        let span = Span::new(name_span.source, name_span.start, field_span.end);
        let in_call = matches!(back_to_open_bracket(&tokens[..dot]), Back::Bracket(i)
            if tokens[i].0 == Token::LParen
                && i.checked_sub(1).is_some_and(|b| matches!(tokens[b].0, Token::Ident(_))));
        let hint = if in_call {
            format!("a file's path is a string, in single quotes: '{name}.{field}'")
        } else {
            format!(
                "a name has no parts: there are no records or methods; a builtin \
                 takes the value, as in `Rows({name})`"
            )
        };
        return Diagnostic::new(span, format!("`{name}.{field}` is not a name or a value"))
            .with_label(span, "a dot between two names")
            .with_hint(hint);
    }
    // `function F(a: Real) -> Real;`, `function F(a: Real) Real;`: a
    // result type written as Python, Rust or Go write it, after the header.
    if let Some(name) = routine_name_before(tokens, at)
        && let Some((written_type, type_at)) = match (found, tokens.get(at + 1)) {
            (Some(Token::Minus), Some((Token::Gt, _))) => Some((true, at + 2)),
            (Some(Token::Ident(_)), _) => Some((false, at)),
            _ => None,
        }
        && let Some((Token::Ident(ty), type_span)) = tokens.get(type_at)
        && (written_type || type_as_c_names_it(ty).is_some())
    {
        let procedure = matches!(tokens[name - 1].0, Token::Procedure);
        let hint = routine_written(tokens, name, text);
        let (message, label) = if written_type {
            let arrow = Span::new(type_span.source, tokens[at].1.start, tokens[at + 1].1.end);
            (
                "a function's result type comes after a `:`, not after `->`",
                (arrow, "`->` of another language"),
            )
        } else {
            // Where the `:` goes: the gap up to the type, unless a line
            // break or a comment lies in it.
            let end = tokens[at - 1].1.end;
            let between = &text[end..type_span.start];
            let gap = if between.trim().is_empty() && !between.contains('\n') {
                Span::new(type_span.source, end, type_span.start)
            } else {
                Span::new(type_span.source, end, end)
            };
            (
                "a `:` is missing before the function's result type",
                (gap, "`:` missing here"),
            )
        };
        let d = Diagnostic::new(label.0, message).with_label(label.0, label.1);
        return if procedure {
            d.with_hint(format!(
                "a procedure gives back no value: {hint}, a function, to give one back"
            ))
        } else {
            d.with_hint(hint)
        };
    }
    // `return x;`: a name, then another expression, where a statement starts.
    if let Some((Token::Ident(word), word_span)) = before
        && word.eq_ignore_ascii_case("return")
        && at.checked_sub(2).is_none_or(|i| {
            matches!(
                tokens[i].0,
                Token::Semi | Token::Begin | Token::Then | Token::Else | Token::Do
            )
        })
    {
        let rest = &text[error.span().start..];
        let value = rest[..rest.find([';', '\n']).unwrap_or(rest.len())].trim_end();
        return Diagnostic::new(
            *word_span,
            "there is no `return`: a function gives back its value by assigning `Result`",
        )
        .with_label(*word_span, "not a keyword of the language")
        .with_hint(format!("write `Result := {value};`"));
    }
    // `whlie x < 3 do`, `const N = 3;`: a word that starts a statement in
    // this language or another, then a second word, where a statement starts.
    if let (Some(found), Some((Token::Ident(word), word_span))) = (found, before)
        && matches!(found, Token::Ident(_) | Token::Integer(_) | Token::Real(_))
        && at.checked_sub(2).is_none_or(|i| {
            matches!(
                tokens[i].0,
                Token::Semi | Token::Begin | Token::Then | Token::Else | Token::Do | Token::Tape
            )
        })
    {
        let next = match found {
            Token::Ident(name) => name.as_str(),
            _ => "N",
        };
        let other = match word.to_ascii_lowercase().as_str() {
            "const" | "let" | "dim" => Some((
                "not a keyword of the language",
                format!("there is no `{word}`: a name gets its value by assignment"),
                format!(
                    "write `{next} := ...;` (a `var` section may give its type: `var {next}: Integer;`)"
                ),
            )),
            "case" => Some((
                "not a keyword of the language",
                "there is no `case`: choose with `if` and `else if`".to_string(),
                format!("write `if {next} = 1 then ... else if {next} = 2 then ... else ...;`"),
            )),
            "uses" | "import" | "include" => Some((
                "not a keyword of the language",
                format!("there is no `{word}`: every builtin is always there"),
                "remove this line".to_string(),
            )),
            "def" | "fn" | "fun" | "func" | "sub"
                if matches!(found, Token::Ident(_))
                    && !routine_names(tokens).contains(word.as_str()) =>
            {
                Some((
                    "not a keyword of the language",
                    format!(
                        "there is no `{word}`: a routine starts with `function` or `procedure`"
                    ),
                    routine_written(tokens, at, text),
                ))
            }
            _ if crate::declarations::find(word).is_some() => Some((
                "a builtin, called without parentheses",
                format!("a call of `{word}` puts its arguments in parentheses"),
                format!("write `{word}({next})`"),
            )),
            _ => None,
        };
        if let Some((label, message, hint)) = other {
            return Diagnostic::new(*word_span, message)
                .with_label(*word_span, label)
                .with_hint(hint);
        }
        if let Some(keyword) = crate::diagnostic::near_miss(word, STATEMENT_KEYWORDS) {
            return Diagnostic::new(*word_span, format!("`{word}` is not a keyword"))
                .with_label(*word_span, "a name, followed by another word")
                .with_hint(format!("did you mean `{keyword}`?"));
        }
    }
    // `elseif`, `elsif`, `elif`: other languages' words for `else if`.
    // Found where a statement goes on, or read as a statement of its own.
    fn else_if(t: Option<&(Token, Span)>) -> Option<(&str, Span)> {
        match t {
            Some((Token::Ident(word), span))
                if ["elseif", "elsif", "elif"]
                    .iter()
                    .any(|w| word.eq_ignore_ascii_case(w)) =>
            {
                Some((word.as_str(), *span))
            }
            _ => None,
        }
    }
    let found_word = found
        .is_some_and(|t| matches!(t, Token::Ident(_)))
        .then(|| else_if(tokens.get(at)))
        .flatten();
    if let Some((word, span)) = found_word.or_else(|| else_if(before)) {
        return Diagnostic::new(span, format!("there is no `{word}`: write `else if`"))
            .with_label(span, "not a keyword of the language")
            .with_hint("an `if` in the `else` of an `if` continues the chain: `if x = 1 then ... else if x = 2 then ...`");
    }
    // A statement ended, a new line began, and no `;` stands between.
    if let (Some(found), Some((_, last))) = (found, before)
        && expects(Token::Semi)
        && !matches!(found, Token::Else | Token::End | Token::Until)
        && text[last.end..error.span().start].contains('\n')
    {
        let end = Span::new(last.source, last.end, last.end);
        let next = Span::new(last.source, error.span().start, error.span().end);
        return Diagnostic::new(end, "missing `;` at the end of this line")
            .with_label(end, "add `;` here")
            .with_label(next, "the next statement starts here")
            .with_hint("every statement ends with `;`");
    }
    // `a == b` and `x ** 2`, from other languages.
    if let (Some(found), Some((previous, _))) = (found, before) {
        if *found == Token::Eq && *previous == Token::Eq {
            let mut d = d;
            d.hints = vec!["a comparison is written with one `=`: `if x = 3 then`".to_string()];
            return d;
        }
        // `x += 1` and `i++`: a statement's target, then an operator and
        // `=`, or `++`.
        let operator = match previous {
            Token::Plus => Some('+'),
            Token::Minus => Some('-'),
            Token::Star => Some('*'),
            Token::Slash => Some('/'),
            _ => None,
        };
        let target = at.checked_sub(2).and_then(|i| match &tokens[i] {
            (Token::Ident(name), _)
                if i.checked_sub(1).is_none_or(|b| {
                    matches!(
                        tokens[b].0,
                        Token::Semi
                            | Token::Begin
                            | Token::Then
                            | Token::Else
                            | Token::Do
                            | Token::Repeat
                            | Token::Tape
                    )
                }) =>
            {
                Some(name.as_str())
            }
            _ => None,
        });
        if let (Some(op), Some(name)) = (operator, target) {
            // The right side as typed, up to the statement's end, if short;
            // in brackets if it is more than one token (`x *= 2 + y`).
            let right: Vec<Span> = tokens[at + 1..]
                .iter()
                .take_while(|(t, _)| !matches!(t, Token::Semi | Token::End | Token::Else))
                // Past 40 tokens the text is too long to show anyway.
                .take(41)
                .map(|(_, span)| *span)
                .collect();
            let right = match (right.first(), right.last()) {
                (Some(first), Some(last)) => text
                    .get(first.start..last.end)
                    .filter(|typed| typed.len() <= 40 && !typed.contains('\n'))
                    .map(|typed| match right.len() {
                        1 => typed.to_string(),
                        _ => format!("({typed})"),
                    }),
                _ => None,
            }
            .unwrap_or_else(|| "…".to_string());
            let written = match found {
                Token::Eq => Some((format!("{op}="), format!("{name} := {name} {op} {right}"))),
                Token::Plus if op == '+' => {
                    Some(("++".to_string(), format!("{name} := {name} + 1")))
                }
                _ => None,
            };
            if let Some((spelled, instead)) = written {
                let (_, operator_span) = before.expect("a token before");
                let span = Span::new(operator_span.source, operator_span.start, error.span().end);
                return Diagnostic::new(span, format!("there is no `{spelled}` operator"))
                    .with_label(span, "not an operator here")
                    .with_hint(format!("write `{instead};`"));
            }
        }
        if *found == Token::Star && *previous == Token::Star {
            let mut d = d;
            let (message, hint) = super::lexer::foreign_operator_words("**", "Power");
            d.message = message;
            d.hints = vec![hint];
            return d;
        }
    }
    // `if x := 3 then`: an assignment where a condition is.
    if let Some(Token::Assign) = found {
        let condition = tokens[..at].iter().rev().find_map(|(t, span)| match t {
            Token::If | Token::While | Token::Until => Some(Some((t, span))),
            Token::Semi
            | Token::Then
            | Token::Do
            | Token::Else
            | Token::Begin
            | Token::Repeat
            | Token::Tape
            | Token::End => Some(None),
            _ => None,
        });
        if let Some(Some((keyword, keyword_span))) = condition {
            let example = match keyword {
                Token::If => "if x = 3 then",
                Token::While => "while x = 3 do",
                _ => "until x = 3",
            };
            let span = Span::new(keyword_span.source, error.span().start, error.span().end);
            return Diagnostic::new(span, "`:=` assigns, but a condition is expected here")
                .with_label(span, "an assignment")
                .with_label(*keyword_span, format!("the condition of this {keyword}"))
                .with_hint(format!("a comparison is written with one `=`: `{example}`"));
        }
    }
    // `to := 1;`, `for do := ...`, `var end: Integer;`: a keyword where a
    // name is, followed by what follows a variable's name.
    if let Some((keyword, span)) = tokens.get(at)
        && KEYWORDS.iter().any(|(_, k, _)| k == keyword)
        && matches!(tokens.get(at + 1), Some((Token::Assign | Token::Colon, _)))
    {
        let span = *span;
        let word = &text[span.start..span.end];
        return Diagnostic::new(
            span,
            format!("`{word}` is a word of the language, so it cannot name a variable"),
        )
        .with_label(span, "a keyword")
        .with_hint(format!("choose another name, such as `{word}1`"));
    }
    // `x := [];`, `[[]]`: an empty matrix, to append to in other languages;
    // but `m[]`, a bracket right after a name or a closing bracket, is an
    // element with no index.
    if let (Some(Token::RBracket), Some((Token::LBracket, open))) = (found, before) {
        let span = Span::new(open.source, open.start, error.span().end);
        if at.checked_sub(2).is_some_and(|b| {
            matches!(
                tokens[b].0,
                Token::Ident(_) | Token::RParen | Token::RBracket
            )
        }) {
            return Diagnostic::new(span, "an element takes a row and a column, as `x[1, 2]`")
                .with_label(span, "no index")
                .with_hint(ELEMENT_HINT);
        }
        return Diagnostic::new(span, "a matrix has at least one element")
            .with_label(span, "an empty matrix")
            .with_hint(
                "there are no empty matrices and nothing is appended: `Zeros(1, n)` makes \
                 a row of n to fill with `m[1, j] := ...;`, and `HStack(a, b)` joins two",
            );
    }
    // `x[2]`: an element with one index.
    if matches!(found, Some(Token::RBracket)) && expects(Token::Comma) {
        let mut d = d;
        d.message = "an element takes a row and a column, as `x[1, 2]`".to_string();
        return d.with_hint(ELEMENT_HINT);
    }
    // The file ended inside a block: point at the block that is open.
    if found.is_none() && expects(Token::End) {
        let mut open: Vec<usize> = Vec::new();
        for (at, token) in tokens.iter().enumerate() {
            match token.0 {
                Token::Begin | Token::Tape | Token::Repeat => open.push(at),
                Token::End | Token::Until => {
                    open.pop();
                }
                _ => {}
            }
        }
        if let Some(&at) = open.last() {
            let (keyword, span) = &tokens[at];
            let closer = if *keyword == Token::Repeat {
                "`until`"
            } else {
                "`end`"
            };
            let d = d.with_label(*span, format!("this {keyword} has no {closer}"));
            if *keyword == Token::Repeat {
                return d;
            }
            // `edn;` in the block parses as a call: name it as the slip.
            let routines = routine_names(tokens);
            let slip = tokens[at..].windows(3).find_map(|w| match w {
                [
                    (Token::Semi | Token::Begin | Token::Tape, _),
                    (Token::Ident(word), word_span),
                    (Token::Semi, _),
                ] if crate::diagnostic::near_miss(word, ["end"]).is_some()
                    && !routines.contains(word.as_str()) =>
                {
                    Some((word, *word_span))
                }
                _ => None,
            });
            let Some((word, word_span)) = slip else {
                return d;
            };
            let mut d = d.with_label(word_span, format!("a call of `{word}`, not `end`"));
            d.hints = vec![format!(
                "did you mean `end`? `{word};` reads as a call of a procedure"
            )];
            return d;
        }
    }
    d
}

/// The names of the routines `tokens` declare.
fn routine_names(tokens: &[(Token, Span)]) -> std::collections::HashSet<&str> {
    tokens
        .windows(2)
        .filter_map(|w| match w {
            [
                (Token::Procedure | Token::Function, _),
                (Token::Ident(name), _),
            ] => Some(name.as_str()),
            _ => None,
        })
        .collect()
}

/// A parse error of the parser's own, with the words for its label after
/// the first line break (split off again by [`to_diagnostic`]).
fn custom<'t>(span: SimpleSpan, message: &str, label: &str) -> Rich<'t, Token, SimpleSpan> {
    Rich::custom(span, format!("{message}\n{label}"))
}

/// [`custom`] with a hint.
fn custom_with_hint<'t>(
    span: SimpleSpan,
    message: &str,
    label: &str,
    hint: &str,
) -> Rich<'t, Token, SimpleSpan> {
    Rich::custom(span, format!("{message}\n{label}\n{hint}"))
}

fn describe(pattern: &RichPattern<'_, Token>) -> Option<String> {
    Some(match pattern {
        RichPattern::Token(t) => format!("{}", &**t),
        RichPattern::Label(l) => l.to_string(),
        RichPattern::EndOfInput => END_OF_FILE.to_string(),
        _ => return None,
    })
}

/// How an error names the end of the text, and its label there.
const END_OF_FILE: &str = "the end of the file";
const FILE_ENDS: &str = "the file ends here";

/// Errors of an entry at the prompt (or a notebook's cell), which name
/// the end of the text as the input's, not a file's.
pub fn at_prompt(mut errors: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let reword = |text: &mut String| {
        if text.contains(END_OF_FILE) || text.contains(FILE_ENDS) {
            *text = text
                .replace(END_OF_FILE, "the end of the input")
                .replace(FILE_ENDS, "the input ends here");
        }
    };
    for d in &mut errors {
        reword(&mut d.message);
        for (_, label) in &mut d.labels {
            reword(label);
        }
        d.hints.iter_mut().for_each(reword);
    }
    errors
}

fn to_diagnostic(error: &Rich<'_, Token, SimpleSpan>, source: SourceId) -> Diagnostic {
    let span = Span::new(source, error.span().start, error.span().end);
    let found = match error.found() {
        Some(t) => format!("{t}"),
        None => END_OF_FILE.to_string(),
    };
    let mut expected: Vec<String> = error.expected().filter_map(describe).collect();
    expected.sort();
    expected.dedup();
    if expected.iter().any(|e| e == "an expression") {
        expected.retain(|e| e != "`-`" && e != "`not`");
    }
    // A `program` header may open the input, but where a statement may
    // start as well, the statement is what was meant (a REPL entry always
    // starts so).
    if expected.iter().any(|e| e == "a statement") {
        expected.retain(|e| e != "`program`");
    }
    // Operators could always continue an expression; they are worth naming
    // only when nothing else was expected.
    const CONTINUATIONS: [&str; 14] = [
        "`[`", "`and`", "`or`", "`+`", "`-`", "`*`", "`/`", "`div`", "`mod`", "`=`", "`<>`", "`<`",
        "`>`", "`:`",
    ];
    let telling: Vec<String> = expected
        .iter()
        .filter(|e| !CONTINUATIONS.contains(&e.as_str()) && !e.starts_with("`<="))
        .cloned()
        .collect();
    // Where a statement may start, an `end` has no block to close.
    let statement_could_start = expected
        .iter()
        .any(|e| e == "a statement" || e == END_OF_FILE);
    let stray_end = matches!(error.found(), Some(Token::End)) && statement_could_start;
    if stray_end {
        expected = vec!["a statement".to_string()];
    } else if expected.len() > 4 && expected.iter().any(|e| e == "`;`") {
        // After a whole statement: the `;` that ends it is what is missing,
        // or an operator if the statement's expression could go on. `end`
        // may always follow a statement, as the last of a block; at the end
        // of the file it is worth naming, as a block is still open (a
        // statement may end the file only at the top level).
        let operators = telling.len() < expected.len();
        let closing = error.found().is_none() && expected.iter().any(|e| e == "`end`");
        expected = vec!["`;`".to_string()];
        if closing {
            expected.push("`end`".to_string());
        }
        if operators {
            expected.push("an operator".to_string());
        }
    } else if !telling.is_empty() {
        expected = telling;
    }
    let wanted = match expected.len() {
        0 => String::new(),
        1 => expected[0].clone(),
        n if n <= 6 => format!("{} or {}", expected[..n - 1].join(", "), expected[n - 1]),
        _ => format!("{}, or something else", expected[..5].join(", ")),
    };
    let mut hint = None;
    let (message, label) = match (error.reason(), error.found()) {
        (chumsky::error::RichReason::Custom(text), _) => {
            let mut parts = text.splitn(3, '\n');
            let message = parts.next().unwrap_or_default().to_string();
            let label = parts.next().unwrap_or("here").to_string();
            hint = parts.next().map(str::to_string);
            (message, label)
        }
        (_, found_token) => (
            if wanted.is_empty() {
                format!("unexpected {found}")
            } else {
                format!("expected {wanted}, found {found}")
            },
            match found_token {
                Some(_) => "not expected here".to_string(),
                None => FILE_ENDS.to_string(),
            },
        ),
    };
    let mut d = Diagnostic::new(span, message).with_label(span, label);
    if let Some(hint) = hint {
        return d.with_hint(hint);
    }
    match error.found() {
        Some(Token::Else) => {
            d = d.with_hint("there is no `;` before `else`: the `if` statement ends at the `;`")
        }
        Some(Token::Eq) => d = d.with_hint("assignment is written `:=`"),
        Some(Token::Colon) if expected.iter().any(|e| e == "`;`") => {
            d = d.with_hint(
                "a `:` follows a value only in Write and WriteLn (`x:0:2`), \
                 and a name only in a `var` section (`var x: Real;`)",
            )
        }
        Some(Token::End) if stray_end => {
            d = d.with_hint(
                "this `end` closes no `begin` or `tape`: its `begin` may be missing, \
                 or an earlier `end` already closed the block",
            )
        }
        None if expected.iter().any(|e| e == "`end`") => {
            d = d.with_hint("a `begin` or `tape` block is still open: close it with `end`")
        }
        _ => {}
    }
    d
}

/// Finds source nested deeper than [`MAX_NESTING`]: brackets and blocks
/// that are open, plus statements hanging off `then`, `else` and `do`, plus
/// runs of prefix `-` and `not`. Counting on tokens keeps it a flat loop.
///
/// An `else` hangs its statement where the `then` it answers hung one: the
/// parser has come back from the `then`'s statement, and from everything
/// inside it, before it reads the `else`. So `if a then if b then x else y`
/// over and over in an `else if` chain stays as shallow as it looks.
pub fn check_nesting(tokens: &[(Token, Span)]) -> Option<Diagnostic> {
    // One frame per open bracket or block: the statement prefixes that
    // hang in it since its last `;`, each `true` for a `then` that no
    // `else` has answered yet.
    let mut frames: Vec<Vec<bool>> = vec![Vec::new()];
    let mut hanging = 0usize;
    let mut prefix_run = 0usize;
    for (i, (token, span)) in tokens.iter().enumerate() {
        match token {
            Token::LParen | Token::LBracket | Token::Begin | Token::Tape | Token::Repeat => {
                frames.push(Vec::new())
            }
            Token::RParen | Token::RBracket | Token::End | Token::Until if frames.len() > 1 => {
                hanging -= frames.pop().map_or(0, |frame| frame.len());
            }
            Token::Then | Token::Do => {
                if let Some(top) = frames.last_mut() {
                    top.push(*token == Token::Then);
                    hanging += 1;
                }
            }
            Token::Else => {
                if let Some(top) = frames.last_mut() {
                    // The statements hung since the `then` it answers are
                    // done; an `else` that no `then` waits for is an error
                    // the parser tells, and hangs one more meanwhile.
                    if let Some(at) = top.iter().rposition(|&then| then) {
                        hanging -= top.len() - at;
                        top.truncate(at);
                    }
                    // An `if` after the `else` continues the chain: its
                    // `then` hangs where this one's did.
                    if !matches!(tokens.get(i + 1), Some((Token::If, _))) {
                        top.push(false);
                        hanging += 1;
                    }
                }
            }
            Token::Semi => {
                if let Some(top) = frames.last_mut() {
                    hanging -= top.len();
                    top.clear();
                }
            }
            _ => {}
        }
        let is_prefix = match token {
            Token::Not => true,
            // A minus is a prefix when what comes before it cannot end an operand.
            Token::Minus => !matches!(
                i.checked_sub(1).map(|p| &tokens[p].0),
                Some(Token::Ident(_) | Token::Integer(_) | Token::Real(_) | Token::Str(_))
                    | Some(Token::RParen | Token::RBracket | Token::True | Token::False)
            ),
            _ => false,
        };
        prefix_run = if is_prefix { prefix_run + 1 } else { 0 };
        let depth = frames.len() - 1 + hanging + prefix_run;
        if depth > MAX_NESTING {
            return Some(
                Diagnostic::new(
                    *span,
                    format!("the program is nested more than {MAX_NESTING} levels deep"),
                )
                .with_label(*span, format!("nesting passes {MAX_NESTING} levels here"))
                .with_hint("split the deep part into smaller steps, with variables or routines"),
            );
        }
    }
    None
}

/// The byte offsets, in order, of every `[` that opens a matrix written as
/// rows: a closed bracket each of whose comma-separated items is itself one
/// closed bracket (`[[1, 2], [3, 4]]`), as opposed to a row of expressions
/// (`[1, 2]`, `[[1, 2] * 2]`). Deciding this on the tokens, in one pass,
/// lets the grammar take the one right reading of each `[` at once: trying
/// rows first and then a row again re-parsed everything inside, which made
/// `[[[[...` without its closers take time exponential in its depth.
fn brackets_of_rows(tokens: &[(Token, Span)], closing: &[usize]) -> Vec<usize> {
    (0..tokens.len())
        .filter(|&open| rows_in(tokens, closing, open) == Some(None))
        .map(|open| tokens[open].1.start)
        .collect()
}

/// `[[1, 2] [3, 4]]`, or the same over two lines: rows with no `,`
/// between them, which the grammar reads as the first row indexed by the
/// second (an error about a row number at run time, or worse, a value).
/// Each `[` whose items, taking two brackets side by side as two items,
/// are all brackets of rows, and which has two such side by side, is one
/// error at its first gap.
fn rows_without_comma(tokens: &[(Token, Span)], closing: &[usize]) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for open in 0..tokens.len() {
        if let Some(Some((row_end, next))) = rows_in(tokens, closing, open) {
            let end = tokens[row_end].1;
            let end = Span::new(end.source, end.end, end.end);
            let next = tokens[next].1;
            errors.push(
                Diagnostic::new(end, "a `,` is missing between two rows")
                    .with_label(end, "add `,` here")
                    .with_label(next, "the next row starts here")
                    .with_hint("rows are separated by `,`: `[[1, 2], [3, 4]]`"),
            );
        }
    }
    errors
}

/// Whether the token at `open` is a closed `[` each of whose items at its
/// own level is one closed bracket group (no `,` after the last): `None`
/// if not; else `Some` of the first place where two such groups stand side
/// by side with no `,` between them (the first group's `]` and the next
/// one's `[`), `None` if the groups are all separated by commas. Reads
/// only the bracket's own items, jumping over each group by `closing`.
fn rows_in(
    tokens: &[(Token, Span)],
    closing: &[usize],
    open: usize,
) -> Option<Option<(usize, usize)>> {
    if tokens[open].0 != Token::LBracket || closing[open] == usize::MAX {
        return None;
    }
    let close = closing[open];
    let mut at = open + 1;
    if at == close {
        return None;
    }
    let mut gap = None;
    while at < close {
        let row_end = closing[at];
        if tokens[at].0 != Token::LBracket || row_end == usize::MAX || row_end >= close {
            return None;
        }
        at = row_end + 1;
        match tokens[at].0 {
            Token::Comma if at + 1 < close => at += 1,
            Token::RBracket if at == close => {}
            Token::LBracket => {
                gap.get_or_insert((row_end, at));
            }
            _ => return None,
        }
    }
    Some(gap)
}

/// Where each `(` or `[` of `tokens` is closed by its own kind of closer,
/// or `usize::MAX` where it is not.
fn closing_brackets(tokens: &[(Token, Span)]) -> Vec<usize> {
    let mut closing = vec![usize::MAX; tokens.len()];
    let mut stack: Vec<usize> = Vec::new();
    for (i, (token, _)) in tokens.iter().enumerate() {
        match token {
            Token::LParen | Token::LBracket => stack.push(i),
            Token::RParen | Token::RBracket => {
                let opener = if matches!(token, Token::RParen) {
                    Token::LParen
                } else {
                    Token::LBracket
                };
                match stack.last() {
                    Some(&open) if tokens[open].0 == opener => {
                        closing[open] = i;
                        stack.pop();
                    }
                    // A closer of the other kind: everything open stays
                    // unclosed, which the parser reports.
                    _ => stack.clear(),
                }
            }
            _ => {}
        }
    }
    closing
}

fn program_parser<'t, I>(
    source: SourceId,
    rows_of: Rc<Vec<usize>>,
) -> impl Parser<'t, I, Program, Extra<'t>>
where
    I: ValueInput<'t, Token = Token, Span = SimpleSpan>,
{
    let sp = move |s: SimpleSpan| Span::new(source, s.start, s.end);

    let ident = select! { Token::Ident(name) => name }
        .map_with(move |text, e| Name::new(text, sp(e.span())))
        .labelled("a name");

    // Labelled before the check, so an unknown name keeps its own message.
    let type_name = select! { Token::Ident(name) => name }
        .labelled("a type")
        .try_map(move |name, span: SimpleSpan| match TypeName::from_name(&name) {
            Some(t) => Ok((t, sp(span))),
            None => {
                let message = format!(
                    "`{name}` is not a type: the types are Integer, Real, Boolean, String and Matrix"
                );
                Err(match TypeName::from_name_in_any_case(&name) {
                    // Pascal's `array[1..3] of Real`.
                    None if name.eq_ignore_ascii_case("array") => custom_with_hint(
                        span,
                        &message,
                        "not a type",
                        "a Matrix holds numbers in rows and columns: `var a: Matrix;`, then `a := Zeros(1, 3);` makes it one row of 3, and `a[1, 2]` is its second",
                    ),
                    Some(t) => custom_with_hint(
                        span,
                        &message,
                        "not a type",
                        &format!(
                            "did you mean `{}`? Type names are written with their capital letter",
                            t.name()
                        ),
                    ),
                    None => match type_as_c_names_it(&name) {
                        // C's or Go's name for one: `x: int`, `x: float64`.
                        Some(t) => custom_with_hint(
                            span,
                            &message,
                            "not a type",
                            &format!("write `{}`, tapec's name for it", t.name()),
                        ),
                        None => custom(span, &message, "not a type"),
                    },
                })
            }
        });

    let expr = recursive(|expr| {
        let arg = expr
            .clone()
            .then(just(Token::Colon).ignore_then(expr.clone()).or_not())
            .then(just(Token::Colon).ignore_then(expr.clone()).or_not())
            .map(|((value, width), decimals)| Arg {
                value,
                width,
                decimals,
            });
        let args = arg
            .separated_by(just(Token::Comma))
            .collect::<Vec<_>>()
            .delimited_by(just(Token::LParen), just(Token::RParen));

        let literal = select! {
            Token::Integer(n) => ExprKind::Integer(n),
            Token::Real(x) => ExprKind::Real(x),
            Token::Str(s) => ExprKind::Str(s),
            Token::True => ExprKind::Bool(true),
            Token::False => ExprKind::Bool(false),
        };

        let elements = expr
            .clone()
            .separated_by(just(Token::Comma))
            .at_least(1)
            .collect::<Vec<_>>();
        // Which of the two a `[` opens was decided on the tokens, so each
        // is tried only where it is the one (see `brackets_of_rows`).
        let opens_rows = move |span: &SimpleSpan| rows_of.binary_search(&span.start).is_ok();
        let rows_bracket = just(Token::LBracket)
            .map_with(|_, e| e.span())
            .filter(opens_rows.clone());
        let row_bracket = just(Token::LBracket)
            .map_with(|_, e| e.span())
            .filter(move |span| !opens_rows(span));
        let row_after = |opening: chumsky::Boxed<'t, 't, I, SimpleSpan, Extra<'t>>| {
            opening
                .ignore_then(elements.clone())
                .then_ignore(just(Token::RBracket))
                .map_with(move |items, e| (items, sp(e.span())))
        };
        // A row inside rows is a row whatever it holds.
        let inner_row = row_after(just(Token::LBracket).map_with(|_, e| e.span()).boxed());
        let row = row_after(row_bracket.boxed());
        let matrix = rows_bracket
            .ignore_then(
                inner_row
                    .separated_by(just(Token::Comma))
                    .at_least(1)
                    .collect::<Vec<_>>(),
            )
            .then_ignore(just(Token::RBracket))
            .map(ExprKind::Matrix)
            .or(row.map(|r| ExprKind::Matrix(vec![r])))
            .labelled("a matrix");

        let call_or_name = ident.then(args.or_not()).map(|(name, args)| match args {
            Some(args) => ExprKind::Call { name, args },
            None => ExprKind::Name(name),
        });

        let atom = choice((literal, matrix, call_or_name))
            .map_with(move |kind, e| Expr {
                kind,
                span: sp(e.span()),
            })
            .or(expr
                .clone()
                .delimited_by(just(Token::LParen), just(Token::RParen))
                .map_with(move |inner: Expr, e| Expr {
                    kind: inner.kind,
                    span: sp(e.span()),
                }))
            .labelled("an expression")
            .boxed();

        let index = expr
            .clone()
            .then_ignore(just(Token::Comma))
            .then(expr.clone())
            .delimited_by(just(Token::LBracket), just(Token::RBracket));
        let postfix = atom
            .foldl_with(index.repeated(), move |target, (row, col), e| Expr {
                kind: ExprKind::Index {
                    target: Box::new(target),
                    row: Box::new(row),
                    col: Box::new(col),
                },
                span: sp(e.span()),
            })
            .boxed();

        let negation = just(Token::Minus)
            .map_with(move |_, e| sp(e.span()))
            .repeated()
            .foldr(postfix, |op_span: Span, operand: Expr| Expr {
                span: op_span.to(operand.span),
                kind: ExprKind::Unary {
                    op: UnaryOp::Neg,
                    op_span,
                    operand: Box::new(operand),
                },
            })
            .boxed();

        let chain = |operand: chumsky::Boxed<'t, 't, I, Expr, Extra<'t>>,
                     op: chumsky::Boxed<'t, 't, I, BinaryOp, Extra<'t>>| {
            operand
                .clone()
                .then(
                    op.map_with(move |op, e| (op, sp(e.span())))
                        .then(operand)
                        .repeated()
                        .collect::<Vec<_>>(),
                )
                .map(|(first, rest): (Expr, Vec<OperatorAndOperand>)| {
                    if rest.is_empty() {
                        return first;
                    }
                    let span = first
                        .span
                        .to(rest.last().map_or(first.span, |(_, e)| e.span));
                    let rest = rest.into_iter().map(|((op, s), e)| (op, s, e)).collect();
                    Expr {
                        kind: ExprKind::Chain {
                            first: Box::new(first),
                            rest,
                        },
                        span,
                    }
                })
                .boxed()
        };

        let product_op = select! {
            Token::Star => BinaryOp::Mul,
            Token::Slash => BinaryOp::Divide,
            Token::Div => BinaryOp::IntDiv,
            Token::Mod => BinaryOp::Mod,
        }
        .boxed();
        let sum_op =
            select! { Token::Plus => BinaryOp::Add, Token::Minus => BinaryOp::Sub }.boxed();
        let compare_op = select! {
            Token::Eq => BinaryOp::Eq,
            Token::Ne => BinaryOp::Ne,
            Token::Lt => BinaryOp::Lt,
            Token::Le => BinaryOp::Le,
            Token::Gt => BinaryOp::Gt,
            Token::Ge => BinaryOp::Ge,
        }
        .boxed();
        let product = chain(negation, product_op);
        let sum = chain(product, sum_op);
        let comparison = chain(sum, compare_op);
        let not = just(Token::Not)
            .map_with(move |_, e| sp(e.span()))
            .repeated()
            .foldr(comparison, |op_span: Span, operand: Expr| Expr {
                span: op_span.to(operand.span),
                kind: ExprKind::Unary {
                    op: UnaryOp::Not,
                    op_span,
                    operand: Box::new(operand),
                },
            })
            .boxed();
        let and = chain(not, just(Token::And).to(BinaryOp::And).boxed());
        chain(and, just(Token::Or).to(BinaryOp::Or).boxed())
    });

    let var_group = ident
        .separated_by(just(Token::Comma))
        .at_least(1)
        .collect::<Vec<_>>()
        .then_ignore(just(Token::Colon))
        .then(type_name)
        // `var x: Real = 2.0;` (an initial value, as other languages give
        // one): said plainly, and the declaration kept.
        .then(
            just(Token::Eq)
                .or(just(Token::Assign))
                .then(
                    any()
                        .and_is(just(Token::Semi).not())
                        .repeated()
                        .at_least(1),
                )
                .map_with(|_, e| e.span())
                .or_not(),
        )
        .validate(|((names, ty), initial), _, emitter| {
            if let Some(span) = initial {
                let name: &Name = &names[names.len() - 1];
                emitter.emit(custom_with_hint(
                    span,
                    "a `var` declaration cannot give a value",
                    "an initial value",
                    &format!(
                        "declare the variable, then assign it: `var {0}: {1};` and then `{0} := ...;`",
                        name.text,
                        ty.0.name()
                    ),
                ))
            }
            (names, ty)
        })
        .map(|(names, ty)| {
            names
                .into_iter()
                .map(|name| VarDecl { name, ty: Some(ty) })
                .collect::<Vec<_>>()
        });
    let var_section = just(Token::Var)
        .ignore_then(var_group.clone())
        .then(
            just(Token::Semi)
                .ignore_then(var_group)
                .repeated()
                .collect::<Vec<_>>(),
        )
        .map(|(first, rest)| {
            let mut all = first;
            all.extend(rest.into_iter().flatten());
            all
        })
        .boxed();

    let param_group = just(Token::Var)
        .or_not()
        .map(|var| var.is_some())
        .then(
            ident
                .separated_by(just(Token::Comma))
                .at_least(1)
                .collect::<Vec<_>>(),
        )
        .then(just(Token::Colon).ignore_then(type_name).or_not())
        .map(|((by_ref, names), ty)| {
            names
                .into_iter()
                .map(|name| Param { name, ty, by_ref })
                .collect::<Vec<_>>()
        });
    let params = param_group
        .separated_by(just(Token::Semi))
        .collect::<Vec<_>>()
        .delimited_by(just(Token::LParen), just(Token::RParen))
        .map(|groups| groups.into_iter().flatten().collect::<Vec<_>>())
        .or_not()
        .map(Option::unwrap_or_default);

    // Where an empty statement may stand: before a separator or a closer.
    let statement_end = choice((
        just(Token::Semi).ignored(),
        just(Token::End).ignored(),
        just(Token::Until).ignored(),
        just(Token::Dot).ignored(),
        end(),
    ))
    .rewind();

    // What recovery skips over whole: a block with all it holds, so that
    // the `end` or `until` that closes a block inside a broken statement is
    // not taken for the end of the statement (and then reported again as
    // closing no block). Pascal's `case x of ... end`, which the language
    // leaves out, is such a block too: its labels and its `end` belong to
    // the one error at `case` (`common_mistake`). A `case` that opens no
    // such block is not skipped over inside one (nor in its head), so a
    // run of them with no `end` fails at once rather than each scanning to
    // the end of the file.
    let word = |w: &'static str| {
        select! { Token::Ident(name) if name.eq_ignore_ascii_case(w) => () }
    };
    let skipped_block = recursive(|block| {
        let inner = block
            .clone()
            .or(none_of([
                Token::Begin,
                Token::Tape,
                Token::Repeat,
                Token::End,
                Token::Until,
            ])
            .and_is(word("case").not())
            .ignored())
            .repeated();
        choice((
            choice((just(Token::Begin), just(Token::Tape)))
                .ignore_then(inner.clone())
                .then_ignore(just(Token::End)),
            just(Token::Repeat)
                .ignore_then(inner.clone())
                .then_ignore(just(Token::Until)),
            word("case")
                .then(
                    none_of([Token::Semi, Token::Begin, Token::Tape, Token::End])
                        .and_is(word("of").not())
                        .and_is(word("case").not())
                        .repeated(),
                )
                .then(word("of"))
                .ignore_then(inner)
                .then_ignore(just(Token::End)),
        ))
        .ignored()
        .memoized()
    });

    // A routine's name and parameters, `procedure P(a: Real; b: Real)`,
    // skipped whole by a statement's recovery: stopping at their first
    // `;` would read the next group as a statement, an error of its own on
    // a header that has none. Only after `procedure` or `function` and a
    // name, so that no other statement's recovery looks past its own end;
    // no brackets or blocks inside, so a `(` left open costs a scan to the
    // next bracket at most.
    let routine_header = choice((just(Token::Procedure), just(Token::Function)))
        .then(select! { Token::Ident(_) => () })
        .then(just(Token::LParen))
        .then(
            none_of([
                Token::LParen,
                Token::RParen,
                Token::Begin,
                Token::Tape,
                Token::Repeat,
                Token::End,
                Token::Until,
            ])
            .repeated(),
        )
        .then(just(Token::RParen))
        .ignored();

    // Where a block must close but cannot (the file ends, or an `until`,
    // `else` or `.` stands where its `end` should), the block is closed
    // there with its error, and what stands there is left to the block
    // around it. A block that failed instead made each block around it
    // parse again all that followed, so every open block doubled the work.
    let unclosable_by = |until: bool| {
        choice((
            end(),
            just(Token::Until).ignored().filter(move |_| until),
            just(Token::End).ignored(),
            just(Token::Else).ignored(),
            just(Token::Dot).ignored(),
        ))
        .rewind()
        .map_with(move |_, e| sp(e.span()))
        .boxed()
    };
    let unclosable = unclosable_by(true);
    let block_end = just(Token::End)
        .map_with(move |_, e| sp(e.span()))
        .recover_with(via_parser(unclosable.clone()))
        .boxed();

    let stmt = recursive(|stmt| {
        let block_body = stmt
            .clone()
            .separated_by(just(Token::Semi))
            .collect::<Vec<_>>()
            .boxed();

        let begin = just(Token::Begin)
            .ignore_then(block_body.clone())
            .then_ignore(block_end.clone())
            .map(StmtKind::Block);

        let tape = just(Token::Tape)
            .ignore_then(block_body.clone())
            .then(block_end.clone())
            .map(|(body, end)| StmtKind::Tape { body, end });

        // An `if` in the `else` of an `if` continues its chain: the branches
        // are read in a loop, not by recursion.
        // A branch may be empty before its `else` too (`if c then else s`).
        let empty_before_else = just(Token::Else)
            .ignored()
            .rewind()
            .map_with(move |_, e| Stmt {
                kind: StmtKind::Empty,
                span: sp(e.span()),
            });
        let branch = expr
            .clone()
            .then_ignore(just(Token::Then))
            .then(empty_before_else.or(stmt.clone()));
        let if_ = just(Token::If)
            .ignore_then(branch.clone())
            .then(
                just(Token::Else)
                    .then(just(Token::If))
                    .ignore_then(branch)
                    .repeated()
                    .collect::<Vec<_>>(),
            )
            .then(just(Token::Else).ignore_then(stmt.clone()).or_not())
            .map(
                |((first, more), otherwise): ((Branch, Vec<Branch>), Option<Stmt>)| {
                    let mut branches = Vec::with_capacity(1 + more.len());
                    branches.push(first);
                    branches.extend(more);
                    StmtKind::If {
                        branches,
                        otherwise: otherwise.map(Box::new),
                    }
                },
            );

        let for_ = just(Token::For)
            .ignore_then(ident)
            .then_ignore(just(Token::Assign))
            .then(expr.clone())
            .then(just(Token::To).to(false).or(just(Token::Downto).to(true)))
            .then(expr.clone())
            .then_ignore(just(Token::Do))
            .then(stmt.clone())
            .map(|((((var, from), down), to), body)| StmtKind::For {
                var,
                from,
                to,
                down,
                body: Box::new(body),
            });

        let while_ = just(Token::While)
            .ignore_then(expr.clone())
            .then_ignore(just(Token::Do))
            .then(stmt.clone())
            .map(|(cond, body)| StmtKind::While {
                cond,
                body: Box::new(body),
            });

        let repeat = just(Token::Repeat)
            .ignore_then(block_body.clone())
            .then(
                just(Token::Until)
                    .ignore_then(expr.clone().recover_with(via_parser(end().map_with(
                        move |_, e| Expr {
                            kind: ExprKind::Error,
                            span: sp(e.span()),
                        },
                    ))))
                    .recover_with(via_parser(unclosable_by(false).map(|span| Expr {
                        kind: ExprKind::Error,
                        span,
                    }))),
            )
            .map(|(body, cond)| StmtKind::Repeat { body, cond });

        let routine = just(Token::Procedure)
            .to(false)
            .or(just(Token::Function).to(true))
            .then(ident)
            .then(params.clone())
            .then(just(Token::Colon).ignore_then(type_name).or_not())
            .map_with(move |header, e| (header, sp(e.span())))
            .then_ignore(just(Token::Semi))
            // Pascal gives a routine one `var` section; Free Pascal and
            // Delphi take several, one after another, and so does this.
            .then(
                var_section
                    .clone()
                    .then_ignore(just(Token::Semi))
                    .repeated()
                    .collect::<Vec<_>>(),
            )
            .then(
                just(Token::Begin)
                    .ignore_then(block_body.clone())
                    .then_ignore(block_end.clone()),
            )
            .map(
                |((((((is_function, name), params), result), header), locals), body)| {
                    StmtKind::Routine(Rc::new(Routine {
                        name,
                        is_function,
                        params,
                        result,
                        locals: locals.into_iter().flatten().collect(),
                        body,
                        header,
                    }))
                },
            );

        let var = var_section.clone().map(StmtKind::Var);

        let simple = expr
            .clone()
            .then(just(Token::Assign).map_with(move |_, e| sp(e.span())).then(expr.clone()).or_not())
            .validate(|(target, assign), _, emitter| match assign {
                None => StmtKind::Expr(target),
                Some((assign_span, value)) => match target.kind {
                    ExprKind::Name(name) => StmtKind::Assign { target: name, value },
                    ExprKind::Index { target: inner, row, col } => match inner.kind {
                        ExprKind::Name(name) => StmtKind::AssignIndex { target: name, row: *row, col: *col, value },
                        _ => {
                            emitter.emit(custom(
                                SimpleSpan::from(inner.span.start..inner.span.end),
                                "only an element of a variable can be assigned: write `m[i, j] := x`",
                                "not a variable",
                            ));
                            StmtKind::Error
                        }
                    },
                    _ => {
                        emitter.emit(custom(
                            SimpleSpan::from(target.span.start..assign_span.end),
                            "the left of `:=` must be a variable or an element `m[i, j]`",
                            "cannot be assigned",
                        ));
                        StmtKind::Error
                    }
                },
            });

        let empty = statement_end.clone().to(StmtKind::Empty);
        let jump = just(Token::Break)
            .to(StmtKind::Break)
            .or(just(Token::Continue).to(StmtKind::Continue));

        choice((
            begin, tape, if_, for_, while_, repeat, routine, var, jump, simple, empty,
        ))
        .map_with(move |kind, e| Stmt {
            kind,
            span: sp(e.span()),
        })
        .then_ignore(
            statement_end
                .clone()
                .or(just(Token::Else).ignored().rewind()),
        )
        // A statement that failed at a place fails there again: without
        // this, recovery in blocks inside blocks tried the same failing
        // statements once for each way around them (fuzzing found files of
        // 2 KB that took seconds). A statement that fails from memory is
        // reported as "expected a statement", so in a file with many
        // errors some messages are less precise than they could be.
        .memoized()
        .labelled("a statement")
        .recover_with(skip_until(
            skipped_block
                .clone()
                .or(routine_header.clone())
                .or(any().ignored()),
            statement_end.clone(),
            move || Stmt {
                kind: StmtKind::Error,
                span: Span::new(source, 0, 0),
            },
        ))
        .boxed()
    });

    let header = just(Token::Program)
        .ignore_then(ident)
        .then_ignore(just(Token::Semi))
        .or_not();
    header
        .then(stmt.separated_by(just(Token::Semi)).collect::<Vec<_>>())
        .then(choice((
            just(Token::Dot)
                .map_with(|_, e| Some(e.span()))
                .then_ignore(end().labelled("the end of the file after the final `.`")),
            end().labelled("the end of the file").to(None),
        )))
        // The final `.` closes the program's main block, `begin ... end.`,
        // and nothing else.
        .validate(|((name, body), dot), _, emitter| {
            let closes_block = matches!(body.last().map(|s| &s.kind), Some(StmtKind::Block(_)));
            if let Some(dot) = dot
                && !closes_block
            {
                emitter.emit(custom(
                    dot,
                    "a final `.` may follow only the program's `begin ... end` block",
                    "not after a `begin ... end`",
                ));
            }
            Program { name, body }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str) -> Program {
        let (program, errors) = parse(text, 0);
        assert!(errors.is_empty(), "errors for {text:?}: {errors:#?}");
        program
    }

    fn only_stmt(text: &str) -> StmtKind {
        let program = parse_ok(text);
        let mut real: Vec<_> = program
            .body
            .into_iter()
            .filter(|s| s.kind != StmtKind::Empty)
            .collect();
        assert_eq!(real.len(), 1, "{text}");
        real.remove(0).kind
    }

    fn expr_of(text: &str) -> Expr {
        match only_stmt(&format!("x := {text};")) {
            StmtKind::Assign { value, .. } => value,
            other => panic!("not an assignment: {other:?}"),
        }
    }

    #[test]
    fn the_worked_example_parses() {
        let program = parse_ok(include_str!("../../programs/attention.tape"));
        assert_eq!(
            program.name.map(|n| n.text.to_string()),
            Some("Attention".to_string())
        );
    }

    #[test]
    fn operators_group_to_the_left_and_keep_their_levels() {
        let e = expr_of("a - b - c");
        match e.kind {
            ExprKind::Chain { rest, .. } => assert_eq!(rest.len(), 2),
            other => panic!("{other:?}"),
        }
        // `not a = b` is `not (a = b)`
        let e = expr_of("not a = b");
        match e.kind {
            ExprKind::Unary {
                op: UnaryOp::Not,
                operand,
                ..
            } => {
                assert!(matches!(operand.kind, ExprKind::Chain { .. }))
            }
            other => panic!("{other:?}"),
        }
        // `a * -b` and `- -a` parse
        expr_of("a * -b");
        expr_of("- -a");
        // `a + b * c`: the product binds tighter
        match expr_of("a + b * c").kind {
            ExprKind::Chain { rest, .. } => {
                assert_eq!(rest[0].0, BinaryOp::Add);
                assert!(matches!(rest[0].2.kind, ExprKind::Chain { .. }));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_statement_form() {
        parse_ok(
            "program P;\n\
             var a, b: Integer; m: Matrix;\n\
             x := 1; m[1, 2] := 3;\n\
             begin x := 2; end;\n\
             if x > 1 then x := 0 else x := 1;\n\
             for i := 1 to 3 do x := x + i;\n\
             for i := 3 downto 1 do x := x + i;\n\
             while x < 10 do x := x + 1;\n\
             repeat x := x - 1; until x = 0;\n\
             tape s := x * 2; end;\n\
             WriteLn(x:8:3, ' ', x:4);\n\
             Reset;\n\
             procedure Reset; begin WriteLn('r') end;\n\
             procedure P2(a, b: Matrix; n: Integer); var i: Integer; begin i := n end;\n\
             function F(a, b): Matrix; begin Result := a end;\n\
             function G(): Real; begin Result := 1.0 end;\n\
             begin x := 1 end.",
        );
    }

    #[test]
    fn matrix_literals() {
        match expr_of("[[1, 2], [3, 4]]").kind {
            ExprKind::Matrix(rows) => assert_eq!(rows.len(), 2),
            other => panic!("{other:?}"),
        }
        match expr_of("[1, 2, 3]").kind {
            ExprKind::Matrix(rows) => assert_eq!(rows[0].0.len(), 3),
            other => panic!("{other:?}"),
        }
        assert!(matches!(expr_of("m[1, 2]").kind, ExprKind::Index { .. }));
    }

    #[test]
    fn several_errors_in_one_file() {
        let (_, errors) = parse("x := ;\ny := 2;\nz := (1 + ;\nw := 3;\n", 0);
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert_eq!(errors[0].span.start, 5);
    }

    #[test]
    fn semicolon_before_else_is_an_error_with_a_hint() {
        let (_, errors) = parse("if x then y := 1; else y := 2;", 0);
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(errors[0].hints[0].contains("`else`"));
    }

    #[test]
    fn nothing_may_follow_end_dot() {
        let (_, errors) = parse("begin x := 1 end. x := 2;", 0);
        assert_eq!(errors.len(), 1, "{errors:#?}");
    }

    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let deep = format!("x := {}1{};", "(".repeat(100_000), ")".repeat(100_000));
        let (_, errors) = parse(&deep, 0);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.contains("nested more than 256"));
        let minus = format!("x := {}1;", "-".repeat(100_000));
        assert_eq!(parse(&minus, 0).1.len(), 1);
        let ifs = format!("{} x := 1;", "if true then ".repeat(1000));
        assert_eq!(parse(&ifs, 0).1.len(), 1);
        let fine = format!("x := {}1{};", "(".repeat(200), ")".repeat(200));
        assert!(parse(&fine, 0).1.is_empty());
    }

    #[test]
    fn a_long_flat_sum_is_one_wide_node() {
        let long = format!("x := 1{};", " + 1".repeat(200_000));
        match expr_of(&long[5..long.len() - 1]).kind {
            ExprKind::Chain { rest, .. } => assert_eq!(rest.len(), 200_000),
            other => panic!("{other:?}"),
        }
    }
}
