//! The tape: a flat record of every operation run inside `tape ... end;`, in
//! execution order, and the reverse walk that turns it into blame.
//!
//! A record holds its operation, the ids of its inputs (always older
//! records), its output value and the span it came from. The walk is one
//! loop from the newest record to the oldest; there is no recursion and no
//! topological sort. The tape knows nothing of the parser beyond a span.

pub mod kernels;
pub mod matmul;
pub mod ops;

use std::num::NonZeroU64;
use std::rc::Rc;

use crate::diagnostic::Span;
use ndarray::Array2;
pub use ops::{Op, OpError, Tensor};
use smallvec::SmallVec;

/// The fewest elements of a value that [`Tape::release_unread`] lets go.
const RELEASE_FROM: usize = 1024;

/// A record's inputs: two or fewer for all but matrix literals.
pub type Inputs = SmallVec<[u32; 2]>;

/// Why [`Tape::apply`] refused an operation: its inputs do not fit it, or
/// its output holds a NaN (the output's shape, and the first NaN's 1-based
/// row and column).
#[derive(Debug)]
pub enum Refused {
    Op(OpError),
    Nan((usize, usize), (usize, usize)),
}

/// Which record of which tape a value is. A value whose tape is not the
/// current one is treated as not on the tape at all.
///
/// One word, never 0 (the tape's number is at least 1), so that
/// `Option<NodeRef>` is one word too and is written whole: a value built in
/// pieces and then copied as a whole stalls the processor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRef(NonZeroU64);

impl NodeRef {
    fn new(tape: u32, node: u32) -> NodeRef {
        let word = (u64::from(tape) << 32) | u64::from(node);
        NodeRef(NonZeroU64::new(word).unwrap_or(NonZeroU64::MIN))
    }

    /// The number of the tape.
    pub fn tape(self) -> u32 {
        (self.0.get() >> 32) as u32
    }

    /// The record on that tape.
    pub fn node(self) -> u32 {
        self.0.get() as u32
    }
}

#[derive(Debug, Clone)]
pub struct Record {
    pub op: Op,
    pub inputs: Inputs,
    /// The value, or after [`Tape::release_unread`] an empty stand-in.
    pub value: Tensor,
    /// The value's shape, which the per-link rules read even of a value
    /// that has been let go.
    pub shape: (usize, usize),
    /// No element of `value` is larger in size than this (infinity: not
    /// known). A finite bound also says there is no NaN.
    pub bound: f64,
    /// What the forward kept for the per-link rule, if anything.
    pub kept: Option<ops::Kept>,
    /// The variable that holds this value, for pictures and listings.
    pub name: Option<Rc<str>>,
    /// The expression that made the value (for a leaf, where it was first read).
    pub span: Span,
    /// For a function's `Result`, the call that gave it back: what tells
    /// two calls of one function apart in pictures and listings.
    pub call: Option<Span>,
}

/// Why the reverse walk could not finish: an operation's rule made a NaN,
/// or adding what it gave an input to that input's blame did.
#[derive(Debug, Clone)]
pub struct WalkError {
    pub record: usize,
    pub input: usize,
    pub position: (usize, usize),
    /// The share had no NaN, but adding it to the blame the input already
    /// had made one (+inf and -inf).
    pub summed: bool,
}

#[derive(Debug, Default, Clone)]
pub struct Tape {
    /// Counts tapes, so that values remember which one they were made on.
    pub id: u32,
    pub records: Vec<Record>,
    /// Open while the block runs; closed once the walk has run.
    pub open: bool,
    pub result: Option<u32>,
    /// Blame for each record, filled by the walk (`None`: no blame reached it).
    pub blame: Vec<Option<Tensor>>,
    /// For each record, no element of its blame is larger in size than this
    /// (filled by the walk; infinity: not known).
    pub blame_bounds: Vec<f64>,
    /// Whether nothing but `Blame` and `Nudge` reads the tape after its walk:
    /// a run of a program that never calls `CheckBlame` (not a picture, not
    /// the prompt). Then the values of a statement that no per-link rule
    /// reads are let go at its end ([`Tape::release_unread`]), the walk lets
    /// go of an unnamed operation's value and blame once it has handed the
    /// blame on, and `Nudge` may update a matrix where its leaf shares it.
    pub only_blame_read: bool,
    /// Bytes of the values recorded since the tape opened, less those let
    /// go by [`Tape::release_unread`]: what the interpreter holds the open
    /// tape's size to.
    pub held_bytes: usize,
    /// When set, the walk writes down each step it takes here: what a
    /// picture or `:walk` shows is the real walk, not a second one.
    pub steps: Option<Vec<WalkStep>>,
}

