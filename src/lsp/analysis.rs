//! One open document as the server knows it: its text and line index, the
//! tree the parser made of it (recovered where it did not parse), the
//! diagnostics `tapec check` gives it, and what each name in it means.
//!
//! What a name means comes from the interpreter's own passes, never from a
//! second reading of the text: the resolver (`check::resolve`) numbers
//! every name's text and says which builtin it calls, and the checker's
//! scope rules (`check::Checked::locals`) say which names are a routine's
//! own. A name inside a routine is its local if the routine's scope holds
//! it; else a builtin, a routine or a global, by its text.

use std::collections::HashMap;
use std::rc::Rc;

use crate::check::{self, Known, resolve::Resolution};
use crate::declarations;
use crate::diagnostic::{Diagnostic, Span};
use crate::syntax::{
    self,
    lexer::{Token, lex_with_comments},
    tree::{Name, NameId, Program, Routine, Stmt, StmtKind, each_name},
};

use super::positions::LineIndex;

/// What a name stands for. Two occurrences with the same symbol are the
/// same thing: what references and rename follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Symbol {
    /// The builtin at this index of `declarations::BUILTINS`.
    Builtin(usize),
    /// The constant at this index of `declarations::CONSTANTS` (`Inf`).
    Constant(usize),
    /// The routine at this index of [`Names::routines`].
    Routine(usize),
    /// A global variable: the resolver's number of its text.
    Global(u32),
    /// A parameter or local of the routine at index `routine`.
    Local { routine: usize, number: u32 },
}

/// What an occurrence of a name does to what it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A `var` section, a parameter, a routine's header.
    Declared,
    /// The target of `:=` or the counter of a `for`.
    Assigned,
    /// Anything else: a read, a call, an element assigned.
    Used,
}

#[derive(Debug, Clone, Copy)]
pub struct Occurrence {
    pub span: Span,
    pub symbol: Symbol,
    pub role: Role,
}

/// A top-level routine, with the span of its whole declaration.
#[derive(Debug, Clone)]
pub struct RoutineEntry {
    pub routine: Rc<Routine>,
    pub span: Span,
    /// Its local names, sorted: the checker's scope for it.
    pub locals: Vec<String>,
}

/// Every name of a document and what it means.
#[derive(Debug, Default)]
pub struct Names {
    /// In the order of the text.
    pub occurrences: Vec<Occurrence>,
    /// The top-level routines, in the order declared (a second declaration
    /// of a name too, though its name's occurrences mean the first).
    pub routines: Vec<RoutineEntry>,
    /// The global variables' names, sorted.
    pub globals: Vec<String>,
    /// The text of each number the resolver gave.
    texts: HashMap<u32, String>,
}

impl Names {
    fn build(program: &Program, checked: &check::Checked) -> Names {
        let mut resolution = Resolution::default();
        resolution.resolve(program);
        let roles = roles(&program.body);
        let mut names = Names::default();
        let mut first_of: HashMap<&str, usize> = HashMap::new();
        let mut context: Vec<Option<usize>> = Vec::new();
        for stmt in &program.body {
            let StmtKind::Routine(r) = &stmt.kind else {
                context.push(None);
                continue;
            };
            let mut locals: Vec<String> = checked
                .locals
                .get(&r.name.id)
                .map(|l| l.iter().cloned().collect())
                .unwrap_or_default();
            locals.sort();
            let index = names.routines.len();
            names.routines.push(RoutineEntry {
                routine: r.clone(),
                span: stmt.span,
                locals,
            });
            if declarations::find(&r.name.text).is_none() {
                first_of.entry(&r.name.text).or_insert(index);
            }
            context.push(Some(index));
        }
        for (stmt, routine) in program.body.iter().zip(context) {
            let mut found: Vec<&Name> = Vec::new();
            each_name(std::slice::from_ref(stmt), &mut |n| found.push(n));
            for name in found {
                let number = resolution
                    .global(name)
                    .unwrap_or_else(|| resolution.number(&name.text));
                let local = routine.filter(|&i| {
                    names.routines[i]
                        .locals
                        .binary_search_by(|l| (**l).cmp(&*name.text))
                        .is_ok()
                });
                let symbol = if let Some(i) =
                    routine.filter(|&i| names.routines[i].routine.name.id == name.id)
                {
                    Symbol::Routine(first_of.get(&*name.text).copied().unwrap_or(i))
                } else if let Some(routine) = local {
                    Symbol::Local { routine, number }
                } else if let Some(b) = resolution.builtin(name) {
                    Symbol::Builtin(declarations::index_of(b.name).unwrap_or(0))
                } else if let Some(c) = declarations::CONSTANTS
                    .iter()
                    .position(|c| *c == &*name.text)
                {
                    Symbol::Constant(c)
                } else if let Some(&i) = first_of.get(&*name.text) {
                    Symbol::Routine(i)
                } else {
                    Symbol::Global(number)
                };
                names
                    .texts
                    .entry(number)
                    .or_insert_with(|| name.text.to_string());
                names.occurrences.push(Occurrence {
                    span: name.span,
                    symbol,
                    role: roles.get(&name.id).copied().unwrap_or(Role::Used),
                });
            }
        }
        names
            .occurrences
            .sort_by_key(|o| (o.span.start, o.span.end));
        names.globals = checked.globals.iter().cloned().collect();
        names.globals.sort();
        names
    }

