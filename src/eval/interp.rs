//! The evaluator: runs statements, keeps variables, calls routines, and
//! records operations on the tape while a tape block is open.
//!
//! Scopes: the globals, and one frame per routine call. Inside a routine a
//! name it assigns is local unless it is a global, which it may only read.
//! Every recorded operation goes through [`Interpreter::apply`], which runs
//! the operation's forward, stops on a NaN, and records it if a tape is open.

use rustc_hash::FxHashMap as HashMap;
use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ndarray::Array2;

use super::globals::{Globals, Slot};
use super::random::Random;
use super::value::Value;
use crate::check::errors::{self, wrong_count};
use crate::check::resolve::Resolution;
use crate::declarations::{self, Does};
use crate::diagnostic::{Diagnostic, SourceId, Span};
use crate::syntax::tree::*;
use crate::tape::ops::Elementwise;
use crate::tape::{Inputs, NodeRef, Op, OpError, Refused, Tape, Tensor};
use smallvec::SmallVec;

/// Deepest chain of routine calls before the run stops with an error.
pub const MAX_CALL_DEPTH: usize = 1000;
/// Most elements one matrix may have.
pub const MAX_ELEMENTS: usize = 1 << 28;
/// Most records one tape may hold (2^21, some 750 MB of records of numbers
/// and a second or two to make them): a long loop inside a tape stops with
/// an error rather than take the memory and the time there is.
pub const MAX_RECORDS: usize = 1 << 21;

/// The most calls of builtins that are not recorded a tape remembers for
/// its warning (`Interpreter::unrecorded_uses`).
pub const UNRECORDED_KEPT: usize = 32;
/// Most bytes of values an open tape may hold (4 GiB): a loop inside a tape
/// over large matrices stops with an error rather than take all the memory.
pub const MAX_TAPE_BYTES: usize = 1 << 32;
/// Most bytes one string may hold (256 MiB): a string doubled in a loop
/// stops with an error rather than take all the memory there is.
pub const MAX_STRING: usize = 1 << 28;

/// What to do with a Real where an Integer is needed (an index, a `for`
/// bound, a builtin's size or row number).
pub use crate::check::errors::INTEGER_HINT;

/// Why a run stopped early.
#[derive(Debug)]
pub enum Stop {
    Error(Box<Diagnostic>),
    /// Ctrl-C.
    Interrupted,
}

impl From<Diagnostic> for Stop {
    fn from(d: Diagnostic) -> Stop {
        Stop::Error(Box::new(d))
    }
}

pub type Flow<T> = Result<T, Stop>;

pub fn fail<T>(d: Diagnostic) -> Flow<T> {
    Err(Stop::Error(Box::new(d)))
}

/// Refuses a string of `bytes` bytes if it would pass [`MAX_STRING`],
/// before it is made.
pub fn check_string(bytes: usize, span: Span) -> Flow<()> {
    if bytes <= MAX_STRING {
        return Ok(());
    }
    fail(
        Diagnostic::new(span, format!("a string of {bytes} bytes is too long"))
            .with_label(span, "this string")
            .with_hint(format!(
                "a string may hold at most {MAX_STRING} bytes (256 MiB)"
            )),
    )
}

struct Frame {
    routine: Rc<Routine>,
    locals: HashMap<Rc<str>, Slot>,
    /// The `var` parameters: each names a variable of the caller's.
    refs: Vec<VarParam>,
}

/// A `var` parameter: its name, its annotation, and the variable it names.
struct VarParam {
    name: Rc<str>,
    declared: Option<TypeName>,
    place: Place,
    /// The annotation of the nearest caller's `var` parameter it was
    /// passed on through that has one: an assignment through it must fit
    /// that, as it must fit its own and the variable's. (Those further out
    /// are of the same type: each typed one was held to the nearest at its
    /// call, so one is kept, not a list that grows with each call of a
    /// recursion.)
    along: Option<Annotation>,
}

/// A caller's `var` parameter declared `ty`: its name and its routine's.
#[derive(Clone)]
struct Annotation {
    ty: TypeName,
    param: Rc<str>,
    routine: Rc<str>,
}

/// Where a variable lives: a global (by its number), or a local of the
/// frame at that depth. A `var` parameter passed on names the first
/// variable, so a place is never another parameter.
#[derive(Clone)]
enum Place {
    Global(u32, Rc<str>),
    Local(usize, Rc<str>),
}

impl Place {
    fn name(&self) -> &Rc<str> {
        match self {
            Place::Global(_, name) | Place::Local(_, name) => name,
        }
    }

    /// Whether both are the one variable.
    fn same(&self, other: &Place) -> bool {
        match (self, other) {
            (Place::Global(a, _), Place::Global(b, _)) => a == b,
            (Place::Local(a, x), Place::Local(b, y)) => a == b && x == y,
            _ => false,
        }
    }
}

/// What comes after a statement: the next one, or a loop signal on its
/// way to its loop (the checker proves one of the same routine and tape
/// is there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Go,
    Break,
    Continue,
}

/// The last assignment the tape block itself made: the tape's result.
#[derive(Debug, Clone)]
struct ResultCandidate {
    name: Rc<str>,
    value: Value,
    span: Span,
}

pub struct Interpreter {
    pub globals: Globals,
    /// What each name means, from the resolver.
    pub resolution: Resolution,
    frames: Vec<Frame>,
    pub routines: HashMap<String, Rc<Routine>>,
    pub tape: Tape,
    tape_frame_depth: usize,
    tape_result: Option<ResultCandidate>,
    /// The calls of builtins that are not recorded that took a value from
    /// the open tape (`Min(x, 3)`), each place once and at most
    /// [`UNRECORDED_KEPT`]: no blame passes through them, which the warning
    /// of a result that depends on no variable names when one is in the
    /// result's own assignment.
    pub(crate) unrecorded_uses: Vec<(&'static str, Span)>,
    pub rng: Random,
    pub out: Box<dyn Write>,
    /// Whether the last text written to `out` left its line open
    /// (`Write('ab')`): the REPL starts what it says itself on a new line.
    pub line_open: bool,
    /// Warnings not yet shown, for whoever runs the interpreter to render.
    pub warnings: Vec<Diagnostic>,
    /// Lines for stderr not yet shown: where files were written.
    pub notices: Vec<String>,
    /// Where notices are written as they come, each line in one write,
    /// when not kept in `notices` for later (a notebook shows them in
    /// the program's order among its output).
    pub notices_now: Option<Box<dyn Write>>,
    /// The places already warned about: a tape in a loop warns once.
    warned: HashSet<Span>,
    /// Each `Nudge` since the last tape opened: the record of the value it
    /// changed (named by its variable), the call, and the value it left,
    /// so that a second `Nudge` of one variable, or a `Blame` after it, is
    /// told about the first (unless the variable was assigned since).
    nudged: Vec<(u32, Span, Option<Value>)>,
    /// Each assignment since the last tape opened that replaced a
    /// variable's value recorded on it, or the value a `Nudge` left in
    /// place of that one: the record, where, and whether a `Nudge` came
    /// first, so that a `Blame` of the variable after it is told where.
    reassigned: Vec<(u32, Span, bool)>,
    /// The counters of the `for` loops running now that are globals, each
    /// with its name in the `for`: `Nudge` may not change one. The checker
    /// finds a `Nudge` written in a loop's body; a routine called from the
    /// loop can nudge a global only (it sees no other routine's locals,
    /// and a counter is never a `var` argument), so only the counters of
    /// the top level, and a routine's that are `var` parameters naming a
    /// global, are kept, by the global's name.
    counters: Vec<(Rc<str>, Span)>,
    /// The rate of the last `Nudge`, for the REPL's echo (a number: no
    /// allocation on the training path).
    pub last_nudge: Option<Value>,
    /// `ParamStr(0)`, `ParamStr(1)`, ...
    pub params: Vec<String>,
    /// The program file being run, which `Save` may not write over (none
    /// at the prompt).
    pub program: Option<PathBuf>,
    /// Where `ReadText` and `Plot` paths start from.
    pub base_dir: PathBuf,
    /// What `base_dir` is, in a learner's words, for the hint of an error
    /// about a path: "the program file's folder" unless the prompt says
    /// otherwise.
    pub paths_from: &'static str,
    /// The folders of the files loaded at the prompt, by their sources:
    /// a path written in one starts at its folder, wherever the routine
    /// that holds it is called from.
    pub folders: Vec<(SourceId, PathBuf)>,
    pub interrupt: Arc<AtomicBool>,
    /// When set, how many more loop turns and calls the run may make.
    pub step_budget: Option<u64>,
    /// The most elements one matrix may have ([`MAX_ELEMENTS`] unless a test lowers it).
    pub max_elements: usize,
    /// The most records a tape may hold ([`MAX_RECORDS`] unless a test lowers it).
    pub max_records: usize,
    /// The most bytes of values an open tape may hold ([`MAX_TAPE_BYTES`]
    /// unless a test lowers it).
    pub max_tape_bytes: usize,
    current_stmt: Span,
    /// Whether stderr is a terminal (for `Progress`).
    pub progress_on_terminal: bool,
    pub(crate) progress: Option<super::progress::ProgressBar>,
}

/// What a failed REPL line must leave as it was.
pub struct Snapshot {
    globals: Globals,
    routines: HashMap<String, Rc<Routine>>,
    rng: Random,
    tape: Tape,
    tape_result: Option<ResultCandidate>,
    unrecorded_uses: Vec<(&'static str, Span)>,
    /// The `Nudge`s and assignments since the tape, so that one undone is
    /// not told of later.
    nudged: Vec<(u32, Span, Option<Value>)>,
    reassigned: Vec<(u32, Span, bool)>,
}

impl Interpreter {
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            globals: self.globals.clone(),
            routines: self.routines.clone(),
            rng: self.rng.clone(),
            tape: self.tape.clone(),
            tape_result: self.tape_result.clone(),
            unrecorded_uses: self.unrecorded_uses.clone(),
            nudged: self.nudged.clone(),
            reassigned: self.reassigned.clone(),
        }
    }

    /// Puts back everything a snapshot holds, the tape included.
    pub fn restore(&mut self, s: Snapshot) {
        self.globals = s.globals;
        self.routines = s.routines;
        self.rng = s.rng;
        self.tape = s.tape;
        self.tape_result = s.tape_result;
        self.unrecorded_uses = s.unrecorded_uses;
        self.nudged = s.nudged;
        self.reassigned = s.reassigned;
        self.frames.clear();
        self.counters.clear();
    }

