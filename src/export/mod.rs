//! `tapec export`: a checked program as a Python script that computes what
//! tapec computes, with PyTorch for matrices and tapes.
//!
//! The script is the program's own statements in Python, in order, with
//! each statement's source line as a trailing comment, and every operation
//! whose meaning Python's own operator does not have (Integer overflow,
//! `div` and `mod` toward zero, `/` of Integers, comparisons across
//! Integer and Real, the language's broadcasting, conditions that must be
//! Boolean, the NaN check) a call into the runtime `tape_runtime.py`,
//! written beside the script. A call carries no source place: an error
//! names the source line of the script's line that failed, read from that
//! line's comment, so the comment is the one place a line's origin lives.
//!
//! Translated: every value (a Matrix is a float64 tensor, or float32 under
//! the script's `--dtype float32`), every
//! statement, routines (parameters by value and by `var`, typed
//! parameters, locals and results, `Result`, recursion to the language's
//! depth), tapes (inside routines too), and every builtin. Not yet: a tape
//! inside a routine of a program that calls `CheckBlame` (an error at its
//! span).
//!
//! How each construct is carried over:
//! - Globals are the module's globals; the top-level statements run in
//!   `_program`, which declares them `global`, under `rt.run`, which
//!   prints a run-time error as tapec does and exits with status 1.
//! - Routines become functions defined before the program runs (tapec
//!   declares every routine before it runs). Python's scoping is the
//!   language's: a routine reads globals and makes local what it assigns.
//! - A `var` parameter is copied in and copied back: the function returns
//!   the final values of its `var` parameters (after `Result`), and the
//!   call assigns them to the caller's variables; one not assigned yet goes
//!   in as `rt.unset(name)`, which the routine's reads of the parameter
//!   (`rt.got`) refuse. The runtime learns which `var` parameter a call
//!   assigned last (`rt.var_assigned`, `rt.came_back`): called from a
//!   tape, that value is the tape's result so far, as in tapec.
//! - `repeat ... until c` is `while _first or not c`, so that `continue`
//!   still tests the condition.
//! - A name that Python reserves, or that the script uses itself, gets a
//!   trailing underscore.
//! - An `if ... else if ...` chain is `if`/`elif`, in runs of `ELIF_RUN`
//!   branches one after the other (CPython's compiler recurses per
//!   `elif`). A line Python cannot read, indented deeper than
//!   `PYTHON_INDENTS` or nesting more than `PYTHON_BRACKETS` brackets
//!   (each operator and builtin is a call), is refused at its statement's
//!   span rather than written (`too_deep_for_python`).
//!
//! A tape is PyTorch's autograd (`rt.tape_open` ... `rt.tape_close`): the
//! variables the block reads before it assigns them, and the globals the
//! routines it calls read, become leaves (an Integer leaf a 0-d tensor
//! that carries its exact value, so that it stays an Integer); every value the block assigns is
//! kept for `Blame` and is the result so far; `end;` runs `backward()` from
//! the result; `Blame(x)` reads `x.grad`; `Nudge(x, rate)` steps outside
//! the graph. A program that calls `CheckBlame` has each tape block as a
//! function too, which `CheckBlame` runs again with one element nudged,
//! printing nothing and drawing the tape's own random numbers.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::rc::Rc;

/// The script's first statements: the runtime written beside it, loaded
/// by its path, and the script's folder taken off Python's path (through
/// links, as Python puts it there), so that no file there named like a
/// module Python imports (`random.py`, `torch.py`, the script itself) is
/// imported in its place, and no other `tape_runtime.py` on the path is.
pub const HEADER: &str = "import os
import sys

_here = os.path.dirname(os.path.realpath(__file__))
sys.path = [p for p in sys.path if os.path.realpath(p or os.curdir) != _here]
import importlib.util  # noqa: E402

_runtime = importlib.util.spec_from_file_location(\"tape_runtime\", os.path.join(_here, \"tape_runtime.py\"))
rt = sys.modules[\"tape_runtime\"] = importlib.util.module_from_spec(_runtime)
_runtime.loader.exec_module(rt)

";

use crate::declarations::{self, Does, Filling, MatrixOp};
use crate::diagnostic::{Diagnostic, SourceMap, Span};
use crate::syntax::tree::{
    Arg, BinaryOp, Expr, ExprKind, Name, Program, Routine, Stmt, StmtKind, TypeName, UnaryOp,
};
use crate::tape::ops::Unary;

/// The most operators of one chain (`a + b + c`) written as nested calls,
/// `rt.add(rt.add(a, b), c)`; a longer chain is one `rt.chain` call.
const LONGEST_NESTED: usize = 32;

/// The deepest a line of the script may be indented, in levels below the
/// module's: CPython's tokenizer stops at 100 ("too many levels of
/// indentation"). The program's statements start at level 1, inside
/// `_program` or a routine's function. Measured with CPython 3.11.
const PYTHON_INDENTS: usize = 99;

/// The most brackets CPython nests in one line: at 201 its tokenizer
/// stops ("too many nested parentheses").
const PYTHON_BRACKETS: usize = 200;

/// The most `lambda`s (the operands of long chains, `rt.chain`) a line
/// that nests `PYTHON_BRACKETS` brackets may nest in each other: 197 of
/// them overflow CPython 3.11's parser stack there ("MemoryError"), and
/// any number does not at 199 brackets.
const PYTHON_LAMBDAS: usize = 196;

/// The most branches of an `if ... else if ...` chain written as one
/// Python `if`/`elif` statement; a longer chain is written as several, one
/// after the other. CPython's compiler recurses once per `elif`, and a
/// chain of 3,000 exceeded its limit (at about 2,500 in 3.11).
const ELIF_RUN: usize = 64;

/// The runtime the script imports, written beside it.
pub const RUNTIME: &str = include_str!("tape_runtime.py");

/// Python's keywords and the names the script itself uses.
const RESERVED: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield", "match", "case", "type", "rt", "os", "sys", "range", "print", "int", "float",
    "str", "bool", "len", "globals", "locals",
];

/// A name of the program as the script spells it: with `_` added to a
/// reserved name, to one starting with `_` (the script's own names do),
/// and to one ending with `_`, so that no two names meet (`lambda` is
/// `lambda_`, and `lambda_` is `lambda__`).
fn py_name(name: &str) -> String {
    if RESERVED.contains(&name) || name.starts_with('_') || name.ends_with('_') {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// A Python string literal of `text` (JSON's escapes are Python's).
fn py_str(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "''".to_string())
}

fn not_yet(span: Span, what: &str) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::new(
            span,
            format!("`tapec export` does not translate {what} yet"),
        )
        .with_label(span, "not translated yet"),
    )
}

type Out<T> = Result<T, Box<Diagnostic>>;

struct Exporter<'a> {
    sources: &'a SourceMap,
    file: String,
    routines: HashMap<String, Rc<Routine>>,
    out: String,
    /// Numbers the `repeat` loops' first-turn flags.
    repeats: usize,
    /// The typed locals, parameters and result of the routine being
    /// written: what an assignment to one of them converts to.
    typed: Vec<(String, TypeName)>,
    /// Inside a routine's body (where a tape is not translated yet).
    in_routine: bool,
    /// The name of the routine being written.
    routine_name: String,
    /// Inside a function's body, where `Result` is the function's (in a
    /// procedure it is a name like any other).
    in_function: bool,
    /// The program's own variables assigned by a statement written so
    /// far: a `var` declaration of one checks the value it holds.
    assigned_at_top: HashSet<String>,
    /// The variables the scope being written (the routine's, or the
    /// program's own) has surely assigned by a statement written so far:
    /// an assignment at its body's top level, not in a branch or a loop.
    /// One passed as a `var` argument comes back with a value.
    assigned_surely: HashSet<String>,
    /// The globals each routine reads, with the routines it calls, once
    /// worked out (`globals_read`).
    globals_read: HashMap<String, HashSet<String>>,
    /// The `var` parameters of the routine being written, in order: an
    /// assignment to one is reported to the runtime (`rt.var_assigned`),
    /// since it may be the last assignment of a tape that called it.
    var_params: Vec<String>,
    /// Set just before a call of a routine with `var` parameters is
    /// written whole (`y := F(x)`, `P(x);`), whose returned values go back
    /// to the caller's variables; any other such call is not translated.
    whole_var_call: bool,
    /// The names the routine being written owns (its parameters, locals,
    /// `Result` and what it assigns): Python's locals of its function.
    /// Any other name it reads is a global.
    own: Vec<String>,
    /// The variables a `var` declares in the scope being written (the
    /// routine's, or the program's own): one passed as a `var` argument
    /// with no value is known as declared.
    declared: Vec<String>,
    /// The globals some routine nudges: a top-level `for` loop counting
    /// with one notes it while it runs (`rt.counting`), as tapec refuses
    /// such a `Nudge` while the loop runs.
    nudged_globals: HashSet<String>,
    /// Inside a `tape` block's own statements: an assignment there is on
    /// the tape and may be its result.
    in_tape: bool,
    /// Whether the program calls `CheckBlame`, which replays its tapes:
    /// then each tape block is a function too. Numbers them.
    replays: bool,
    tapes: usize,
    /// Numbers the flags of the runs of a long `else if` chain.
    chains: usize,
    /// The statement being written, where a line too deep for Python is
    /// refused; and the first such refusal.
    at: Option<Span>,
    too_deep: Option<Box<Diagnostic>>,
}

