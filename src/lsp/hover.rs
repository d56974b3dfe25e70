//! What hovering over a name shows: a builtin's `:help` text (the REPL's,
//! from its declaration), a routine's header and the comment right above
//! it, a variable's declared type or the line that first assigns it, and
//! whether it is a global or a routine's parameter or local; over a keyword
//! or an operator, its `:help` text too (the lexer's tables, read through
//! `lexer::word_help` as the REPL reads them). Nothing inside a comment or
//! a string.

use lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind};

use crate::declarations::BUILTINS;
use crate::diagnostic::Span;
use crate::syntax::lexer::{Token, word_help};
use crate::syntax::tree::{StmtKind, TypeName};

use super::analysis::{Document, Occurrence, Role, Symbol};
use super::positions::Encoding;

/// A hover's text in two parts: what it is, in the language's own words
/// (shown as code), and sentences about it.
struct Told {
    code: String,
    prose: String,
}

pub fn hover(doc: &Document, offset: usize, markdown: bool, encoding: Encoding) -> Option<Hover> {
    // The token under the cursor decides; in the blank right after a token
    // (a cursor at the end of `begin` or of a name), that token does. So
    // the `,` of `f(n, 2)` and the `;` of `end;` say what `n` and `end` do.
    let last = last_token_from(doc, offset);
    match last {
        Some((token, span)) if offset < span.end => {
            if let Some(help) = help_of(doc, token, span) {
                return Some(help_hover(doc, help, span, markdown, encoding));
            }
            if !matches!(token, Token::Ident(_)) {
                // At the first character of punctuation that has no help,
                // the cursor also ends the token before it (`Sqrt|(`): that
                // one is what it is about, as in the blank after a token.
                let before = token_ending_at(doc, offset);
                match before {
                    Some((token, span)) if offset == span.end => {
                        if let Some(help) = help_of(doc, token, span) {
                            return Some(help_hover(doc, help, span, markdown, encoding));
                        }
                        if !matches!(token, Token::Ident(_)) {
                            return None;
                        }
                    }
                    _ => return None,
                }
            }
        }
        _ => {
            if doc
                .comments
                .iter()
                .any(|c| c.start <= offset && offset < c.end)
            {
                return None;
            }
            if let Some((token, span)) = last
                && span.end == offset
                && let Some(help) = help_of(doc, token, span)
            {
                return Some(help_hover(doc, help, span, markdown, encoding));
            }
        }
    }
    let Some(occurrence) = doc.names.at(offset) else {
        // A type's name (`x: Real`) is no variable's: `:help`'s text.
        let (token, span) = last
            .filter(|(t, s)| offset <= s.end && matches!(t, Token::Ident(_)))
            .or_else(|| token_ending_at(doc, offset))?;
        let Token::Ident(name) = token else {
            return None;
        };
        let ty = TypeName::from_name(name)?;
        return Some(help_hover(doc, ty.help_line(), span, markdown, encoding));
    };
    if let Symbol::Builtin(i) = occurrence.symbol {
        let help = BUILTINS.get(i)?.help();
        return Some(help_hover(doc, help, occurrence.span, markdown, encoding));
    }
    let told = tell(doc, occurrence)?;
    let value = match (markdown, told.prose.is_empty()) {
        (true, true) => format!("```tape\n{}\n```", told.code),
        (true, false) => format!("```tape\n{}\n```\n\n{}", told.code, told.prose),
        (false, true) => told.code,
        (false, false) => format!("{}\n\n{}", told.code, told.prose),
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: if markdown {
                MarkupKind::Markdown
            } else {
                MarkupKind::PlainText
            },
            value,
        }),
        range: Some(doc.lines.range(occurrence.span, encoding)),
    })
}

/// The last token that starts at or before `offset`: the one under it,
/// or the one it follows. Comments are not tokens.
fn last_token_from(doc: &Document, offset: usize) -> Option<(&Token, Span)> {
    let after = doc.tokens.partition_point(|(_, s)| s.start <= offset);
    let (token, span) = doc.tokens.get(after.checked_sub(1)?)?;
    Some((token, *span))
}

/// The token that ends at `offset` and starts before it, if any.
fn token_ending_at(doc: &Document, offset: usize) -> Option<(&Token, Span)> {
    let after = doc.tokens.partition_point(|(_, s)| s.start < offset);
    let (token, span) = doc.tokens.get(after.checked_sub(1)?)?;
    (span.end == offset).then_some((token, *span))
}