    pub fn new(out: Box<dyn Write>) -> Interpreter {
        Interpreter {
            warnings: Vec::new(),
            notices: Vec::new(),
            notices_now: None,
            warned: HashSet::new(),
            nudged: Vec::new(),
            reassigned: Vec::new(),
            counters: Vec::new(),
            last_nudge: None,
            globals: Globals::default(),
            resolution: Resolution::default(),
            frames: Vec::new(),
            routines: HashMap::default(),
            tape: Tape::default(),
            tape_frame_depth: 0,
            tape_result: None,
            unrecorded_uses: Vec::new(),
            rng: Random::default(),
            out,
            line_open: false,
            params: vec![String::new()],
            program: None,
            base_dir: PathBuf::from("."),
            paths_from: "the program file's folder",
            folders: Vec::new(),
            interrupt: Arc::new(AtomicBool::new(false)),
            step_budget: None,
            max_elements: MAX_ELEMENTS,
            max_records: MAX_RECORDS,
            max_tape_bytes: MAX_TAPE_BYTES,
            current_stmt: Span::default(),
            progress_on_terminal: false,
            progress: None,
        }
    }

    /// Resolves the names of a checked `program` and makes its top-level
    /// routines callable (they may be called before the text that declares
    /// them).
    pub fn take_in(&mut self, program: &Program) {
        self.resolution.resolve(program);
        for stmt in &program.body {
            if let StmtKind::Routine(r) = &stmt.kind {
                self.routines.insert(r.name.text.to_string(), r.clone());
            }
        }
    }

    pub fn run(&mut self, program: &Program) -> Flow<()> {
        self.take_in(program);
        let result = self.exec_block(&program.body);
        if result.is_err() {
            self.tape.open = false;
        }
        let _ = self.out.flush();
        result
    }

    /// `s := s + t` where `s` holds a string: `s`'s own string taken from
    /// its variable, so that `t` is appended to it in place (its room grown
    /// by doubling) rather than both copied into a new one, once `t` is
    /// worked out and is a string that the sum may hold. A string built a
    /// piece at a time so takes time in proportion to its length, not to
    /// its square. `None` where the statement is not of that form, and the
    /// value is then worked out as any other.
    fn appended_in_place(
        &mut self,
        target: &Name,
        first: &Expr,
        rest: &[(BinaryOp, Span, Expr)],
    ) -> Option<Flow<Value>> {
        let [(BinaryOp::Add, op_span, operand)] = rest else {
            return None;
        };
        let ExprKind::Name(name) = &first.kind else {
            return None;
        };
        // Not a string, seen without looking `s` up (`x := x + 0.5`).
        let number = match &operand.kind {
            ExprKind::Chain { rest, .. } => rest.iter().any(|(op, ..)| *op != BinaryOp::Add),
            kind => !matches!(
                kind,
                ExprKind::Str(_) | ExprKind::Name(_) | ExprKind::Call { .. }
            ),
        };
        if number {
            return None;
        }
        if name.text != target.text {
            return None;
        }
        // `s` as it is before the added part is worked out, which a call
        // in it may change through a `var` parameter: the sum is of this.
        let Some(Value::Str(before)) = &self.slot_mut(name)?.value else {
            return None;
        };
        let before = before.clone();
        Some(self.eval(operand).and_then(|right| {
            let Value::Str(b) = &right else {
                let left = (Value::Str(before), first.span);
                return self.binary(BinaryOp::Add, *op_span, left, (right, operand.span));
            };
            check_string(before.len() + b.len(), first.span.to(operand.span))?;
            // Taken from the variable if it still holds that string: then
            // nothing else may hold it, and it grows in place.
            let slot = self.slot_mut(name);
            let same = slot.as_ref().is_some_and(
                |slot| matches!(&slot.value, Some(Value::Str(now)) if Rc::ptr_eq(now, &before)),
            );
            let taken = slot.filter(|_| same).and_then(|slot| slot.value.take());
            let mut left = match taken {
                Some(Value::Str(now)) => {
                    drop(before);
                    now
                }
                _ => before,
            };
            Rc::make_mut(&mut left).push_str(b);
            Ok(Value::Str(left))
        }))
    }

    /// Stops the run if Ctrl-C has been pressed since the last check.
    pub(crate) fn interrupted(&self) -> Flow<()> {
        if self.interrupt.load(Ordering::Relaxed) {
            self.interrupt.store(false, Ordering::Relaxed);
            return Err(Stop::Interrupted);
        }
        Ok(())
    }

    fn tick(&mut self, span: Span) -> Flow<()> {
        self.interrupted()?;
        if let Some(budget) = &mut self.step_budget {
            if *budget == 0 {
                return fail(
                    Diagnostic::new(span, "the run used up its step budget")
                        .with_label(span, "still running here"),
                );
            }
            *budget -= 1;
        }
        Ok(())
    }

    pub fn exec_block(&mut self, body: &[Stmt]) -> Flow<()> {
        self.run_block(body).map(|_| ())
    }

    fn run_block(&mut self, body: &[Stmt]) -> Flow<Next> {
        for stmt in body {
            let next = self.run_stmt(stmt)?;
            if next != Next::Go {
                return Ok(next);
            }
        }
        Ok(Next::Go)
    }

    /// Runs a statement that holds no other statement; inside a tape, the
    /// values it recorded that nothing will read are then let go
    /// ([`crate::tape::Tape::release_unread`]).
    fn simple_statement(
        &mut self,
        span: Span,
        run: impl FnOnce(&mut Self) -> Flow<()>,
    ) -> Flow<()> {
        self.current_stmt = span;
        let from = self.tape.records.len();
        run(self)?;
        // A Ctrl-C during a statement of long operations, not in a loop,
        // stops the run at the statement's end, not after the program's
        // end. The statement completed, so the prompt keeps it (as it
        // keeps what completed before).
        self.interrupted()?;
        self.tape.release_unread(from);
        if !self.tape.open {
            return Ok(());
        }
        let over = if self.tape.records.len() > self.max_records {
            format!("more than {} records", self.max_records)
        } else if self.tape.held_bytes > self.max_tape_bytes {
            let cap = self.max_tape_bytes;
            if cap >= 1 << 30 && cap.is_multiple_of(1 << 30) {
                format!("more than {} GiB of values", cap >> 30)
            } else {
                format!("more than {cap} bytes of values")
            }
        } else {
            return Ok(());
        };
        fail(
            Diagnostic::new(span, format!("the tape holds {over}"))
                .with_label(span, "this statement took it past the limit")
                .with_hint(
                    "every operation inside `tape ... end;` is kept until the block ends: \
                     run a long loop outside the tape, with a tape inside it for each step",
                ),
        )
    }

    pub fn exec(&mut self, stmt: &Stmt) -> Flow<()> {
        self.run_stmt(stmt).map(|_| ())
    }

    /// Runs a statement, and says whether a `break` or `continue` in it is
    /// on its way to the loop around it. (A loop signal travels as a value,
    /// not as a [`Stop`]: a larger `Stop` made every statement slower.)
    fn run_stmt(&mut self, stmt: &Stmt) -> Flow<Next> {
        match &stmt.kind {
            StmtKind::Empty | StmtKind::Routine(_) | StmtKind::Error => Ok(Next::Go),
            StmtKind::Break => Ok(Next::Break),
            StmtKind::Continue => Ok(Next::Continue),
            StmtKind::Assign { target, value } => self
                .simple_statement(stmt.span, |me| {
                    let v = match &value.kind {
                        // An Integer first (`n := n + 1`), as `eval` would.
                        ExprKind::Chain { first, rest } => match me.plain_int(value) {
                            Some(n) => Value::int(n),
                            None => match me.appended_in_place(target, first, rest) {
                                Some(v) => v?,
                                None => me.eval_chain(first, rest)?,
                            },
                        },
                        _ => me.eval(value)?,
                    };
                    me.assign_statement(target, v, stmt.span)
                })
                .map(|()| Next::Go),
            StmtKind::AssignIndex {
                target,
                row,
                col,
                value,
            } => self
                .simple_statement(stmt.span, |me| me.assign_element(target, row, col, value))
                .map(|()| Next::Go),
            StmtKind::Expr(e) => self
                .simple_statement(stmt.span, |me| me.exec_expr(e).map(|_| ()))
                .map(|()| Next::Go),
            StmtKind::Block(body) => self.run_block(body),
            StmtKind::If {
                branches,
                otherwise,
            } => {
                for (cond, then) in branches {
                    if self.eval_condition(cond, "if")? {
                        return self.run_stmt(then);
                    }
                }
                match otherwise {
                    Some(otherwise) => self.run_stmt(otherwise),
                    None => Ok(Next::Go),
                }
            }
            StmtKind::For {
                var,
                from,
                to,
                down,
                body,
            } => {
                let first = self.eval(from)?;
                let first = self.expect_int(&first, from.span, "a `for` bound")?;
                let last = self.eval(to)?;
                let last = self.expect_int(&last, to.span, "a `for` bound")?;
                // A routine's counter is kept too where it is a global
                // under a `var` parameter's name, which another routine
                // may nudge by the global's.
                let counter = if self.frames.is_empty() {
                    var.text.clone()
                } else {
                    match self.place_of(var) {
                        Place::Global(_, global) => global,
                        _ => return self.count(var, first, last, *down, body).map(|_| Next::Go),
                    }
                };
                self.counters.push((counter, var.span));
                let counted = self.count(var, first, last, *down, body);
                self.counters.pop();
                counted.map(|_| Next::Go)
            }
            StmtKind::While { cond, body } => {
                while self.eval_condition(cond, "while")? {
                    self.tick(cond.span)?;
                    if self.run_stmt(body)? == Next::Break {
                        break;
                    }
                }
                Ok(Next::Go)
            }
            StmtKind::Repeat { body, cond } => loop {
                self.tick(cond.span)?;
                if self.run_block(body)? == Next::Break || self.eval_condition(cond, "until")? {
                    return Ok(Next::Go);
                }
            },
            StmtKind::Tape { body, end } => self.run_tape(stmt.span, body, *end).map(|_| Next::Go),
            StmtKind::Var(decls) => {
                for decl in decls {
                    let ty = decl.ty.map(|(t, _)| t);
                    if let Some(frame) = self.frames.last_mut() {
                        frame
                            .locals
                            .insert(decl.name.text.clone(), Slot::new(None, ty));
                    } else {
                        let n = self.global_number(&decl.name);
                        let slot =
                            self.globals
                                .get_or_insert(&decl.name.text, n, Slot::new(None, None));
                        // A value assigned before the declaration must be
                        // of the declared type, as every later one is.
                        if let (Some((ty, ty_span)), Some(v)) = (decl.ty, &slot.value)
                            && !v.fits(ty)
                        {
                            return fail(errors::declared_after_assignment(
                                &decl.name,
                                ty_span,
                                ty,
                                &v.describe(),
                            ));
                        }
                        if let Some(v) = slot.value.take() {
                            slot.value = Some(check_declared(ty, v, &decl.name)?);
                        }
                        slot.declared = ty;
                    }
                }
                Ok(Next::Go)
            }
        }
    }

    /// Runs a statement that is an expression: a procedure call, or at the
    /// REPL any expression. Returns the value, if it has one.
    pub fn exec_expr(&mut self, e: &Expr) -> Flow<Option<Value>> {
        match &e.kind {
            ExprKind::Call { name, args } => self.call(name, args, e.span),
            ExprKind::Name(name) if !self.is_variable(&name.text) => self.call(name, &[], e.span),
            _ => self.eval(e).map(Some),
        }
    }

