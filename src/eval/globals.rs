//! The global variables: slots in a vector, at the global numbers the
//! resolver gives names (`check::resolve`), and found by name through a map
//! by the REPL and messages.

use rustc_hash::FxHashMap as HashMap;

use super::value::Value;
use crate::syntax::tree::TypeName;

/// A variable: its value (none yet if only declared) and its declared type.
#[derive(Debug, Clone)]
pub struct Slot {
    pub value: Option<Value>,
    pub declared: Option<TypeName>,
    /// Whether the value is one a `Nudge` left: the assignment that
    /// replaces it is remembered, for a `Blame` after it to point at. A
    /// flag here, not a search of the `Nudge`s since the tape, because
    /// every assignment of a training loop between its `Nudge`s and its
    /// next tape asks.
    pub nudged: bool,
}

impl Slot {
    pub fn new(value: Option<Value>, declared: Option<TypeName>) -> Slot {
        Slot {
            value,
            declared,
            nudged: false,
        }
    }

    /// Puts `v` in place of the value, giving back the value replaced and
    /// whether a `Nudge` left it.
    #[inline]
    pub fn replace(&mut self, v: Value) -> (Option<Value>, bool) {
        (self.value.replace(v), std::mem::take(&mut self.nudged))
    }
}

/// The globals that exist: `slots[n]` is the one of global number `n`.
#[derive(Clone, Default)]
pub struct Globals {
    index: HashMap<String, u32>,
    slots: Vec<Option<Slot>>,
}

impl Globals {
    /// The global of number `n`, if one exists.
    #[inline(always)]
    pub fn at_mut(&mut self, n: u32) -> Option<&mut Slot> {
        self.slots.get_mut(n as usize)?.as_mut()
    }

    pub fn get(&self, name: &str) -> Option<&Slot> {
        let n = *self.index.get(name)?;
        self.slots[n as usize].as_ref()
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Slot> {
        let n = *self.index.get(name)?;
        self.slots[n as usize].as_mut()
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The global `name` of number `n`, made with `slot` if there is none yet.
    pub fn get_or_insert(&mut self, name: &str, n: u32, slot: Slot) -> &mut Slot {
        let at = n as usize;
        if at >= self.slots.len() {
            self.slots.resize_with(at + 1, || None);
        }
        if self.slots[at].is_none() {
            self.index.insert(name.to_string(), n);
        }
        self.slots[at].get_or_insert(slot)
    }

    /// Every global's name, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.index.keys()
    }
}

impl std::ops::Index<&str> for Globals {
    type Output = Slot;
    fn index(&self, name: &str) -> &Slot {
        self.get(name).expect("a global of that name")
    }
}