/// One step of the reverse walk: the record it visited, the blame that
/// record held by then (its final blame: every record that used it came
/// later and was walked before), and the share its per-link rule handed to
/// each of its inputs, in the order they were handed.
#[derive(Debug, Clone)]
pub struct WalkStep {
    pub record: u32,
    pub blame: Tensor,
    /// (input's record, share).
    pub shares: Vec<(u32, Tensor)>,
}

impl Tape {
    /// Drops the previous tape and opens a fresh one.
    pub fn start(&mut self) {
        self.id = self.id.wrapping_add(1).max(1);
        self.records.clear();
        self.blame.clear();
        self.blame_bounds.clear();
        self.result = None;
        self.open = true;
        self.held_bytes = 0;
    }

    pub fn node(&self, id: u32) -> NodeRef {
        NodeRef::new(self.id, id)
    }

    /// The record a value refers to, if it is on this tape.
    pub fn find(&self, r: Option<NodeRef>) -> Option<u32> {
        r.filter(|r| r.tape() == self.id && (r.node() as usize) < self.records.len())
            .map(|r| r.node())
    }

    /// Runs `op` on `inputs` (each a value, the record that made it if it
    /// has one, and where it was written): the forward, the NaN check, and
    /// while the tape is open the record, with a leaf for each input not on
    /// the tape yet. The one way from the evaluator down to the tape: gives
    /// the output and its record, or why the operation was refused.
    pub fn apply(
        &mut self,
        op: Op,
        inputs: &[(Tensor, Option<NodeRef>, Span)],
        span: Span,
    ) -> Result<(Tensor, Option<NodeRef>), Refused> {
        let mut values: SmallVec<[&Tensor; 2]> = SmallVec::new();
        for (t, _, _) in inputs {
            values.push(t);
        }
        let (output, kept) = if op.keeps() {
            op.forward_keeping(&values)
        } else {
            op.forward(&values).map(|output| (output, None))
        }
        .map_err(Refused::Op)?;
        let proved = if output.len() >= ops::PROVE_FROM {
            self.known_bound(&op, inputs)
        } else {
            None
        };
        let bound = proved.unwrap_or_else(|| output.bound());
        if bound.is_nan() {
            return Err(Refused::Nan(
                output.shape(),
                output.first_nan().unwrap_or((1, 1)),
            ));
        }
        if !self.open {
            return Ok((output, None));
        }
        let node = self.record(op, inputs, output.clone(), span);
        let record = &mut self.records[node as usize];
        record.bound = bound;
        record.kept = kept;
        Ok((output, Some(self.node(node))))
    }

    /// Records `op` with the output it gave, found by the caller (an exact
    /// Integer result), with a leaf for each input not on the tape yet.
    pub fn record(
        &mut self,
        op: Op,
        inputs: &[(Tensor, Option<NodeRef>, Span)],
        output: Tensor,
        span: Span,
    ) -> u32 {
        let mut recorded = Inputs::new();
        for (value, tag, at) in inputs {
            recorded.push(match self.find(*tag) {
                Some(node) => node,
                None => self.push(Op::Leaf, Inputs::new(), value.clone(), *at),
            });
        }
        self.push(op, recorded, output, span)
    }

    /// A bound on the size of every element of `op`'s output, found without
    /// reading the output ([`Op::output_bound`]), from its inputs' bounds: a
    /// number's own size, and for a matrix the bound of its record on this
    /// tape (a record's value never changes while a variable holds it with
    /// its tag). `None` where they prove none.
    fn known_bound(&self, op: &Op, inputs: &[(Tensor, Option<NodeRef>, Span)]) -> Option<f64> {
        let mut bounds: SmallVec<[Option<f64>; 2]> = SmallVec::new();
        let mut shapes: SmallVec<[(usize, usize); 2]> = SmallVec::new();
        for (value, tag, _) in inputs {
            bounds.push(match value {
                Tensor::Scalar(x) => Some(x.abs()),
                Tensor::Matrix(_) => self
                    .find(*tag)
                    .map(|node| self.records[node as usize].bound),
            });
            shapes.push(value.shape());
        }
        op.output_bound(&bounds, &shapes)
    }

