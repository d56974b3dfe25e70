//! The checker: every error that can be found without running, all at once.
//!
//! Unknown names (with near-miss hints), the number of arguments of
//! builtins and routines, a builtin's argument written as a literal of a
//! kind it refuses, procedures used as values and functions used as
//! statements, routines declared where they may not be, assignments to
//! globals from routines, tapes inside tapes, and the like.

pub mod errors;
pub mod layout;
pub mod resolve;

use std::collections::{HashMap, HashSet};

use crate::declarations::{self, Does, Kind, Param, ParamKind};
use crate::diagnostic::{Diagnostic, Span};
use crate::syntax::tree::*;
use errors::*;

/// The kind of a value written as a literal (a number, negated or not, a
/// string, `true` or `false`): known without running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Literal {
    Integer,
    Real,
    Str,
    Boolean,
}

impl Literal {
    fn of(e: &Expr) -> Option<Literal> {
        match &e.kind {
            ExprKind::Integer(_) => Some(Literal::Integer),
            ExprKind::Real(_) => Some(Literal::Real),
            ExprKind::Str(_) => Some(Literal::Str),
            ExprKind::Bool(_) => Some(Literal::Boolean),
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
                ..
            } => Literal::of(operand).filter(|l| matches!(l, Literal::Integer | Literal::Real)),
            _ => None,
        }
    }

    /// As a value's kind is said in messages.
    fn what(self) -> &'static str {
        match self {
            Literal::Integer => "an Integer",
            Literal::Real => "a Real",
            Literal::Str => "a String",
            Literal::Boolean => "a Boolean",
        }
    }

    /// Whether a builtin's parameter `param` refuses this, whatever the
    /// literal's value and the other arguments are (a test holds each
    /// against the error the call gives when it runs).
    fn refused_by(self, param: &Param) -> bool {
        use Literal::*;
        if param.wants_an_integer() {
            return self != Integer;
        }
        match param.kind {
            ParamKind::Integer => self != Integer,
            ParamKind::Number | ParamKind::NumberOrMatrix | ParamKind::Exponent => {
                matches!(self, Str | Boolean)
            }
            // A row of ids or targets: a matrix, never a number.
            ParamKind::Matrix | ParamKind::Selector => true,
            ParamKind::Text => self != Str,
            ParamKind::Variable | ParamKind::Values => false,
        }
    }
}

/// What earlier input (at the REPL) already made known.
#[derive(Debug, Default, Clone)]
pub struct Known {
    pub globals: HashSet<String>,
    /// Name to (is a function, number of parameters).
    pub routines: HashMap<String, (bool, usize)>,
    /// Each routine's `var` parameters, by their place in its header.
    pub var_params: HashMap<String, Vec<usize>>,
    /// The routines themselves, to say whose local an unknown name is.
    pub routine_decls: Vec<std::rc::Rc<Routine>>,
}

struct Checker<'a> {
    known: &'a Known,
    globals: HashSet<String>,
    routines: HashMap<String, (bool, usize, Span)>,
    /// Each routine's `var` parameters, this program's and earlier ones'.
    var_params: HashMap<String, Vec<usize>>,
    errors: Vec<Diagnostic>,
    /// The routine being checked, with its local names.
    routine: Option<(&'a Routine, HashSet<String>)>,
    in_tape: bool,
    loop_vars: Vec<String>,
    /// Loops around the statement being checked, in its routine and tape.
    loops: usize,
    /// What stands between the statement and loops further out: a
    /// `tape` or a routine's body, if any.
    loops_beyond: Option<&'static str>,
    repl: bool,
    /// Every builtin the program calls anywhere, run or not.
    called: HashSet<Does>,
    /// Each checked routine's local names, by the number of its name.
    locals: HashMap<NameId, HashSet<String>>,
    /// This program's routines, to say whose local an unknown name is.
    declared: Vec<&'a Routine>,
    /// The globals the program's top-level `var` sections declared so
    /// far, where each first was.
    top_declared: HashMap<String, Span>,
    /// The declared types in sight: the top level's declared so far, in
    /// the order of the text, or in a routine its parameters', its
    /// locals' and its `Result`'s.
    types: HashMap<String, TypeName>,
    /// What [`Checked::wants`] and [`Checked::declared`] hold.
    wants: HashMap<Span, Wanted>,
    declared_reads: HashMap<NameId, TypeName>,
}

/// A value given to a variable or a typed value parameter declared `ty`
/// (`name`): the error of a value of another kind points at `at`.
#[derive(Debug, Clone)]
pub struct Wanted {
    pub name: String,
    pub ty: TypeName,
    pub at: Span,
}