/// `:help`'s text for a keyword or an operator token, as written in the
/// document (`BEGIN` too); none for a name, a number or punctuation.
fn help_of(doc: &Document, token: &Token, span: Span) -> Option<String> {
    match token {
        Token::Ident(_) | Token::Integer(_) | Token::Real(_) | Token::Str(_) | Token::Error => None,
        _ => word_help(doc.slice(span)),
    }
}

/// A `:help` text (a builtin's, a keyword's, an operator's), over the span
/// it is about: as code, since it quotes the language in backquotes as the
/// prompt prints it.
fn help_hover(
    doc: &Document,
    help: String,
    span: Span,
    markdown: bool,
    encoding: Encoding,
) -> Hover {
    let (kind, value) = if markdown {
        (MarkupKind::Markdown, format!("```text\n{help}```"))
    } else {
        (MarkupKind::PlainText, help)
    };
    Hover {
        contents: HoverContents::Markup(MarkupContent { kind, value }),
        range: Some(doc.lines.range(span, encoding)),
    }
}

fn typed(name: &str, ty: Option<(TypeName, crate::diagnostic::Span)>) -> String {
    match ty {
        Some((t, _)) => format!("{name}: {}", t.name()),
        None => name.to_string(),
    }
}

/// The most characters of a line a hover quotes.
const QUOTED: usize = 100;

/// Where a variable was first assigned, in words and with its line (the
/// start of a long one).
fn first_assigned(doc: &Document, at: &Occurrence) -> String {
    let line = doc.lines.line_text(at.span.start).trim();
    let quoted = match line.char_indices().nth(QUOTED) {
        Some((cut, _)) => format!("{} …", &line[..cut]),
        None => line.to_string(),
    };
    format!(
        "first assigned on line {}: `{quoted}`",
        doc.lines.line_number(at.span.start),
    )
}

fn tell(doc: &Document, occurrence: &Occurrence) -> Option<Told> {
    let names = &doc.names;
    let text = names.text(occurrence.symbol).to_string();
    let definition = names.definition(occurrence.symbol);
    match occurrence.symbol {
        Symbol::Builtin(_) => None,
        Symbol::Constant(_) => Some(Told {
            code: format!("{text}: Real"),
            prose: crate::declarations::INF_HELP.to_string(),
        }),
        Symbol::Routine(i) => {
            let entry = names.routines.get(i)?;
            Some(Told {
                code: doc.slice(entry.routine.header).to_string(),
                prose: doc.comment_above(entry.span.start).unwrap_or_default(),
            })
        }
        Symbol::Global(_) => {
            let Some(def) = definition else {
                return Some(Told {
                    code: text,
                    prose: "a name that nothing assigns".to_string(),
                });
            };
            if def.role == Role::Declared {
                let ty = doc.program.body.iter().find_map(|s| match &s.kind {
                    StmtKind::Var(decls) => {
                        decls.iter().find(|d| d.name.span == def.span).map(|d| d.ty)
                    }
                    _ => None,
                });
                Some(Told {
                    code: typed(&text, ty.flatten()),
                    prose: format!(
                        "a global variable, declared on line {}",
                        doc.lines.line_number(def.span.start)
                    ),
                })
            } else {
                Some(Told {
                    code: text,
                    prose: format!("a global variable, {}", first_assigned(doc, def)),
                })
            }
        }
        Symbol::Local { routine, .. } => {
            let r = &names.routines.get(routine)?.routine;
            let owner = &r.name.text;
            if let Some(p) = r.params.iter().find(|p| *p.name.text == *text) {
                let code = typed(&text, p.ty);
                return Some(if p.by_ref {
                    Told {
                        code: format!("var {code}"),
                        prose: format!(
                            "a `var` parameter of `{owner}`: it names the caller's variable"
                        ),
                    }
                } else {
                    Told {
                        code,
                        prose: format!("a parameter of `{owner}`"),
                    }
                });
            }
            if let Some(d) = r.locals.iter().find(|d| *d.name.text == *text) {
                return Some(Told {
                    code: typed(&text, d.ty),
                    prose: format!(
                        "a local variable of `{owner}`, declared on line {}",
                        doc.lines.line_number(d.name.span.start)
                    ),
                });
            }
            if r.is_function && text == "Result" {
                return Some(Told {
                    code: typed(&text, r.result),
                    prose: format!("what the function `{owner}` gives back"),
                });
            }
            Some(Told {
                code: text,
                prose: match definition {
                    Some(def) => format!(
                        "a local variable of `{owner}`, {}",
                        first_assigned(doc, def)
                    ),
                    None => format!("a local variable of `{owner}`"),
                },
            })
        }
    }
}