    pub fn push(&mut self, op: Op, inputs: Inputs, value: Tensor, span: Span) -> u32 {
        // A number's bound is its own size; a matrix's is not known without
        // reading it (the caller sets it where it knows one).
        let bound = match value {
            Tensor::Scalar(x) => x.abs(),
            Tensor::Matrix(_) => f64::INFINITY,
        };
        self.held_bytes += value.len() * std::mem::size_of::<f64>();
        // Room first, then the record written in its place: `push` builds
        // it aside and copies it, and the copy's wide reads of fields just
        // written in narrower pieces each wait for the store buffer.
        self.records.reserve(1);
        let at = self.records.len();
        self.records.spare_capacity_mut()[0].write(Record {
            op,
            inputs,
            shape: value.shape(),
            value,
            bound,
            kept: None,
            name: None,
            span,
            call: None,
        });
        // SAFETY: the element at `at` was written just above.
        unsafe { self.records.set_len(at + 1) };
        at as u32
    }

    /// Lets go of the values of records `from..` that nothing will read:
    /// values of operations that no variable, no other value of the program
    /// and no per-link rule (their own, or that of an operation they are
    /// an input of) reads. The interpreter calls it after each statement in
    /// a tape, when only `Blame` and `Nudge` read the tape after its walk;
    /// then a step's intermediate results that only fed an addition, a
    /// `Tanh` and the like give their memory back at once, while it is still
    /// in cache, instead of at the walk. Only the shape remains.
    pub fn release_unread(&mut self, from: usize) {
        if !self.open || !self.only_blame_read || from >= self.records.len() {
            return;
        }
        // Held by nothing but the record: no value of the program has it, so
        // no later operation can take it as an input either. A small matrix
        // is left alone: it gives back too little to pay for the looking.
        let candidate = |record: &Record| {
            matches!(&record.value, Tensor::Matrix(m)
                if m.len() >= RELEASE_FROM && Rc::strong_count(m) == 1)
                && record.name.is_none()
                && record.op != Op::Leaf
        };
        if !self.records[from..].iter().any(candidate) {
            return;
        }
        let mut read: SmallVec<[bool; 32]> = smallvec::smallvec![false; self.records.len() - from];
        for (i, record) in self.records.iter().enumerate().skip(from) {
            let reads = record.op.reads();
            read[i - from] |= reads.output;
            if reads.inputs {
                for &k in &record.inputs {
                    if let Some(slot) = (k as usize).checked_sub(from) {
                        read[slot] = true;
                    }
                }
            }
        }
        for (i, read) in read.into_iter().enumerate() {
            let record = &mut self.records[from + i];
            if !read && candidate(record) {
                let bytes = record.value.len() * std::mem::size_of::<f64>();
                self.held_bytes = self.held_bytes.saturating_sub(bytes);
                record.value = Tensor::Matrix(Rc::new(Array2::zeros((0, 0))));
            }
        }
    }

    /// How many records are operations (not leaves).
    pub fn operation_count(&self) -> usize {
        self.records.iter().filter(|r| r.op != Op::Leaf).count()
    }