/// What the checks found besides errors.
#[derive(Debug, Default)]
pub struct Checked {
    pub errors: Vec<Diagnostic>,
    /// Every builtin the program names in a call, in code that runs or not:
    /// whether anything can replay a tape (`CheckBlame`) is read from here.
    pub called: HashSet<Does>,
    /// The global variables' names: what the top level assigns, declares
    /// or passes to a `var` parameter, and what earlier input knew.
    pub globals: HashSet<String>,
    /// Each top-level routine's local names (its parameters, its `var`
    /// section, what it assigns that is not a global, `Result` in a
    /// function), keyed by the number of the routine's name: the scope
    /// rules as the checks applied them, for tools that follow names.
    pub locals: HashMap<NameId, HashSet<String>>,
    /// Each value that a declared type must take, by the value's span: an
    /// assignment's to a declared variable, an argument's of a typed value
    /// parameter. Its kind is judged by the evaluator
    /// ([`crate::eval::constants`]), which knows the operators' rules.
    pub wants: HashMap<Span, Wanted>,
    /// The declared type of each name read where one is in sight (a
    /// variable declared so far at the top level; a routine's typed
    /// parameter, local or `Result`, but not a `var` parameter declared
    /// Real, whose caller's untyped variable may hold an Integer), and of
    /// each call of a function
    /// declared with a type, by the name's number: a value it holds or
    /// gives is of that kind, an Integer given to a Real made a Real.
    pub declared: HashMap<NameId, TypeName>,
}

/// Checks a program, and says which builtins it calls; `repl` allows bare
/// expressions as statements. Every tool runs these checks with the
/// evaluator's judgement of operators on literals:
/// [`crate::eval::constants::check_program`].
pub fn check_program(program: &Program, known: &Known, repl: bool) -> Checked {
    let mut c = Checker {
        known,
        globals: known.globals.clone(),
        routines: HashMap::new(),
        var_params: known.var_params.clone(),
        errors: Vec::new(),
        routine: None,
        in_tape: false,
        loop_vars: Vec::new(),
        loops: 0,
        loops_beyond: None,
        repl,
        called: HashSet::new(),
        locals: HashMap::new(),
        declared: known.routine_decls.iter().map(|r| &**r).collect(),
        top_declared: HashMap::new(),
        types: HashMap::new(),
        wants: HashMap::new(),
        declared_reads: HashMap::new(),
    };
    for stmt in &program.body {
        if let StmtKind::Routine(r) = &stmt.kind {
            c.declare_routine(r);
            c.declared.push(r);
        }
    }
    for stmt in &program.body {
        collect_assigned(stmt, &mut c.globals, true);
        passed_to_var_params(stmt, &c.var_params, &mut c.globals);
        if !repl {
            meant_assigned(stmt, &mut c.globals);
        }
    }
    for stmt in &program.body {
        c.stmt(stmt, true);
    }
    c.errors.sort_by_key(|d| (d.span.source, d.span.start));
    Checked {
        errors: c.errors,
        called: c.called,
        globals: c.globals,
        locals: c.locals,
        wants: c.wants,
        declared: c.declared_reads,
    }
}