/// The Python script of `program`, a program that passed the checks, read
/// from the file `file` (named in the script's comments and errors) in
/// `folder`, the folder as tapec was given it (`tests/errors`, `.`), from
/// which tapec's messages name a file the program names.
pub fn python(
    program: &Program,
    file: &str,
    folder: &str,
    files_from: &str,
    sources: &SourceMap,
) -> Out<String> {
    let mut routines = HashMap::new();
    collect_routines(&program.body, &mut routines);
    let mut e = Exporter {
        sources,
        file: file.to_string(),
        routines,
        out: String::new(),
        repeats: 0,
        typed: Vec::new(),
        in_routine: false,
        routine_name: String::new(),
        in_function: false,
        assigned_at_top: HashSet::new(),
        assigned_surely: HashSet::new(),
        globals_read: HashMap::new(),
        var_params: Vec::new(),
        whole_var_call: false,
        own: Vec::new(),
        declared: Vec::new(),
        nudged_globals: HashSet::new(),
        in_tape: false,
        replays: calls_check_blame(&program.body),
        tapes: 0,
        chains: 0,
        at: None,
        too_deep: None,
    };
    e.script(program, folder, files_from)?;
    match e.too_deep {
        Some(d) => Err(d),
        None => Ok(e.out),
    }
}

fn collect_routines(stmts: &[Stmt], into: &mut HashMap<String, Rc<Routine>>) {
    for stmt in stmts {
        match &stmt.kind {
            StmtKind::Routine(r) => {
                into.insert(r.name.text.to_string(), r.clone());
            }
            StmtKind::Block(body) => collect_routines(body, into),
            _ => {}
        }
    }
}

/// Every name the statements assign at this level (not inside routines),
/// `var` arguments of `routines` included.
/// Calls `f` on each statement of `stmts` and every statement inside them.
fn each_stmt<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for stmt in stmts {
        f(stmt);
        match &stmt.kind {
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                each_stmt(std::slice::from_ref(body), f)
            }
            StmtKind::Block(body) | StmtKind::Repeat { body, .. } | StmtKind::Tape { body, .. } => {
                each_stmt(body, f)
            }
            StmtKind::If {
                branches,
                otherwise,
            } => {
                for (_, s) in branches {
                    each_stmt(std::slice::from_ref(s), f);
                }
                if let Some(s) = otherwise {
                    each_stmt(std::slice::from_ref(s), f);
                }
            }
            _ => {}
        }
    }
}

fn assigned(stmts: &[Stmt], routines: &HashMap<String, Rc<Routine>>, into: &mut Vec<String>) {
    each_stmt(stmts, &mut |stmt| match &stmt.kind {
        StmtKind::Assign { target, .. } | StmtKind::AssignIndex { target, .. } => {
            push_new(into, &target.text);
        }
        StmtKind::For { var, .. } => push_new(into, &var.text),
        // A variable declared and never assigned is the scope's too.
        StmtKind::Var(decls) => {
            for d in decls {
                push_new(into, &d.name.text);
            }
        }
        StmtKind::Expr(Expr {
            kind: ExprKind::Call { name, args },
            ..
        }) => {
            // A routine's `var` arguments are assigned when it returns.
            if let Some(r) = routines.get(&*name.text) {
                for (p, arg) in r.params.iter().zip(args) {
                    if let (true, ExprKind::Name(n)) = (p.by_ref, &arg.value.kind) {
                        push_new(into, &n.text);
                    }
                }
            }
        }
        _ => {}
    });
}

/// The variables the `var` statements among `stmts` declare (not inside
/// routines).
fn declared_by_var(stmts: &[Stmt]) -> Vec<String> {
    let mut into = Vec::new();
    each_stmt(stmts, &mut |stmt| {
        if let StmtKind::Var(decls) = &stmt.kind {
            for d in decls {
                push_new(&mut into, &d.name.text);
            }
        }
    });
    into
}

/// A Python list of strings, `["a", "b"]`.
fn py_strs(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| py_str(n)).collect();
    format!("[{}]", quoted.join(", "))
}

/// The variables `stmts` nudge (`Nudge(w, rate)` as a statement).
fn nudged(stmts: &[Stmt], routines: &HashMap<String, Rc<Routine>>) -> Vec<String> {
    let mut into = Vec::new();
    each_stmt(stmts, &mut |stmt| {
        if let StmtKind::Expr(Expr {
            kind: ExprKind::Call { name, args },
            ..
        }) = &stmt.kind
            && !routines.contains_key(&*name.text)
            && matches!(
                declarations::find(&name.text).map(|b| b.does),
                Some(Does::Nudge)
            )
            && let Some(ExprKind::Name(n)) = args.first().map(|a| &a.value.kind)
        {
            push_new(&mut into, &n.text);
        }
    });
    into
}

fn push_new(into: &mut Vec<String>, name: &str) {
    if !into.iter().any(|n| n == name) {
        into.push(name.to_string());
    }
}

