//! What may be typed at the cursor: the names in scope there (inside a
//! routine its parameters and locals, then the globals it does not hide;
//! elsewhere the globals), the routines, every builtin with its signature
//! and doc line, the keywords and type names, and snippets for a tape, a
//! `for` loop and the routines. Nothing inside a comment or a string
//! (one still being typed too); inside an expression no statement and no
//! snippet; after a `:` the types; a routine and a `var` section at the top
//! level only (not in a block or a branch), and no tape inside a tape;
//! `else`, `until` and `end` only where they close an open `if`, `repeat`
//! or block, and `then`, `do`, `to` only where a head waits for them;
//! where a new name is declared nothing (but `var` before a parameter),
//! nor just after one, where no word may follow; after `for` the
//! variables only; `not` only where the parser takes it (not after an
//! arithmetic or comparison operator); between a routine's header and its
//! `begin`, `var` or `begin` only.

use lsp_types::{
    CompletionItem, CompletionItemKind, Documentation, InsertTextFormat, MarkupContent, MarkupKind,
};

use crate::declarations::{BUILTINS, CONSTANTS};
use crate::diagnostic::Span;
use crate::syntax::lexer::Token;
use crate::syntax::tree::TypeName;

use super::analysis::Document;

/// The lexer's keywords, in its order.
pub fn keywords() -> impl Iterator<Item = &'static str> {
    crate::syntax::lexer::KEYWORDS
        .iter()
        .map(|(word, _, _)| *word)
}

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

/// A keyword's item, with the lexer's line on it: markdown where the
/// client shows it, as a builtin's doc line is, so its examples in
/// backquotes read as code.
fn keyword(word: &str, help: &str, markdown: bool) -> CompletionItem {
    let mut it = item(word, CompletionItemKind::KEYWORD, None);
    it.documentation = Some(documentation(help, markdown));
    it
}

fn documentation(text: &str, markdown: bool) -> Documentation {
    if markdown {
        Documentation::MarkupContent(MarkupContent {
            kind: MarkupKind::Markdown,
            value: text.to_string(),
        })
    } else {
        Documentation::String(text.to_string())
    }
}

fn item(label: &str, kind: CompletionItemKind, detail: Option<String>) -> CompletionItem {
    CompletionItem {
        label: label.to_string(),
        kind: Some(kind),
        detail,
        ..CompletionItem::default()
    }
}

/// Whether `offset` is inside a comment or a string, where no name is
/// typed: the text before it read by the lexer's rules (comments do not
/// nest and do not start in a string; a string ends at its line), so a
/// comment or a string not closed yet, as while it is being typed, counts.
pub fn in_text(text: &str, offset: usize) -> bool {
    #[derive(PartialEq)]
    enum In {
        Code,
        Str,
        Brace,
        Paren,
        Line,
    }
    let b = text.as_bytes();
    let offset = offset.min(b.len());
    // A two-character mark counts only when the cursor is past both.
    let pair = |i: usize, two: &[u8; 2]| i + 1 < offset && b[i] == two[0] && b[i + 1] == two[1];
    let mut state = In::Code;
    let mut i = 0;
    while i < offset {
        match state {
            In::Code if b[i] == b'\'' => state = In::Str,
            In::Code if b[i] == b'{' => state = In::Brace,
            In::Code if pair(i, b"(*") => (state, i) = (In::Paren, i + 1),
            In::Code if pair(i, b"//") => (state, i) = (In::Line, i + 1),
            In::Str if b[i] == b'\'' || b[i] == b'\n' => state = In::Code,
            In::Brace if b[i] == b'}' => state = In::Code,
            In::Paren if pair(i, b"*)") => (state, i) = (In::Code, i + 1),
            In::Line if b[i] == b'\n' => state = In::Code,
            _ => {}
        }
        i += 1;
    }
    state != In::Code
}

/// What may stand at the cursor, by the token before the word typed.
#[derive(Debug, PartialEq)]
enum Place {
    /// A statement may start here: everything is offered.
    Statement,
    /// Inside an expression: names, builtins, constants, `not`, `true`
    /// and `false`; no statement, no snippet.
    Expression,
    /// After a `:`: a type.
    Type,
    /// Just after a value (`if x |`): only what may follow one, an
    /// operator word or the word that goes on where it is awaited
    /// (`then`, `do`, `to`, ...; none inside brackets).
    AfterValue,
    /// Where a new name is declared (`procedure |`, `var a, |`), or just
    /// after one or a declaration's type (`procedure P |`, `var a: Real |`):
    /// nothing is offered, as nothing of the program's is wanted there and
    /// no word may follow.
    NewName,
    /// Between a routine's header and its `begin` (`procedure P; |`,
    /// after its `var` section too): only `var` or `begin` may come, or
    /// a local's new name.
    RoutineHead,
    /// Where a routine's header declares a parameter (`procedure P(|`,
    /// `P(a: Real; |`): a new name, or `var` before it.
    Parameter,
    /// After `for`, where its counter is named: a variable in scope, or
    /// a new name (which nothing offered can be).
    Counter,
}