    /// The name at `offset`, or just before it (a cursor right after a name
    /// is on it).
    pub fn at(&self, offset: usize) -> Option<&Occurrence> {
        let after = self.occurrences.partition_point(|o| o.span.start <= offset);
        let o = self.occurrences.get(after.checked_sub(1)?)?;
        (o.span.end >= offset).then_some(o)
    }

    /// The name's text of a symbol.
    pub fn text(&self, symbol: Symbol) -> &str {
        match symbol {
            Symbol::Builtin(i) => declarations::BUILTINS.get(i).map_or("", |b| b.name),
            Symbol::Constant(i) => declarations::CONSTANTS.get(i).copied().unwrap_or(""),
            Symbol::Routine(i) => self.routines.get(i).map_or("", |r| &*r.routine.name.text),
            Symbol::Global(n) | Symbol::Local { number: n, .. } => {
                self.texts.get(&n).map_or("", String::as_str)
            }
        }
    }

    /// Every occurrence of `symbol`, in the order of the text.
    pub fn references(&self, symbol: Symbol) -> impl Iterator<Item = &Occurrence> {
        self.occurrences.iter().filter(move |o| o.symbol == symbol)
    }

    /// Where `symbol` is defined: a routine's name in its header; a
    /// variable's first declaration, else its first assignment; a global's
    /// at the top level (a routine may not assign one: that is an error,
    /// not where the global comes from).
    pub fn definition(&self, symbol: Symbol) -> Option<&Occurrence> {
        match symbol {
            Symbol::Builtin(_) | Symbol::Constant(_) => None,
            Symbol::Routine(i) => self.routines.get(i).and_then(|r| {
                self.occurrences
                    .iter()
                    .find(|o| o.span == r.routine.name.span)
            }),
            Symbol::Global(_) => {
                let top = |o: &&Occurrence| {
                    !self
                        .routines
                        .iter()
                        .any(|r| r.span.start <= o.span.start && o.span.end <= r.span.end)
                };
                let first = |role| self.references(symbol).filter(top).find(|o| o.role == role);
                first(Role::Declared).or_else(|| first(Role::Assigned))
            }
            Symbol::Local { .. } => {
                let first = |role| self.references(symbol).find(|o| o.role == role);
                first(Role::Declared).or_else(|| first(Role::Assigned))
            }
        }
    }

    /// The top-level routine whose declaration holds `offset`.
    pub fn routine_at(&self, offset: usize) -> Option<usize> {
        self.routines
            .iter()
            .position(|r| r.span.start <= offset && offset <= r.span.end)
    }

    /// Whether any name of the document has this text.
    pub fn has_text(&self, text: &str) -> bool {
        self.texts.values().any(|t| t == text)
    }
}

/// The role of every name that is not merely used.
fn roles(stmts: &[Stmt]) -> HashMap<NameId, Role> {
    let mut roles = HashMap::new();
    for stmt in stmts {
        stmt_roles(stmt, &mut roles);
    }
    roles
}

