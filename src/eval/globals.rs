//! The global variables: slots in a vector, found by name through a map the
//! first time a name is read and through the name's remembered index after.
//!
//! A slot is never removed, so an index stays good for as long as the table
//! lives. A copy of the table (a REPL snapshot) gets a number of its own, so
//! an index remembered against one table is never used in another: after a
//! snapshot is put back, every name is looked up afresh once.

use std::sync::atomic::{AtomicU32, Ordering};

use rustc_hash::FxHashMap as HashMap;

use super::value::Value;
use crate::syntax::tree::{Name, TypeName};

/// Table numbers, unique in the process; 0 is never given out, so a name
/// that was never looked up matches no table.
static NEXT_TABLE: AtomicU32 = AtomicU32::new(1);

fn new_table_number() -> u32 {
    NEXT_TABLE.fetch_add(1, Ordering::Relaxed)
}

/// A variable: its value (none yet if only declared) and its declared type.
#[derive(Debug, Clone)]
pub struct Slot {
    pub value: Option<Value>,
    pub declared: Option<TypeName>,
}

pub struct Globals {
    table: u32,
    index: HashMap<String, u32>,
    slots: Vec<Slot>,
}

impl Default for Globals {
    fn default() -> Globals {
        Globals {
            table: new_table_number(),
            index: HashMap::default(),
            slots: Vec::new(),
        }
    }
}

impl Clone for Globals {
    /// The copy has a new table number: see the module's comment.
    fn clone(&self) -> Globals {
        Globals {
            table: new_table_number(),
            index: self.index.clone(),
            slots: self.slots.clone(),
        }
    }
}

impl Globals {
    /// The global `name` reads or writes, remembering where it was found.
    #[inline(always)]
    pub fn find_mut(&mut self, name: &Name) -> Option<&mut Slot> {
        let (table, at) = name.found.global.get();
        if table == self.table {
            return Some(&mut self.slots[at as usize]);
        }
        let at = *self.index.get(name.text.as_str())?;
        name.found.global.set((self.table, at));
        Some(&mut self.slots[at as usize])
    }

    pub fn get(&self, name: &str) -> Option<&Slot> {
        self.index.get(name).map(|&at| &self.slots[at as usize])
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Slot> {
        self.index.get(name).map(|&at| &mut self.slots[at as usize])
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The slot called `name`, made with `slot` if there is none yet.
    pub fn get_or_insert(&mut self, name: &str, slot: Slot) -> &mut Slot {
        let at = match self.index.get(name) {
            Some(&at) => at,
            None => {
                let at = u32::try_from(self.slots.len()).expect("fewer than 2^32 globals");
                self.index.insert(name.to_string(), at);
                self.slots.push(slot);
                at
            }
        };
        &mut self.slots[at as usize]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Span;
    use crate::eval::Value;

    fn slot(x: f64) -> Slot {
        Slot {
            value: Some(Value::Real(x, None)),
            declared: None,
        }
    }

    fn real(slot: Option<&mut Slot>) -> Option<f64> {
        match slot?.value {
            Some(Value::Real(x, _)) => Some(x),
            _ => None,
        }
    }

    #[test]
    fn a_remembered_index_is_never_used_in_another_table() {
        let mut live = Globals::default();
        live.get_or_insert("a", slot(1.0));
        let saved = live.clone();
        live.get_or_insert("b", slot(2.0));
        let b = Name::new("b".into(), Span::default());
        assert_eq!(real(live.find_mut(&b)), Some(2.0));
        // Put the copy back, then give the index `b` had to another name.
        live = saved;
        assert_eq!(real(live.find_mut(&b)), None);
        live.get_or_insert("c", slot(3.0));
        assert_eq!(real(live.find_mut(&b)), None);
        let c = Name::new("c".into(), Span::default());
        assert_eq!(real(live.find_mut(&c)), Some(3.0));
        assert_eq!(real(live.find_mut(&c)), Some(3.0));
        let a = Name::new("a".into(), Span::default());
        assert_eq!(real(live.find_mut(&a)), Some(1.0));
    }
}