impl Exporter<'_> {
    fn line_of(&self, span: Span) -> usize {
        self.sources.line(span)
    }

    fn emit(&mut self, depth: usize, code: &str, span: Option<Span>) {
        if self.too_deep.is_none()
            && let Some(at) = self.at
        {
            self.too_deep = too_deep_for_python(at, depth, code);
        }
        let _ = write!(self.out, "{}{code}", "    ".repeat(depth));
        if let Some(span) = span {
            let _ = write!(self.out, "  # {}:{}", self.file, self.line_of(span));
        }
        self.out.push('\n');
    }

    /// The whole script; `folder` is the program's folder as tapec was
    /// given it, `files_from` the same folder from the script's, where the
    /// program's relative paths start (empty: the same).
    fn script(&mut self, program: &Program, folder: &str, files_from: &str) -> Out<()> {
        let name = program
            .name
            .as_ref()
            .map_or(String::new(), |n| format!(" (program {})", n.text));
        self.out.push_str(&format!(
            "#!/usr/bin/env python3\n\"\"\"{}{name}, exported by tapec: the same statements in \
             Python, each with its source line.\n\nIt needs `tape_runtime.py`, written beside \
             it.\n\"\"\"\n{HEADER}",
            self.file
        ));
        let declared = declared_by_var(&program.body);
        let mut routines: Vec<Rc<Routine>> = self.routines.values().cloned().collect();
        routines.sort_by_key(|r| r.header.start);
        for r in &routines {
            self.routine(r)?;
        }
        self.declared = declared.clone();
        let mut globals = Vec::new();
        assigned(&program.body, &self.routines, &mut globals);
        self.emit(0, "def _program():", None);
        if !globals.is_empty() {
            let names: Vec<String> = globals.iter().map(|g| py_name(g)).collect();
            self.emit(1, &format!("global {}", names.join(", ")), None);
        }
        let before = self.out.len();
        self.block(&program.body, 1)?;
        if self.out.len() == before {
            self.emit(1, "pass", None);
        }
        let files = if files_from.is_empty() {
            String::new()
        } else {
            format!(", files={}", py_str(files_from))
        };
        // The program's own file, which `Save` may not write over, and its
        // folder as a message names it.
        let mut files = format!(
            "{files}, program_file={}, folder={}",
            py_str(&self.file),
            py_str(folder)
        );
        if !declared.is_empty() {
            let _ = write!(files, ", declared={}", py_strs(&declared));
        }
        let _ = write!(
            self.out,
            "\n\nif __name__ == \"__main__\":\n    rt.run(_program{files})\n"
        );
        Ok(())
    }

    fn routine(&mut self, r: &Routine) -> Out<()> {
        let params: Vec<String> = r.params.iter().map(|p| py_name(&p.name.text)).collect();
        // The declared types, checked by the decorator at each call; a
        // `var` parameter's marked, as its argument is checked, not widened,
        // and against the type of the variable it names (`"var"` where it
        // has none of its own).
        let types: String = r
            .params
            .iter()
            .map(|p| match p.ty {
                Some((ty, _)) if p.by_ref => format!("{}, ", py_str(&format!("var {}", ty.name()))),
                Some((ty, _)) => format!("{}, ", py_str(ty.name())),
                None if p.by_ref => format!("{}, ", py_str("var")),
                None => "None, ".to_string(),
            })
            .collect();
        // A function names its header, where an unset `Result` is said.
        let mut function = if r.is_function {
            let header = format!("{}:{}", self.file, self.line_of(r.header));
            format!(", function={}", py_str(&header))
        } else {
            String::new()
        };
        let mut declared: Vec<String> = r.locals.iter().map(|d| d.name.text.to_string()).collect();
        for name in declared_by_var(&r.body) {
            push_new(&mut declared, &name);
        }
        if !declared.is_empty() {
            let _ = write!(function, ", declared={}", py_strs(&declared));
        }
        let names: String = r
            .params
            .iter()
            .map(|p| format!("{}, ", py_str(&p.name.text)))
            .collect();
        self.emit(
            0,
            &format!(
                "@rt.routine({}, ({names}), ({types}){function})",
                py_str(&r.name.text),
            ),
            None,
        );
        self.emit(
            0,
            &format!("def {}({}):", py_name(&r.name.text), params.join(", ")),
            Some(r.header),
        );
        let typed: Vec<(String, TypeName)> = r
            .locals
            .iter()
            .filter_map(|d| d.ty.map(|(t, _)| (d.name.text.to_string(), t)))
            .chain(
                r.params
                    .iter()
                    .filter_map(|p| p.ty.map(|(t, _)| (p.name.text.to_string(), t))),
            )
            .chain(r.result.map(|(t, _)| ("Result".to_string(), t)))
            .collect();
        if r.is_function {
            self.emit(1, "Result = None", None);
        }
        self.typed = typed;
        self.var_params = r
            .params
            .iter()
            .filter(|p| p.by_ref)
            .map(|p| p.name.text.to_string())
            .collect();
        self.own = r.params.iter().map(|p| p.name.text.to_string()).collect();
        self.own
            .extend(r.locals.iter().map(|d| d.name.text.to_string()));
        self.own.push("Result".to_string());
        assigned(&r.body, &self.routines, &mut self.own);
        // A global the routine nudges is the global's name in Python too.
        let shared: Vec<String> = nudged(&r.body, &self.routines)
            .into_iter()
            .filter(|n| !self.own.contains(n))
            .collect();
        self.nudged_globals.extend(shared.iter().cloned());
        let globals: Vec<String> = shared.iter().map(|n| py_name(n)).collect();
        if !globals.is_empty() {
            self.emit(1, &format!("global {}", globals.join(", ")), None);
        }
        // A declared local is the routine's own even where it assigns it
        // nowhere: annotated, it is a local of the Python function too, so
        // that reading it before a value is tapec's error and never the
        // value of a global of the same name.
        for name in &declared {
            if !r.params.iter().any(|p| *p.name.text == **name) {
                self.emit(
                    1,
                    &format!("{}: {}", py_name(name), py_str("declared")),
                    None,
                );
            }
        }
        self.in_routine = true;
        self.routine_name = r.name.text.to_string();
        self.in_function = r.is_function;
        self.declared = declared;
        // A parameter given by value has its value from the start.
        let by_value = r.params.iter().filter(|p| !p.by_ref);
        let program_assigned = std::mem::replace(
            &mut self.assigned_surely,
            by_value.map(|p| p.name.text.to_string()).collect(),
        );
        self.block(&r.body, 1)?;
        self.assigned_surely = program_assigned;
        self.in_routine = false;
        self.in_function = false;
        self.declared.clear();
        self.typed.clear();
        self.var_params.clear();
        self.own.clear();
        let mut back: Vec<String> = Vec::new();
        if r.is_function {
            back.push("Result".to_string());
        }
        back.extend(
            r.params
                .iter()
                .filter(|p| p.by_ref)
                .map(|p| py_name(&p.name.text)),
        );
        match back.len() {
            0 => self.emit(1, "return None", None),
            _ => self.emit(1, &format!("return {}", back.join(", ")), None),
        }
        self.out.push_str("\n\n");
        Ok(())
    }

    fn block(&mut self, stmts: &[Stmt], depth: usize) -> Out<()> {
        for stmt in stmts {
            self.stmt(stmt, depth)?;
        }
        Ok(())
    }

    /// The statement as the body of a compound statement: `pass` if it
    /// would write nothing.
    fn body(&mut self, stmt: &Stmt, depth: usize) -> Out<()> {
        let before = self.out.len();
        self.stmt(stmt, depth)?;
        if self.out.len() == before {
            self.emit(depth, "pass", None);
        }
        Ok(())
    }

    /// The condition of `what` (`if`, `while`, `until`), which must be a
    /// Boolean.
    fn condition(&mut self, cond: &Expr, what: &str) -> Out<String> {
        Ok(format!("rt.condition({}, \"{what}\")", self.expr(cond)?))
    }

    fn stmt(&mut self, stmt: &Stmt, depth: usize) -> Out<()> {
        let outer = self.at.replace(stmt.span);
        let done = self.stmt_here(stmt, depth);
        self.at = outer;
        done
    }

    fn stmt_here(&mut self, stmt: &Stmt, depth: usize) -> Out<()> {
        let span = Some(stmt.span);
        match &stmt.kind {
            StmtKind::Empty | StmtKind::Routine(_) => {}
            // A routine's declared locals are its `typed`; the program's
            // own are added here, for the assignments that follow.
            StmtKind::Var(decls) => {
                if !self.in_routine {
                    for d in decls {
                        if let Some((ty, _)) = d.ty {
                            self.typed.push((d.name.text.to_string(), ty));
                            // Declared after an assignment: the value
                            // already there must be of the type too.
                            if self.assigned_at_top.contains(&*d.name.text) {
                                let v = py_name(&d.name.text);
                                let code = format!(
                                    "if {name} in globals(): {v} = rt.declare({v}, {ty}, {shown})",
                                    name = py_str(&v),
                                    ty = py_str(ty.name()),
                                    shown = py_str(&d.name.text)
                                );
                                self.emit(depth, &code, span);
                            }
                        }
                    }
                }
            }
            StmtKind::Error => return Err(not_yet(stmt.span, "a statement that did not parse")),
            StmtKind::Assign { target, value } => {
                if !self.in_routine {
                    self.assigned_at_top.insert(target.text.to_string());
                }
                let value = match self.call_with_var_params(value)? {
                    // The function's result first, then its `var`
                    // parameters' values back to the caller's variables;
                    // the target is assigned last, as in tapec.
                    Some((call, back)) => {
                        let mut names = vec!["_result".to_string()];
                        names.extend(back);
                        self.emit(depth, &format!("{} = {call}", names.join(", ")), span);
                        self.left_unassigned(value, depth, span);
                        "_result".to_string()
                    }
                    None => self.expr(value)?,
                };
                let value = match self.typed.iter().find(|(n, _)| **n == *target.text) {
                    Some((_, ty)) => format!(
                        "rt.typed({value}, {}, {})",
                        py_str(ty.name()),
                        py_str(&target.text)
                    ),
                    None => value,
                };
                let value = if self.in_tape {
                    format!("rt.on_tape({value}, {})", py_str(&target.text))
                } else {
                    value
                };
                let value = match self.var_params.iter().position(|p| **p == *target.text) {
                    Some(k) => format!("rt.var_assigned({value}, {k}, {})", py_str(&target.text)),
                    None => value,
                };
                self.emit(depth, &format!("{} = {value}", py_name(&target.text)), span);
                if depth == 1 {
                    self.assigned_surely.insert(target.text.to_string());
                }
            }
            StmtKind::AssignIndex {
                target,
                row,
                col,
                value,
            } => {
                let m = py_name(&target.text);
                let by_var = self.var_params.iter().position(|p| **p == *target.text);
                // In place through a `var` parameter, the caller's variable
                // changes at once, as in tapec; but `CheckBlame`'s replay
                // reads the variables' values as they are then, not as the
                // tape recorded them, so a program that calls it copies.
                let in_place = by_var.filter(|_| !self.replays);
                let set = format!(
                    "rt.set_element({m}, {}, {}, {}, {}{})",
                    self.expr(row)?,
                    self.expr(col)?,
                    self.expr(value)?,
                    py_str(&target.text),
                    in_place.map_or(String::new(), |k| format!(", through_var={k}"))
                );
                // Through a `var` parameter, the matrix is the variable's
                // at once, wherever it lives.
                let set = match by_var {
                    Some(k) => format!("rt.var_assigned({set}, {k}, {})", py_str(&target.text)),
                    None => set,
                };
                self.emit(depth, &format!("{m} = {set}"), span);
            }
            StmtKind::Expr(e) => {
                let code = self.procedure_call(e)?;
                self.emit(depth, &code, span);
                self.left_unassigned(e, depth, span);
            }
            StmtKind::Block(body) => self.block(body, depth)?,
            StmtKind::If {
                branches,
                otherwise,
            } => {
                // A long chain is written as runs of `ELIF_RUN` branches,
                // each at the same indentation; a run after the first is
                // passed over (`if not _restN: pass`) unless the run before
                // it fell through to its `else`, which sets its flag.
                let runs: Vec<_> = branches.chunks(ELIF_RUN).collect();
                let mut before: Option<String> = None;
                for (r, run) in runs.iter().enumerate() {
                    let rest = (r + 1 < runs.len()).then(|| {
                        self.chains += 1;
                        format!("_rest{}", self.chains)
                    });
                    if let Some(rest) = &rest {
                        self.emit(depth, &format!("{rest} = False"), None);
                    }
                    let mut word = "if";
                    if let Some(before) = &before {
                        self.emit(depth, &format!("if not {before}:"), None);
                        self.emit(depth + 1, "pass", None);
                        word = "elif";
                    }
                    for (cond, then) in run.iter() {
                        let c = self.condition(cond, "if")?;
                        self.emit(depth, &format!("{word} {c}:"), Some(cond.span));
                        self.body(then, depth + 1)?;
                        word = "elif";
                    }
                    match (&rest, otherwise) {
                        (Some(rest), _) => {
                            self.emit(depth, "else:", None);
                            self.emit(depth + 1, &format!("{rest} = True"), None);
                        }
                        (None, Some(o)) => {
                            self.emit(depth, "else:", None);
                            self.body(o, depth + 1)?;
                        }
                        (None, None) => {}
                    }
                    before = rest;
                }
            }
            StmtKind::For {
                var,
                from,
                to,
                down,
                body,
            } => {
                let (a, b) = (self.expr(from)?, self.expr(to)?);
                let (a, b) = (format!("rt.bound({a})"), format!("rt.bound({b})"));
                let mut range = if *down {
                    format!("range({a}, {b} - 1, -1)")
                } else {
                    format!("range({a}, {b} + 1)")
                };
                if !self.in_routine && self.nudged_globals.contains(&*var.text) {
                    range = format!("rt.counting({}, {range})", py_str(&var.text));
                }
                self.emit(
                    depth,
                    &format!("for {} in {range}:", py_name(&var.text)),
                    span,
                );
                self.body(body, depth + 1)?;
            }
            StmtKind::While { cond, body } => {
                let c = self.condition(cond, "while")?;
                self.emit(depth, &format!("while {c}:"), span);
                self.body(body, depth + 1)?;
            }
            StmtKind::Repeat { body, cond } => {
                self.repeats += 1;
                let first = format!("_first{}", self.repeats);
                let c = self.condition(cond, "until")?;
                self.emit(depth, &format!("{first} = True"), span);
                self.emit(
                    depth,
                    &format!("while {first} or not {c}:"),
                    Some(cond.span),
                );
                self.emit(depth + 1, &format!("{first} = False"), None);
                self.block(body, depth + 1)?;
            }
            StmtKind::Tape { body, end } => {
                if self.in_routine && self.replays {
                    return Err(not_yet(
                        stmt.span,
                        "a `tape` block inside a routine in a program that calls `CheckBlame`",
                    ));
                }
                let open = if self.replays {
                    "rt.tape_open(replays=True)"
                } else {
                    "rt.tape_open()"
                };
                self.emit(depth, open, span);
                let mut leaves = Vec::new();
                let mut set = Vec::new();
                let mut reach = Reach::new(&self.routines);
                first_reads(body, &mut reach, &mut set, &mut leaves);
                let var_first = reach.var_first;
                // Inside a routine, a leaf it does not own is a global: it
                // is made a leaf where it lives, so that the routine's reads
                // and a later `Blame` of it find the leaf.
                let (globals, leaves): (Vec<String>, Vec<String>) = if self.in_routine {
                    leaves.into_iter().partition(|n| !self.own.contains(n))
                } else {
                    (Vec::new(), leaves)
                };
                if !globals.is_empty() {
                    let names: Vec<String> = globals.iter().map(|n| py_str(&py_name(n))).collect();
                    let quoted: Vec<String> = globals.iter().map(|n| py_str(n)).collect();
                    self.emit(
                        depth,
                        &format!(
                            "rt.global_leaves(globals(), [{}], [{}])",
                            names.join(", "),
                            quoted.join(", ")
                        ),
                        span,
                    );
                }
                if !leaves.is_empty() {
                    let names: Vec<String> = leaves.iter().map(|n| py_name(n)).collect();
                    let quoted: Vec<String> = leaves.iter().map(|n| py_str(n)).collect();
                    // A variable first named as a `var` argument may have
                    // no value yet (the routine may assign it): it goes in
                    // as `rt.unset(name)`, which stays what it is.
                    let scope = if self.in_routine {
                        "locals()"
                    } else {
                        "globals()"
                    };
                    let values: Vec<String> = leaves
                        .iter()
                        .zip(&names)
                        .map(|(n, py)| {
                            if var_first.contains(n) && !(self.in_function && n == "Result") {
                                format!("{scope}.get({}, {})", py_str(py), self.unset(n))
                            } else {
                                py.clone()
                            }
                        })
                        .collect();
                    // One name is unpacked from a list of one: `w, = ...`.
                    let targets = match names.as_slice() {
                        [one] => format!("{one},"),
                        _ => names.join(", "),
                    };
                    self.emit(
                        depth,
                        &format!(
                            "{targets} = rt.leaves([{}], [{}])",
                            values.join(", "),
                            quoted.join(", ")
                        ),
                        span,
                    );
                }
                if !self.replays {
                    self.in_tape = true;
                    let done = self.block(body, depth);
                    self.in_tape = false;
                    done?;
                    self.emit(depth, "rt.tape_close()", Some(*end));
                    return Ok(());
                }
                // `CheckBlame` replays the block: it is a function.
                if leaves_loop(body) {
                    return Err(not_yet(
                        stmt.span,
                        "`break` or `continue` from inside a tape that `CheckBlame` replays",
                    ));
                }
                self.tapes += 1;
                let function = format!("_tape{}", self.tapes);
                self.emit(depth, &format!("def {function}():"), None);
                let mut names = Vec::new();
                assigned(body, &self.routines, &mut names);
                if !names.is_empty() {
                    let names: Vec<String> = names.iter().map(|n| py_name(n)).collect();
                    self.emit(depth + 1, &format!("global {}", names.join(", ")), None);
                }
                self.in_tape = true;
                let before = self.out.len();
                let done = self.block(body, depth + 1);
                self.in_tape = false;
                done?;
                if self.out.len() == before {
                    self.emit(depth + 1, "pass", None);
                }
                self.emit(depth, &format!("rt.tape_run({function}, globals())"), None);
                self.emit(
                    depth,
                    &format!("rt.tape_close({function}, globals())"),
                    Some(*end),
                );
            }
            StmtKind::Break => self.emit(depth, "break", span),
            StmtKind::Continue => self.emit(depth, "continue", span),
        }
        Ok(())
    }

    /// A call of a user routine with `var` parameters: the call and the
    /// caller's variables its returned values go back to.
    fn call_with_var_params(&mut self, e: &Expr) -> Out<Option<(String, Vec<String>)>> {
        let ExprKind::Call { name, args } = &e.kind else {
            return Ok(None);
        };
        let Some(r) = self.routines.get(&*name.text).cloned() else {
            return Ok(None);
        };
        if !r.params.iter().any(|p| p.by_ref) {
            return Ok(None);
        }
        let mut back = Vec::new();
        let mut names = Vec::new();
        let mut mine = Vec::new();
        for (p, a) in r.params.iter().zip(args) {
            if p.by_ref
                && let ExprKind::Name(n) = &a.value.kind
            {
                back.push(py_name(&n.text));
                names.push(py_str(&n.text));
                mine.push(
                    self.var_params
                        .iter()
                        .position(|v| **v == *n.text)
                        .map_or("None".to_string(), |k| k.to_string()),
                );
            }
        }
        self.whole_var_call = true;
        let call = self.expr(e)?;
        // What the routine assigned last through a `var` parameter is
        // assigned last here too: on a tape it is the tape's result so far
        // (kept for `Blame`); inside a routine, an assignment through the
        // routine's own `var` parameter that it passed on.
        let offset = usize::from(r.is_function);
        let call = if self.in_tape {
            format!(
                "rt.came_back({call}, {offset}, names=[{}])",
                names.join(", ")
            )
        } else if mine.iter().any(|k| k != "None") {
            format!("rt.came_back({call}, {offset}, mine=[{}])", mine.join(", "))
        } else {
            call
        };
        Ok(Some((call, back)))
    }

    fn procedure_call(&mut self, e: &Expr) -> Out<String> {
        if let Some((call, back)) = self.call_with_var_params(e)? {
            let is_function = matches!(&e.kind, ExprKind::Call { name, .. }
                if self.routines.get(&*name.text).is_some_and(|r| r.is_function));
            let mut names = back;
            if is_function {
                names.insert(0, "_".to_string());
            }
            return Ok(format!("{} = {call}", names.join(", ")));
        }
        if let ExprKind::Call { name, args } = &e.kind
            && matches!(
                declarations::find(&name.text).map(|b| b.does),
                Some(Does::Nudge)
            )
            && !self.routines.contains_key(&*name.text)
            && let [target, rate] = args.as_slice()
            && let ExprKind::Name(n) = &target.value.kind
        {
            let rate = self.expr(&rate.value)?;
            let v = py_name(&n.text);
            // A `var` parameter is the variable it names: its declared
            // type is that variable's, and a global takes the new value at
            // once (`rt.var_nudged`).
            let through = self.var_params.iter().position(|p| **p == *n.text);
            let declared = match through {
                Some(k) => format!("rt.var_declared({k})"),
                None => self
                    .typed
                    .iter()
                    .find(|(t, _)| **t == *n.text)
                    .map_or("None".to_string(), |(_, ty)| py_str(ty.name())),
            };
            let mut declared = if declared == "None" {
                String::new()
            } else {
                format!(", {declared}")
            };
            if self.in_routine && !self.own.iter().any(|o| *o == *n.text) {
                declared.push_str(", shared=True");
            }
            // The parameter's own annotation, after the variable's type.
            if through.is_some()
                && self
                    .typed
                    .iter()
                    .any(|(t, ty)| **t == *n.text && *ty == TypeName::Integer)
            {
                declared.push_str(", integer_parameter=True");
            }
            declared.push_str(self.local_flag(&n.text));
            let nudge = format!("rt.nudge({v}, {}, {rate}{declared})", py_str(&n.text));
            return Ok(match through {
                Some(k) => format!("{v} = rt.var_nudged({nudge}, {k})"),
                None => format!("{v} = {nudge}"),
            });
        }
        match &e.kind {
            ExprKind::Call { name, args }
                if matches!(&*name.text, "Write" | "WriteLn")
                    && declarations::find(&name.text).is_some() =>
            {
                let mut parts = Vec::new();
                for arg in args {
                    parts.push(self.write_arg(arg)?);
                }
                let function = if &*name.text == "WriteLn" {
                    "writeln"
                } else {
                    "write"
                };
                Ok(format!("rt.{function}({})", parts.join(", ")))
            }
            // `WriteLn;` ends the line; `Write;` writes nothing, as in tapec.
            ExprKind::Name(name)
                if matches!(&*name.text, "Write" | "WriteLn")
                    && !self.routines.contains_key(&*name.text) =>
            {
                Ok(if &*name.text == "WriteLn" {
                    "rt.writeln()"
                } else {
                    "rt.write()"
                }
                .to_string())
            }
            _ => self.expr(e),
        }
    }

    fn write_arg(&mut self, arg: &Arg) -> Out<String> {
        let v = self.expr(&arg.value)?;
        Ok(match (&arg.width, &arg.decimals) {
            (None, _) => v,
            (Some(w), None) => format!("rt.field({v}, {})", self.expr(w)?),
            (Some(w), Some(d)) => format!("rt.field({v}, {}, {})", self.expr(w)?, self.expr(d)?),
        })
    }

    fn expr(&mut self, e: &Expr) -> Out<String> {
        Ok(match &e.kind {
            ExprKind::Integer(n) => n.to_string(),
            ExprKind::Real(x) => format!("{x:?}"),
            ExprKind::Str(s) => py_str(s),
            ExprKind::Bool(b) => if *b { "True" } else { "False" }.to_string(),
            ExprKind::Name(name) => self.name(name, e.span)?,
            ExprKind::Matrix(rows) => {
                let mut out = Vec::new();
                for (row, _) in rows {
                    let mut xs = Vec::new();
                    for x in row {
                        xs.push(self.expr(x)?);
                    }
                    out.push(format!("[{}]", xs.join(", ")));
                }
                format!("rt.matrix([{}])", out.join(", "))
            }
            ExprKind::Index { target, row, col } => format!(
                "rt.element({}, {}, {})",
                self.expr(target)?,
                self.expr(row)?,
                self.expr(col)?
            ),
            ExprKind::Call { name, args } => self.call(name, args, e.span)?,
            ExprKind::Unary { op, operand, .. } => {
                let x = self.expr(operand)?;
                match op {
                    UnaryOp::Neg => format!("rt.neg({x})"),
                    UnaryOp::Not => format!("rt.not_({x})"),
                }
            }
            ExprKind::Chain { first, rest } if rest.len() > LONGEST_NESTED => {
                // One call, not a call per operator: Python reads at most
                // 200 nested brackets. Each operand is a function the
                // runtime calls just before its operator applies, so the
                // order (and what `and`/`or` skip) is the nested calls'.
                let mut parts = vec![self.expr(first)?];
                for (op, _, rhs) in rest {
                    let op = match op {
                        BinaryOp::And => "\"and\"".to_string(),
                        BinaryOp::Or => "\"or\"".to_string(),
                        _ => format!("rt.{}", binary(*op)),
                    };
                    parts.push(op);
                    parts.push(format!("lambda: {}", self.expr(rhs)?));
                }
                format!("rt.chain({})", parts.join(", "))
            }
            ExprKind::Chain { first, rest } => {
                let mut acc = self.expr(first)?;
                for (op, _, rhs) in rest {
                    let r = self.expr(rhs)?;
                    acc = match op {
                        // The right side is asked for only when the left
                        // does not decide.
                        BinaryOp::And => format!("rt.and_({acc}, lambda: {r})"),
                        BinaryOp::Or => format!("rt.or_({acc}, lambda: {r})"),
                        _ => format!("rt.{}({acc}, {r})", binary(*op)),
                    };
                }
                acc
            }
            ExprKind::Error => return Err(not_yet(e.span, "an expression that did not parse")),
        })
    }

    fn name(&mut self, name: &Name, span: Span) -> Out<String> {
        if self.routines.contains_key(&*name.text) {
            return Ok(format!("{}()", py_name(&name.text)));
        }
        // A `var` parameter, or a function's `Result`, may have no value
        // when it is read: the runtime says so.
        if self.in_routine
            && (&*name.text == "Result" || self.var_params.iter().any(|p| *p == *name.text))
        {
            return Ok(format!(
                "rt.got({}, {})",
                py_name(&name.text),
                py_str(&name.text)
            ));
        }
        if self.is_variable(name) {
            return Ok(py_name(&name.text));
        }
        match &*name.text {
            "Inf" => Ok("rt.INF".to_string()),
            "ParamCount" => Ok("rt.param_count()".to_string()),
            _ if declarations::find(&name.text).is_some() => self.call(name, &[], span),
            _ => Ok(py_name(&name.text)),
        }
    }

    /// What a `var` argument `name` with no value goes in as: the runtime's
    /// mark of the caller's variable, declared or not (a function's
    /// `Result` is).
    fn unset(&self, name: &str) -> String {
        let declared =
            self.declared.iter().any(|d| d == name) || (self.in_function && name == "Result");
        let declared = if declared { ", True" } else { "" };
        format!("rt.unset({}{declared})", py_str(name))
    }

    /// After a call of a routine with `var` parameters: each variable it
    /// was given that may have had no value and that the routine may have
    /// left unassigned has none again, so that reading it is the error
    /// tapec gives (`rt.run` reports Python's `NameError` as that), and a
    /// function's `Result` is None again, so that ending without setting
    /// it is. The running routine's own `var` parameters need nothing:
    /// every read of one is checked (`rt.got`).
    fn left_unassigned(&mut self, e: &Expr, depth: usize, span: Option<Span>) {
        let ExprKind::Call { name, args } = &e.kind else {
            return;
        };
        let Some(r) = self.routines.get(&*name.text).cloned() else {
            return;
        };
        let mut done: Vec<&str> = Vec::new();
        for (p, a) in r.params.iter().zip(args) {
            let (true, ExprKind::Name(n)) = (p.by_ref, &a.value.kind) else {
                continue;
            };
            let text = &*n.text;
            if done.contains(&text)
                || self.assigned_surely.contains(text)
                || (self.in_routine && self.var_params.iter().any(|v| v == text))
            {
                continue;
            }
            done.push(text);
            let v = py_name(text);
            let code = if self.in_function && text == "Result" {
                format!("if rt.is_unset({v}): {v} = None")
            } else {
                format!("if rt.is_unset({v}): del {v}")
            };
            self.emit(depth, &code, span);
        }
    }

    /// What the `var` argument `arg` of a call of `routine` names at
    /// last, for the runtime (`rt.routine`): the running routine's own
    /// `var` parameter passes on what it names (`rt.via`); another
    /// variable gives its declared type (or None) and its name, and a
    /// global that the routine, or one it calls, reads gives its name in
    /// the script too, so that an assignment through the parameter
    /// assigns it at once; else `None`.
    fn var_place(&mut self, routine: &str, arg: &Expr) -> String {
        let ExprKind::Name(n) = &arg.kind else {
            return "None".to_string();
        };
        if self.in_routine
            && let Some(k) = self.var_params.iter().position(|p| **p == *n.text)
        {
            // Its annotation goes along: an assignment through the
            // parameter it is passed to must fit it too.
            return match self.typed.iter().find(|(t, _)| **t == *n.text) {
                Some((_, ty)) => format!(
                    "rt.via({k}, ({}, {}, {}))",
                    py_str(ty.name()),
                    py_str(&n.text),
                    py_str(&self.routine_name)
                ),
                None => format!("rt.via({k})"),
            };
        }
        let kind = self
            .typed
            .iter()
            .find(|(t, _)| **t == *n.text)
            .map_or("None".to_string(), |(_, ty)| py_str(ty.name()));
        let read_there = !self.in_routine && self.globals_read(routine).contains(&*n.text);
        match (kind.as_str(), read_there) {
            ("None", false) => "None".to_string(),
            (_, false) => format!("({kind}, {})", py_str(&n.text)),
            (_, true) => format!(
                "({kind}, {}, {})",
                py_str(&n.text),
                py_str(&py_name(&n.text))
            ),
        }
    }

    /// The globals `routine` reads, and the routines it calls, worked out
    /// once.
    fn globals_read(&mut self, routine: &str) -> &HashSet<String> {
        if !self.globals_read.contains_key(routine) {
            let mut read = Vec::new();
            Reach::new(&self.routines).globals_read(routine, &mut read);
            self.globals_read
                .insert(routine.to_string(), read.into_iter().collect());
        }
        &self.globals_read[routine]
    }

    /// `, local=True` where `name` is the running routine's own variable
    /// (not a `var` parameter), which `Blame`, `Nudge` and `CheckBlame`
    /// do not look for on a tape that ran at another depth of calls.
    fn local_flag(&self, name: &str) -> &'static str {
        let own = self.own.iter().any(|o| o == name);
        if self.in_routine && own && !self.var_params.iter().any(|p| p == name) {
            ", local=True"
        } else {
            ""
        }
    }

    /// Whether `name` is a variable where it stands: a builtin's name
    /// that the program assigns is its variable (the checks allow it).
    fn is_variable(&self, name: &Name) -> bool {
        declarations::find(&name.text).is_none() && &*name.text != "Inf"
    }

    fn call(&mut self, name: &Name, args: &[Arg], span: Span) -> Out<String> {
        let whole = std::mem::take(&mut self.whole_var_call);
        let mut values = Vec::new();
        for arg in args {
            values.push(self.expr(&arg.value)?);
        }
        if let Some(r) = self.routines.get(&*name.text).cloned() {
            if !whole && r.params.iter().any(|p| p.by_ref) {
                return Err(Box::new(
                    (*not_yet(
                        span,
                        "a call of a function with a `var` parameter inside a larger expression",
                    ))
                    .with_hint(format!(
                        "assign its value to a variable first: `v := {}(...);`",
                        name.text
                    )),
                ));
            }
            // A `var` argument may be a variable not assigned yet, which
            // the routine assigns: it goes in as `rt.unset(name)`.
            let scope = if self.in_routine {
                "locals()"
            } else {
                "globals()"
            };
            for ((p, arg), value) in r.params.iter().zip(args).zip(values.iter_mut()) {
                if let (true, ExprKind::Name(n)) = (p.by_ref, &arg.value.kind) {
                    *value = if &*n.text == "Result" && self.in_function {
                        // A function's `Result` starts as None.
                        format!("({} if Result is None else Result)", self.unset("Result"))
                    } else {
                        format!(
                            "{scope}.get({}, {})",
                            py_str(&py_name(&n.text)),
                            self.unset(&n.text)
                        )
                    };
                }
            }
            // What each `var` argument names, where it is declared a type
            // or is a global the routine reads: an assignment through the
            // parameter must fit that type, and sets that global at once.
            let places: Vec<String> = r
                .params
                .iter()
                .zip(args)
                .filter(|(p, _)| p.by_ref)
                .map(|(_, arg)| self.var_place(&name.text, &arg.value))
                .collect();
            if places.iter().any(|p| p != "None") {
                values.push(format!("places=({},)", places.join(", ")));
            }
            return Ok(format!("{}({})", py_name(&name.text), values.join(", ")));
        }
        let Some(builtin) = declarations::find(&name.text) else {
            return Err(not_yet(span, &format!("a call of `{}`", name.text)));
        };
        if matches!(builtin.does, Does::Blame | Does::CheckBlame)
            && let [arg] = args
            && let ExprKind::Name(n) = &arg.value.kind
        {
            let function = if builtin.does == Does::Blame {
                "blame"
            } else {
                "check_blame"
            };
            // The replay sets a variable by its name in the script.
            let py = py_name(&n.text);
            let renamed = if builtin.does == Does::CheckBlame && py != *n.text {
                format!(", py={}", py_str(&py))
            } else {
                String::new()
            };
            return Ok(format!(
                "rt.{function}({py}, {}{}{renamed})",
                py_str(&n.text),
                self.local_flag(&n.text)
            ));
        }
        if builtin.does == Does::Plot {
            return self.plot(args);
        }
        let function = match builtin.does {
            Does::Round(true) => "round_",
            Does::Round(false) => "trunc",
            Does::Min(true) => "min_",
            Does::Min(false) => "max_",
            Does::Length => "length",
            Does::Seed => "seed",
            Does::RandInt => "rand_int",
            Does::ParamCount => "param_count",
            Does::ParamStr => "param_str",
            Does::StrToInt => "str_to_int",
            Does::StrToFloat => "str_to_float",
            Does::Unary(Unary::Abs) => "abs_",
            Does::Unary(Unary::Sqrt) => "sqrt",
            Does::Unary(Unary::Exp) => "exp",
            Does::Unary(Unary::Log) => "log_",
            Does::Unary(Unary::Sqr) => "sqr",
            Does::Unary(Unary::Tanh) => "tanh",
            Does::Unary(Unary::Sigmoid) => "sigmoid",
            Does::Unary(Unary::ReLU) => "relu",
            Does::Matrix(MatrixOp::Transpose) => "transpose",
            Does::Matrix(MatrixOp::Sum) => "sum_",
            Does::Matrix(MatrixOp::Mean) => "mean",
            Does::Matrix(MatrixOp::RowSum) => "row_sum",
            Does::Matrix(MatrixOp::RowMean) => "row_mean",
            Does::Matrix(MatrixOp::ColSum) => "col_sum",
            Does::Matrix(MatrixOp::RowSoftmax) => "row_softmax",
            Does::Hadamard => "hadamard",
            Does::RowOrCol(true) => "row",
            Does::RowOrCol(false) => "col",
            Does::Rows => "rows",
            Does::Cols => "cols",
            Does::Filled(Filling::Zeros) => "zeros",
            Does::Filled(Filling::Ones) => "ones",
            Does::Filled(Filling::Random) => "random",
            Does::Filled(Filling::Randn) => "randn",
            Does::Fill => "fill",
            Does::Eye => "eye",
            Does::CausalMask => "causal_mask",
            Does::Show => "show_",
            Does::Power => "power",
            Does::Matrix(MatrixOp::LayerNorm) => "layer_norm",
            Does::Matrix(MatrixOp::HStack) => "hstack",
            Does::Matrix(MatrixOp::VStack) => "vstack",
            Does::Embed => "embed",
            Does::CrossEntropy => "cross_entropy",
            Does::Range(true) => "row_range",
            Does::Range(false) => "col_range",
            Does::Sample => "sample",
            Does::Argmax => "argmax",
            Does::Vocab => "vocab",
            Does::Encode => "encode",
            Does::Decode => "decode",
            Does::ReadText => "read_text",
            Does::Save => "save",
            Does::Load => "load",
            Does::Progress => "progress",
            _ => return Err(not_yet(span, &format!("`{}`", builtin.name))),
        };
        Ok(format!("rt.{function}({})", values.join(", ")))
    }

    /// `Plot(m[, path[, title]])`: the runtime's keywords, as the path and
    /// title may be left out.
    fn plot(&mut self, args: &[Arg]) -> Out<String> {
        let mut values = Vec::new();
        for (arg, key) in args.iter().zip(["", "path=", "title="]) {
            values.push(format!("{key}{}", self.expr(&arg.value)?));
        }
        Ok(format!("rt.plot({})", values.join(", ")))
    }
}