    /// The reverse walk: blame 1 on the result, then every record from the
    /// newest to the oldest hands its blame to its inputs by its per-link
    /// rule, adding up where a value is used more than once.
    ///
    /// Every share is checked for NaN, except where bounds on the blame, the
    /// inputs and the output prove it has none ([`ops::Op::share_bounds`]):
    /// a matrix product's, when its other input's value and the blame both
    /// have finite bounds, a `Tanh`'s when the blame's is finite, and so on.
    pub fn walk(&mut self, result: u32) -> Result<(), WalkError> {
        let n = result as usize + 1;
        self.open = false;
        self.result = Some(result);
        // The previous walk's vector, kept for its room.
        self.blame.clear();
        self.blame.resize(self.records.len(), None);
        self.blame[result as usize] = Some(self.records[result as usize].value.ones_like());
        let mut bounds = std::mem::take(&mut self.blame_bounds);
        bounds.clear();
        bounds.resize(self.records.len(), f64::INFINITY);
        bounds[result as usize] = 1.0;
        let mut steps = self.steps.take().map(|mut steps| {
            steps.clear();
            steps
        });
        // Blames that element shares were added into in place: each of
        // their other elements is still x where adding the whole share
        // would have made it x + 0 (+0 where x is -0), done when the blame
        // is next added to as a whole or when the walk reaches its record
        // (every target is older than its reader, so it is reached).
        // Empty until the first element share.
        let mut unsigned: Vec<bool> = Vec::new();
        for i in (0..n).rev() {
            let Some(mut blame) = self.blame[i].take() else {
                continue;
            };
            if let Some(flag @ true) = unsigned.get_mut(i) {
                plus_zero(&mut blame);
                *flag = false;
            }
            if let Some(steps) = &mut steps {
                steps.push(WalkStep {
                    record: i as u32,
                    blame: blame.clone(),
                    shares: Vec::new(),
                });
            }
            let record = &self.records[i];
            if steps.is_none()
                && let Some(at) = record.op.one_element()
            {
                let target = record.inputs[0] as usize;
                let g = blame.view()[(0, 0)];
                if let Err((position, summed)) =
                    self.add_element_share(target, at, g, &mut bounds, &mut unsigned)
                {
                    self.blame[i] = Some(blame);
                    return Err(WalkError {
                        record: i,
                        input: 0,
                        position,
                        summed,
                    });
                }
                if self.lets_go(i, result) {
                    self.records[i].value = Tensor::Scalar(0.0);
                } else {
                    self.blame[i] = Some(blame);
                }
                continue;
            }
            if !record.inputs.is_empty() {
                let mut inputs: SmallVec<[&Tensor; 2]> = SmallVec::new();
                let mut shapes: SmallVec<[(usize, usize); 2]> = SmallVec::new();
                for &k in &record.inputs {
                    inputs.push(&self.records[k as usize].value);
                    shapes.push(self.records[k as usize].shape);
                }
                let shares = record.op.per_link_rule(
                    &inputs,
                    &shapes,
                    &record.value,
                    record.kept.as_deref(),
                    &blame,
                );
                drop(inputs);
                // Proved once for the record, and only if a share is large
                // enough for the proof to cost less than a scan.
                let mut known: Option<[Option<f64>; 2]> = None;
                for (k, share) in shares.into_iter().enumerate() {
                    let Some(share) = share else { continue };
                    let proved = if share.len() >= ops::PROVE_FROM {
                        let known = known.get_or_insert_with(|| {
                            let input_bounds: SmallVec<[f64; 2]> = record
                                .inputs
                                .iter()
                                .map(|&k| self.records[k as usize].bound)
                                .collect();
                            record.op.share_bounds(
                                bounds[i],
                                &input_bounds,
                                record.bound,
                                &shapes,
                                blame.shape(),
                            )
                        });
                        known.get(k).copied().flatten()
                    } else {
                        None
                    };
                    let size = proved.unwrap_or_else(|| share.bound());
                    if size.is_nan() {
                        self.blame[i] = Some(blame);
                        self.steps = steps;
                        return Err(WalkError {
                            record: i,
                            input: k,
                            position: share.first_nan().unwrap_or((1, 1)),
                            summed: false,
                        });
                    }
                    let target = record.inputs[k] as usize;
                    if let Some(step) = steps.as_mut().and_then(|s| s.last_mut()) {
                        step.shares.push((target as u32, share.clone()));
                    }
                    match &mut self.blame[target] {
                        Some(existing) => {
                            if let Some(flag @ true) = unsigned.get_mut(target) {
                                plus_zero(existing);
                                *flag = false;
                            }
                            existing.accumulate(share);
                            // Two shares without a NaN can add up to one
                            // (inf + -inf): the sum is checked too, unless
                            // the bounds of both prove it finite.
                            let sum = match existing {
                                // A matrix share may have been summed into it.
                                Tensor::Scalar(x) => x.abs(),
                                Tensor::Matrix(_) => ops::sum_bound(bounds[target], size),
                            };
                            let sum = if sum.is_finite() {
                                sum
                            } else {
                                existing.bound()
                            };
                            if sum.is_nan() {
                                let position = existing.first_nan().unwrap_or((1, 1));
                                self.blame[i] = Some(blame);
                                self.steps = steps;
                                return Err(WalkError {
                                    record: i,
                                    input: k,
                                    position,
                                    summed: true,
                                });
                            }
                            bounds[target] = sum;
                        }
                        slot @ None => {
                            *slot = Some(share);
                            bounds[target] = size;
                        }
                    }
                }
                if self.lets_go(i, result) {
                    self.records[i].value = Tensor::Scalar(0.0);
                    continue;
                }
            }
            self.blame[i] = Some(blame);
        }
        self.blame_bounds = bounds;
        self.steps = steps;
        Ok(())
    }

