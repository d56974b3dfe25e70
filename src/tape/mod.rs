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

use crate::diagnostic::Span;
pub use ops::{Op, OpError, Tensor};
use smallvec::SmallVec;

/// A record's inputs: two or fewer for all but matrix literals.
pub type Inputs = SmallVec<[u32; 2]>;

/// Which record of which tape a value is. A value whose tape is not the
/// current one is treated as not on the tape at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRef {
    pub tape: u32,
    pub node: u32,
}

#[derive(Debug, Clone)]
pub struct Record {
    pub op: Op,
    pub inputs: Inputs,
    pub value: Tensor,
    /// No element of `value` is larger in size than this (infinity: not
    /// known). A finite bound also says there is no NaN.
    pub bound: f64,
    /// The variable that holds this value, for pictures and listings.
    pub name: Option<String>,
    /// The expression that made the value (for a leaf, where it was first read).
    pub span: Span,
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
    /// a run of a program that never names `CheckBlame` (not a picture, not
    /// the prompt). Then the walk lets go of an unnamed operation's value and
    /// blame once it has handed the blame on (no variable holds such a
    /// record, so the memory a step touches stays small, and in cache), and
    /// `Nudge` may update a matrix where its leaf shares it.
    pub only_blame_read: bool,
}

impl Tape {
    /// Drops the previous tape and opens a fresh one.
    pub fn start(&mut self) {
        self.id = self.id.wrapping_add(1);
        self.records.clear();
        self.blame.clear();
        self.blame_bounds.clear();
        self.result = None;
        self.open = true;
    }

    pub fn node(&self, id: u32) -> NodeRef {
        NodeRef {
            tape: self.id,
            node: id,
        }
    }

    /// The record a value refers to, if it is on this tape.
    pub fn find(&self, r: Option<NodeRef>) -> Option<u32> {
        r.filter(|r| r.tape == self.id && (r.node as usize) < self.records.len())
            .map(|r| r.node)
    }

    pub fn push(&mut self, op: Op, inputs: Inputs, value: Tensor, span: Span) -> u32 {
        self.records.push(Record {
            op,
            inputs,
            value,
            bound: f64::INFINITY,
            name: None,
            span,
        });
        (self.records.len() - 1) as u32
    }

    /// How many records are operations (not leaves).
    pub fn operation_count(&self) -> usize {
        self.records.iter().filter(|r| r.op != Op::Leaf).count()
    }

    /// The reverse walk: blame 1 on the result, then every record from the
    /// newest to the oldest hands its blame to its inputs by its per-link
    /// rule, adding up where a value is used more than once.
    ///
    /// Every share is checked for NaN, except where bounds on the sizes of
    /// its factors prove it has none: a matrix product's, when its other
    /// input's value and the blame both have finite bounds.
    pub fn walk(&mut self, result: u32) -> Result<(), WalkError> {
        let n = result as usize + 1;
        self.open = false;
        self.result = Some(result);
        self.blame = vec![None; self.records.len()];
        self.blame[result as usize] = Some(self.records[result as usize].value.ones_like());
        let mut bounds = std::mem::take(&mut self.blame_bounds);
        bounds.clear();
        bounds.resize(self.records.len(), f64::INFINITY);
        bounds[result as usize] = 1.0;
        for i in (0..n).rev() {
            let Some(blame) = self.blame[i].take() else {
                continue;
            };
            let record = &self.records[i];
            if !record.inputs.is_empty() {
                let mut inputs: SmallVec<[&Tensor; 2]> = SmallVec::new();
                for &k in &record.inputs {
                    inputs.push(&self.records[k as usize].value);
                }
                let known = match record.op {
                    // blame · bᵀ and aᵀ · blame, for blame m×n.
                    Op::MatMul => {
                        let (m, n) = blame.shape();
                        let size = |k: usize| self.records[record.inputs[k] as usize].bound;
                        [
                            ops::product_bound(bounds[i], size(1), n),
                            ops::product_bound(size(0), bounds[i], m),
                        ]
                    }
                    _ => [f64::INFINITY; 2],
                };
                let shares = record.op.per_link_rule(&inputs, &record.value, &blame);
                drop(inputs);
                for (k, share) in shares.into_iter().enumerate() {
                    let Some(share) = share else { continue };
                    let size = match known.get(k) {
                        Some(&size) if size.is_finite() => size,
                        _ => share.bound(),
                    };
                    if size.is_nan() {
                        self.blame[i] = Some(blame);
                        return Err(WalkError {
                            record: i,
                            input: k,
                            position: share.first_nan().unwrap_or((1, 1)),
                            summed: false,
                        });
                    }
                    let target = record.inputs[k] as usize;
                    match &mut self.blame[target] {
                        Some(existing) => {
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
                if self.only_blame_read && record.name.is_none() && i != result as usize {
                    // Every record that used this value has been walked.
                    self.records[i].value = Tensor::Scalar(0.0);
                    continue;
                }
            }
            self.blame[i] = Some(blame);
        }
        self.blame_bounds = bounds;
        Ok(())
    }

    /// Re-runs the recorded operations from record `node` to `result` with
    /// `node` holding `value` instead, and returns the result. Only the
    /// recorded path is followed: control flow is not re-decided.
    pub fn replay(&self, node: u32, value: Tensor, result: u32) -> Option<f64> {
        let start = node as usize;
        let mut changed: Vec<Option<Tensor>> =
            vec![None; result as usize + 1 - start.min(result as usize + 1)];
        if start > result as usize {
            return None;
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
            changed[i - start] = Some(record.op.forward(&inputs).ok()?);
        }
        let out = changed[result as usize - start]
            .as_ref()
            .unwrap_or(&self.records[result as usize].value);
        Some(out.view()[(0, 0)])
    }

    /// No element of a record's blame is larger in size than this, after a
    /// walk that finished (infinity: not known).
    pub fn blame_bound(&self, node: u32) -> f64 {
        self.blame_bounds
            .get(node as usize)
            .copied()
            .unwrap_or(f64::INFINITY)
    }

    /// The blame of a record after the walk: zeros where none reached it.
    pub fn blame_of(&self, node: u32) -> Tensor {
        match self.blame.get(node as usize) {
            Some(Some(b)) => b.clone(),
            _ => self.records[node as usize].value.zeros_like(),
        }
    }
}