    // ----- the tape -----

    pub fn tape_is_open(&self) -> bool {
        self.tape.open
    }

    pub fn open_tape(&mut self, span: Span) -> Flow<()> {
        if self.tape.open {
            return fail(errors::nested_tape(span));
        }
        self.tape.start();
        self.nudged.clear();
        self.reassigned.clear();
        self.tape_frame_depth = self.frames.len();
        self.tape_result = None;
        self.unrecorded_uses.clear();
        Ok(())
    }

    /// Ends the open tape: checks its result and runs the reverse walk.
    /// Returns the result's variable name and value.
    /// Runs a `tape ... end;` statement written at `at`: its block
    /// recorded, then the walk. Gives the tape's result, its variable's
    /// name and value.
    pub fn run_tape(&mut self, at: Span, body: &[Stmt], end: Span) -> Flow<(String, Value)> {
        self.open_tape(errors::tape_keyword(at))?;
        // The checker keeps a loop signal inside the tape.
        if let Err(e) = self.run_block(body) {
            self.tape.open = false;
            return Err(e);
        }
        self.close_tape(end)
    }

    pub fn close_tape(&mut self, end: Span) -> Flow<(String, Value)> {
        self.tape.open = false;
        let Some(candidate) = self.tape_result.take() else {
            return fail(
                Diagnostic::new(end, "this tape assigns nothing, so it has no result")
                    .with_label(end, "the tape ends here")
                    .with_hint(
                        "end the tape with an assignment of a number, such as `s := Sum(o);`",
                    ),
            );
        };
        // A tape must end on a number (or a 1×1 matrix): anything else is an
        // error at the assignment that made the result.
        let not_a_number = |hint: String| {
            let what = candidate.value.describe();
            fail(
                Diagnostic::new(
                    candidate.span,
                    format!(
                        "a tape must end on a number, but its last assignment gives `{}` {what}",
                        candidate.name
                    ),
                )
                .with_label(candidate.span, format!("the tape's result: {what}"))
                .with_hint(hint),
            )
        };
        let node = match &candidate.value {
            Value::Matrix(m, _) if m.dim() != (1, 1) => {
                return not_a_number(format!(
                    "end the tape with a number, such as `s := Sum({});`",
                    candidate.name
                ));
            }
            Value::Str(_) | Value::Bool(_) => {
                return not_a_number(
                    "the tape's result is its last assignment: assign the number last, \
                     and anything else after `end;`"
                        .to_string(),
                );
            }
            v => match self.tape.find(v.tag()) {
                Some(node) => node,
                None => self
                    .tape
                    .push(Op::Leaf, Inputs::new(), to_tensor(v), candidate.span),
            },
        };
        // The walk makes a blame of each value's shape: room for one of
        // the largest is the least it needs.
        let largest = (self.tape.records.iter())
            .map(|r| r.shape.0 * r.shape.1)
            .max()
            .unwrap_or(1);
        if !crate::memory::room_for(largest.saturating_mul(8)) {
            return fail(no_room(
                largest,
                "the reverse walk's blames".to_string(),
                end,
            ));
        }
        if let Err(e) = self.tape.walk(node) {
            let record = &self.tape.records[e.record];
            let at = nan_at(
                self.tape.records[record.inputs[e.input] as usize].shape,
                e.position,
            );
            let (op, input) = (record.op.name(), e.input + 1);
            let (what, label, hint) = if e.summed {
                (
                    "a blame that, added to the blame it already had, is NaN",
                    format!("this {op}'s blame for input {input} adds up to NaN"),
                    "blames of +inf and -inf for one value add up to NaN",
                )
            } else {
                (
                    "a NaN blame",
                    format!("this {op} passes on a NaN blame"),
                    "a blame becomes NaN where a rule divides by zero, e.g. Sqrt or Log at 0",
                )
            };
            return fail(
                Diagnostic::new(
                    record.span,
                    format!(
                        "the reverse walk made a NaN: the per-link rule of {op} gave input {input} {what}{at}"
                    ),
                )
                .with_label(record.span, label)
                .with_hint(hint),
            );
        }
        if !self.tape.depends_on_another_variable(node, &candidate.name)
            && self.warned.insert(candidate.span)
        {
            let within = |at: &Span| {
                at.source == candidate.span.source
                    && at.start >= candidate.span.start
                    && at.end <= candidate.span.end
            };
            let used = self
                .unrecorded_uses
                .iter()
                .find(|(_, at)| within(at))
                .copied();
            // Made through an operation that is not recorded, the result
            // may well depend on other variables, with no link to them.
            let how = if used.is_some() {
                "is linked to no other variable by a recorded operation"
            } else {
                "depends on no other variable"
            };
            let d = Diagnostic::warning(
                candidate.span,
                format!(
                    "the tape's result `{}` {how}, so every blame but its own is 0",
                    candidate.name
                ),
            )
            .with_label(candidate.span, "the tape's result: its last assignment");
            if let Some((_, at)) = used {
                // This warning names the call: it is not warned again below.
                self.warned.insert(at);
            }
            let d = match used {
                Some(("Power", at)) => d
                    .with_label(at, "`Power` passes no blame to its exponent")
                    .with_hint(POWER_EXPONENT),
                Some((name @ ("div" | "mod"), at)) => d
                    .with_label(at, format!("`{name}` is not recorded: no blame passes through it"))
                    .with_hint(
                        "`div` and `mod` work on Integers, whose steps are whole: \
                         they are not recorded, so no blame reaches what they take",
                    ),
                Some((name, at)) => d
                    .with_label(at, format!("`{name}` is not recorded: no blame passes through it"))
                    .with_hint(format!(
                        "a value that goes through `{name}` keeps no link to what it was made from, \
                         so no blame reaches them; compute it with recorded operations instead"
                    )),
                None => d.with_hint(
                    "the result is the last assignment the tape runs; \
                     assign the loss last (a counter `n := n + 1` after it takes its place)",
                ),
            };
            self.warnings.push(d);
        }
        // `Min`, `Max` and `Fill` give a value that moves with their
        // inputs, but keep no link to them, and `Power` reads its exponent
        // as a plain number: the blame that should pass through stops
        // there, silently (as it does in `CheckBlame`'s replay). Said once
        // for each place, like every warning.
        for &(name, at) in &self.unrecorded_uses {
            if name == "Power" && self.warned.insert(at) {
                let d = Diagnostic::warning(
                    at,
                    "`Power` passes no blame to its exponent, which is on the tape",
                )
                .with_label(at, "this exponent's blame stays 0")
                .with_hint(POWER_EXPONENT);
                self.warnings.push(d);
            }
            if matches!(name, "Min" | "Max" | "Fill") && self.warned.insert(at) {
                let d = Diagnostic::warning(
                    at,
                    format!("`{name}` is not recorded: no blame passes through it to what it takes from the tape"),
                )
                .with_label(at, format!("takes a value on the tape; blame stops at this `{name}`"))
                .with_hint(match name {
                    "Fill" => concat!(
                        "a value that goes through `Fill` keeps no link to what it was made from; ",
                        "to spread a recorded number over a matrix, multiply `Ones(m, n)` by it"
                    ),
                    _ => concat!(
                        "a value that goes through `Min` or `Max` keeps no link to what it was made from; ",
                        "`ReLU(a - b) + b` is max(a, b) with its blame, and `a - ReLU(a - b)` is min(a, b)"
                    ),
                });
                self.warnings.push(d);
            }
        }
        Ok((candidate.name.to_string(), candidate.value))
    }

    /// Notes that `what` (an unrecorded builtin, `div`, `mod`, or
    /// `Power`'s exponent) took a value of the open tape at `at`, for the
    /// warnings given when the tape closes; each place once.
    pub(super) fn note_unrecorded(&mut self, what: &'static str, at: Span) {
        if self.unrecorded_uses.len() < UNRECORDED_KEPT
            && !self.unrecorded_uses.iter().any(|&(_, seen)| seen == at)
        {
            self.unrecorded_uses.push((what, at));
        }
    }

    /// Puts a value on the open tape if it is not there yet (as a leaf) and
    /// returns its record.
    fn node_of(&mut self, v: &Value, span: Span) -> u32 {
        match self.tape.find(v.tag()) {
            Some(node) => node,
            None => self.tape.push(Op::Leaf, Inputs::new(), to_tensor(v), span),
        }
    }

    /// Runs a recorded operation: the values go down to the tape once
    /// ([`Tape::apply`]: forward, NaN check, and a record if a tape is
    /// open), and what it refuses comes back as a diagnostic.
    pub fn apply(&mut self, op: Op, args: &[(&Value, Span)], span: Span) -> Flow<Value> {
        self.interrupted()?;
        let inputs = tape_inputs(args);
        // Only an operation on a large input makes a large result here
        // (about its largest input's size, with what it keeps): those
        // whose result outgrows their inputs, a product, HStack and
        // Embed, were asked for by `check_size`.
        if inputs
            .iter()
            .any(|i| i.0.len() * 16 >= crate::memory::ASKED_FROM)
        {
            let shapes: SmallVec<[(usize, usize); 2]> =
                inputs.iter().map(|i| i.0.shape()).collect();
            let elements = op.most_elements(&shapes);
            if !crate::memory::room_for(elements.saturating_mul(8)) {
                return fail(no_room(elements, shown_op(op.name()), span));
            }
        }
        let name = op.name();
        match self.tape.apply(op, &inputs, span) {
            Ok((output, tag)) => Ok(from_tensor(output, tag)),
            Err(Refused::Op(e)) => fail(self.op_error(e, args, span)),
            Err(Refused::Nan(shape, position)) => {
                let at = nan_at(shape, position);
                let name = shown_op(name);
                let d = Diagnostic::new(span, format!("{name} made a NaN (not a number){at}"))
                    .with_label(span, format!("this {name} gives NaN"));
                // A statement that is the operation alone (`Log(-1.0);` at
                // the prompt) is not labelled twice.
                let d = if self.current_stmt == span {
                    d
                } else {
                    d.with_label(self.current_stmt, "in this statement")
                };
                fail(d.with_hint(if name == "Power" {
                    "a negative number to a power that is not a whole number has no real value"
                } else {
                    "NaN comes from 0/0, inf - inf, 0 * inf, or Log or Sqrt of a negative number"
                }))
            }
        }
    }

    /// An Integer result `n` of `op` (computed exactly, by the caller):
    /// inside a tape it is recorded like the same operation on Reals, with
    /// `n` as the record's value, so blame reaches Integer leaves.
    pub fn exact(&mut self, n: i64, op: Op, args: &[(&Value, Span)], span: Span) -> Value {
        if !self.tape.open {
            return Value::int(n);
        }
        let inputs = tape_inputs(args);
        let node = self
            .tape
            .record(op, &inputs, Tensor::Scalar(n as f64), span);
        Value::Int(n, Some(self.tape.node(node)))
    }