/// The refusal of a line of the script that Python cannot read, written
/// at `depth` for the statement at `at`: indented deeper than
/// `PYTHON_INDENTS`, or nesting more than `PYTHON_BRACKETS` brackets, or
/// that many with more than `PYTHON_LAMBDAS` lambdas.
fn too_deep_for_python(at: Span, depth: usize, code: &str) -> Option<Box<Diagnostic>> {
    let refusal = |message: String, label: &str, hint: &str| {
        Some(Box::new(
            Diagnostic::new(at, message)
                .with_label(at, label)
                .with_hint(hint),
        ))
    };
    if depth > PYTHON_INDENTS {
        return refusal(
            format!(
                "`tapec export` cannot translate this statement: Python reads at most \
                 {PYTHON_INDENTS} levels of indentation, and it would be indented {depth} deep"
            ),
            "nested too deep for Python",
            "nest fewer statements inside one another, for instance by moving the inner \
             ones into a procedure",
        );
    }
    let (brackets, lambdas) = nesting(code);
    if brackets > PYTHON_BRACKETS {
        return refusal(
            format!(
                "`tapec export` cannot translate this statement: Python reads at most \
                 {PYTHON_BRACKETS} brackets nested in each other, and its translation nests \
                 {brackets} (each call and operator is a call of the runtime)"
            ),
            "nested too deep for Python",
            "compute the inner part into a variable first",
        );
    }
    if brackets == PYTHON_BRACKETS && lambdas > PYTHON_LAMBDAS {
        return refusal(
            format!(
                "`tapec export` cannot translate this statement: its translation nests \
                 {brackets} brackets, and {lambdas} chains of more than {LONGEST_NESTED} \
                 operators in each other, where Python reads at most {PYTHON_LAMBDAS} such \
                 chains"
            ),
            "nested too deep for Python",
            "compute the inner part into a variable first",
        );
    }
    None
}