fn stmt_roles(stmt: &Stmt, roles: &mut HashMap<NameId, Role>) {
    match &stmt.kind {
        StmtKind::Assign { target, .. } => {
            roles.insert(target.id, Role::Assigned);
        }
        StmtKind::For { var, body, .. } => {
            roles.insert(var.id, Role::Assigned);
            stmt_roles(body, roles);
        }
        StmtKind::Block(body) | StmtKind::Tape { body, .. } | StmtKind::Repeat { body, .. } => {
            body.iter().for_each(|s| stmt_roles(s, roles))
        }
        StmtKind::If {
            branches,
            otherwise,
        } => {
            for s in branches.iter().map(|(_, s)| s).chain(otherwise.as_deref()) {
                stmt_roles(s, roles);
            }
        }
        StmtKind::While { body, .. } => stmt_roles(body, roles),
        StmtKind::Var(decls) => {
            for d in decls {
                roles.insert(d.name.id, Role::Declared);
            }
        }
        StmtKind::Routine(r) => {
            roles.insert(r.name.id, Role::Declared);
            for name in r
                .params
                .iter()
                .map(|p| &p.name)
                .chain(r.locals.iter().map(|d| &d.name))
            {
                roles.insert(name.id, Role::Declared);
            }
            r.body.iter().for_each(|s| stmt_roles(s, roles));
        }
        StmtKind::Empty
        | StmtKind::Error
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::AssignIndex { .. }
        | StmtKind::Expr(_) => {}
    }
}

/// The most diagnostics a document publishes; the rest are counted in one
/// more. `tapec check` shows 50; an editor lists them, so it gets more,
/// but a file of random characters with a hundred thousand errors would
/// otherwise send megabytes on every keystroke.
pub const MAX_PUBLISHED: usize = 1000;

/// An open document.
#[derive(Debug)]
pub struct Document {
    pub version: i32,
    pub lines: LineIndex,
    pub program: Program,
    /// What `tapec check` reports for the text: the syntax errors if it
    /// does not parse (each where the parser recovered), else the checks'
    /// errors, else the warnings.
    pub diagnostics: Vec<Diagnostic>,
    /// Whether the text parsed: if not, the statements that did not are
    /// missing from the tree, and their names from `names`.
    pub parses: bool,
    pub names: Names,
    /// Every token, for what reads the text around the cursor.
    pub tokens: Vec<(Token, Span)>,
    /// Every closed comment.
    pub comments: Vec<Span>,
}

impl Document {
    pub fn new(text: String, version: i32) -> Document {
        // A byte-order mark, which `tapec check` drops as it reads a file,
        // is read as blanks of its length, so every offset stays the
        // editor's.
        let read: std::borrow::Cow<str> = match text.strip_prefix('\u{feff}') {
            Some(rest) => format!("   {rest}").into(),
            None => text.as_str().into(),
        };
        let (program, syntax_errors) = syntax::parse(&read, 0);
        // The checker runs on a tree with errors too (parts that did not
        // parse are `Error` nodes), for the names of what did; its errors
        // are shown only when the text parses, as `tapec check` does, with
        // the layout warnings among them.
        let checked = crate::eval::constants::check_program(&program, &Known::default(), false);
        let names = Names::build(&program, &checked);
        let parses = syntax_errors.is_empty();
        let diagnostics = if !parses {
            syntax_errors
        } else {
            check::layout::among_errors(checked.errors, &program.body, &read)
        };
        let (tokens, comments, _) = lex_with_comments(&read, 0);
        drop(read);
        Document {
            version,
            lines: LineIndex::new(text),
            program,
            diagnostics,
            parses,
            names,
            tokens,
            comments,
        }
    }

    pub fn text(&self) -> &str {
        self.lines.text()
    }

    /// The text of a span, clamped to the document.
    pub fn slice(&self, span: Span) -> &str {
        let text = self.text();
        let start = span.start.min(text.len());
        let end = span.end.clamp(start, text.len());
        text.get(start..end).unwrap_or("")
    }

    /// The comment right above `at`: the comments that end on the lines
    /// just before it, with no blank line and no code between, each on a
    /// line of its own; their text without the comment marks.
    pub fn comment_above(&self, at: usize) -> Option<String> {
        let text = self.text();
        let mut end = at;
        let mut found: Vec<&str> = Vec::new();
        let before = self.comments.partition_point(|c| c.end <= at);
        for c in self.comments[..before].iter().rev() {
            let gap = text.get(c.end..end).unwrap_or("x");
            let own_line = text
                .get(..c.start)
                .map(|t| t.rsplit('\n').next().unwrap_or(""))
                .is_some_and(|l| l.trim().is_empty());
            if !gap.trim().is_empty() || gap.matches('\n').count() > 1 || !own_line {
                break;
            }
            found.push(self.slice(*c));
            end = c.start;
        }
        if found.is_empty() {
            return None;
        }
        let lines: Vec<String> = found.iter().rev().map(|c| without_marks(c)).collect();
        let joined = lines.join("\n");
        let trimmed = joined.trim();
        (!trimmed.is_empty()).then(|| trimmed.to_string())
    }
}