    fn op_error(&self, e: OpError, args: &[(&Value, Span)], span: Span) -> Diagnostic {
        let mut d = Diagnostic::new(span, e.message);
        if e.labels.is_empty() {
            d = d.with_label(span, "here");
        }
        for (input, text) in e.labels {
            let at = args.get(input).map_or(span, |(_, s)| *s);
            d = d.with_label(at, text);
        }
        if let Some(h) = e.hint {
            d = d.with_hint(h);
        }
        d
    }

    // ----- variables -----

    pub fn is_variable(&self, name: &str) -> bool {
        self.frames
            .last()
            .is_some_and(|f| f.locals.contains_key(name) || f.refs.iter().any(|r| *r.name == *name))
            || self.globals.contains_key(name)
    }

    fn slot_mut(&mut self, name: &Name) -> Option<&mut Slot> {
        slot_in(&mut self.frames, &mut self.globals, &self.resolution, name)
    }

    /// The global number of `name`, given now if the resolver never saw it.
    fn global_number(&mut self, name: &Name) -> u32 {
        match self.resolution.global(name) {
            Some(n) => n,
            None => self.resolution.number(&name.text),
        }
    }

    fn read_variable(&mut self, name: &Name) -> Flow<Value> {
        match self.try_read_variable(name) {
            Some(read) => read,
            None => fail(self.unknown_variable(name)),
        }
    }

    /// Reads a variable, or `None` if there is none of that name in sight.
    fn try_read_variable(&mut self, name: &Name) -> Option<Flow<Value>> {
        if let Some(at) = var_param_of(&self.frames, &name.text) {
            let shown = self.frames[self.frames.len() - 1].refs[at]
                .place
                .name()
                .clone();
            let tape = &mut self.tape;
            let Some(slot) = place_slot(&mut self.frames, &mut self.globals, at) else {
                return Some(fail(no_value_through(name, &shown)));
            };
            return Some(read_slot(slot, tape, name, &shown));
        }
        let tape = &mut self.tape;
        let slot = slot_in(&mut self.frames, &mut self.globals, &self.resolution, name)?;
        Some(read_slot(slot, tape, name, &name.text))
    }

    /// The name a variable is shown under on the tape: for a `var`
    /// parameter, the caller's variable's.
    pub(crate) fn shown_name(&self, name: &Name) -> Rc<str> {
        match var_param_of(&self.frames, &name.text) {
            Some(at) => self.frames[self.frames.len() - 1].refs[at]
                .place
                .name()
                .clone(),
            None => name.text.clone(),
        }
    }

    /// Assigns the variable the running routine's `var` parameter `at`
    /// names, by the parameter's annotation and the variable's own.
    #[inline(never)]
    fn assign_through(&mut self, at: usize, target: &Name, v: Value, span: Span) -> Flow<()> {
        let r = &self.frames[self.frames.len() - 1].refs[at];
        let mut v = check_declared(r.declared, v, target)?;
        if let Some(a) = &r.along {
            v = check_along(a, v, target)?;
        }
        let old = match r.place.clone() {
            Place::Global(n, name) => match self.globals.at_mut(n) {
                Some(slot) => slot.replace(check_caller_declared(slot.declared, v, target, &name)?),
                None => {
                    let slot = Slot::new(Some(v), None);
                    self.globals.get_or_insert(&name, n, slot);
                    (None, false)
                }
            },
            Place::Local(depth, name) => match self.frames[depth].locals.get_mut(&*name) {
                Some(slot) => slot.replace(check_caller_declared(slot.declared, v, target, &name)?),
                None => {
                    let slot = Slot::new(Some(v), None);
                    self.frames[depth].locals.insert(name, slot);
                    (None, false)
                }
            },
        };
        self.note_reassignment(old, target, span);
        Ok(())
    }

    /// Remembers `span` as the assignment that replaced `target`'s value
    /// recorded on the last tape (`old`, the record it held), if it did,
    /// or the first since a `Nudge` of it, whose value the tape never held.
    /// `old` is the value replaced and whether a `Nudge` left it
    /// ([`Slot::replace`]).
    #[inline]
    fn note_reassignment(&mut self, old: (Option<Value>, bool), target: &Name, span: Span) {
        self.note_reassignment_of(old.0.and_then(|v| v.tag()), old.1, target, span);
    }

    /// [`Self::note_reassignment`] of a value whose record was `old`, and
    /// which a `Nudge` left if `after_nudge`.
    #[inline]
    fn note_reassignment_of(
        &mut self,
        old: Option<NodeRef>,
        after_nudge: bool,
        target: &Name,
        span: Span,
    ) {
        #[cold]
        #[inline(never)]
        fn note(me: &mut Interpreter, old: Option<NodeRef>, target: &Name, span: Span) {
            let shown = Some(me.shown_name(target));
            if let Some(node) = me.tape.find(old) {
                // A copy of another variable's value (`v := w`) holds that
                // variable's record: only the variable's own counts.
                if me.tape.records[node as usize].name == shown {
                    me.reassigned.push((node, span, false));
                }
                return;
            }
            let nudged = me
                .nudged
                .iter()
                .rev()
                .find(|(node, ..)| me.tape.records[*node as usize].name == shown);
            if let Some(&(node, ..)) = nudged
                && !me.reassigned.iter().any(|(n, ..)| *n == node)
            {
                me.reassigned.push((node, span, true));
            }
        }
        if (old.is_some() || after_nudge) && !self.tape.open {
            note(self, old, target, span);
        }
    }

    /// A name read before any assignment to it has run. The checker has
    /// seen one in the program (a name nothing assigns is its error), so
    /// this is not a misspelling but an assignment that did not run.
    pub fn unknown_variable(&self, name: &Name) -> Diagnostic {
        Diagnostic::new(name.span, format!("`{}` has no value yet", name.text))
            .with_label(
                name.span,
                format!("no assignment to `{}` has run before this", name.text),
            )
            .with_hint(
                "a variable gets its value when an assignment to it runs: one in an `if` branch \
                 not taken, in a routine not called yet, or in a loop that ran no turn \
                 (`for i := 3 to 1`) gives it none",
            )
    }

    /// An assignment statement: inside a tape the value goes on the tape and,
    /// if the block itself made the assignment, becomes the result so far.
    fn assign_statement(&mut self, target: &Name, mut v: Value, span: Span) -> Flow<()> {
        if self.tape.open {
            if matches!(v, Value::Int(..) | Value::Real(..) | Value::Matrix(..)) {
                let node = self.node_of(&v, span);
                // A function's result takes the name of the variable it is
                // assigned to, as an operation's does; unassigned, it keeps
                // the name of its call.
                let record = &self.tape.records[node as usize];
                if record.name.is_none() || record.call.is_some() {
                    let shown = self.shown_name(target);
                    let record = &mut self.tape.records[node as usize];
                    record.name = Some(shown);
                    record.call = None;
                }
                v = retag(v, Some(self.tape.node(node)));
            }
            // The block's own assignments count, and so do those a routine
            // makes through a `var` parameter to a variable of the block:
            // such a parameter is recorded as the variable itself.
            let blocks_own = self.frames.len() == self.tape_frame_depth;
            let through = match var_param_of(&self.frames, &target.text) {
                Some(at) => match &self.frames[self.frames.len() - 1].refs[at].place {
                    Place::Global(_, name) if self.tape_frame_depth == 0 => Some(name.clone()),
                    Place::Local(depth, name) if depth + 1 == self.tape_frame_depth => {
                        Some(name.clone())
                    }
                    _ => None,
                },
                None => None,
            };
            if blocks_own || through.is_some() {
                self.tape_result = Some(ResultCandidate {
                    name: through.unwrap_or_else(|| target.text.clone()),
                    value: v.clone(),
                    span,
                });
            }
        }
        self.assign(target, v, span)
    }

    /// Stores a value in a variable, by the scope rules of routines; `span`
    /// is the assignment.
    pub fn assign(&mut self, target: &Name, v: Value, span: Span) -> Flow<()> {
        if let Some(at) = var_param_of(&self.frames, &target.text) {
            return self.assign_through(at, target, v, span);
        }
        let name = &target.text;
        let routine = self.frames.last().map(|f| f.routine.clone());
        let slot = match self.frames.last_mut() {
            Some(frame) if frame.locals.contains_key(&**name) => frame.locals.get_mut(&**name),
            Some(_) if self.globals.contains_key(name) => {
                let routine = routine.expect("in a routine");
                return fail(errors::global_assigned(&routine, target));
            }
            Some(frame) => {
                frame.locals.insert(name.clone(), Slot::new(Some(v), None));
                return Ok(());
            }
            None => {
                let n = self.global_number(target);
                if let Some(slot) = self.globals.at_mut(n) {
                    let old = slot.replace(check_declared(slot.declared, v, target)?);
                    self.note_reassignment(old, target, span);
                } else {
                    self.globals
                        .get_or_insert(name, n, Slot::new(Some(v), None));
                }
                return Ok(());
            }
        };
        let slot = slot.expect("slot exists");
        let v = check_declared(slot.declared, v, target)?;
        let old = slot.replace(v);
        self.note_reassignment(old, target, span);
        Ok(())
    }

    fn assign_element(&mut self, target: &Name, row: &Expr, col: &Expr, value: &Expr) -> Flow<()> {
        if self.tape.open {
            return fail(errors::element_in_tape(
                target.span,
                target.span.to(value.span),
            ));
        }
        let i = self.eval_int_first(row)?;
        let j = self.eval_int_first(col)?;
        let x = self.eval_int_first(value)?;
        let x = match x.as_number() {
            Some(x) => x,
            None => return fail(errors::element_not_a_number(value.span, &x.describe())),
        };
        let current = self.read_variable(target)?;
        let Value::Matrix(m, _) = current else {
            return fail(
                Diagnostic::new(
                    target.span,
                    format!("`{}` is {}, not a matrix", target.text, current.describe()),
                )
                .with_label(target.span, "only a matrix has elements"),
            );
        };
        let (r, c) = self.index_pair(&m, (&i, row.span), (&j, col.span))?;
        drop(m);
        // Take the matrix out of its variable so that, when nothing else
        // holds it, the element is written in place rather than copied.
        let slot = self.slot_mut(target).expect("read above");
        let Some(Value::Matrix(mut m, old)) = slot.value.take() else {
            unreachable!("checked to be a matrix above")
        };
        if Rc::strong_count(&m) > 1 && !crate::memory::room_for(m.len() * 8) {
            let elements = m.len();
            slot.value = Some(Value::Matrix(m, old));
            return fail(no_room(
                elements,
                format!(
                    "a copy of `{}`, whose matrix another value holds too",
                    target.text
                ),
                target.span.to(value.span),
            ));
        }
        Rc::make_mut(&mut m)[(r, c)] = x;
        slot.value = Some(Value::Matrix(m, None));
        let after_nudge = std::mem::take(&mut slot.nudged);
        self.note_reassignment_of(old, after_nudge, target, target.span.to(value.span));
        Ok(())
    }