/// The words that may follow a value.
const AFTER_VALUE: &[&str] = &[
    "and", "or", "div", "mod", "then", "do", "to", "downto", "else", "end", "until",
];

/// The words that may not start a statement.
const NOT_AT_START: &[&str] = &[
    "and", "or", "div", "mod", "not", "then", "do", "to", "downto", "true", "false",
];

/// The operators after which the parser takes no `not`: it negates a
/// whole comparison, so it starts an expression or follows `and`, `or` or
/// another `not`, and is no operand of a comparison or of arithmetic
/// (`a = not b` is refused, `a = (not b)` is not).
fn refuses_not(before: Option<&Token>) -> bool {
    use Token::*;
    matches!(
        before,
        Some(Plus | Minus | Star | Slash | Div | Mod | Eq | Ne | Lt | Le | Gt | Ge)
    )
}

/// Where the word being typed at `offset` starts.
fn word_start(text: &str, offset: usize) -> usize {
    let text = text.as_bytes();
    let mut start = offset.min(text.len());
    while start > 0 && (text[start - 1].is_ascii_alphanumeric() || text[start - 1] == b'_') {
        start -= 1;
    }
    start
}

/// The tokens that end at or before `at`, which the cursor's place is
/// read on.
fn before(tokens: &[(Token, Span)], at: usize) -> &[(Token, Span)] {
    &tokens[..tokens.partition_point(|(_, s)| s.end <= at)]
}

/// What may stand at `offset` of `text`, whose tokens are `tokens`.
fn place(text: &str, tokens: &[(Token, Span)], offset: usize) -> Place {
    let start = word_start(text, offset);
    if let Some(declared) = in_declaration(tokens, start) {
        return declared;
    }
    let before = before(tokens, start).last();
    use Token::*;
    match before.map(|(t, _)| t) {
        // Just after a name being declared or a declaration's type
        // (`procedure P |`, `var a: Real |`), or a header's parameters,
        // only `(`, `:`, `,` or `;` may follow: no word.
        Some(Ident(_))
            if before.is_some_and(|(_, s)| in_declaration(tokens, s.start).is_some()) =>
        {
            Place::NewName
        }
        Some(RParen) if closes_header(tokens, start) => Place::NewName,
        Some(Semi) if in_routine_head(tokens, start) => Place::RoutineHead,
        Some(For) => Place::Counter,
        // `WriteLn(x:8:3)`: a width, where an expression goes.
        Some(Colon) => Place::Expression,
        Some(
            Assign | Plus | Minus | Star | Slash | Eq | Ne | Lt | Le | Gt | Ge | LParen | LBracket
            | Comma | Not | And | Or | Div | Mod | If | While | Until | To | Downto,
        ) => Place::Expression,
        Some(Ident(_) | Integer(_) | Real(_) | Str(_) | RParen | RBracket | True | False) => {
            Place::AfterValue
        }
        _ => Place::Statement,
    }
}

/// What a declaration wants at `at`, by the token before it: a new name
/// (after `procedure`, `var`, or a comma of a list of names), a parameter,
/// or a type (after a `:` that is no width in a call); `None` outside one.
fn in_declaration(tokens: &[(Token, Span)], at: usize) -> Option<Place> {
    let before = before(tokens, at).last();
    use Token::*;
    match before.map(|(t, _)| t) {
        Some(Procedure | Function | Program | Var) => Some(Place::NewName),
        Some(LParen | Semi) if in_header(tokens, at) => Some(Place::Parameter),
        Some(Comma) if in_header(tokens, at) || in_var_list(tokens, at) => Some(Place::NewName),
        Some(Colon) if !in_call(tokens, at) => Some(Place::Type),
        _ => None,
    }
}

/// Whether the `)` just before `at` closes a routine's parameters.
fn closes_header(tokens: &[(Token, Span)], at: usize) -> bool {
    before(tokens, at)
        .last()
        .is_some_and(|(_, s)| in_header(tokens, s.start))
}