/// `x = 1;` as a statement: the name `x` and its value, when the
/// statement is a comparison of a name with `=`, which in a program (not at
/// the prompt, where it is echoed) is an assignment written with `=`.
fn written_with_eq(e: &Expr) -> Option<&Name> {
    match &e.kind {
        ExprKind::Chain { first, rest } if rest.len() == 1 && rest[0].0 == BinaryOp::Eq => {
            match &first.kind {
                ExprKind::Name(name) => Some(name),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Adds the names of `x = 1;` statements at the top level to `names`, so
/// that the one error such a statement gets is its own ("assignment is
/// written `:=`"), not an unknown variable there and at every later use.
fn meant_assigned(stmt: &Stmt, names: &mut HashSet<String>) {
    if let StmtKind::Expr(e) = &stmt.kind
        && let Some(name) = written_with_eq(e)
    {
        names.insert(name.text.to_string());
    }
}

/// Adds every name that `stmt` assigns (not inside routines) to `names`.
fn collect_assigned(stmt: &Stmt, names: &mut HashSet<String>, with_vars: bool) {
    match &stmt.kind {
        StmtKind::Assign { target, .. } | StmtKind::AssignIndex { target, .. } => {
            names.insert(target.text.to_string());
        }
        StmtKind::For { var, body, .. } => {
            names.insert(var.text.to_string());
            collect_assigned(body, names, with_vars);
        }
        StmtKind::Block(body) | StmtKind::Tape { body, .. } | StmtKind::Repeat { body, .. } => body
            .iter()
            .for_each(|s| collect_assigned(s, names, with_vars)),
        StmtKind::If {
            branches,
            otherwise,
        } => {
            for (_, then) in branches {
                collect_assigned(then, names, with_vars);
            }
            if let Some(o) = otherwise {
                collect_assigned(o, names, with_vars);
            }
        }
        StmtKind::While { body, .. } => collect_assigned(body, names, with_vars),
        StmtKind::Var(decls) if with_vars => {
            names.extend(decls.iter().map(|d| d.name.text.to_string()));
        }
        _ => {}
    }
}

/// Adds every name that `stmt` (not inside routines) passes to a `var`
/// parameter in a call statement or an assignment's call: the routine may
/// be what first assigns it.
fn passed_to_var_params(
    stmt: &Stmt,
    var_params: &HashMap<String, Vec<usize>>,
    names: &mut HashSet<String>,
) {
    let call = match &stmt.kind {
        StmtKind::Expr(e) | StmtKind::Assign { value: e, .. } => e,
        StmtKind::Block(body) | StmtKind::Tape { body, .. } | StmtKind::Repeat { body, .. } => {
            body.iter()
                .for_each(|s| passed_to_var_params(s, var_params, names));
            return;
        }
        StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
            return passed_to_var_params(body, var_params, names);
        }
        StmtKind::If {
            branches,
            otherwise,
        } => {
            for s in branches.iter().map(|(_, s)| s).chain(otherwise.as_deref()) {
                passed_to_var_params(s, var_params, names);
            }
            return;
        }
        _ => return,
    };
    if let ExprKind::Call { name, args } = &call.kind
        && let Some(by_ref) = var_params.get(&*name.text)
    {
        for &i in by_ref {
            if let Some(Arg {
                value:
                    Expr {
                        kind: ExprKind::Name(arg),
                        ..
                    },
                ..
            }) = args.get(i)
            {
                names.insert(arg.text.to_string());
            }
        }
    }
}

fn assigns(stmts: &[Stmt], name: &str) -> bool {
    let mut names = HashSet::new();
    stmts
        .iter()
        .for_each(|s| collect_assigned(s, &mut names, false));
    names.contains(name)
}

impl<'a> Checker<'a> {
    fn error(&mut self, d: Diagnostic) {
        self.errors.push(d);
    }

    /// How many names an unknown one may be matched against for a
    /// "did you mean" hint: all, until as many errors as are ever shown
    /// have been found, then none. Each match takes time, and a program of
    /// thousands of names, each misspelled once, took seconds for hints
    /// nobody sees.
    fn hints_left(&self) -> usize {
        if self.errors.len() < crate::diagnostic::MAX_SHOWN {
            usize::MAX
        } else {
            0
        }
    }

    fn declare_routine(&mut self, r: &Routine) {
        let name = &r.name;
        // This program's variables are reported where they are assigned or
        // declared (`not_a_routine`); earlier entries' only here.
        let taken_by = if declarations::find(&name.text).is_some() || &*name.text == "Inf" {
            Some("a builtin; a routine may not reuse its name")
        } else if self.known.globals.contains(&*name.text) {
            Some("a variable's name; a routine may not reuse it")
        } else {
            None
        };
        if let Some(why) = taken_by {
            self.error(
                Diagnostic::new(name.span, format!("`{}` is {why}", name.text))
                    .with_label(name.span, "choose another name"),
            );
            return;
        }
        if let Some((_, _, first)) = self.routines.get(&*name.text) {
            let first = *first;
            self.error(
                Diagnostic::new(name.span, format!("`{}` is declared twice", name.text))
                    .with_label(name.span, "declared again here")
                    .with_label(first, "first declared here"),
            );
            return;
        }
        self.routines.insert(
            name.text.to_string(),
            (r.is_function, r.params.len(), r.header),
        );
        let by_ref: Vec<usize> = (0..r.params.len())
            .filter(|&i| r.params[i].by_ref)
            .collect();
        self.var_params.insert(name.text.to_string(), by_ref);
    }

    fn routine_signature(&self, name: &str) -> Option<(bool, usize, Option<Span>)> {
        if let Some((f, n, s)) = self.routines.get(name) {
            return Some((*f, *n, Some(*s)));
        }
        self.known.routines.get(name).map(|(f, n)| (*f, *n, None))
    }

    fn is_variable(&self, name: &str) -> bool {
        if let Some((_, locals)) = &self.routine
            && locals.contains(name)
        {
            return true;
        }
        self.globals.contains(name)
    }

    fn stmt(&mut self, stmt: &'a Stmt, top: bool) {
        match &stmt.kind {
            StmtKind::Empty | StmtKind::Error => {}
            StmtKind::Break | StmtKind::Continue if self.loops == 0 => {
                let word = if matches!(stmt.kind, StmtKind::Break) {
                    "break"
                } else {
                    "continue"
                };
                let d = Diagnostic::new(
                    stmt.span,
                    match self.loops_beyond {
                        Some("tape") => format!("`{word}` may not leave a tape"),
                        Some(_) => format!("`{word}` may not leave a routine"),
                        None => format!("`{word}` is not inside a loop"),
                    },
                );
                self.error(match self.loops_beyond {
                    Some("tape") => d
                        .with_label(stmt.span, "the loop around it is outside this tape")
                        .with_hint(format!(
                            "`{word}` may not leave a `tape ... end;` block: \
                             put the loop inside the tape, or end the tape first"
                        )),
                    Some(_) => d
                        .with_label(stmt.span, "no loop of this routine holds it")
                        .with_hint(format!(
                            "`{word}` acts on a loop of its own routine; to stop the caller's loop, \
                             return a value the caller tests"
                        )),
                    None => d
                        .with_label(stmt.span, "not in a `for`, `while` or `repeat`")
                        .with_hint(if word == "break" {
                            "`break` leaves the loop it is written in"
                        } else {
                            "`continue` goes on with the next turn of the loop it is written in"
                        }),
                });
            }
            StmtKind::Break | StmtKind::Continue => {}
            StmtKind::Assign { target, value } => {
                self.expr(value);
                self.assignment(target);
                // A value of a kind the variable's declared type refuses
                // (`x := 2.5;` of an Integer) is the error its run gives.
                if let Some(&ty) = self.types.get(&*target.text) {
                    self.wants(value, ty, &target.text, target.span);
                }
            }
            StmtKind::AssignIndex {
                target,
                row,
                col,
                value,
            } => {
                if self.in_tape {
                    self.error(element_in_tape(target.span, stmt.span));
                }
                self.name_read(target);
                self.expr(row);
                self.expr(col);
                self.expr(value);
                self.assignment(target);
            }
            StmtKind::Expr(e) => self.expr_statement(e),
            StmtKind::Block(body) => body.iter().for_each(|s| self.stmt(s, false)),
            StmtKind::If {
                branches,
                otherwise,
            } => {
                for (cond, then) in branches {
                    self.expr(cond);
                    self.stmt(then, false);
                }
                if let Some(o) = otherwise {
                    self.stmt(o, false);
                }
            }
            StmtKind::For {
                var,
                from,
                to,
                body,
                ..
            } => {
                self.expr(from);
                self.expr(to);
                self.assignment(var);
                self.loop_vars.push(var.text.to_string());
                self.loops += 1;
                self.stmt(body, false);
                self.loops -= 1;
                self.loop_vars.pop();
            }
            StmtKind::While { cond, body } => {
                self.expr(cond);
                self.loops += 1;
                self.stmt(body, false);
                self.loops -= 1;
            }
            StmtKind::Repeat { body, cond } => {
                self.loops += 1;
                body.iter().for_each(|s| self.stmt(s, false));
                self.loops -= 1;
                self.expr(cond);
            }
            StmtKind::Tape { body, .. } => {
                if self.in_tape {
                    self.error(nested_tape(tape_keyword(stmt.span)));
                }
                let was = std::mem::replace(&mut self.in_tape, true);
                let loops = self.hide_loops("tape");
                body.iter().for_each(|s| self.stmt(s, false));
                (self.loops, self.loops_beyond) = loops;
                self.in_tape = was;
            }
            StmtKind::Var(decls) => {
                self.declared_once(decls.iter().map(|d| &d.name), "in this `var` section");
                // A program declares each global once, as a routine each
                // local (the prompt lets a learner declare one again).
                if top && self.routine.is_none() && !self.repl {
                    let mut in_this: HashSet<&str> = HashSet::new();
                    for d in decls {
                        // Twice in this section is told above.
                        if !in_this.insert(&d.name.text) {
                            continue;
                        }
                        match self.top_declared.get(&*d.name.text) {
                            Some(&first) if first != d.name.span => self.error(
                                Diagnostic::new(
                                    d.name.span,
                                    format!("`{}` is declared twice", d.name.text),
                                )
                                .with_label(d.name.span, "declared again here")
                                .with_label(first, "first declared here")
                                .with_hint("declare a variable once, with the type it keeps"),
                            ),
                            Some(_) => {}
                            None => {
                                self.top_declared
                                    .insert(d.name.text.to_string(), d.name.span);
                            }
                        }
                    }
                }
                if top && self.routine.is_none() {
                    for d in decls {
                        match d.ty {
                            Some((ty, _)) => self.types.insert(d.name.text.to_string(), ty),
                            None => self.types.remove(&*d.name.text),
                        };
                    }
                }
                decls.iter().for_each(|d| {
                    self.not_a_routine(&d.name);
                    self.not_a_builtin(&d.name, "variable");
                });
                if !top || self.routine.is_some() {
                    let span = decls.first().map_or(stmt.span, |d| d.name.span);
                    self.error(
                        Diagnostic::new(
                            span,
                            "a `var` section may only stand at the top level or open a routine",
                        )
                        .with_label(span, "declared here")
                        .with_hint("in a routine, put `var ...;` between its header and `begin`"),
                    );
                }
            }
            StmtKind::Routine(r) => {
                if !top || self.routine.is_some() || self.in_tape {
                    self.error(
                        Diagnostic::new(r.header, "routines are declared at the top level only")
                            .with_label(r.header, "declared inside another statement"),
                    );
                    return;
                }
                self.routine_body(r);
            }
        }
    }

    /// Starts a part (a tape, a routine's body) that `break` and `continue`
    /// may not leave; gives back what to restore at its end.
    fn hide_loops(&mut self, part: &'static str) -> (usize, Option<&'static str>) {
        let beyond = if self.loops > 0 || part == "routine" {
            Some(part)
        } else {
            self.loops_beyond
        };
        (
            std::mem::replace(&mut self.loops, 0),
            std::mem::replace(&mut self.loops_beyond, beyond),
        )
    }

    /// Each name once among `names` (a routine's parameters and locals, or
    /// one `var` section); `whose` says where, for the message.
    fn declared_once<'n>(&mut self, names: impl Iterator<Item = &'n Name>, whose: &str) {
        let mut first: HashMap<&str, Span> = HashMap::new();
        for name in names {
            match first.get(&*name.text) {
                Some(&at) => self.error(
                    Diagnostic::new(
                        name.span,
                        format!("`{}` is declared twice {whose}", name.text),
                    )
                    .with_label(name.span, "declared again here")
                    .with_label(at, "first declared here")
                    .with_hint("declare each name once, and give the others names of their own"),
                ),
                None => {
                    first.insert(&name.text, name.span);
                }
            }
        }
    }

    /// Whether function `r` sets `Result`: assigns it, or passes it to a
    /// `var` parameter (`P(Result)`).
    fn sets_result(&self, r: &Routine) -> bool {
        let mut passed = HashSet::new();
        r.body
            .iter()
            .for_each(|s| passed_to_var_params(s, &self.var_params, &mut passed));
        assigns(&r.body, "Result") || passed.contains("Result")
    }

    fn routine_body(&mut self, r: &'a Routine) {
        self.declared_once(
            r.params
                .iter()
                .map(|p| &p.name)
                .chain(r.locals.iter().map(|d| &d.name)),
            &format!("in `{}`", r.name.text),
        );
        r.params
            .iter()
            .map(|p| (&p.name, "parameter"))
            .chain(r.locals.iter().map(|d| (&d.name, "variable")))
            .for_each(|(name, kind)| {
                self.not_a_routine(name);
                self.not_a_builtin(name, kind);
                if r.is_function && &*name.text == "Result" {
                    self.error(
                        Diagnostic::new(
                            name.span,
                            format!(
                                "`Result` is what the function `{}` gives back: \
                                 it cannot also be a parameter or a local",
                                r.name.text
                            ),
                        )
                        .with_label(name.span, "named `Result` here")
                        .with_hint("give this one another name"),
                    );
                }
            });
        let mut locals: HashSet<String> =
            r.params.iter().map(|p| p.name.text.to_string()).collect();
        locals.extend(r.locals.iter().map(|d| d.name.text.to_string()));
        let mut assigned = HashSet::new();
        for s in &r.body {
            collect_assigned(s, &mut assigned, false);
            passed_to_var_params(s, &self.var_params, &mut assigned);
        }
        // A name the routine assigns (or passes to a `var` parameter, which
        // may give it its first value) is local unless it is a global; those
        // cases are reported where it is assigned or passed.
        locals.extend(assigned.into_iter().filter(|n| !self.globals.contains(n)));
        if r.is_function {
            locals.insert("Result".to_string());
            if !self.sets_result(r) {
                self.error(
                    Diagnostic::new(
                        r.header,
                        format!("function `{}` never sets `Result`", r.name.text),
                    )
                    .with_label(r.header, "this function")
                    .with_hint(if assigns(&r.body, &r.name.text) {
                        format!(
                            "a function gives back its value by `Result := ...;`, not by assigning its own name `{}` as in some Pascals",
                            r.name.text
                        )
                    } else {
                        "assign the value to give back: `Result := ...;`".to_string()
                    }),
                );
            }
        }
        // `Result` first: a parameter or local of that name, an error told
        // above, is not held to the function's type as well.
        let types = r
            .result
            .filter(|_| r.is_function)
            .map(|(ty, _)| ("Result".to_string(), ty))
            .into_iter()
            .chain(
                r.params
                    .iter()
                    .map(|p| (&p.name, p.ty))
                    .chain(r.locals.iter().map(|d| (&d.name, d.ty)))
                    .filter_map(|(name, ty)| Some((name.text.to_string(), ty?.0))),
            )
            .collect();
        let top_types = std::mem::replace(&mut self.types, types);
        let saved_tape = std::mem::replace(&mut self.in_tape, false);
        let loops = self.hide_loops("routine");
        self.routine = Some((r, locals));
        r.body.iter().for_each(|s| self.stmt(s, false));
        if let Some((_, locals)) = self.routine.take() {
            self.locals.insert(r.name.id, locals);
        }
        (self.loops, self.loops_beyond) = loops;
        self.in_tape = saved_tape;
        self.types = top_types;
    }

    /// A variable (assigned, declared, or a parameter) may not take a
    /// routine's name: the one would hide the other wherever both are in
    /// sight, as a call or a read that silently means the wrong thing.
    /// Whether it reported `name`.
    /// A parameter or a declared variable may not take a builtin's name
    /// (nor `Inf`'s): it would hide the builtin in some places and not in
    /// others, and an assignment to it is refused anyway.
    fn not_a_builtin(&mut self, name: &Name, what: &str) {
        if &*name.text == "Inf" || declarations::find(&name.text).is_some() {
            self.error(
                Diagnostic::new(
                    name.span,
                    format!(
                        "`{}` is a builtin, so a {what} cannot take its name",
                        name.text
                    ),
                )
                .with_label(name.span, "choose another name"),
            );
        }
    }

    fn not_a_routine(&mut self, name: &Name) -> bool {
        // A function assigning its own name, as some Pascals return a
        // value, is told about `Result` instead when it never sets it.
        if let Some((r, _)) = &self.routine
            && r.is_function
            && r.name.text == name.text
            && !self.sets_result(r)
        {
            return false;
        }
        let Some((is_function, _, declared)) = self.routine_signature(&name.text) else {
            return false;
        };
        let kind = if is_function { "function" } else { "procedure" };
        let mut d = Diagnostic::new(
            name.span,
            format!(
                "`{}` is a {kind}'s name; a variable may not reuse it",
                name.text
            ),
        )
        .with_label(name.span, "a variable of that name");
        if let Some(at) = declared {
            d = d.with_label(at, format!("the {kind} is declared here"));
        }
        self.error(d.with_hint("give the variable or the routine another name"));
        true
    }

    /// An error if `target`, assigned (or nudged) here, is the counter of a
    /// `for` loop around it.
    fn not_a_counter(&mut self, target: &Name, label: &str) {
        if self.loop_vars.iter().any(|v| **v == *target.text) {
            self.error(
                Diagnostic::new(
                    target.span,
                    format!(
                        "`{}` is the loop variable: it cannot be assigned in the loop",
                        target.text
                    ),
                )
                .with_label(target.span, label)
                .with_hint("use another variable; the loop sets this one each time round"),
            );
        }
    }

    fn assignment(&mut self, target: &Name) {
        // What else could be said of the name follows from this error.
        if self.not_a_routine(target) {
            return;
        }
        self.not_a_counter(target, "assigned here");
        if &*target.text == "Inf" || declarations::find(&target.text).is_some() {
            self.error(
                Diagnostic::new(
                    target.span,
                    format!("`{}` is a builtin and cannot be assigned", target.text),
                )
                .with_label(target.span, "choose another name"),
            );
        }
        if let Some((r, _)) = &self.routine
            && !r.is_function
            && &*target.text == "Result"
            && !r.locals.iter().any(|d| d.name.text == target.text)
            && !r.params.iter().any(|p| p.name.text == target.text)
        {
            self.error(
                Diagnostic::new(
                    target.span,
                    format!(
                        "`{}` is a procedure, which gives back no `Result`",
                        r.name.text
                    ),
                )
                .with_label(target.span, "only a function has a `Result`")
                .with_hint(format!(
                    "to give back a value, make it a function with the type of its result: \
                     `function {}(...): Real;`",
                    r.name.text
                )),
            );
        }
        if let Some((r, _)) = &self.routine {
            let declared_local = r.params.iter().any(|p| p.name.text == target.text)
                || r.locals.iter().any(|d| d.name.text == target.text)
                || (r.is_function && &*target.text == "Result");
            if !declared_local && self.globals.contains(&*target.text) {
                let d = global_assigned(r, target);
                self.error(d);
            }
        }
    }

    fn expr_statement(&mut self, e: &'a Expr) {
        let (name, args) = match &e.kind {
            ExprKind::Call { name, args } => (name, args.as_slice()),
            // A name alone that is no variable is a call: of a builtin or a
            // routine, or in a program of a procedure misspelled (`Gret;`),
            // said once, as an unknown procedure. (At the prompt a name
            // alone shows a variable, so there it is an unknown variable.)
            ExprKind::Name(name)
                if !self.is_variable(&name.text)
                    && (declarations::find(&name.text).is_some()
                        || self.routine_signature(&name.text).is_some()
                        || (!self.repl && &*name.text != "Inf")) =>
            {
                (name, &[][..])
            }
            _ => {
                self.expr(e);
                if !self.repl {
                    let mut d = Diagnostic::new(
                        e.span,
                        "this expression is computed but its value is not used",
                    )
                    .with_label(e.span, "a value, not a statement");
                    if let ExprKind::Chain { rest, .. } = &e.kind
                        && rest.first().is_some_and(|(op, _, _)| *op == BinaryOp::Eq)
                    {
                        d = d.with_hint("assignment is written `:=`");
                    }
                    self.error(
                        d.with_hint("assign it (`x := ...;`) or print it (`WriteLn(...);`)"),
                    );
                }
                return;
            }
        };
        let is_function = self.call(name, args, e.span);
        if is_function == Some(true) && !self.repl {
            self.error(
                Diagnostic::new(
                    e.span,
                    format!(
                        "`{}` is a function: calling it as a statement loses its value",
                        name.text
                    ),
                )
                .with_label(e.span, "its value is not used")
                .with_hint(format!("assign it: `x := {}(...);`", name.text)),
            );
        }
    }

    /// Checks a call; returns whether the callee gives a value, if known.
    fn call(&mut self, name: &Name, args: &'a [Arg], span: Span) -> Option<bool> {
        for arg in args {
            self.expr(&arg.value);
            for spec in arg.width.iter().chain(arg.decimals.iter()) {
                self.expr(spec);
            }
        }
        if let Some(b) = declarations::find(&name.text) {
            self.called.insert(b.does);
            if args.len() < b.min_args() || args.len() > b.max_args() {
                self.error(wrong_count(b, args.len(), span));
            }
            // An argument written as a literal of a kind the builtin
            // refuses (`Tanh('a')`) is its error before anything runs.
            for (position, (arg, param)) in args.iter().zip(b.params).enumerate() {
                if let Some(literal) = Literal::of(&arg.value)
                    && literal.refused_by(param)
                {
                    self.error(wrong_kind(
                        b,
                        position,
                        literal.what(),
                        matches!(literal, Literal::Integer | Literal::Real),
                        literal == Literal::Real,
                        arg.value.span,
                    ));
                }
            }
            if !matches!(b.does, Does::Write(_))
                && let Some(w) = args.iter().find_map(|a| a.width.as_ref())
            {
                self.error(field_width_outside_write(w.span));
            }
            if b.takes_a_variable() {
                if self.in_tape {
                    self.error(blame_in_tape(b.name, span));
                }
                match args.first().map(|a| &a.value.kind) {
                    Some(ExprKind::Name(target)) if b.does == Does::Nudge => {
                        self.not_a_counter(target, "Nudge assigns it here");
                    }
                    Some(ExprKind::Name(_)) | None => {}
                    Some(_) => self.error(takes_a_variable_name(b.name, args[0].value.span)),
                }
            }
            return Some(b.kind == Kind::Function);
        }
        if let Some((is_function, params, header)) = self.routine_signature(&name.text) {
            if let Some(w) = args.iter().find_map(|a| a.width.as_ref()) {
                self.error(field_width_outside_write(w.span));
            }
            if args.len() != params {
                let mut d = routine_arity(&name.text, params, args.len(), span);
                if let Some(h) = header {
                    d = d.with_label(h, "declared here");
                }
                self.error(d);
            }
            self.var_arguments(name, args);
            // A value given to a typed value parameter that refuses it
            // (`Twice('two')`) is the error the call gives when it runs;
            // a function declared with a type gives a value of that type.
            if let Some(r) = self.declared_routine(name)
                && r.params.len() == args.len()
            {
                for (param, arg) in r.params.iter().zip(args) {
                    if let Some((ty, _)) = param.ty
                        && !param.by_ref
                    {
                        self.wants(&arg.value, ty, &param.name.text, arg.value.span);
                    }
                }
                self.gives_declared(name, r);
            }
            return Some(is_function);
        }
        // `brek;` reads as a call: the two statements of one word are near
        // a call with no arguments.
        let statements: &[&str] = if args.is_empty() {
            &["break", "continue"]
        } else {
            &[]
        };
        let candidates = declarations::BUILTINS
            .iter()
            .map(|b| b.name)
            .chain(statements.iter().copied())
            .chain(self.routines.keys().map(String::as_str))
            .chain(self.known.routines.keys().map(String::as_str));
        let d = unknown_routine(name, candidates.take(self.hints_left()));
        self.error(d);
        None
    }

    /// The declaration of the routine `name` calls: the last of that name.
    fn declared_routine(&self, name: &Name) -> Option<&'a Routine> {
        self.declared
            .iter()
            .rev()
            .find(|r| r.name.text == name.text)
            .copied()
    }

    /// A call of `r` by `name` (`F(x)`, or `F` with no arguments): a
    /// function declared with a type gives a value of that type.
    fn gives_declared(&mut self, name: &Name, r: &Routine) {
        if let Some((ty, _)) = r.result.filter(|_| r.is_function) {
            self.declared_reads.insert(name.id, ty);
        }
    }

    /// `value` is given to `name` declared `ty`; the error of a value of
    /// another kind points at `span`.
    fn wants(&mut self, value: &Expr, ty: TypeName, name: &str, span: Span) {
        self.wants.insert(
            value.span,
            Wanted {
                name: name.to_string(),
                ty,
                at: span,
            },
        );
    }

    /// The arguments for `var` parameters: each a plain variable's name, not
    /// a `for` counter, and no variable passed to two of them.
    fn var_arguments(&mut self, routine: &Name, args: &[Arg]) {
        let Some(by_ref) = self.var_params.get(&*routine.text).cloned() else {
            return;
        };
        let mut passed: Vec<&Name> = Vec::new();
        for i in by_ref {
            let Some(arg) = args.get(i) else { continue };
            // `(x)` is an expression, not the variable: its span is wider
            // than the name's.
            let plain = match &arg.value.kind {
                ExprKind::Name(name) if name.span == arg.value.span => Some(name),
                _ => None,
            };
            let Some(name) = plain else {
                self.error(
                    Diagnostic::new(
                        arg.value.span,
                        format!(
                            "argument {} of `{}` is a `var` parameter, so it must be a variable's name",
                            i + 1,
                            routine.text
                        ),
                    )
                    .with_label(arg.value.span, "not a variable")
                    .with_hint(match &arg.value.kind {
                        ExprKind::Name(n) => format!("leave out the brackets around `{}`", n.text),
                        _ => "assign the value to a variable first, and pass the variable".to_string(),
                    }),
                );
                continue;
            };
            let not_a_variable = if declarations::find(&name.text).is_some() || &*name.text == "Inf"
            {
                Some("a builtin")
            } else if self.routine_signature(&name.text).is_some() {
                Some("a routine")
            } else {
                None
            };
            if let Some(what) = not_a_variable {
                self.error(
                    Diagnostic::new(
                        name.span,
                        format!(
                            "argument {} of `{}` is a `var` parameter, so it must be a variable's name, but `{}` is {what}",
                            i + 1,
                            routine.text,
                            name.text
                        ),
                    )
                    .with_label(name.span, format!("{what}, not a variable")),
                );
                continue;
            }
            let local = self
                .routine
                .as_ref()
                .is_some_and(|(_, locals)| locals.contains(&*name.text));
            if let Some((r, _)) = &self.routine
                && !local
                && self.globals.contains(&*name.text)
            {
                self.error(errors::global_passed(&r.name.text, name));
                continue;
            }
            if self.loop_vars.iter().any(|v| **v == *name.text) {
                self.error(
                    Diagnostic::new(
                        name.span,
                        format!(
                            "the `for` counter `{}` cannot be passed to a `var` parameter",
                            name.text
                        ),
                    )
                    .with_label(name.span, "the routine could change the counter")
                    .with_hint("copy the counter to another variable and pass that"),
                );
            }
            if let Some(first) = passed.iter().find(|p| p.text == name.text) {
                self.error(
                    Diagnostic::new(
                        name.span,
                        format!(
                            "`{}` is passed to two `var` parameters of one call",
                            name.text
                        ),
                    )
                    .with_label(first.span, "passed here")
                    .with_label(name.span, "and again here")
                    .with_hint("each `var` parameter must name a different variable"),
                );
            }
            passed.push(name);
        }
    }

    fn name_read(&mut self, name: &Name) {
        // A `var` parameter declared Real names the caller's variable,
        // which may be an untyped one holding an Integer: no kind is known.
        let widened = |r: &Routine| {
            r.params
                .iter()
                .any(|p| p.by_ref && p.name.text == name.text)
        };
        if let Some(&ty) = self.types.get(&*name.text)
            && !(ty == TypeName::Real && self.routine.as_ref().is_some_and(|(r, _)| widened(r)))
        {
            self.declared_reads.insert(name.id, ty);
        }
        if self.is_variable(&name.text) || &*name.text == "Inf" {
            return;
        }
        if let Some(b) = declarations::find(&name.text) {
            if b.kind == Kind::Procedure {
                self.error(gives_no_value(&name.text, name.span));
            } else if b.min_args() > 0 {
                self.error(wrong_count(b, 0, name.span));
            }
            return;
        }
        if let Some((is_function, params, _)) = self.routine_signature(&name.text) {
            if let Some(r) = self.declared_routine(name)
                && r.params.is_empty()
            {
                self.gives_declared(name, r);
            }
            if !is_function {
                self.error(gives_no_value(&name.text, name.span));
            } else if params > 0 {
                self.error(
                    Diagnostic::new(
                        name.span,
                        format!(
                            "`{}` takes {params} argument{}",
                            name.text,
                            if params == 1 { "" } else { "s" }
                        ),
                    )
                    .with_label(name.span, "called without arguments"),
                );
            }
            return;
        }
        let mut candidates: Vec<&str> = self.globals.iter().map(String::as_str).collect();
        if let Some((_, locals)) = &self.routine {
            candidates.extend(locals.iter().map(String::as_str));
        }
        // A value is not a builtin that needs arguments (`loc` is not a
        // misspelled `Log`).
        candidates.extend(
            declarations::BUILTINS
                .iter()
                .filter(|b| b.min_args() == 0 && b.kind == Kind::Function)
                .map(|b| b.name),
        );
        // A routine's name misspelled (`Gret;` at the prompt) is near one.
        candidates.extend(self.routines.keys().map(String::as_str));
        candidates.extend(self.known.routines.keys().map(String::as_str));
        // `Inf` is a name too, though neither a variable nor a builtin.
        candidates.push("Inf");
        candidates.truncate(self.hints_left());
        // `loss` assigned inside `procedure Train` and read after the call:
        // the name is that routine's own, which is why it is unknown here.
        // Each search reads every routine, so only while errors are shown.
        let current = self.routine.as_ref().map(|(r, _)| r.name.id);
        let searched = if self.hints_left() > 0 {
            &self.declared[..]
        } else {
            &[]
        };
        let owner = searched.iter().find(|r| {
            Some(r.name.id) != current
                && (r.params.iter().any(|p| p.name.text == name.text)
                    || r.locals.iter().any(|d| d.name.text == name.text)
                    || assigns(&r.body, &name.text))
        });
        if let Some(r) = owner {
            let kind = if r.is_function {
                "function"
            } else {
                "procedure"
            };
            let d = Diagnostic::new(name.span, format!("unknown variable `{}`", name.text))
                .with_label(name.span, "no variable of this name here")
                .with_label(
                    r.name.span,
                    format!(
                        "`{}` is local to this {kind}: it is gone when the {kind} returns",
                        name.text
                    ),
                )
                .with_hint(
                    "a routine's variables are its own: give the value back as a \
                     function's `Result`, or through a `var` parameter",
                );
            self.error(d);
            return;
        }
        let label = if self.repl {
            "this session has no variable of this name"
        } else {
            "nothing is ever assigned to this name"
        };
        let d = unknown_variable(name, label, candidates);
        self.error(d);
    }

    fn expr(&mut self, e: &'a Expr) {
        match &e.kind {
            ExprKind::Integer(_)
            | ExprKind::Real(_)
            | ExprKind::Str(_)
            | ExprKind::Bool(_)
            | ExprKind::Error => {}
            ExprKind::Name(name) => self.name_read(name),
            ExprKind::Call { name, args } => {
                if self.call(name, args, e.span) == Some(false) {
                    self.error(gives_no_value(&name.text, e.span));
                }
            }
            ExprKind::Matrix(rows) => {
                if let Some(d) = ragged_matrix(rows) {
                    self.error(d);
                }
                rows.iter().flat_map(|(r, _)| r).for_each(|x| self.expr(x));
            }
            ExprKind::Index { target, row, col } => {
                self.expr(target);
                self.expr(row);
                self.expr(col);
            }
            ExprKind::Unary { operand, .. } => self.expr(operand),
            ExprKind::Chain { first, rest } => {
                self.expr(first);
                rest.iter().for_each(|(_, _, x)| self.expr(x));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declarations::MatrixOp;

    fn called(text: &str) -> HashSet<Does> {
        let (program, errors) = crate::syntax::parse(text, 0);
        assert!(errors.is_empty(), "{errors:?}");
        check_program(&program, &Known::default(), false).called
    }

    #[test]
    fn the_builtins_a_program_calls_are_found_wherever_they_stand() {
        let replays = called(
            "w := [[1.0]];\ntape s := Sum(w); end;\n\
             procedure Never; begin WriteLn(CheckBlame(w)) end;\n",
        );
        assert!(
            replays.contains(&Does::CheckBlame) && replays.contains(&Does::Matrix(MatrixOp::Sum))
        );
        // Named only in a comment or a string: not called.
        let mentions = called(
            "{ CheckBlame(w) would replay the tape }\nw := [[1.0]];\n\
             tape s := Sum(w); end;\nWriteLn('CheckBlame');\n",
        );
        assert!(!mentions.contains(&Does::CheckBlame), "{mentions:?}");
    }
}