    /// Checks a 1-based (row, column) pair against `m` and makes it 0-based.
    pub fn index_pair(
        &self,
        m: &Array2<f64>,
        i: (&Value, Span),
        j: (&Value, Span),
    ) -> Flow<(usize, usize)> {
        let r = self.index(i.0, i.1, m.nrows(), "row")?;
        let c = self.index(j.0, j.1, m.ncols(), "column")?;
        Ok((r, c))
    }

    /// A 1-based index into `count` rows or columns, made 0-based.
    pub fn index(&self, v: &Value, span: Span, count: usize, what: &str) -> Flow<usize> {
        let n = match v {
            Value::Int(n, _) => *n,
            Value::Real(x, _) => {
                return fail(
                    Diagnostic::new(
                        span,
                        format!(
                            "a {what} number must be an Integer, but this is the Real {}",
                            super::format::real(*x, 6)
                        ),
                    )
                    .with_label(span, "not an Integer")
                    .with_hint(INTEGER_HINT),
                );
            }
            other => {
                return fail(
                    Diagnostic::new(
                        span,
                        format!(
                            "a {what} number must be an Integer, but this is {}",
                            other.describe()
                        ),
                    )
                    .with_label(span, "not an Integer"),
                );
            }
        };
        if n == 0 {
            return fail(
                Diagnostic::new(span, format!("0 is not a {what} number: they start at 1"))
                    .with_label(span, "this is 0"),
            );
        }
        if n < 0 || n as u64 > count as u64 {
            let there = if count == 1 { "there is" } else { "there are" };
            return fail(
                Diagnostic::new(
                    span,
                    format!(
                        "{what} {n} is out of range: {there} {}",
                        crate::diagnostic::counted(count, what)
                    ),
                )
                .with_label(span, format!("must be between 1 and {count}")),
            );
        }
        Ok(n as usize - 1)
    }

    // ----- expressions -----

    fn eval_condition(&mut self, cond: &Expr, what: &str) -> Flow<bool> {
        match self.eval(cond)? {
            Value::Bool(b) => Ok(b),
            other => fail(
                Diagnostic::new(
                    cond.span,
                    format!(
                        "`{what}` needs a Boolean condition, but this is {}",
                        other.describe()
                    ),
                )
                .with_label(cond.span, other.describe()),
            ),
        }
    }

    pub fn eval(&mut self, e: &Expr) -> Flow<Value> {
        match &e.kind {
            ExprKind::Integer(n) => Ok(Value::int(*n)),
            ExprKind::Real(x) => Ok(Value::Real(*x, None)),
            ExprKind::Str(s) => Ok(Value::Str(Rc::new(s.clone()))),
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::Name(name) => {
                if let Some(read) = self.try_read_variable(name) {
                    return read;
                }
                if &*name.text == "Inf" {
                    return Ok(Value::Real(f64::INFINITY, None));
                }
                if self.routines.contains_key(&*name.text)
                    || declarations::find(&name.text).is_some()
                {
                    return self.call_for_value(name, &[], e.span);
                }
                fail(self.unknown_variable(name))
            }
            ExprKind::Call { name, args } => self.call_for_value(name, args, e.span),
            ExprKind::Matrix(rows) => self.eval_matrix(rows, e.span),
            ExprKind::Index { target, row, col } => {
                let m = self.eval(target)?;
                let i = self.eval_int_first(row)?;
                let j = self.eval_int_first(col)?;
                let Value::Matrix(mat, _) = &m else {
                    return fail(
                        Diagnostic::new(
                            target.span,
                            format!("only a matrix can be indexed, but this is {}", m.describe()),
                        )
                        .with_label(target.span, m.describe()),
                    );
                };
                let (r, c) = self.index_pair(mat, (&i, row.span), (&j, col.span))?;
                self.apply(Op::Element(r, c), &[(&m, target.span)], e.span)
            }
            ExprKind::Unary {
                op: UnaryOp::Neg,
                op_span,
                operand,
            } => {
                let v = self.eval(operand)?;
                match v {
                    Value::Int(n, _) => match n.checked_neg() {
                        Some(n) => Ok(self.exact(n, Op::Neg, &[(&v, operand.span)], e.span)),
                        None => fail(overflow(e.span, &format!("-({n})"))),
                    },
                    Value::Real(..) | Value::Matrix(..) => {
                        self.apply(Op::Neg, &[(&v, operand.span)], e.span)
                    }
                    other => fail(
                        Diagnostic::new(*op_span, format!("cannot negate {}", other.describe()))
                            .with_label(operand.span, other.describe()),
                    ),
                }
            }
            ExprKind::Unary {
                op: UnaryOp::Not,
                op_span,
                operand,
            } => match self.eval(operand)? {
                Value::Bool(b) => Ok(Value::Bool(!b)),
                other => fail(
                    Diagnostic::new(
                        *op_span,
                        format!("`not` needs a Boolean, but this is {}", other.describe()),
                    )
                    .with_label(operand.span, other.describe()),
                ),
            },
            ExprKind::Chain { first, rest } => {
                if let Some(n) = self.plain_int(e) {
                    return Ok(Value::int(n));
                }
                self.eval_chain(first, rest)
            }
            ExprKind::Error => fail(Diagnostic::new(e.span, "this expression did not parse")),
        }
    }

    /// `first op1 e1 op2 e2 ...`, grouped to the left, where it is not a
    /// plain Integer expression.
    fn eval_chain(&mut self, first: &Expr, rest: &[(BinaryOp, Span, Expr)]) -> Flow<Value> {
        let mut acc = self.eval(first)?;
        let mut acc_span = first.span;
        for (op, op_span, operand) in rest {
            match (op, &acc) {
                (BinaryOp::And, Value::Bool(false)) | (BinaryOp::Or, Value::Bool(true)) => {
                    acc_span = acc_span.to(operand.span);
                    continue;
                }
                _ => {}
            }
            let right = self.eval(operand)?;
            acc = self.binary(*op, *op_span, (acc, acc_span), (right, operand.span))?;
            acc_span = acc_span.to(operand.span);
        }
        Ok(acc)
    }

    /// The value of an Integer expression made of literals, variables and
    /// `+ - * div mod`, computed without a [`Value`] for each part, when no
    /// tape is open; `None` for anything else, and for a result the general
    /// path must report (an overflow, a division by zero, a name with no
    /// value), which then evaluates the expression again. Reading a
    /// variable with no tape open changes nothing, so nothing is done twice.
    fn plain_int(&mut self, e: &Expr) -> Option<i64> {
        if self.tape.open {
            return None;
        }
        self.int_part(e)
    }

    /// [`Interpreter::eval`] by way of [`Interpreter::plain_int`]: for an
    /// expression that is most often an Integer (an index, an argument).
    #[inline(always)]
    pub(super) fn eval_int_first(&mut self, e: &Expr) -> Flow<Value> {
        match self.plain_int(e) {
            Some(n) => Ok(Value::int(n)),
            None => self.eval(e),
        }
    }

    fn int_part(&mut self, e: &Expr) -> Option<i64> {
        match &e.kind {
            ExprKind::Integer(n) => Some(*n),
            ExprKind::Name(name) => {
                match slot_in(&mut self.frames, &mut self.globals, &self.resolution, name)?.value {
                    Some(Value::Int(n, _)) => Some(n),
                    _ => None,
                }
            }
            ExprKind::Chain { first, rest } => {
                let mut acc = self.int_part(first)?;
                for (op, _, operand) in rest {
                    acc = int_arithmetic(*op, acc, self.int_part(operand)?)?;
                }
                Some(acc)
            }
            _ => None,
        }
    }

    fn eval_matrix(&mut self, rows: &[(Vec<Expr>, Span)], span: Span) -> Flow<Value> {
        let cols = rows[0].0.len();
        if let Some(d) = errors::ragged_matrix(rows) {
            return fail(d);
        }
        let mut values = Vec::with_capacity(rows.len() * cols);
        for (row, _) in rows {
            for element in row {
                let v = self.eval(element)?;
                match v {
                    Value::Int(..) | Value::Real(..) => values.push((v, element.span)),
                    other => {
                        return fail(errors::element_not_a_number(
                            element.span,
                            &other.describe(),
                        ));
                    }
                }
            }
        }
        let args: Vec<(&Value, Span)> = values.iter().map(|(v, s)| (v, *s)).collect();
        self.apply(Op::Literal(rows.len(), cols), &args, span)
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        op_span: Span,
        left: (Value, Span),
        right: (Value, Span),
    ) -> Flow<Value> {
        use BinaryOp::*;
        let (l, ls) = left;
        let (r, rs) = right;
        let span = ls.to(rs);
        let type_error = |verb: &str, l: &Value, r: &Value| {
            Diagnostic::new(
                op_span,
                format!("cannot {verb} {} and {}", l.describe(), r.describe()),
            )
            .with_label(ls, l.describe())
            .with_label(rs, r.describe())
        };
        match op {
            And | Or => match (&l, &r) {
                (Value::Bool(a), Value::Bool(b)) => {
                    Ok(Value::Bool(if op == And { *a && *b } else { *a || *b }))
                }
                _ => fail(
                    type_error(if op == And { "`and`" } else { "`or`" }, &l, &r)
                        .with_hint("`and` and `or` take Booleans"),
                ),
            },
            Eq | Ne => {
                let same = match (&l, &r) {
                    (Value::Bool(a), Value::Bool(b)) => a == b,
                    (Value::Str(a), Value::Str(b)) => a == b,
                    (Value::Int(a, _), Value::Int(b, _)) => a == b,
                    (Value::Matrix(a, _), Value::Matrix(b, _)) => a == b,
                    (a, b) => match (a.as_number(), b.as_number()) {
                        (Some(x), Some(y)) => x == y,
                        _ => {
                            return fail(
                                type_error("compare", &l, &r)
                                    .with_hint("`=` and `<>` compare values of one type"),
                            );
                        }
                    },
                };
                Ok(Value::Bool(if op == Eq { same } else { !same }))
            }
            Lt | Le | Gt | Ge => {
                let ordering = match (&l, &r) {
                    (Value::Str(a), Value::Str(b)) => a.cmp(b),
                    (Value::Int(a, _), Value::Int(b, _)) => a.cmp(b),
                    (a, b) => match (a.as_number(), b.as_number()) {
                        (Some(x), Some(y)) => match x.partial_cmp(&y) {
                            Some(o) => o,
                            None => return Ok(Value::Bool(false)),
                        },
                        _ => {
                            return fail(type_error("compare", &l, &r).with_hint(
                                "`<`, `<=`, `>` and `>=` take two numbers or two strings",
                            ));
                        }
                    },
                };
                use std::cmp::Ordering::*;
                let yes = match op {
                    Lt => ordering == Less,
                    Le => ordering != Greater,
                    Gt => ordering == Greater,
                    _ => ordering != Less,
                };
                Ok(Value::Bool(yes))
            }
            IntDiv | Mod => match (&l, &r) {
                (Value::Int(a, _), Value::Int(b, _)) => {
                    if *b == 0 {
                        return fail(
                            Diagnostic::new(op_span, format!("`{}` by zero", op.symbol()))
                                .with_label(rs, "this is 0"),
                        );
                    }
                    // An Integer on the tape that goes through `div` or
                    // `mod` takes no record: its blame stops here, which
                    // a result made this way is warned about.
                    if self.tape.open
                        && [&l, &r]
                            .iter()
                            .any(|v| v.tag().is_some_and(|t| t.tape() == self.tape.id))
                    {
                        self.note_unrecorded(op.symbol(), span);
                    }
                    int_arithmetic(op, *a, *b)
                        .map(Value::int)
                        .ok_or_else(|| overflow(span, &format!("{a} {} {b}", op.symbol())).into())
                }
                _ => fail(
                    type_error(&format!("apply `{}` to", op.symbol()), &l, &r)
                        .with_hint("`div` and `mod` take Integers; `/` divides reals"),
                ),
            },
            Add | Sub | Mul | Divide => {
                if let (Value::Int(a, _), Value::Int(b, _)) = (&l, &r) {
                    let recorded = match op {
                        Add => Elementwise::Add,
                        Sub => Elementwise::Sub,
                        Mul => Elementwise::Mul,
                        _ => {
                            return self.apply(
                                Op::Elementwise(Elementwise::Div),
                                &[(&l, ls), (&r, rs)],
                                span,
                            );
                        }
                    };
                    let Some(v) = int_arithmetic(op, *a, *b) else {
                        return fail(overflow(span, &format!("{a} {} {b}", op.symbol())));
                    };
                    return Ok(self.exact(
                        v,
                        Op::Elementwise(recorded),
                        &[(&l, ls), (&r, rs)],
                        span,
                    ));
                }
                if op == Add
                    && let (Value::Str(a), Value::Str(b)) = (&l, &r)
                {
                    check_string(a.len() + b.len(), span)?;
                    // In place when nothing else holds the left string
                    // (`appended_in_place`), else into a copy of it.
                    let (Value::Str(mut a), Value::Str(b)) = (l, r) else {
                        unreachable!("matched just above")
                    };
                    Rc::make_mut(&mut a).push_str(&b);
                    return Ok(Value::Str(a));
                }
                let numeric =
                    |v: &Value| matches!(v, Value::Int(..) | Value::Real(..) | Value::Matrix(..));
                if !numeric(&l) || !numeric(&r) {
                    let verb = match op {
                        Add => "add",
                        Sub => "subtract",
                        Mul => "multiply",
                        _ => "divide",
                    };
                    let mut d = type_error(verb, &l, &r);
                    if op == Add && (matches!(l, Value::Str(_)) || matches!(r, Value::Str(_))) {
                        d = d.with_hint("`+` joins two strings; numbers and matrices add to numbers and matrices");
                    }
                    return fail(d);
                }
                let both_matrices =
                    matches!(l, Value::Matrix(..)) && matches!(r, Value::Matrix(..));
                let op = match op {
                    Add => Op::Elementwise(Elementwise::Add),
                    Sub => Op::Elementwise(Elementwise::Sub),
                    Divide => Op::Elementwise(Elementwise::Div),
                    _ if both_matrices => Op::MatMul,
                    _ => Op::Elementwise(Elementwise::Mul),
                };
                if op == Op::MatMul {
                    let (a, b) = (matrix_dim(&l), matrix_dim(&r));
                    if a.1 == b.0 {
                        self.check_size(a.0, b.1, span)?;
                    }
                }
                self.apply(op, &[(&l, ls), (&r, rs)], span)
            }
        }
    }