/// Where a statement that starts at `at` stands, read on the tokens before
/// it (a block being typed has no `end` yet, so the tree may not hold it).
#[derive(Debug, Default, PartialEq)]
struct Around {
    /// Inside a `begin`, `tape` or `repeat` still open, or the one
    /// statement of a `then`, `do` or `else`: no routine and no `var`
    /// section may stand there.
    nested: bool,
    /// Inside a `tape` still open: tapes do not nest.
    in_tape: bool,
    /// Inside a loop's body and not in a tape inside it: where `break`
    /// and `continue` may stand.
    in_loop: bool,
    /// The word that closes the innermost block still open: `end` for a
    /// `begin` or a `tape` (a routine's body too), `until` for a `repeat`.
    closer: Option<&'static str>,
    /// An `if`'s then-branch may end here, so `else` may follow: its
    /// `then` is passed, no `;` has ended it, and no `else` has taken it.
    after_then: bool,
    /// Inside the head of an `if`, `while` or `for`, where no statement
    /// ends: the token it waits for (`then`, `do`, `to` for `to` or
    /// `downto`, or the `:=` after a `for`'s name).
    awaits: Option<Token>,
    /// Inside parentheses or brackets still open, where only an operator
    /// word may follow a value.
    in_brackets: bool,
}

impl Around {
    /// Whether `word`, which ends a statement (`else`, `end`, `until`) or
    /// goes on with one (`then`, `do`, `to`, `downto`), may stand here; any
    /// other word may, as far as this can tell.
    fn may_stand(&self, word: &str) -> bool {
        let awaited = |token: Token| !self.in_brackets && self.awaits == Some(token);
        match word {
            "else" => self.after_then && !self.in_brackets,
            "end" | "until" => {
                self.awaits.is_none() && !self.in_brackets && self.closer == Some(word)
            }
            "then" => awaited(Token::Then),
            "do" => awaited(Token::Do),
            "to" | "downto" => awaited(Token::To),
            // `for i |`: only its `:=` may follow the name.
            "and" | "or" | "div" | "mod" => self.awaits != Some(Token::Assign),
            _ => true,
        }
    }
}

fn around(tokens: &[(Token, Span)], at: usize) -> Around {
    // Each open block with the `then`s that were open around it, which
    // its `end` opens again: `if c then begin ... end else ...`.
    // Each also says whether it is a loop's body (a `repeat`, or the
    // `begin` right after a `do`).
    let mut open: Vec<(&Token, usize, bool)> = Vec::new();
    // In the one statement after a loop's `do`, before any block opens:
    // the `then`s open at that `do`, so that an `else` of an `if` around
    // the loop ends its body.
    let mut body: Option<usize> = None;
    let mut thens: usize = 0;
    let mut awaits = None;
    let mut brackets: usize = 0;
    let mut last = None;
    for (token, _) in before(tokens, at) {
        match token {
            Token::Begin | Token::Tape | Token::Repeat => {
                let is_loop = *token == Token::Repeat || (*token == Token::Begin && body.is_some());
                open.push((token, thens, is_loop));
                thens = 0;
                body = None;
            }
            Token::End | Token::Until => {
                if let Some((_, outside, _)) = open.pop() {
                    thens = outside;
                }
            }
            Token::If => awaits = Some(Token::Then),
            Token::While => awaits = Some(Token::Do),
            Token::For => awaits = Some(Token::Assign),
            Token::Assign if awaits == Some(Token::Assign) => awaits = Some(Token::To),
            Token::To | Token::Downto => awaits = Some(Token::Do),
            Token::Then => {
                awaits = None;
                thens += 1;
            }
            Token::Do => {
                awaits = None;
                body = Some(thens);
            }
            Token::Else => {
                thens = thens.saturating_sub(1);
                if body.is_some_and(|open| thens < open) {
                    body = None;
                }
            }
            Token::LParen | Token::LBracket => brackets += 1,
            Token::RParen | Token::RBracket => brackets = brackets.saturating_sub(1),
            // Only a routine's header has a `;` inside parentheses: no
            // statement is there, so a `;` ends whatever was open.
            Token::Semi => (thens, awaits, brackets, body) = (0, None, 0, None),
            _ => {}
        }
        last = Some(token);
    }
    let innermost = open.last().map(|(t, _, _)| *t);
    // The nearest loop or tape around: a loop's `break` may not leave a
    // tape inside it.
    let in_loop = body.is_some()
        || open
            .iter()
            .rev()
            .find(|(t, _, is_loop)| *is_loop || **t == Token::Tape)
            .is_some_and(|(t, _, _)| **t != Token::Tape);
    Around {
        nested: !open.is_empty() || matches!(last, Some(Token::Then | Token::Do | Token::Else)),
        in_tape: open.iter().any(|(t, _, _)| **t == Token::Tape),
        in_loop,
        closer: match innermost {
            Some(Token::Repeat) => Some("until"),
            Some(_) => Some("end"),
            None => None,
        },
        // `else` takes a statement, which `do` does too: neither ends one.
        after_then: thens > 0 && awaits.is_none() && !matches!(last, Some(Token::Else | Token::Do)),
        awaits,
        in_brackets: brackets > 0,
    }
}

