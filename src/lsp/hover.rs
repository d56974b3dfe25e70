//! What hovering over a name shows: a builtin's `:help` text (the REPL's,
//! from its declaration), a routine's header and the comment right above
//! it, a variable's declared type or the line that first assigns it, and
//! whether it is a global or a routine's parameter or local.

use lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind};

use crate::declarations::BUILTINS;
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
    let occurrence = doc.names.at(offset)?;
    let value = match occurrence.symbol {
        Symbol::Builtin(i) => {
            let help = BUILTINS.get(i)?.help();
            if markdown {
                format!("```text\n{help}```")
            } else {
                help
            }
        }
        _ => {
            let told = tell(doc, occurrence)?;
            match (markdown, told.prose.is_empty()) {
                (true, true) => format!("```tape\n{}\n```", told.code),
                (true, false) => format!("```tape\n{}\n```\n\n{}", told.code, told.prose),
                (false, true) => told.code,
                (false, false) => format!("{}\n\n{}", told.code, told.prose),
            }
        }
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