    /// Refuses a matrix too large to allocate, before allocating it: more
    /// elements than a matrix may have, or more memory than the system
    /// gives now.
    pub fn check_size(&self, rows: usize, cols: usize, span: Span) -> Flow<()> {
        match rows.checked_mul(cols) {
            Some(n) if n <= self.max_elements => {
                if crate::memory::room_for(n * 8) {
                    Ok(())
                } else {
                    fail(no_room(n, format!("a {rows}×{cols} matrix"), span))
                }
            }
            _ => fail(
                Diagnostic::new(span, format!("a {rows}×{cols} matrix is too large"))
                    .with_label(
                        span,
                        format!("would have {} elements", rows as u128 * cols as u128),
                    )
                    .with_hint(format!(
                        "a matrix may have at most {} elements",
                        self.max_elements
                    )),
            ),
        }
    }

    // ----- calls -----

    fn call_for_value(&mut self, name: &Name, args: &[Arg], span: Span) -> Flow<Value> {
        match self.call(name, args, span)? {
            Some(v) => Ok(v),
            None => fail(errors::gives_no_value(&name.text, span)),
        }
    }

    /// Calls a builtin or a routine; `None` for a procedure.
    pub fn call(&mut self, name: &Name, args: &[Arg], span: Span) -> Flow<Option<Value>> {
        if let Some(b) = self.resolution.builtin(name) {
            if args.len() < b.min_args() || args.len() > b.max_args() {
                return fail(wrong_count(b, args.len(), span));
            }
            for arg in args {
                if arg.width.is_some() && !matches!(b.does, Does::Write(_)) {
                    let at = arg.width.as_ref().map_or(span, |w| w.span);
                    return fail(errors::field_width_outside_write(at));
                }
            }
            return self.call_builtin(b, args, span);
        }
        if let Some(routine) = self.routines.get(&*name.text).cloned() {
            // The checks find it first wherever the routine is known to
            // them; this is for any call they could not see.
            if let Some(w) = args.iter().find_map(|a| a.width.as_ref()) {
                return fail(errors::field_width_outside_write(w.span));
            }
            return self.call_routine(&routine, args, span);
        }
        let candidates = declarations::BUILTINS
            .iter()
            .map(|b| b.name)
            .chain(self.routines.keys().map(String::as_str));
        fail(errors::unknown_routine(name, candidates))
    }

    /// The argument `arg` of the `var` parameter `param`: the variable it
    /// names, checked against the parameter's annotation if it has a value.
    #[inline(never)]
    fn var_param(&mut self, routine: &Routine, param: &Param, arg: &Arg) -> Flow<VarParam> {
        let ExprKind::Name(name) = &arg.value.kind else {
            return fail(
                Diagnostic::new(
                    arg.value.span,
                    format!(
                        "`{}` of `{}` is a `var` parameter, so its argument must be a variable's name",
                        param.name.text, routine.name.text
                    ),
                )
                .with_label(arg.value.span, "not a variable"),
            );
        };
        let declared = param.ty.map(|(t, _)| t);
        let place = self.place_of(name);
        // At the prompt a routine checked before a global of that name
        // existed may reach it here; its own `var` parameter passed on is
        // the caller's permission.
        if let (Some(frame), Place::Global(..)) = (self.frames.last(), &place)
            && var_param_of(&self.frames, &name.text).is_none()
        {
            return fail(errors::global_passed(&frame.routine.name.text, name));
        }
        let (value, root) = match self.slot_mut(name) {
            Some(slot) => (slot.value.clone(), slot.declared),
            None => (None, None),
        };
        if let Some(v) = value {
            check_declared(declared, v, &Name::new(param.name.text.clone(), name.span))?;
        }
        // The running routine's own `var` parameter passed on: its
        // annotation goes along, or the one it was passed on with.
        let along = var_param_of(&self.frames, &name.text).and_then(|at| {
            let frame = &self.frames[self.frames.len() - 1];
            let r = &frame.refs[at];
            match r.declared {
                Some(ty) => Some(Annotation {
                    ty,
                    param: r.name.clone(),
                    routine: frame.routine.name.text.clone(),
                }),
                None => r.along.clone(),
            }
        });
        // The parameter is the variable itself: one type for both. The
        // nearest annotation is the one to meet: each one further out
        // was met when the variable was passed on.
        let theirs = match &along {
            Some(a) => Some((
                a.ty,
                format!("`{}`'s `var` parameter `{}`", a.routine, a.param),
            )),
            None => root.map(|ty| (ty, format!("`{}`", place.name()))),
        };
        if let (Some(ty), Some((their_ty, named))) = (declared, theirs)
            && ty != their_ty
        {
            return fail(
                Diagnostic::new(
                    arg.value.span,
                    format!(
                        "`{}` of `{}` is declared {}, but it names {named}, declared {}",
                        param.name.text,
                        routine.name.text,
                        ty.name(),
                        their_ty.name()
                    ),
                )
                .with_label(arg.value.span, format!("declared {}", their_ty.name()))
                .with_label(param.name.span, format!("declared {}", ty.name()))
                .with_hint(format!(
                    "a `var` parameter is the variable it names, so both are of one type: \
                     declare `{}: {}`, or leave its type out",
                    param.name.text,
                    their_ty.name()
                )),
            );
        }
        Ok(VarParam {
            name: param.name.text.clone(),
            declared,
            place,
            along,
        })
    }

    /// A `for` loop's turns, from `first` to `last`.
    fn count(&mut self, var: &Name, first: i64, last: i64, down: bool, body: &Stmt) -> Flow<()> {
        let mut i = first;
        while (!down && i <= last) || (down && i >= last) {
            self.tick(var.span)?;
            self.assign(var, Value::int(i), var.span)?;
            if self.run_stmt(body)? == Next::Break || i == last {
                break;
            }
            i = if down { i - 1 } else { i + 1 };
        }
        Ok(())
    }

    /// The error of a `Nudge` of a `for` counter whose loop is running.
    pub(crate) fn nudges_a_counter(&mut self, name: &Name, span: Span) -> Option<Diagnostic> {
        if self.counters.is_empty() {
            return None;
        }
        let Place::Global(_, global) = self.place_of(name) else {
            return None;
        };
        let &(_, counter) = self.counters.iter().find(|(c, _)| *c == global)?;
        Some(
            Diagnostic::new(
                span,
                format!(
                    "`{}` is the counter of a `for` loop that is running: Nudge cannot change it",
                    name.text
                ),
            )
            .with_label(name.span, "nudged here")
            .with_label(counter, "the loop that counts with it")
            .with_hint("the loop sets its counter each time round; train another variable"),
        )
    }

    /// Where the variable `name` of the running code lives, or will live
    /// once assigned.
    #[inline(never)]
    fn place_of(&mut self, name: &Name) -> Place {
        let depth = self.frames.len();
        if let Some(frame) = self.frames.last() {
            if frame.locals.contains_key(&*name.text) {
                return Place::Local(depth - 1, name.text.clone());
            }
            if let Some(r) = frame.refs.iter().find(|r| r.name == name.text) {
                return r.place.clone();
            }
            if !self.globals.contains_key(&name.text) {
                return Place::Local(depth - 1, name.text.clone());
            }
        }
        Place::Global(self.global_number(name), name.text.clone())
    }