/// Whether `at` is inside the parentheses of a routine's header, where
/// its parameters are declared (a `;` parts them there, so the open
/// bracket is looked for back past it).
fn in_header(tokens: &[(Token, Span)], at: usize) -> bool {
    let mut depth = 0;
    for i in (0..before(tokens, at).len()).rev() {
        match &tokens[i].0 {
            Token::RParen => depth += 1,
            Token::LParen if depth > 0 => depth -= 1,
            Token::LParen => {
                return i >= 2
                    && matches!(tokens[i - 1].0, Token::Ident(_))
                    && matches!(tokens[i - 2].0, Token::Procedure | Token::Function);
            }
            Token::Begin | Token::End | Token::Tape | Token::Then | Token::Do | Token::Else => {
                return false;
            }
            _ => {}
        }
    }
    false
}

/// Whether `at` is after a routine's header and before its `begin`: back
/// from it, its `procedure` or `function` comes before any word that
/// only a statement or a body holds.
fn in_routine_head(tokens: &[(Token, Span)], at: usize) -> bool {
    for (token, _) in before(tokens, at).iter().rev() {
        match token {
            Token::Procedure | Token::Function => return true,
            Token::Ident(_)
            | Token::Colon
            | Token::Semi
            | Token::Comma
            | Token::LParen
            | Token::RParen
            | Token::Var => {}
            _ => return false,
        }
    }
    false
}

/// Whether `at` follows `var a, b, `: more names of one declaration.
fn in_var_list(tokens: &[(Token, Span)], at: usize) -> bool {
    let mut rev = before(tokens, at).iter().rev().map(|(t, _)| t);
    loop {
        if !matches!(rev.next(), Some(Token::Comma)) || !matches!(rev.next(), Some(Token::Ident(_)))
        {
            return false;
        }
        if matches!(rev.clone().next(), Some(Token::Var)) {
            return true;
        }
    }
}

/// Whether `at` is inside the parentheses of a call (not of a routine's
/// header, where a `:` is followed by a type).
fn in_call(tokens: &[(Token, Span)], at: usize) -> bool {
    super::signature::open_call(tokens, at).is_some_and(|(_, _, name)| {
        let before = name.checked_sub(1).map(|b| &tokens[b].0);
        !matches!(before, Some(Token::Procedure | Token::Function))
    })
}

/// The types' names, as a declaration writes them.
pub fn type_names() -> impl Iterator<Item = &'static str> {
    TypeName::ALL.into_iter().map(TypeName::name)
}

/// Names a client knows of besides the document's own: a notebook's
/// session, whose earlier cells made them.
#[derive(Default)]
pub struct Known {
    pub variables: Vec<String>,
    /// Each routine's name, and whether it is a function.
    pub routines: Vec<(String, bool)>,
    /// Whether a statement at the top level may be an expression alone,
    /// whose value is shown (at the prompt, in a cell): functions,
    /// constants, `not`, `true` and `false` are offered where such a
    /// statement starts too.
    pub bare_expressions: bool,
}

pub fn completions(
    doc: &Document,
    offset: usize,
    markdown: bool,
    snippets: bool,
) -> Vec<CompletionItem> {
    completions_knowing(doc, offset, markdown, snippets, &Known::default())
}

