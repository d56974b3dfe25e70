//! The resolver: what each name of a checked program means, in a side table
//! the evaluator reads instead of looking the name up by its text.
//!
//! Every name resolves to a global number: one per distinct text, given out
//! in the order texts are first seen and never taken back, so it is the
//! index of the global's slot whenever a global of that name exists. A
//! routine's locals get numbers too; the evaluator looks in the routine's
//! frame first, as the scope rules say, and uses the number only when the
//! frame has no such local. A name that is a builtin's also resolves to
//! that builtin.
//!
//! The table is keyed by [`NameId`]. Numbers of names are unique in the
//! process, so one table serves every REPL entry and the routines that
//! earlier entries declared. A name the table has never seen (one made
//! while running, or parsed before the table's first program) reads as
//! unresolved, and the evaluator then goes by its text.

use rustc_hash::FxHashMap as HashMap;

use crate::declarations::{self, BUILTINS, Builtin};
use crate::syntax::tree::{Name, NameId, Program, each_name};

/// What one occurrence of a name means: the global number of its text
/// (every name has one, as a variable of any name may exist), and the
/// builtin it names, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meaning {
    /// The global number, or `u32::MAX` for a name the table never saw.
    global: u32,
    /// 0: no builtin; `i + 1`: the builtin at index `i` of [`BUILTINS`].
    builtin: u16,
}

const UNRESOLVED: Meaning = Meaning {
    global: u32::MAX,
    builtin: 0,
};

/// The most names one table spans; a name numbered further from the first
/// one it holds stays unresolved rather than growing the table.
const MOST_SPANNED: u32 = 1 << 26;

#[derive(Debug, Default, Clone)]
pub struct Resolution {
    /// The number of the first name the table holds.
    base: u32,
    meanings: Vec<Meaning>,
    numbers: HashMap<String, u32>,
}

impl Resolution {
    /// Resolves every name of `program`, routines' bodies included.
    pub fn resolve(&mut self, program: &Program) {
        let mut names = Vec::new();
        each_name(&program.body, &mut |name| names.push(name));
        if self.meanings.is_empty()
            && let Some(first) = names.iter().map(|n| n.id.0).min()
        {
            self.base = first;
        }
        for name in names {
            let Some(at) = self.place(name.id) else {
                continue;
            };
            let builtin = declarations::index_of(&name.text).map_or(0, |i| i + 1);
            let meaning = Meaning {
                global: self.number(&name.text),
                builtin: u16::try_from(builtin).expect("fewer than 2^16 builtins"),
            };
            if at >= self.meanings.len() {
                self.meanings.resize(at + 1, UNRESOLVED);
            }
            self.meanings[at] = meaning;
        }
    }

    /// Where `id` sits in the table, if it may.
    fn place(&self, id: NameId) -> Option<usize> {
        let at = id.0.wrapping_sub(self.base);
        (at < MOST_SPANNED).then_some(at as usize)
    }

    #[inline(always)]
    fn meaning(&self, name: &Name) -> Meaning {
        let at = name.id.0.wrapping_sub(self.base) as usize;
        self.meanings.get(at).copied().unwrap_or(UNRESOLVED)
    }

    /// The global number of `name`'s text, if it has one: the slot of the
    /// global variable it names when one exists.
    #[inline(always)]
    pub fn global(&self, name: &Name) -> Option<u32> {
        match self.meaning(name) {
            UNRESOLVED => self.numbers.get(&*name.text).copied(),
            m => Some(m.global),
        }
    }

    /// The builtin `name` calls, if it names one.
    #[inline(always)]
    pub fn builtin(&self, name: &Name) -> Option<&'static Builtin> {
        match self.meaning(name) {
            UNRESOLVED => declarations::find(&name.text),
            m => usize::from(m.builtin).checked_sub(1).map(|i| &BUILTINS[i]),
        }
    }

    /// Whether the table resolved `name` (rather than going by its text).
    pub fn resolved(&self, name: &Name) -> bool {
        self.meaning(name) != UNRESOLVED
    }

    /// The global number of the text `text`, given now if it has none.
    pub fn number(&mut self, text: &str) -> u32 {
        if let Some(&n) = self.numbers.get(text) {
            return n;
        }
        let n = u32::try_from(self.numbers.len()).expect("fewer than 2^32 names");
        self.numbers.insert(text.to_string(), n);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Span;
    use crate::syntax;

    fn parsed(text: &str) -> Program {
        let (program, errors) = syntax::parse(text, 0);
        assert!(errors.is_empty(), "{errors:?}");
        program
    }

    fn names(program: &Program) -> Vec<&Name> {
        let mut names = Vec::new();
        each_name(&program.body, &mut |n| names.push(n));
        names
    }

    #[test]
    fn builtins_resolve_to_their_declaration_and_every_text_to_one_number() {
        let program = parsed("x := Exp(y); function F(a): Real; begin Result := a + x end;");
        let mut r = Resolution::default();
        r.resolve(&program);
        let found: Vec<(&str, Option<u32>, Option<&str>)> = names(&program)
            .into_iter()
            .map(|n| {
                assert!(r.resolved(n), "{}", n.text);
                (&*n.text, r.global(n), r.builtin(n).map(|b| b.name))
            })
            .collect();
        let n = |text: &str| Some(r.numbers[text]);
        assert_eq!(
            found,
            [
                ("x", n("x"), None),
                ("Exp", n("Exp"), Some("Exp")),
                ("y", n("y"), None),
                ("F", n("F"), None),
                ("a", n("a"), None),
                ("Result", n("Result"), None),
                ("a", n("a"), None),
                ("x", n("x"), None),
            ]
        );
        assert_eq!(r.numbers.len(), 6);
    }

    #[test]
    fn a_later_entry_keeps_the_numbers_of_earlier_ones() {
        let mut r = Resolution::default();
        let first = parsed("a := 1; b := 2;");
        r.resolve(&first);
        let second = parsed("b := a;");
        r.resolve(&second);
        let [b, a] = names(&second)[..] else { panic!() };
        assert_eq!(r.global(a), Some(r.numbers["a"]));
        assert_eq!(r.global(b), Some(r.numbers["b"]));
        assert_eq!(r.numbers.len(), 2);
    }

    #[test]
    fn a_name_the_table_never_saw_goes_by_its_text() {
        let mut r = Resolution::default();
        r.resolve(&parsed("w := 1;"));
        let unseen = Name::new("w", Span::default());
        assert!(!r.resolved(&unseen));
        assert_eq!(r.global(&unseen), Some(r.numbers["w"]));
        let sum = Name::new("Sum", Span::default());
        assert_eq!(r.builtin(&sum).map(|b| b.name), Some("Sum"));
        let other = Name::new("nothing", Span::default());
        assert!(r.global(&other).is_none() && r.builtin(&other).is_none());
    }
}