/// How deep brackets nest in a line of the script (not counting those in
/// its strings), and how deep its `lambda`s do: a lambda's body ends at a
/// comma or a closing bracket of the level the lambda stands at.
fn nesting(code: &str) -> (usize, usize) {
    let bytes = code.as_bytes();
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut lambdas: Vec<usize> = Vec::new();
    let mut most_lambdas = 0;
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            _ if in_string => {}
            b'(' | b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b']' | b'}' => {
                while lambdas.last().is_some_and(|&d| d >= depth) {
                    lambdas.pop();
                }
                depth = depth.saturating_sub(1);
            }
            b',' => {
                while lambdas.last() == Some(&depth) {
                    lambdas.pop();
                }
            }
            b'l' if code[i..].starts_with("lambda:")
                && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')) =>
            {
                lambdas.push(depth);
                most_lambdas = most_lambdas.max(lambdas.len());
            }
            _ => {}
        }
        i += 1;
    }
    (deepest, most_lambdas)
}

/// The runtime's function for a binary operator (not `and` and `or`).
fn binary(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Eq => "eq",
        BinaryOp::Ne => "ne",
        BinaryOp::Lt => "lt",
        BinaryOp::Le => "le",
        BinaryOp::Gt => "gt",
        BinaryOp::Ge => "ge",
        BinaryOp::Add => "add",
        BinaryOp::Sub => "sub",
        BinaryOp::Mul => "mul",
        BinaryOp::Divide => "divide",
        BinaryOp::IntDiv => "int_div",
        BinaryOp::Mod => "int_mod",
        // Short-circuited where they are written; never asked for.
        BinaryOp::Or => "or_",
        BinaryOp::And => "and_",
    }
}