    /// Whether the walk, having handed record `i`'s blame on, lets go of
    /// its value and blame: an unnamed operation's, not the result's, in a
    /// run that reads only blame (every record that used it has been
    /// walked).
    fn lets_go(&self, i: usize, result: u32) -> bool {
        self.only_blame_read && self.records[i].name.is_none() && i != result as usize
    }

    /// Adds `g`, the share an element read hands to element `at` of record
    /// `target`, into that record's blame without making the whole share:
    /// a loop that reads every element of a matrix inside a tape then
    /// costs the matrix once, not once per element. The sums are the
    /// rule's, bit for bit (see `unsigned` in [`Tape::walk`]). `Err` holds
    /// where a NaN appeared and whether it came from the sum.
    fn add_element_share(
        &mut self,
        target: usize,
        (r, c): (usize, usize),
        g: f64,
        bounds: &mut [f64],
        unsigned: &mut Vec<bool>,
    ) -> Result<(), ((usize, usize), bool)> {
        let position = (r + 1, c + 1);
        if g.is_nan() {
            return Err((position, false));
        }
        let shape = self.records[target].shape;
        if unsigned.is_empty() {
            unsigned.resize(self.records.len(), false);
        }
        let whole = || {
            let mut share = Array2::zeros(shape);
            share[(r, c)] = g;
            Tensor::matrix(share)
        };
        match &mut self.blame[target] {
            Some(Tensor::Matrix(existing)) if existing.dim() == shape => {
                let m = Rc::make_mut(existing);
                m[(r, c)] += g;
                if m[(r, c)].is_nan() {
                    return Err((position, true));
                }
                unsigned[target] = true;
                bounds[target] = ops::sum_bound(bounds[target], g.abs());
            }
            Some(existing) => {
                if unsigned[target] {
                    plus_zero(existing);
                    unsigned[target] = false;
                }
                existing.accumulate(whole());
                let sum = existing.bound();
                if sum.is_nan() {
                    return Err((existing.first_nan().unwrap_or(position), true));
                }
                bounds[target] = sum;
            }
            slot @ None => {
                *slot = Some(whole());
                bounds[target] = g.abs();
            }
        }
        Ok(())
    }

    /// The walk of the last tape, step by step, from walking it again with
    /// its steps written down (the same walk: the records and their values
    /// are as they were). `None` when there is no walked tape, or when its
    /// values were let go as the walk went (a run that reads only blame).
    pub fn walk_steps(&mut self) -> Option<Vec<WalkStep>> {
        let result = self.result?;
        if self.only_blame_read || self.open {
            return None;
        }
        self.steps = Some(Vec::new());
        let walked = self.walk(result);
        let steps = self.steps.take();
        walked.ok()?;
        steps
    }

    /// Re-runs the recorded operations from record `node` to `result` with
    /// `node` holding `value` instead, and returns the result. Only the
    /// recorded path is followed: control flow is not re-decided.
    pub fn replay(&self, node: u32, value: Tensor, result: u32) -> Option<f64> {
        self.replay_to(node, value, result, false).ok()
    }

    /// The first record that [`Tape::replay`] finds a NaN in, with `node`
    /// holding `value`.
    pub fn replay_first_nan(&self, node: u32, value: Tensor, result: u32) -> Option<u32> {
        self.replay_to(node, value, result, true).err().flatten()
    }

