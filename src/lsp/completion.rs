//! What may be typed at the cursor: the names in scope there (inside a
//! routine its parameters and locals, then the globals it does not hide;
//! elsewhere the globals), the routines, every builtin with its signature
//! and doc line, the keywords and type names, and snippets for a tape, a
//! `for` loop and the routines. Nothing inside a comment or a string.

use lsp_types::{
    CompletionItem, CompletionItemKind, Documentation, InsertTextFormat, MarkupContent, MarkupKind,
};

use crate::declarations::{BUILTINS, CONSTANTS};
use crate::syntax::lexer::Token;
use crate::syntax::tree::TypeName;

use super::analysis::Document;

/// The lexer's keywords (a test holds each to it).
pub const KEYWORDS: &[&str] = &[
    "program",
    "and",
    "begin",
    "break",
    "continue",
    "div",
    "do",
    "downto",
    "else",
    "end",
    "for",
    "function",
    "if",
    "mod",
    "not",
    "or",
    "procedure",
    "repeat",
    "tape",
    "then",
    "to",
    "until",
    "var",
    "while",
    "true",
    "false",
];

const TYPES: [TypeName; 5] = [
    TypeName::Integer,
    TypeName::Real,
    TypeName::Boolean,
    TypeName::Str,
    TypeName::Matrix,
];

/// (label, what it is, the snippet)
const SNIPPETS: &[(&str, &str, &str)] = &[
    (
        "tape … end;",
        "a tape: its statements are recorded, and its end walks back the blame",
        "tape\n\t${1:loss} := $0;\nend;",
    ),
    (
        "for … do begin … end;",
        "a counting loop",
        "for ${1:i} := ${2:1} to ${3:n} do\nbegin\n\t$0\nend;",
    ),
    (
        "function …",
        "a function: it gives back what it assigns to Result",
        "function ${1:Name}(${2:x}: ${3:Real}): ${4:Real};\nbegin\n\tResult := $0;\nend;",
    ),
    (
        "procedure …",
        "a procedure",
        "procedure ${1:Name}(${2:x}: ${3:Real});\nbegin\n\t$0\nend;",
    ),
];

fn item(label: &str, kind: CompletionItemKind, detail: Option<String>) -> CompletionItem {
    CompletionItem {
        label: label.to_string(),
        kind: Some(kind),
        detail,
        ..CompletionItem::default()
    }
}

/// Whether `offset` is inside a comment or a string, where no name is typed.
fn in_text(doc: &Document, offset: usize) -> bool {
    let inside = |s: &crate::diagnostic::Span| s.start < offset && offset < s.end;
    doc.comments.iter().any(inside)
        || doc
            .tokens
            .iter()
            .any(|(t, s)| matches!(t, Token::Str(_)) && inside(s))
}

pub fn completions(
    doc: &Document,
    offset: usize,
    markdown: bool,
    snippets: bool,
) -> Vec<CompletionItem> {
    if in_text(doc, offset) {
        return Vec::new();
    }
    let names = &doc.names;
    let mut items = Vec::new();
    let mut hidden: &[String] = &[];
    if let Some(i) = names.routine_at(offset) {
        let entry = &names.routines[i];
        let r = &entry.routine;
        for local in &entry.locals {
            let what = if r.params.iter().any(|p| &p.name.text == local) {
                "parameter"
            } else if local == "Result" {
                "the function's result"
            } else {
                "local"
            };
            items.push(item(
                local,
                CompletionItemKind::VARIABLE,
                Some(format!("{what} of {}", r.name.text)),
            ));
        }
        hidden = &entry.locals;
    }
    for global in &names.globals {
        if hidden.binary_search(global).is_err() {
            items.push(item(
                global,
                CompletionItemKind::VARIABLE,
                Some("global".to_string()),
            ));
        }
    }
    for entry in &names.routines {
        let label = &entry.routine.name.text;
        if !items.iter().any(|i| &i.label == label) {
            items.push(item(
                label,
                CompletionItemKind::FUNCTION,
                Some(doc.slice(entry.routine.header).to_string()),
            ));
        }
    }
    for b in BUILTINS {
        let mut it = item(b.name, CompletionItemKind::FUNCTION, Some(b.signature()));
        it.documentation = Some(if markdown {
            Documentation::MarkupContent(MarkupContent {
                kind: MarkupKind::Markdown,
                value: b.doc.to_string(),
            })
        } else {
            Documentation::String(b.doc.to_string())
        });
        items.push(it);
    }
    for c in CONSTANTS {
        items.push(item(
            c,
            CompletionItemKind::CONSTANT,
            Some("constant".to_string()),
        ));
    }
    for k in KEYWORDS {
        items.push(item(k, CompletionItemKind::KEYWORD, None));
    }
    for t in TYPES {
        items.push(item(
            t.name(),
            CompletionItemKind::CLASS,
            Some("type".to_string()),
        ));
    }
    if snippets {
        for (label, what, body) in SNIPPETS {
            let mut it = item(label, CompletionItemKind::SNIPPET, Some(what.to_string()));
            it.insert_text = Some(body.to_string());
            it.insert_text_format = Some(InsertTextFormat::SNIPPET);
            it.filter_text = label.split(' ').next().map(str::to_string);
            items.push(it);
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::lexer::lex;

    #[test]
    fn every_keyword_is_the_lexers() {
        for k in KEYWORDS {
            let (tokens, errors) = lex(k, 0);
            assert!(errors.is_empty() && tokens.len() == 1, "{k}");
            assert!(!matches!(tokens[0].0, Token::Ident(_)), "{k} is no keyword");
        }
    }
}