/// The variables `stmts` read before they assign them, in order: the ones
/// a tape makes leaves of when it first reads them. `set` holds what has
/// been assigned so far. (Globals read by the routines a tape calls are not
/// followed yet.)
fn first_reads(stmts: &[Stmt], reach: &mut Reach, set: &mut Vec<String>, leaves: &mut Vec<String>) {
    let read = |e: &Expr, set: &Vec<String>, leaves: &mut Vec<String>, reach: &mut Reach| {
        let (mut names, mut passed) = (Vec::new(), Vec::new());
        expr_reads(e, reach, &mut names, &mut passed);
        for n in names {
            if !set.contains(&n) && !leaves.contains(&n) {
                if passed.contains(&n) {
                    push_new(&mut reach.var_first, &n);
                }
                leaves.push(n);
            }
        }
    };
    for stmt in stmts {
        match &stmt.kind {
            StmtKind::Assign { target, value } => {
                read(value, set, leaves, reach);
                push_new(set, &target.text);
            }
            StmtKind::AssignIndex {
                target,
                row,
                col,
                value,
            } => {
                for e in [row, col, value] {
                    read(e, set, leaves, reach);
                }
                push_new(set, &target.text);
            }
            StmtKind::Expr(e) => read(e, set, leaves, reach),
            StmtKind::Block(body) | StmtKind::Tape { body, .. } => {
                first_reads(body, reach, set, leaves)
            }
            StmtKind::If {
                branches,
                otherwise,
            } => {
                for (c, then) in branches {
                    read(c, set, leaves, reach);
                    first_reads(std::slice::from_ref(then), reach, set, leaves);
                }
                if let Some(o) = otherwise {
                    first_reads(std::slice::from_ref(o), reach, set, leaves);
                }
            }
            StmtKind::For {
                var,
                from,
                to,
                body,
                ..
            } => {
                read(from, set, leaves, reach);
                read(to, set, leaves, reach);
                push_new(set, &var.text);
                first_reads(std::slice::from_ref(body), reach, set, leaves);
            }
            StmtKind::While { cond, body } => {
                read(cond, set, leaves, reach);
                first_reads(std::slice::from_ref(body), reach, set, leaves);
            }
            StmtKind::Repeat { body, cond } => {
                first_reads(body, reach, set, leaves);
                read(cond, set, leaves, reach);
            }
            _ => {}
        }
    }
}