    /// [`Tape::replay`], stopped at the first record holding a NaN where
    /// `find_nan` (its index the error); the error is `None` where an
    /// operation refused its nudged inputs.
    fn replay_to(
        &self,
        node: u32,
        value: Tensor,
        result: u32,
        find_nan: bool,
    ) -> Result<f64, Option<u32>> {
        let start = node as usize;
        let mut changed: Vec<Option<Tensor>> =
            vec![None; result as usize + 1 - start.min(result as usize + 1)];
        if start > result as usize {
            return Err(None);
        }
        changed[0] = Some(value);
        for i in start + 1..=result as usize {
            let record = &self.records[i];
            if !record
                .inputs
                .iter()
                .any(|&k| k as usize >= start && changed[k as usize - start].is_some())
            {
                continue;
            }
            let inputs: Vec<&Tensor> = record
                .inputs
                .iter()
                .map(|&k| {
                    let k = k as usize;
                    match k.checked_sub(start).and_then(|o| changed[o].as_ref()) {
                        Some(t) => t,
                        None => &self.records[k].value,
                    }
                })
                .collect();
            let out = record.op.forward(&inputs).map_err(|_| None)?;
            if find_nan && out.first_nan().is_some() {
                return Err(Some(i as u32));
            }
            changed[i - start] = Some(out);
        }
        let out = changed[result as usize - start]
            .as_ref()
            .unwrap_or(&self.records[result as usize].value);
        Ok(out.view()[(0, 0)])
    }

    /// No element of a record's blame is larger in size than this, after a
    /// walk that finished (infinity: not known).
    pub fn blame_bound(&self, node: u32) -> f64 {
        self.blame_bounds
            .get(node as usize)
            .copied()
            .unwrap_or(f64::INFINITY)
    }

    /// Whether the value of record `node` depends on a record that a
    /// variable other than `name` holds (a leaf read into the tape, or a
    /// value the tape assigned it, such as `m := [[1, 2]]`): if not, every
    /// blame a program can ask for, except that of `node` itself, is 0.
    /// Records come after their inputs, so one pass down from `node` finds
    /// every record it depends on.
    pub fn depends_on_another_variable(&self, node: u32, name: &str) -> bool {
        let mut needed = vec![false; node as usize + 1];
        needed[node as usize] = true;
        for i in (0..=node as usize).rev() {
            if !needed[i] {
                continue;
            }
            let record = &self.records[i];
            if record.name.as_deref().is_some_and(|n| n != name) {
                return true;
            }
            for &input in &record.inputs {
                needed[input as usize] = true;
            }
        }
        false
    }

    /// The blame of a record after the walk: zeros where none reached it.
    pub fn blame_of(&self, node: u32) -> Tensor {
        match self.blame.get(node as usize) {
            Some(Some(b)) => b.clone(),
            _ => self.records[node as usize].value.zeros_like(),
        }
    }
}

