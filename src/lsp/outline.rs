//! The document's outline: each top-level routine, and each `tape ... end;`
//! block (inside the routine or loop that holds it), named by the variable
//! its last statement assigns, the tape's result.

use lsp_types::{DocumentSymbol, SymbolKind};

use crate::check::errors::tape_keyword;
use crate::syntax::tree::{Stmt, StmtKind};

use super::analysis::Document;
use super::positions::Encoding;

pub fn document_symbols(doc: &Document, encoding: Encoding) -> Vec<DocumentSymbol> {
    let mut symbols = Vec::new();
    for stmt in &doc.program.body {
        match &stmt.kind {
            StmtKind::Routine(r) => {
                let mut children = Vec::new();
                tapes(&r.body, doc, encoding, &mut children);
                symbols.push(symbol(
                    doc,
                    encoding,
                    r.name.text.to_string(),
                    Some(doc.slice(r.header).to_string()),
                    if r.is_function {
                        SymbolKind::FUNCTION
                    } else {
                        SymbolKind::METHOD
                    },
                    (stmt.span, r.name.span),
                    children,
                ));
            }
            _ => tapes(std::slice::from_ref(stmt), doc, encoding, &mut symbols),
        }
    }
    symbols
}

#[allow(deprecated)] // `deprecated` is a field the type still has.
fn symbol(
    doc: &Document,
    encoding: Encoding,
    name: String,
    detail: Option<String>,
    kind: SymbolKind,
    (whole, chosen): (crate::diagnostic::Span, crate::diagnostic::Span),
    children: Vec<DocumentSymbol>,
) -> DocumentSymbol {
    DocumentSymbol {
        name,
        detail,
        kind,
        tags: None,
        deprecated: None,
        range: doc.lines.range(whole, encoding),
        selection_range: doc.lines.range(chosen, encoding),
        children: (!children.is_empty()).then_some(children),
    }
}

/// Every tape among `stmts` and the statements inside them.
fn tapes(stmts: &[Stmt], doc: &Document, encoding: Encoding, out: &mut Vec<DocumentSymbol>) {
    for stmt in stmts {
        match &stmt.kind {
            StmtKind::Tape { body, .. } => {
                let result = body.iter().rev().find_map(|s| match &s.kind {
                    StmtKind::Empty => None,
                    StmtKind::Assign { target, .. } => Some(Some(target.text.clone())),
                    _ => Some(None),
                });
                let name = match result.flatten() {
                    Some(r) => format!("tape → {r}"),
                    None => "tape".to_string(),
                };
                let line = doc.lines.line_number(stmt.span.start);
                out.push(symbol(
                    doc,
                    encoding,
                    name,
                    Some(format!("line {line}")),
                    SymbolKind::EVENT,
                    (stmt.span, tape_keyword(stmt.span)),
                    Vec::new(),
                ));
            }
            StmtKind::Block(body) | StmtKind::Repeat { body, .. } => {
                tapes(body, doc, encoding, out)
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                tapes(std::slice::from_ref(body), doc, encoding, out)
            }
            StmtKind::If {
                branches,
                otherwise,
            } => {
                for s in branches.iter().map(|(_, s)| s).chain(otherwise.as_deref()) {
                    tapes(std::slice::from_ref(s), doc, encoding, out);
                }
            }
            _ => {}
        }
    }
}