/// The variables an expression reads (not routines, not builtins), and in
/// `passed` those it passes to a routine's `var` parameters.
fn expr_reads(e: &Expr, reach: &mut Reach, into: &mut Vec<String>, passed: &mut Vec<String>) {
    match &e.kind {
        ExprKind::Name(n) if reach.routines.contains_key(&*n.text) => reach.called(&n.text, into),
        ExprKind::Name(n)
            if !reach.routines.contains_key(&*n.text)
                && declarations::find(&n.text).is_none()
                && &*n.text != "Inf" =>
        {
            push_new(into, &n.text)
        }
        ExprKind::Matrix(rows) => rows
            .iter()
            .flat_map(|(r, _)| r)
            .for_each(|x| expr_reads(x, reach, into, passed)),
        ExprKind::Call { name, args } => {
            let routine = reach.routines.get(&*name.text).cloned();
            for (k, a) in args.iter().enumerate() {
                let by_ref = routine
                    .as_ref()
                    .and_then(|r| r.params.get(k))
                    .is_some_and(|p| p.by_ref);
                if let (true, ExprKind::Name(n)) = (by_ref, &a.value.kind) {
                    push_new(passed, &n.text);
                }
                expr_reads(&a.value, reach, into, passed);
            }
            if reach.routines.contains_key(&*name.text) {
                reach.called(&name.text, into);
            }
        }
        ExprKind::Index { target, row, col } => {
            for x in [target, row, col] {
                expr_reads(x, reach, into, passed);
            }
        }
        ExprKind::Unary { operand, .. } => expr_reads(operand, reach, into, passed),
        ExprKind::Chain { first, rest } => {
            expr_reads(first, reach, into, passed);
            rest.iter()
                .for_each(|(_, _, x)| expr_reads(x, reach, into, passed));
        }
        _ => {}
    }
}