/// Each element x of a blame made x + 0, as adding a share that is 0
/// there does: only a -0 changes, to +0.
fn plus_zero(blame: &mut Tensor) {
    if let Tensor::Matrix(m) = blame
        && m.iter().any(|x| *x == 0.0 && x.is_sign_negative())
    {
        Rc::make_mut(m).mapv_inplace(|x| x + 0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(rows: usize, cols: usize, seed: u64) -> Tensor {
        let mut s = seed;
        Tensor::matrix(Array2::from_shape_simple_fn((rows, cols), || {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        }))
    }

    /// Runs `op` on the values of records `inputs` and records it.
    fn op(tape: &mut Tape, op: Op, inputs: &[u32]) -> u32 {
        let values: Vec<&Tensor> = inputs
            .iter()
            .map(|&k| &tape.records[k as usize].value)
            .collect();
        let out = op.forward(&values).expect("shapes fit");
        tape.push(op, inputs.iter().copied().collect(), out, Span::default())
    }

    /// `Sum(Tanh(a · w) + Tanh(a · w) · v)`, recorded as the interpreter
    /// records it, with the statement's values let go or not.
    fn record(release: bool, keep: &mut Vec<Tensor>) -> Tape {
        let mut tape = Tape {
            only_blame_read: true,
            ..Tape::default()
        };
        tape.start();
        let span = Span::default();
        let (a, w, v) = (filled(40, 30, 1), filled(30, 50, 2), filled(50, 50, 3));
        let leaf = |tape: &mut Tape, t: &Tensor, name: &str| {
            let node = tape.push(Op::Leaf, Inputs::new(), t.clone(), span);
            tape.records[node as usize].name = Some(name.into());
            node
        };
        let (a, w, v) = (
            leaf(&mut tape, &a, "a"),
            leaf(&mut tape, &w, "w"),
            leaf(&mut tape, &v, "v"),
        );
        let from = tape.records.len();
        let h = op(&mut tape, Op::MatMul, &[a, w]);
        let t = op(&mut tape, Op::Unary(ops::Unary::Tanh), &[h]);
        let tv = op(&mut tape, Op::MatMul, &[t, v]);
        let z = op(&mut tape, Op::Elementwise(ops::Elementwise::Add), &[t, tv]);
        let s = op(&mut tape, Op::Sum, &[z]);
        // A value the program still holds (here `z`'s) is never let go.
        keep.push(tape.records[z as usize].value.clone());
        tape.records[s as usize].name = Some("s".into());
        if release {
            tape.release_unread(from);
        }
        tape
    }

    /// Element reads hand their shares in place, with the bits of the
    /// whole zero-filled shares a picture's walk (which writes each share
    /// down) still makes: a -0 that a whole share left in the blame turns
    /// +0 when an element share is added, as adding zeros does.
    #[test]
    fn element_shares_added_in_place_give_the_whole_shares_bits() {
        let span = Span::default();
        let mut tape = Tape {
            only_blame_read: false,
            ..Tape::default()
        };
        tape.start();
        let m = tape.push(
            Op::Leaf,
            Inputs::new(),
            Tensor::matrix(ndarray::array![[1.0, -2.0, 0.0], [4.0, 0.0, -6.0]]),
            span,
        );
        let zero = tape.push(Op::Leaf, Inputs::new(), Tensor::Scalar(0.0), span);
        let mul = Op::Elementwise(ops::Elementwise::Mul);
        let add = Op::Elementwise(ops::Elementwise::Add);
        // Element reads walked after a whole share of -0s, the first
        // share `m` receives.
        let early = op(&mut tape, Op::Element(0, 0), &[m]);
        let late = op(&mut tape, Op::Element(1, 2), &[m]);
        let again = op(&mut tape, Op::Element(1, 2), &[m]);
        // -(blame · 0): a share of -0s.
        let negated = op(&mut tape, Op::Neg, &[m]);
        let scaled = op(&mut tape, mul, &[negated, zero]);
        let sum = op(&mut tape, Op::Sum, &[scaled]);
        let a = op(&mut tape, add.clone(), &[early, sum]);
        let b = op(&mut tape, add.clone(), &[late, again]);
        let result = op(&mut tape, add, &[a, b]);
        let bits = |tape: &Tape| -> Vec<u64> {
            tape.blame_of(m)
                .view()
                .iter()
                .map(|x| x.to_bits())
                .collect()
        };
        let mut written_down = tape.clone();
        written_down.steps = Some(Vec::new());
        written_down.walk(result).expect("no NaN");
        tape.walk(result).expect("no NaN");
        assert_eq!(bits(&tape), bits(&written_down));
        let blame = tape.blame_of(m);
        assert_eq!(blame.view()[(0, 0)], 1.0);
        assert_eq!(blame.view()[(1, 2)], 2.0);
        assert!(blame.view().iter().all(|x| !x.is_sign_negative()));
    }

    /// The values no rule reads (`a · w`, read only by `Tanh`'s rule, which
    /// reads its output, and `t · v`, read only by `+`'s) are let go; the
    /// rest stay, and the blame is the same to the bit.
    #[test]
    fn released_values_leave_the_blame_unchanged() {
        let mut keep = Vec::new();
        let mut released = record(true, &mut keep);
        let mut whole = record(false, &mut keep);
        let gone: Vec<bool> = released
            .records
            .iter()
            .map(|r| r.value.shape() == (0, 0))
            .collect();
        assert_eq!(gone, [false, false, false, true, false, true, false, false]);
        for (r, w) in released.records.iter().zip(&whole.records) {
            assert_eq!(r.shape, w.shape);
        }
        let result = (released.records.len() - 1) as u32;
        released.walk(result).expect("no NaN");
        whole.walk(result).expect("no NaN");
        for node in 0..3 {
            let bits = |t: &Tape| {
                t.blame_of(node)
                    .view()
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(&released), bits(&whole), "leaf {node}");
        }
    }

    /// Nothing is let go where something may read values after the walk,
    /// nor outside an open tape.
    #[test]
    fn values_stay_where_they_may_be_read() {
        let mut keep = Vec::new();
        let mut tape = record(false, &mut keep);
        tape.only_blame_read = false;
        tape.release_unread(3);
        assert!(tape.records.iter().all(|r| r.value.shape() == r.shape));
        tape.only_blame_read = true;
        tape.open = false;
        tape.release_unread(3);
        assert!(tape.records.iter().all(|r| r.value.shape() == r.shape));
    }
}