/// [`completions`], with the names `known` offered where the document's
/// own variables and routines of their kind are, after those.
pub fn completions_knowing(
    doc: &Document,
    offset: usize,
    markdown: bool,
    snippets: bool,
    known: &Known,
) -> Vec<CompletionItem> {
    if in_text(doc.text(), offset) {
        return Vec::new();
    }
    let names = &doc.names;
    let mut items = Vec::new();
    let place = place(doc.text(), &doc.tokens, offset);
    if place == Place::Type {
        for name in type_names() {
            items.push(item(
                name,
                CompletionItemKind::CLASS,
                Some("type".to_string()),
            ));
        }
        return items;
    }
    if place == Place::NewName {
        return items;
    }
    if place == Place::Parameter || place == Place::RoutineHead {
        for (k, _, help) in crate::syntax::lexer::KEYWORDS {
            if *k == "var" || (*k == "begin" && place == Place::RoutineHead) {
                items.push(keyword(k, help, markdown));
            }
        }
        return items;
    }
    let start = word_start(doc.text(), offset);
    let around = around(&doc.tokens, start);
    if place == Place::AfterValue {
        for (k, _, help) in crate::syntax::lexer::KEYWORDS {
            if AFTER_VALUE.contains(k) && around.may_stand(k) {
                items.push(keyword(k, help, markdown));
            }
        }
        return items;
    }
    let mut hidden: &[String] = &[];
    if let Some(i) = names.routine_at(offset) {
        let entry = &names.routines[i];
        let r = &entry.routine;
        for local in &entry.locals {
            let what = if r.params.iter().any(|p| *p.name.text == **local) {
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
    let own: std::collections::HashSet<String> = items.iter().map(|i| i.label.clone()).collect();
    for global in &known.variables {
        if hidden.binary_search(global).is_err() && !own.contains(global) {
            items.push(item(
                global,
                CompletionItemKind::VARIABLE,
                Some("global".to_string()),
            ));
        }
    }
    if place == Place::Counter {
        return items;
    }
    // Inside an expression only what gives a value (no procedure); where
    // a statement starts, no function (its value would go unused), but
    // where an expression alone is a statement that shows it.
    let in_expression = place == Place::Expression;
    let in_routine = names.routine_at(offset).is_some();
    let values = in_expression || known.bare_expressions && !around.nested && !in_routine;
    let offered = |is_function: bool| if is_function { values } else { !in_expression };
    for entry in &names.routines {
        let label = &entry.routine.name.text;
        if !offered(entry.routine.is_function) {
            continue;
        }
        if !items.iter().any(|i| *i.label == **label) {
            items.push(item(
                label,
                CompletionItemKind::FUNCTION,
                Some(doc.slice(entry.routine.header).to_string()),
            ));
        }
    }
    let own: std::collections::HashSet<String> = items.iter().map(|i| i.label.clone()).collect();
    for (label, is_function) in &known.routines {
        if offered(*is_function) && !own.contains(label) {
            items.push(item(label, CompletionItemKind::FUNCTION, None));
        }
    }
    for b in BUILTINS {
        // A function called as a statement is an error; a procedure in an
        // expression is one too.
        if !offered(b.kind != crate::declarations::Kind::Procedure) {
            continue;
        }
        let mut it = item(b.name, CompletionItemKind::FUNCTION, Some(b.signature()));
        it.documentation = Some(documentation(b.doc, markdown));
        items.push(it);
    }
    for c in CONSTANTS.iter().filter(|_| values) {
        items.push(item(
            c,
            CompletionItemKind::CONSTANT,
            Some("constant".to_string()),
        ));
    }
    // Routines and the program's name are declared at the top level only;
    // a `var` section there or before a routine's `begin`; a tape not
    // inside another.
    for (k, _, help) in crate::syntax::lexer::KEYWORDS {
        if (in_routine || around.nested) && ["program", "procedure", "function"].contains(k) {
            continue;
        }
        if (around.nested && *k == "var") || (around.in_tape && *k == "tape") {
            continue;
        }
        // `break` and `continue` only in a loop, not out of a tape.
        if !around.in_loop && ["break", "continue"].contains(k) {
            continue;
        }
        // `program` names the program on its first line only.
        if *k == "program" && doc.tokens.iter().any(|(_, s)| s.end <= start) {
            continue;
        }
        // A value's word starts a statement that is an expression alone.
        let starts_value = values && ["not", "true", "false"].contains(k);
        if !in_expression && !starts_value && NOT_AT_START.contains(k) || !around.may_stand(k) {
            continue;
        }
        if *k == "not" && refuses_not(before(&doc.tokens, start).last().map(|(t, _)| t)) {
            continue;
        }
        if !in_expression || ["not", "true", "false"].contains(k) {
            items.push(keyword(k, help, markdown));
        }
    }
    if in_expression {
        return items;
    }
    if snippets {
        for (label, what, body) in SNIPPETS {
            let routine = label.starts_with("function") || label.starts_with("procedure");
            if ((in_routine || around.nested) && routine)
                || (around.in_tape && label.starts_with("tape"))
            {
                continue;
            }
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

    fn labels(text: &str, cursor: &str) -> Vec<String> {
        let doc = Document::new(text.to_string(), 1);
        let offset = text.find(cursor).expect("cursor") + cursor.len();
        completions(&doc, offset, false, true)
            .into_iter()
            .map(|i| i.label)
            .collect()
    }

    #[test]
    fn nothing_is_offered_in_a_comment_or_a_string_even_at_its_end_or_unclosed() {
        for (text, cursor) in [
            ("x := 1; // trailing", "trailing"),
            ("x := 1; // trail", "// tr"),
            ("{ unclosed comment", "comment"),
            ("(* unclosed", "unclosed"),
            ("y := 'unterminated", "unterminated"),
            ("y := 'it''s", "it''s"),
            ("{ a } (* b *) x := 'c';", "(* b"),
        ] {
            assert_eq!(labels(text, cursor), Vec::<String>::new(), "{text:?}");
        }
        for (text, cursor) in [
            ("{ a } x", "} x"),
            ("(* b *) x", "*) x"),
            ("y := 'done'; x", "; x"),
            ("y := 'it''s'; x", "; x"),
            ("// a line\nx", "line\nx"),
            ("y := (x", "(x"),
        ] {
            let text = format!("x := 1;\n{text}");
            assert!(labels(&text, cursor).contains(&"x".to_string()), "{text:?}");
        }
    }

    #[test]
    fn an_expression_is_offered_no_statement_and_a_colon_types() {
        let after_assign = labels("x := 1;\ny := \n", "y := ");
        assert!(after_assign.contains(&"Sqrt".to_string()));
        assert!(after_assign.contains(&"x".to_string()));
        assert!(after_assign.contains(&"not".to_string()));
        for absent in ["for", "while", "procedure", "tape … end;", "Real"] {
            assert!(!after_assign.contains(&absent.to_string()), "{absent}");
        }
        let statement = labels("x := 1;\n", "x := 1;\n");
        for present in ["for", "while", "tape … end;", "procedure …", "x", "WriteLn"] {
            assert!(statement.contains(&present.to_string()), "{present}");
        }
        // A function called as a statement is an error; no type, constant
        // or word that cannot open a statement; `program` only first.
        for absent in [
            "Sqrt", "Integer", "Inf", "then", "and", "true", "program", "end", "else", "until",
        ] {
            assert!(!statement.contains(&absent.to_string()), "{absent}");
        }
        assert!(labels("", "").contains(&"program".to_string()));
        // The word being typed is not a token before it.
        assert!(labels("pro", "pro").contains(&"program".to_string()));
        assert!(!labels("x := 1;\npro", "pro").contains(&"program".to_string()));
        let in_routine = labels("procedure P;\nbegin\n  \nend;\n", "begin\n  ");
        assert!(in_routine.contains(&"tape … end;".to_string()));
        assert!(!in_routine.contains(&"procedure …".to_string()));
        assert!(!in_routine.contains(&"function …".to_string()));
        let typed = labels("var w: \n", "w: ");
        assert_eq!(typed, ["Integer", "Real", "Boolean", "String", "Matrix"]);
    }

    #[test]
    fn after_a_value_only_what_may_follow_one_is_offered() {
        for (text, cursor) in [
            ("x := 1;\nif x ", "if x "),
            ("for i := 1 ", "1 "),
            ("x := (1 + 2) ", "2) "),
        ] {
            let offered = labels(text, cursor);
            assert!(offered.contains(&"and".to_string()), "{text:?}");
            for absent in ["begin", "tape", "Sum", "x", "WriteLn"] {
                assert!(!offered.contains(&absent.to_string()), "{text:?}: {absent}");
            }
        }
    }

    /// `then`, `do`, `to` and `downto` go on with the head of an `if`, a
    /// `while` or a `for`: each is offered only where that head waits for
    /// it, and inside brackets no word but an operator follows a value.
    #[test]
    fn after_a_value_a_word_that_goes_on_is_offered_only_where_it_is_awaited() {
        let going_on = ["do", "downto", "else", "end", "then", "to", "until"];
        for (text, wanted) in [
            ("x := 1;\nx := x + 1 ", &[][..]),
            ("x := 1;\nif x ", &["then"]),
            ("x := 1;\nif (x > 0) and (x ", &[]),
            ("x := 1;\nwhile x < 3 ", &["do"]),
            ("for i := 1 ", &["downto", "to"]),
            ("for i := 1 to 3 ", &["do"]),
            ("begin\n  for i := 1 to 3 do x := i ", &["end"]),
            ("if x > 0 then\n  WriteLn('big' ", &[]),
            ("begin\n  y := Sqrt(x ", &[]),
            ("begin\n  y := m[1, 2] ", &["end"]),
            ("if x > 0 then y := Sqrt(x) ", &["else"]),
            ("repeat\n  x := x + 1\nuntil x ", &[]),
            ("repeat\n  x := x + 1 ", &["until"]),
        ] {
            let offered = labels(text, text);
            let found: Vec<&str> = going_on
                .into_iter()
                .filter(|w| offered.iter().any(|l| l == w))
                .collect();
            assert_eq!(found, wanted, "{text:?}: {offered:?}");
        }
        // After a `for`'s name only its `:=` may follow.
        assert_eq!(labels("for i ", "for i "), Vec::<String>::new());
    }

    #[test]
    fn an_expression_is_offered_only_what_gives_a_value() {
        let text = "procedure P;\nbegin\nend;\nfunction F(x: Real): Real;\nbegin\n  Result := x;\nend;\nx := 1;\ny := 1 + \n";
        let offered = labels(text, "y := 1 + ");
        for wanted in ["F", "Tanh", "x", "true"] {
            assert!(offered.iter().any(|l| l == wanted), "{wanted}: {offered:?}");
        }
        // `1 + not b` is refused: see `not_is_offered_only_where_the_parser_takes_it`.
        for unwanted in [
            "P", "WriteLn", "Nudge", "Seed", "Save", "Plot", "Show", "not",
        ] {
            assert!(
                !offered.iter().any(|l| l == unwanted),
                "{unwanted}: {offered:?}"
            );
        }
        // A statement may call a procedure.
        let statement = labels("procedure P;\nbegin\nend;\n\n", "end;\n\n");
        assert!(statement.iter().any(|l| l == "P") && statement.iter().any(|l| l == "WriteLn"));
    }

    #[test]
    fn a_colon_in_a_call_is_a_width_and_in_a_declaration_a_type() {
        let types = ["Integer", "Real", "Boolean", "String", "Matrix"];
        let width = labels("x := 2.5;\nWriteLn(x: \n", "WriteLn(x: ");
        assert!(width.iter().any(|l| l == "x"), "{width:?}");
        assert!(
            !width.iter().any(|l| types.contains(&l.as_str())),
            "{width:?}"
        );
        let width = labels("x := 2.5;\nWriteLn('x = ', (x + 1):8: \n", ":8: ");
        assert!(
            !width.iter().any(|l| types.contains(&l.as_str())),
            "{width:?}"
        );
        for (text, cursor) in [
            ("function G(a: \n", "G(a: "),
            ("procedure Q(var b: Real; c: \n", "c: "),
            ("function H(a: Real): \n", "): "),
            ("var i, j: Integer; h: \n", "h: "),
        ] {
            assert_eq!(labels(text, cursor), types, "{text}");
        }
    }

    /// `else`, `until` and `end` end a statement: each is offered only
    /// where it closes something open, as anywhere else it is an error.
    #[test]
    fn break_and_continue_are_offered_only_in_a_loop_and_not_out_of_a_tape() {
        for (text, wanted) in [
            ("", false),
            ("x := 1;\n", false),
            ("tape\n  ", false),
            ("begin\n  ", false),
            ("while x do ", true),
            ("while x do\n  if y then ", true),
            ("for i := 1 to 3 do begin\n  ", true),
            ("for i := 1 to 3 do begin\n  if y then begin\n    ", true),
            ("repeat\n  ", true),
            ("repeat\n  x := 1;\n  ", true),
            ("while x do y := 1;\n", false),
            ("while x do begin\n  y := 1;\nend;\n", false),
            ("for i := 1 to 3 do begin\n  tape\n    ", false),
            ("tape\n  for i := 1 to 3 do ", true),
            ("repeat\n  while x do y := 1;\n  ", true),
            ("procedure P;\nbegin\n  ", false),
            ("if x > 0 then while x < 3 do x := x + 1 else ", false),
            ("while x do if a then y := 1 else ", true),
        ] {
            let offered = labels(text, text);
            for word in ["break", "continue"] {
                assert_eq!(
                    offered.iter().any(|l| l == word),
                    wanted,
                    "{word} in {text:?}"
                );
            }
        }
    }

    #[test]
    fn else_until_and_end_are_offered_only_where_they_close_something() {
        let closers = ["else", "until", "end"];
        for (text, wanted) in [
            ("x := 1;\n", &[][..]),
            ("x := 1;\nx := 2 ", &[]),
            ("begin\n  x := 1;\n  ", &["end"]),
            ("tape\n  x := 1 ", &["end"]),
            ("procedure P;\nbegin\n  ", &["end"]),
            ("repeat\n  x := 1;\n  ", &["until"]),
            ("begin\n  repeat\n    x := 1 ", &["until"]),
            ("repeat\n  begin\n    x := 1;\n  end;\n  ", &["until"]),
            ("x := 1;\nif x > 0 then\n  y := 1\n", &["else"]),
            ("x := 1;\nif x > 0 then ", &["else"]),
            ("x := 1;\nif x > 0 then\n  y := 1;\n", &[]),
            ("x := 1;\nif x > 0 then y := 1 else ", &[]),
            ("x := 1;\nif x > 0 then y := 1 else y := 2 ", &[]),
            ("begin\n  if x > 0 then y := 1 ", &["else", "end"]),
            ("begin\n  if x > 0 then y := 1;\n  ", &["end"]),
            ("if x > 0 then begin\n  y := 1;\nend\n", &["else"]),
            ("if x > 0 then begin\n  y := 1;\n", &["end"]),
            ("if x > 0 then repeat y := 1 until y > 0 ", &["else"]),
            ("if a then if b then y := 1 else y := 2 ", &["else"]),
            (
                "if a then if b then y := 1 else if c then y := 2 else y := 3 ",
                &["else"],
            ),
            ("if a then y := 1 else if c then y := 2 else y := 3 ", &[]),
            ("if a then while b do y := 1 ", &["else"]),
            ("if a then while b do ", &[]),
            ("begin\n  if x ", &[]),
            ("repeat\n  while x ", &[]),
            ("begin\n  for i := 1 ", &[]),
        ] {
            let offered = labels(text, text);
            let found: Vec<&str> = closers
                .into_iter()
                .filter(|c| offered.iter().any(|l| l == c))
                .collect();
            assert_eq!(found, wanted, "{text:?}");
        }
    }

    #[test]
    fn inside_a_routine_no_routine_or_program_is_offered_to_declare() {
        let text = "procedure P;\nbegin\n  \nend;\n";
        let offered = labels(text, "begin\n  ");
        for unwanted in ["program", "procedure", "function"] {
            assert!(
                !offered.iter().any(|l| l == unwanted),
                "{unwanted}: {offered:?}"
            );
        }
        assert!(offered.iter().any(|l| l == "while"), "{offered:?}");
    }

    /// After `for` only its counter's name may stand: a variable in
    /// scope, or a new name; no statement, routine, builtin or keyword.
    #[test]
    fn after_for_only_variables_are_offered() {
        assert_eq!(labels("x := 1;\nfor ", "for "), ["x"]);
        assert_eq!(labels("x := 1;\nfor i", "for i"), ["x"]);
        assert_eq!(labels("for ", "for "), Vec::<String>::new());
        let text = "n := 1;\nprocedure P(a: Real);\nvar k: Integer;\nbegin\n  for \nend;\n";
        let offered = labels(text, "for ");
        for wanted in ["a", "k", "n"] {
            assert!(offered.iter().any(|l| l == wanted), "{wanted}: {offered:?}");
        }
        for unwanted in [
            "P",
            "WriteLn",
            "Sqrt",
            "while",
            "tape",
            "not",
            "for … do begin … end;",
        ] {
            assert!(
                !offered.iter().any(|l| l == unwanted),
                "{unwanted}: {offered:?}"
            );
        }
    }

    /// `not` negates a whole comparison: the parser takes it where an
    /// expression starts or after `and`, `or` or `not`, and refuses it
    /// after an arithmetic or comparison operator (`a = not b`).
    #[test]
    fn not_is_offered_only_where_the_parser_takes_it() {
        let not = |text: &str| labels(text, text).iter().any(|l| l == "not");
        for op in [
            "=", "<>", "<", ">", "<=", ">=", "+", "-", "*", "/", "div", "mod",
        ] {
            let text = format!("a := true;\nb := a {op} ");
            assert!(!not(&text), "{text:?}");
        }
        assert!(!not("a := true;\nb := -"));
        for text in [
            "a := true;\nb := ",
            "a := true;\nb := a and ",
            "a := true;\nb := a or ",
            "a := true;\nb := not ",
            "a := true;\nb := a = (",
            "a := true;\nif ",
            "a := true;\nwhile a and ",
            "a := true;\nWriteLn(a, ",
            "a := true;\nm := [",
        ] {
            assert!(not(text), "{text:?}");
        }
    }

    #[test]
    fn every_keyword_is_the_lexers() {
        for (k, token, help) in crate::syntax::lexer::KEYWORDS {
            for spelled in [k.to_string(), k.to_uppercase()] {
                let (tokens, errors) = lex(&spelled, 0);
                assert!(errors.is_empty() && tokens.len() == 1, "{k}");
                assert_eq!(&tokens[0].0, token, "{spelled}");
            }
            assert!(!help.is_empty(), "{k} has no help");
        }
    }
}