    #[inline(never)]
    fn call_routine(
        &mut self,
        routine: &Rc<Routine>,
        args: &[Arg],
        span: Span,
    ) -> Flow<Option<Value>> {
        let kind = if routine.is_function {
            "function"
        } else {
            "procedure"
        };
        if args.len() != routine.params.len() {
            return fail(
                errors::routine_arity(&routine.name.text, routine.params.len(), args.len(), span)
                    .with_label(routine.header, format!("the {kind} is declared here")),
            );
        }
        if self.frames.len() >= MAX_CALL_DEPTH {
            return fail(
                Diagnostic::new(
                    span,
                    format!("calls are nested more than {MAX_CALL_DEPTH} deep"),
                )
                .with_label(
                    span,
                    format!("the call to `{}` that goes too deep", routine.name.text),
                )
                .with_hint("a recursive routine needs a case that stops calling itself"),
            );
        }
        self.tick(span)?;
        let mut locals = HashMap::default();
        let mut refs = Vec::new();
        for (param, arg) in routine.params.iter().zip(args) {
            if param.by_ref {
                refs.push(self.var_param(routine, param, arg)?);
                continue;
            }
            let v = self.eval(&arg.value)?;
            let declared = param.ty.map(|(t, _)| t);
            let v = check_declared(
                declared,
                v,
                &Name::new(param.name.text.clone(), arg.value.span),
            )?;
            locals.insert(param.name.text.clone(), Slot::new(Some(v), declared));
        }
        for decl in &routine.locals {
            locals.insert(
                decl.name.text.clone(),
                Slot::new(None, decl.ty.map(|(t, _)| t)),
            );
        }
        if routine.is_function {
            locals
                .entry("Result".into())
                .or_insert(Slot::new(None, routine.result.map(|(t, _)| t)));
        }
        self.frames.push(Frame {
            routine: routine.clone(),
            locals,
            refs,
        });
        let saved_stmt = self.current_stmt;
        let outcome = self.exec_block(&routine.body);
        self.current_stmt = saved_stmt;
        let frame = self.frames.pop().expect("pushed above");
        outcome.map_err(|stop| with_call(stop, &routine.name.text, span))?;
        if !routine.is_function {
            return Ok(None);
        }
        match frame.locals.get("Result").and_then(|s| s.value.clone()) {
            Some(v) => {
                if let Some(node) = self.tape.find(v.tag()) {
                    let record = &mut self.tape.records[node as usize];
                    if record.name.as_deref() == Some("Result") && record.call.is_none() {
                        record.name = Some(format!("{} result", routine.name.text).into());
                        record.call = Some(span);
                    }
                }
                Ok(Some(v))
            }
            None => fail(
                Diagnostic::new(
                    routine.header,
                    format!("`{}` ended without setting `Result`", routine.name.text),
                )
                .with_label(routine.header, "this function")
                .with_label(span, "called here")
                .with_hint("assign the value to give back: `Result := ...;`"),
            ),
        }
    }

    pub fn expect_int(&self, v: &Value, span: Span, what: &str) -> Flow<i64> {
        match v {
            Value::Int(n, _) => Ok(*n),
            other => {
                let d = Diagnostic::new(
                    span,
                    format!(
                        "{what} must be an Integer, but this is {}",
                        other.describe()
                    ),
                )
                .with_label(span, other.describe());
                fail(if matches!(other, Value::Real(..)) {
                    d.with_hint(INTEGER_HINT)
                } else {
                    d
                })
            }
        }
    }

    /// The variable a `Blame`, `Nudge` or `CheckBlame` names, and its record
    /// on the last tape.
    pub fn variable_on_tape(&mut self, builtin: &str, arg: &Arg) -> Flow<(Name, Value, u32)> {
        let ExprKind::Name(name) = &arg.value.kind else {
            return fail(errors::takes_a_variable_name(builtin, arg.value.span));
        };
        if self.tape.open {
            return fail(errors::blame_in_tape(builtin, arg.value.span));
        }
        let v = self.read_variable(name)?;
        match self.tape.find(v.tag()) {
            Some(node) if self.tape.result.is_some() => Ok((name.clone(), v, node)),
            _ => {
                let shown = Some(self.shown_name(name));
                let nudged = self
                    .nudged
                    .iter()
                    .find(|(node, ..)| self.tape.records[*node as usize].name == shown);
                if v.tag().is_none()
                    && let Some(&(_, first, ref left)) = nudged
                    && left.as_ref().is_none_or(|left| left.same(&v))
                {
                    return fail(
                        Diagnostic::new(
                            name.span,
                            format!("`{}` was already nudged after the last tape", name.text),
                        )
                        .with_label(first, format!("this `Nudge` gave `{}` a new value", name.text))
                        .with_label(name.span, "its blame belongs to the value it had on the tape")
                        .with_hint(format!(
                            "read `Blame({0})` before `Nudge({0}, ...)`; and nudge each variable once \
                             after each tape (for a bigger step, use a larger rate)",
                            name.text
                        )),
                    );
                }
                let numeric = matches!(v, Value::Int(..) | Value::Real(..) | Value::Matrix(..));
                // A tape that ran in another call may have recorded a
                // variable of the same name, but not this call's own.
                let own_local = var_param_of(&self.frames, &name.text).is_none()
                    && self
                        .frames
                        .last()
                        .is_some_and(|f| f.locals.contains_key(&name.text));
                if numeric && own_local && self.tape_frame_depth != self.frames.len() {
                    let (when, hint) = if self.tape_frame_depth > self.frames.len() {
                        (
                            "the last tape ran in a call made from here",
                            format!(
                                "use `{builtin}` in the call that runs the tape, before that call \
                                 returns; or pass `{}` to it as a `var` parameter",
                                name.text
                            ),
                        )
                    } else {
                        (
                            "the last tape ran before this call began",
                            format!(
                                "a routine's own variables are new at each call: use `{builtin}` \
                                 where the tape ran, or pass the variable it recorded to this \
                                 routine as a `var` parameter"
                            ),
                        )
                    };
                    return fail(
                        Diagnostic::new(
                            name.span,
                            format!("`{}` is not on the last tape", name.text),
                        )
                        .with_label(
                            name.span,
                            format!(
                                "{when}, and this `{}` belongs to this call alone, so that tape \
                                 never recorded it",
                                name.text
                            ),
                        )
                        .with_hint(hint),
                    );
                }
                if numeric && self.tape.records.iter().any(|r| r.name == shown) {
                    let mut d = Diagnostic::new(
                        name.span,
                        format!(
                            "`{}` has been assigned again since the last tape",
                            name.text
                        ),
                    );
                    let found = self
                        .reassigned
                        .iter()
                        .rev()
                        .find(|(node, ..)| self.tape.records[*node as usize].name == shown);
                    let after_nudge = found.is_some_and(|&(_, _, after_nudge)| after_nudge);
                    if let Some(&(_, at, _)) = found {
                        d = d.with_label(
                            at,
                            if after_nudge {
                                format!(
                                    "this assignment gave `{}` a new value after its `Nudge`",
                                    name.text
                                )
                            } else {
                                format!("this assignment gave `{}` a new value", name.text)
                            },
                        );
                    }
                    // A second `Nudge` is not the advice.
                    let before = if after_nudge && builtin != "Nudge" {
                        format!("nudging or assigning `{}`", name.text)
                    } else {
                        format!("assigning `{}` again", name.text)
                    };
                    return fail(
                        d.with_label(
                            name.span,
                            "its value now is not the one the tape recorded, which the blame belongs to",
                        )
                        .with_hint(format!(
                            "use `{builtin}` on `{}` after the tape and before {before}",
                            name.text
                        )),
                    );
                }
                if numeric && self.tape.result.is_none() && self.tape.records.is_empty() {
                    return fail(
                        Diagnostic::new(
                            name.span,
                            format!("`{builtin}({})` needs a tape, but no tape has run yet", name.text),
                        )
                        .with_label(name.span, "no tape has recorded this value")
                        .with_hint(format!(
                            "read `{}` inside a `tape ... end;` block, then use `{builtin}` after its `end;`",
                            name.text
                        )),
                    );
                }
                let d = Diagnostic::new(
                    name.span,
                    format!("`{}` is not on the last tape", name.text),
                );
                fail(if numeric {
                    d.with_label(
                        name.span,
                        format!(
                            "{}: its value was not made or read on the last tape, \
                             or it was assigned again after it",
                            v.describe()
                        ),
                    )
                    .with_hint(format!(
                        "read `{}` inside a `tape ... end;` block before asking for its blame",
                        name.text
                    ))
                } else {
                    d.with_label(
                        name.span,
                        format!("{}: only numbers and matrices are recorded", v.describe()),
                    )
                    .with_hint("blame is the gradient of a number: a String or a Boolean has none")
                })
            }
        }
    }

    /// The file `path`, written in the program at `span`, and what its
    /// folder is in a learner's words: from the folder of the file that
    /// holds that text if the prompt loaded it, else from [`Self::base_dir`].
    pub(crate) fn path_from(&self, span: Span, path: &str) -> (PathBuf, &'static str) {
        match self
            .folders
            .iter()
            .find(|(source, _)| *source == span.source)
        {
            Some((_, folder)) => (folder.join(path), "the loaded file's folder"),
            None => (self.base_dir.join(path), self.paths_from),
        }
    }

    /// The type a variable was declared with, if any.
    pub fn declared_type(&mut self, name: &Name) -> Option<TypeName> {
        self.slot_mut(name).and_then(|slot| slot.declared)
    }

    /// The innermost `var` parameter of a running routine that is
    /// declared Integer and names the variable `name` is (or names): the
    /// parameter's name, and its routine's, so that `Nudge` does not make
    /// it a Real through either name.
    pub(crate) fn integer_parameter_naming(&mut self, name: &Name) -> Option<(Rc<str>, Rc<str>)> {
        if self.frames.iter().all(|f| f.refs.is_empty()) {
            return None;
        }
        let place = self.place_of(name);
        self.frames.iter().rev().find_map(|frame| {
            let r = frame
                .refs
                .iter()
                .find(|r| r.declared == Some(TypeName::Integer) && r.place.same(&place))?;
            Some((r.name.clone(), frame.routine.name.text.clone()))
        })
    }

    /// Says which statement is running, for the messages that point at it
    /// (the REPL runs a bare expression without [`Interpreter::exec`]).
    pub fn set_statement(&mut self, span: Span) {
        self.current_stmt = span;
    }

    /// Ends a tape that an interrupted statement left open: its records
    /// stay, unwalked.
    pub fn stop_open_tape(&mut self) {
        self.tape.open = false;
    }

    /// Remembers that the `Nudge` at `span` changed the value of record
    /// `node`.
    pub fn remember_nudge(&mut self, node: u32, span: Span) {
        self.nudged.push((node, span, None));
    }

    /// Sets a variable wherever it lives (used by `Nudge`).
    pub fn overwrite(&mut self, name: &Name, v: Value) {
        if let Some(last) = self.nudged.last_mut() {
            last.2 = Some(v.clone());
        }
        if let Some(slot) = self.slot_mut(name) {
            slot.value = Some(v);
            slot.nudged = true;
        }
    }
}

