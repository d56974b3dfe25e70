//! Following a name: to where it is defined, to every place it occurs, and
//! renaming it there. What counts as the same name is [`Symbol`]: a
//! routine's local is not a global of the same text, nor another
//! routine's local.

use std::collections::HashMap;

use lsp_types::{Location, Range, TextEdit, Uri, WorkspaceEdit};

use crate::declarations;
use crate::syntax::lexer::{Token, lex};
use crate::syntax::tree::TypeName;

use super::analysis::{Document, Occurrence, Role, Symbol};
use super::positions::Encoding;

/// Where the name at `offset` is defined.
pub fn definition(
    doc: &Document,
    uri: &Uri,
    offset: usize,
    encoding: Encoding,
) -> Option<Location> {
    let occurrence = doc.names.at(offset)?;
    let def = doc.names.definition(occurrence.symbol)?;
    Some(Location::new(
        uri.clone(),
        doc.lines.range(def.span, encoding),
    ))
}

/// Every place the name at `offset` occurs; without its declaration (or
/// first assignment) unless `with_declaration`.
pub fn references(
    doc: &Document,
    uri: &Uri,
    offset: usize,
    with_declaration: bool,
    encoding: Encoding,
) -> Vec<Location> {
    let Some(occurrence) = doc.names.at(offset) else {
        return Vec::new();
    };
    let symbol = occurrence.symbol;
    let def = doc.names.definition(symbol).map(|d| d.span);
    doc.names
        .references(symbol)
        .filter(|o| with_declaration || (o.role != Role::Declared && Some(o.span) != def))
        .map(|o| Location::new(uri.clone(), doc.lines.range(o.span, encoding)))
        .collect()
}

/// The name at `offset`, if it may be renamed: a variable or a routine of
/// the program, not a builtin and not `Result`.
fn renamable(doc: &Document, offset: usize) -> Option<&Occurrence> {
    let occurrence = doc.names.at(offset)?;
    match occurrence.symbol {
        Symbol::Builtin(_) | Symbol::Constant(_) => None,
        s if doc.names.text(s) == "Result" => None,
        _ => Some(occurrence),
    }
}

/// The range to rename at `offset`, if there is one.
pub fn prepare_rename(doc: &Document, offset: usize, encoding: Encoding) -> Option<Range> {
    renamable(doc, offset).map(|o| doc.lines.range(o.span, encoding))
}

/// Every occurrence of the name at `offset` changed to `new_name`; an
/// error in words when the name cannot be renamed, the new one not used,
/// or the name also stands in a statement that did not parse.
pub fn rename(
    doc: &Document,
    uri: &Uri,
    offset: usize,
    new_name: &str,
    encoding: Encoding,
) -> Result<WorkspaceEdit, String> {
    let Some(occurrence) = renamable(doc, offset) else {
        return Err("only a variable or a routine of this program can be renamed".to_string());
    };
    let is_identifier = matches!(&lex(new_name, 0).0[..], [(Token::Ident(n), _)] if n == new_name);
    if !is_identifier {
        return Err(format!(
            "`{new_name}` is not a name: names are ASCII letters, digits and `_`, and no keyword"
        ));
    }
    if declarations::find(new_name).is_some()
        || declarations::CONSTANTS.contains(&new_name)
        || TypeName::from_name(new_name).is_some()
        || new_name == "Result"
    {
        return Err(format!("`{new_name}` is a name of the language"));
    }
    if new_name != doc.names.text(occurrence.symbol) && doc.names.has_text(new_name) {
        return Err(format!(
            "`{new_name}` is already a name in this program: renaming to it could change what a name means"
        ));
    }
    // A statement that did not parse is not in the tree, so its names are
    // not known: renaming around them would leave the old name there.
    let old_name = doc.names.text(occurrence.symbol);
    let program = doc.program.name.as_ref().map(|n| n.span);
    let unparsed = doc.tokens.iter().find(|(token, span)| {
        !doc.parses
            && matches!(token, Token::Ident(n) if n == old_name)
            && Some(*span) != program
            && doc.names.at(span.start).is_none_or(|o| o.span != *span)
    });
    if let Some((_, span)) = unparsed {
        return Err(format!(
            "`{old_name}` also stands on line {} in a statement that does not parse: \
             fix it first, so that every `{old_name}` is renamed",
            doc.lines.line_number(span.start)
        ));
    }
    let edits = doc
        .names
        .references(occurrence.symbol)
        .map(|o| TextEdit::new(doc.lines.range(o.span, encoding), new_name.to_string()))
        .collect();
    Ok(WorkspaceEdit::new(HashMap::from([(uri.clone(), edits)])))
}