/// A comment's text without `{ }`, `(* *)` or `//`, each line trimmed.
fn without_marks(comment: &str) -> String {
    let inner = if let Some(rest) = comment.strip_prefix("//") {
        rest
    } else if let Some(rest) = comment.strip_prefix("(*") {
        rest.strip_suffix("*)").unwrap_or(rest)
    } else if let Some(rest) = comment.strip_prefix('{') {
        rest.strip_suffix('}').unwrap_or(rest)
    } else {
        comment
    };
    inner
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn locals_of(doc: &Document, routine: &str) -> HashSet<String> {
        doc.names
            .routines
            .iter()
            .find(|r| &*r.routine.name.text == routine)
            .map(|r| r.locals.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn doc(text: &str) -> Document {
        Document::new(text.to_string(), 1)
    }

    fn symbol_at(d: &Document, needle: &str, nth: usize) -> Symbol {
        let at = d.text().match_indices(needle).nth(nth).unwrap().0;
        d.names.at(at).unwrap().symbol
    }

    #[test]
    fn a_routines_names_are_its_own_and_the_rest_global() {
        let d = doc("x := 1;\n\
             function F(a: Real): Real;\nvar t: Real;\nbegin\n  t := a + x;\n  u := t;\n  Result := Sqrt(u)\nend;\n\
             y := F(x);\n");
        assert!(d.diagnostics.is_empty(), "{:?}", d.diagnostics);
        assert_eq!(
            locals_of(&d, "F"),
            ["Result", "a", "t", "u"].map(String::from).into()
        );
        let x = symbol_at(&d, "x", 0);
        assert!(matches!(x, Symbol::Global(_)));
        assert_eq!(symbol_at(&d, "x", 1), x);
        assert_eq!(symbol_at(&d, "x", 2), x);
        assert!(matches!(symbol_at(&d, "t", 1), Symbol::Local { .. }));
        assert!(matches!(symbol_at(&d, "Sqrt", 0), Symbol::Builtin(_)));
        assert_eq!(symbol_at(&d, "F(x)", 0), Symbol::Routine(0));
        let t = symbol_at(&d, "t :=", 0);
        let def = d.names.definition(t).unwrap();
        assert_eq!(d.slice(def.span), "t");
        assert_eq!(def.role, Role::Declared);
        assert_eq!(d.names.references(x).count(), 3);
    }

    #[test]
    fn the_comment_above_a_routine_is_found_without_its_marks() {
        let d = doc(
            "x := 1; { not this }\n\n// Adds one.\n// Twice.\nprocedure P;\nbegin end;\n\
             { Gives two. }\nfunction G: Real;\nbegin Result := 2 end;\n",
        );
        let at = |s: &str| d.text().find(s).unwrap();
        assert_eq!(
            d.comment_above(at("procedure")).as_deref(),
            Some("Adds one.\nTwice.")
        );
        assert_eq!(
            d.comment_above(at("function")).as_deref(),
            Some("Gives two.")
        );
        assert_eq!(d.comment_above(at("x :=")), None);
    }

    #[test]
    fn a_text_that_does_not_parse_keeps_the_names_of_what_did() {
        let d = doc("a := 1;\nb := ;\nc := a;\n");
        assert!(!d.diagnostics.is_empty());
        assert!(d.names.globals.contains(&"c".to_string()));
    }

    /// As `tapec check`: an error does not hide the layout warning that may
    /// explain it, and both come in the order of the text.
    #[test]
    fn a_layout_warning_is_shown_beside_the_errors() {
        let d = doc(
            "x := 1;\nif x > 5 then\n  y := zzz + 1;\nfor i := 1 to 3 do\n  WriteLn(i);\n  WriteLn('after');\n",
        );
        let found: Vec<(bool, &str)> = d
            .diagnostics
            .iter()
            .map(|d| (d.warning, d.message.as_str()))
            .collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0], (false, "unknown variable `zzz`"));
        assert!(found[1].0 && found[1].1.contains("indented"), "{found:?}");
    }
}