/// What the variables a tape reads are found with: the routines, and the
/// globals each routine reads (with those of the routines it calls) once
/// worked out.
struct Reach<'a> {
    routines: &'a HashMap<String, Rc<Routine>>,
    /// The routines being worked out, innermost last: a call of one of
    /// them (recursion) adds nothing more.
    working: Vec<String>,
    /// Each routine's globals, worked out without cutting a recursion.
    known: HashMap<String, Vec<String>>,
    /// Whether a recursion was cut while the innermost routine was worked
    /// out: its globals are then complete only for the outermost.
    cut: bool,
    /// The tape's leaves first named as a routine's `var` argument.
    var_first: Vec<String>,
    /// The globals read by the routines the innermost routine being
    /// worked out calls: globals whatever that routine's own names are.
    from_calls: Vec<String>,
}

impl<'a> Reach<'a> {
    fn new(routines: &'a HashMap<String, Rc<Routine>>) -> Reach<'a> {
        Reach {
            routines,
            working: Vec::new(),
            known: HashMap::new(),
            cut: false,
            var_first: Vec::new(),
            from_calls: Vec::new(),
        }
    }

    /// A call of routine `name` read where the reads go to `into`: the
    /// globals it reads are the tape's reads when no routine is being
    /// worked out; inside one, they are that routine's globals even where
    /// it has a variable of the same name, so they are kept apart from
    /// its own reads (`from_calls`).
    fn called(&mut self, name: &str, into: &mut Vec<String>) {
        if self.working.is_empty() {
            self.globals_read(name, into);
        } else {
            let mut from_calls = std::mem::take(&mut self.from_calls);
            self.globals_read(name, &mut from_calls);
            self.from_calls = from_calls;
        }
    }

    /// Adds to `into` the globals routine `name` reads, and those of the
    /// routines it calls: what a tape that calls it makes leaves of.
    fn globals_read(&mut self, name: &str, into: &mut Vec<String>) {
        if let Some(known) = self.known.get(name) {
            for g in known {
                push_new(into, g);
            }
            return;
        }
        if self.working.iter().any(|w| w == name) {
            self.cut = true;
            return;
        }
        let Some(r) = self.routines.get(name).cloned() else {
            return;
        };
        self.working.push(name.to_string());
        let outer_cut = std::mem::replace(&mut self.cut, false);
        let mut own: Vec<String> = r.params.iter().map(|p| p.name.text.to_string()).collect();
        own.extend(r.locals.iter().map(|d| d.name.text.to_string()));
        own.push("Result".to_string());
        assigned(&r.body, self.routines, &mut own);
        let mut read = Vec::new();
        let mut set = own.clone();
        // The routine's own reads are not the tape's.
        let var_first = std::mem::take(&mut self.var_first);
        let outer_calls = std::mem::take(&mut self.from_calls);
        first_reads(&r.body, self, &mut set, &mut read);
        self.var_first = var_first;
        let from_calls = std::mem::replace(&mut self.from_calls, outer_calls);
        let mut globals: Vec<String> = read.into_iter().filter(|n| !own.contains(n)).collect();
        for g in &from_calls {
            push_new(&mut globals, g);
        }
        for g in &globals {
            push_new(into, g);
        }
        self.working.pop();
        // Cut short by a recursion into a routine still being worked out,
        // the list lacks what that routine reads beyond this one: kept
        // only once the outermost is done.
        if !self.cut || self.working.is_empty() {
            self.known.insert(name.to_string(), globals);
        }
        self.cut |= outer_cut;
    }
}

/// Whether the statements call `CheckBlame` anywhere.
fn calls_check_blame(stmts: &[Stmt]) -> bool {
    let mut found = false;
    crate::syntax::tree::each_name(stmts, &mut |n| {
        found |= &*n.text == "CheckBlame";
    });
    found
}

/// Whether `break` or `continue` in `stmts` leaves them (is not inside a
/// loop of their own).
fn leaves_loop(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match &s.kind {
        StmtKind::Break | StmtKind::Continue => true,
        StmtKind::Block(body) => leaves_loop(body),
        StmtKind::If {
            branches,
            otherwise,
        } => {
            branches
                .iter()
                .any(|(_, then)| leaves_loop(std::slice::from_ref(then)))
                || otherwise
                    .as_ref()
                    .is_some_and(|o| leaves_loop(std::slice::from_ref(o)))
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declarations::BUILTINS;

    /// The runtime's `_TAKES`, which words its errors about a builtin's
    /// argument of the wrong kind, says what tapec's declarations say: the
    /// number of arguments it may be given (one makes the message say
    /// "its argument") and what it takes; and every builtin with an Integer
    /// parameter is there.
    #[test]
    fn the_runtimes_takes_are_the_declarations() {
        let start = RUNTIME.find("_TAKES = {\n").expect("_TAKES in the runtime");
        let table = &RUNTIME[start..start + RUNTIME[start..].find("\n}\n").unwrap()];
        let mut named = Vec::new();
        for line in table.lines().skip(1) {
            let (name, rest) = line.trim().split_once(": (").unwrap();
            let (count, takes) = rest.split_once(", ").unwrap();
            let name = name.trim_matches('"');
            let takes = takes.trim_end_matches("),").trim_matches('"');
            let b = declarations::find(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(count.parse::<usize>().unwrap(), b.max_args(), "{name}");
            assert_eq!(takes, b.takes, "{name}");
            named.push(name);
        }
        for b in BUILTINS {
            if b.params.iter().any(|p| p.wants_an_integer()) {
                assert!(named.contains(&b.name), "{} is not in _TAKES", b.name);
            }
        }
    }

    /// Brackets and lambdas are counted outside strings, a lambda's body
    /// ending at a comma or a closing bracket of its level.
    #[test]
    fn nesting_counts_brackets_and_lambdas() {
        assert_eq!(nesting("rt.writeln(rt.neg(1))"), (2, 0));
        assert_eq!(nesting(r#"rt.writeln("((\"((", [1])"#), (2, 0));
        assert_eq!(
            nesting(
                "rt.chain(1, rt.add, lambda: rt.chain(2, rt.add, lambda: 3), rt.add, lambda: 4)"
            ),
            (2, 2)
        );
        assert_eq!(
            nesting("rt.f(rt.chain(1, rt.add, lambda: 2), rt.chain(1, rt.add, lambda: 2))"),
            (2, 1)
        );
        assert_eq!(nesting("x = lambda_(1)"), (1, 0));
    }
}