/// A `var` parameter read while the caller's variable it names has no value.
#[cold]
#[inline(never)]
fn no_value_through(name: &Name, shown: &str) -> Diagnostic {
    Diagnostic::new(
        name.span,
        format!(
            "`{}` names the caller's `{shown}`, which has no value yet",
            name.text
        ),
    )
    .with_label(name.span, "read before anything was assigned to it")
    .with_hint(format!(
        "assign `{}` before reading it, or give `{shown}` a value before the call",
        name.text
    ))
}

/// What a traceback says of each call an error passed through.
const CALLED: &str = "in this call of";

/// An error on its way out of a call of `routine` at `span`: it names the
/// call, for the three innermost calls of a chain (at the prompt, the
/// call may be in a later entry than the routine).
#[inline(never)]
fn with_call(stop: Stop, routine: &str, span: Span) -> Stop {
    let Stop::Error(mut d) = stop else {
        return stop;
    };
    let calls = d
        .labels
        .iter()
        .filter(|(_, t)| t.starts_with(CALLED))
        .count();
    let seen = d.labels.iter().any(|(s, _)| *s == span) || d.span == span;
    if !seen {
        if calls < 3 {
            d.labels.push((span, format!("{CALLED} `{routine}`")));
        } else if !d.notes.iter().any(|n| n.starts_with("called from")) {
            d.notes
                .push("called from further calls, not shown".to_string());
        }
    }
    Stop::Error(d)
}

/// Which `var` parameter of the running routine `text` names, if any.
#[inline(always)]
fn var_param_of(frames: &[Frame], text: &str) -> Option<usize> {
    let frame = frames.last()?;
    if frame.refs.is_empty() {
        return None;
    }
    frame.refs.iter().position(|r| *r.name == *text)
}

/// The variable the running routine's `var` parameter `at` names, if it
/// exists yet.
fn place_slot<'a>(
    frames: &'a mut [Frame],
    globals: &'a mut Globals,
    at: usize,
) -> Option<&'a mut Slot> {
    let (callers, running) = frames.split_at_mut(frames.len() - 1);
    match &running[0].refs[at].place {
        Place::Global(n, _) => globals.at_mut(*n),
        Place::Local(depth, name) => callers[*depth].locals.get_mut(name),
    }
}

/// The variable `name` in the innermost routine's frame, else a global.
#[inline(always)]
fn slot_in<'a>(
    frames: &'a mut [Frame],
    globals: &'a mut Globals,
    resolution: &Resolution,
    name: &Name,
) -> Option<&'a mut Slot> {
    if let Some(at) = var_param_of(frames, &name.text) {
        return place_slot(frames, globals, at);
    }
    if let Some(frame) = frames.last_mut()
        && let Some(slot) = frame.locals.get_mut(&*name.text)
    {
        return Some(slot);
    }
    globals.at_mut(resolution.global(name)?)
}

/// A variable's value; the first read inside an open tape records it as a
/// leaf and tags the variable's value with that record.
#[inline(always)]
fn read_slot(slot: &mut Slot, tape: &mut Tape, name: &Name, shown: &Rc<str>) -> Flow<Value> {
    let tape_open = tape.open;
    let tape_id = tape.id;
    let Some(value) = &slot.value else {
        return fail(
            Diagnostic::new(
                name.span,
                format!("`{}` is declared but has no value yet", name.text),
            )
            .with_label(name.span, "read before anything was assigned to it"),
        );
    };
    let on_tape = value.tag().is_some_and(|t| t.tape() == tape_id);
    if !tape_open
        || on_tape
        || !matches!(value, Value::Int(..) | Value::Real(..) | Value::Matrix(..))
    {
        return Ok(value.clone());
    }
    // First read inside the tape: the variable's value becomes a leaf.
    let value = value.clone();
    let node = tape.push(Op::Leaf, Inputs::new(), to_tensor(&value), name.span);
    tape.records[node as usize].name = Some(shown.clone());
    let tagged = retag(value, Some(tape.node(node)));
    slot.value = Some(tagged.clone());
    Ok(tagged)
}

/// [`check_declared`] for the caller's variable `caller` that the `var`
/// parameter `param` names: the message names the variable declared.
fn check_caller_declared(
    declared: Option<TypeName>,
    v: Value,
    param: &Name,
    caller: &str,
) -> Flow<Value> {
    if let Some(ty) = declared
        && !v.fits(ty)
    {
        let message = format!(
            "`{}` names the caller's `{caller}`, which is declared {}, but is given {}",
            param.text,
            ty.name(),
            v.describe()
        );
        let label = format!("`{caller}` wants {}", ty.name());
        return not_of_declared_type(param.span, message, label, ty, &v);
    }
    check_declared(declared, v, param)
}

/// [`check_declared`] for a caller's `var` parameter that the `var`
/// parameter `param` was passed on through: the message names it and its
/// routine.
fn check_along(a: &Annotation, v: Value, param: &Name) -> Flow<Value> {
    if !v.fits(a.ty) {
        let message = format!(
            "`{}` names `{}`'s `var` parameter `{}`, which is declared {}, but is given {}",
            param.text,
            a.routine,
            a.param,
            a.ty.name(),
            v.describe()
        );
        let label = format!("`{}` wants {}", a.param, a.ty.name());
        return not_of_declared_type(param.span, message, label, a.ty, &v);
    }
    of_declared_type(a.ty, v, param)
}

/// The error of `v` given where `ty` is declared, with how to make one
/// where that is plain: a Real where an Integer is declared.
fn not_of_declared_type(
    span: Span,
    message: String,
    label: String,
    ty: TypeName,
    v: &Value,
) -> Flow<Value> {
    fail(crate::check::errors::given_another_type(
        span,
        message,
        label,
        ty,
        matches!(v, Value::Real(..)),
    ))
}

/// `v` as the value of `target`, declared of type `declared`: refused if
/// it is not of that type, an Integer widened to a declared Real. Inlined,
/// so that an undeclared variable's value is not copied out and back.
#[inline(always)]
fn check_declared(declared: Option<TypeName>, v: Value, target: &Name) -> Flow<Value> {
    match declared {
        None => Ok(v),
        Some(ty) => of_declared_type(ty, v, target),
    }
}

fn of_declared_type(ty: TypeName, v: Value, target: &Name) -> Flow<Value> {
    if !v.fits(ty) {
        return fail(crate::check::errors::not_of_declared_type(
            target.span,
            &target.text,
            ty,
            &v.describe(),
            matches!(v, Value::Real(..)),
        ));
    }
    Ok(match (ty, v) {
        (TypeName::Real, Value::Int(n, tag)) => Value::Real(n as f64, tag),
        (_, v) => v,
    })
}

/// `a op b` for two Integers, where `op` is `+`, `-`, `*`, `div` or `mod`;
/// `None` where it overflows, or divides by zero, or `op` is another.
/// The remainder always fits: the one case that overflows a checked
/// remainder (the smallest Integer mod -1) is 0.
fn int_arithmetic(op: BinaryOp, a: i64, b: i64) -> Option<i64> {
    match op {
        BinaryOp::Add => a.checked_add(b),
        BinaryOp::Sub => a.checked_sub(b),
        BinaryOp::Mul => a.checked_mul(b),
        BinaryOp::IntDiv => a.checked_div(b),
        BinaryOp::Mod if b != 0 => Some(a.wrapping_rem(b)),
        _ => None,
    }
}

fn overflow(span: Span, what: &str) -> Diagnostic {
    Diagnostic::new(
        span,
        format!("integer overflow: {what} does not fit in 64 bits"),
    )
    .with_label(span, "too large for an Integer")
    .with_hint("use reals (`1.0 * n`) for numbers this large")
}

fn matrix_dim(v: &Value) -> (usize, usize) {
    match v {
        Value::Matrix(m, _) => m.dim(),
        _ => (1, 1),
    }
}

/// An operation's name as a diagnostic shows it: an operator as its
/// symbol in backticks (negation as `-`), a builtin by its name.
fn shown_op(name: &str) -> String {
    match name {
        symbol @ ("+" | "-" | "/" | "*") => format!("`{symbol}`"),
        "negate" => "`-`".to_string(),
        word => word.to_string(),
    }
}

/// The system refused the memory of `elements` numbers that `what` needs.
fn no_room(elements: usize, what: String, span: Span) -> Diagnostic {
    let gib = elements as f64 * 8.0 / (1u64 << 30) as f64;
    Diagnostic::new(span, format!("not enough memory for {what}"))
        .with_label(
            span,
            format!("needs {gib:.1} GiB more, which the system refused"),
        )
        .with_hint(
            "every matrix a variable or an open tape holds stays in memory: make them smaller, \
             let go of large ones (`m := 0;`), or raise the limit on memory (`ulimit -v`)",
        )
}

/// The values of an operation's arguments, with their records, as the tape
/// takes them (pushed one by one: a collecting `extend` is not inlined and
/// cost 2% of a small step).
fn tape_inputs(args: &[(&Value, Span)]) -> SmallVec<[(Tensor, Option<NodeRef>, Span); 2]> {
    let mut inputs = SmallVec::new();
    for (v, s) in args {
        inputs.push((to_tensor(v), v.tag(), *s));
    }
    inputs
}

pub fn to_tensor(v: &Value) -> Tensor {
    match v {
        Value::Int(n, _) => Tensor::Scalar(*n as f64),
        Value::Real(x, _) => Tensor::Scalar(*x),
        Value::Matrix(m, _) => Tensor::Matrix(m.clone()),
        _ => Tensor::Scalar(f64::NAN),
    }
}

pub fn from_tensor(t: Tensor, tag: Option<NodeRef>) -> Value {
    match t {
        Tensor::Scalar(x) => Value::Real(x, tag),
        Tensor::Matrix(m) => Value::Matrix(m, tag),
    }
}

fn retag(v: Value, tag: Option<NodeRef>) -> Value {
    match v {
        Value::Int(n, _) => Value::Int(n, tag),
        Value::Real(x, _) => Value::Real(x, tag),
        Value::Matrix(m, _) => Value::Matrix(m, tag),
        other => other,
    }
}

/// What to write instead of `Power` for an exponent that is learned.
const POWER_EXPONENT: &str = "the exponent is read as a plain number; for an exponent that is learned, \
     write `Exp(p * Log(a))` (for a > 0), whose blame reaches `p`";

/// Where a NaN is, for a message: " at row r, column c" (1-based) in a
/// matrix, nothing for a number.
pub(crate) fn nan_at(shape: (usize, usize), (r, c): (usize, usize)) -> String {
    if shape == (1, 1) {
        String::new()
    } else {
        format!(" at row {r}, column {c}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every statement and expression returns a `Flow`: a `Stop` larger
    /// than one pointer (a third variant did it) made every statement about
    /// 40% slower, so loop signals travel as [`Next`] instead.
    #[test]
    fn a_stop_is_one_pointer() {
        assert_eq!(std::mem::size_of::<Stop>(), std::mem::size_of::<usize>());
        // And a `Flow` of a value is no larger than the value: a `Stop` is
        // one of the tags a value never has.
        assert_eq!(
            std::mem::size_of::<Flow<Value>>(),
            std::mem::size_of::<Value>()
        );
    }
}
