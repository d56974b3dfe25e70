//! The names of the builtins, how many arguments each takes and whether it
//! gives a value. The checker and the evaluator both read this table.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Gives a value; used in expressions.
    Function,
    /// Gives nothing; used as a statement.
    Procedure,
}

pub struct Builtin {
    pub name: &'static str,
    pub min_args: usize,
    /// `usize::MAX` for any number.
    pub max_args: usize,
    pub kind: Kind,
    /// What it takes, for messages about wrong arguments.
    pub takes: &'static str,
}

const fn f(name: &'static str, n: usize, takes: &'static str) -> Builtin {
    Builtin {
        name,
        min_args: n,
        max_args: n,
        kind: Kind::Function,
        takes,
    }
}

const fn p(name: &'static str, n: usize, takes: &'static str) -> Builtin {
    Builtin {
        name,
        min_args: n,
        max_args: n,
        kind: Kind::Procedure,
        takes,
    }
}

pub const BUILTINS: &[Builtin] = &[
    f(
        "Hadamard",
        2,
        "two matrices (or numbers) of shapes that broadcast",
    ),
    f("Transpose", 1, "a matrix"),
    f("Sum", 1, "a matrix"),
    f("Mean", 1, "a matrix"),
    f("RowSum", 1, "a matrix"),
    f("RowMean", 1, "a matrix"),
    f("ColSum", 1, "a matrix"),
    f("RowSoftmax", 1, "a matrix"),
    f("Tanh", 1, "a number or a matrix"),
    f("Exp", 1, "a number or a matrix"),
    f("Log", 1, "a number or a matrix"),
    f("Sqrt", 1, "a number or a matrix"),
    f("ReLU", 1, "a number or a matrix"),
    f("Sigmoid", 1, "a number or a matrix"),
    f("Abs", 1, "a number or a matrix"),
    f("LayerNorm", 1, "a matrix"),
    f("Embed", 2, "a table (matrix) and a 1×T row of row numbers"),
    f(
        "CrossEntropy",
        2,
        "a T×V matrix of logits and a 1×T row of column numbers",
    ),
    f("Row", 2, "a matrix and a row number"),
    f("Col", 2, "a matrix and a column number"),
    f("RowRange", 3, "a matrix, a first row and a count"),
    f("ColRange", 3, "a matrix, a first column and a count"),
    f("HStack", 2, "two matrices with the same number of rows"),
    f("VStack", 2, "two matrices with the same number of columns"),
    f("Zeros", 2, "a number of rows and a number of columns"),
    f("Ones", 2, "a number of rows and a number of columns"),
    f(
        "Fill",
        3,
        "a number of rows, a number of columns and a value",
    ),
    f("Eye", 1, "a size"),
    f("CausalMask", 1, "a size"),
    p("Seed", 1, "an Integer"),
    f("Random", 2, "a number of rows and a number of columns"),
    f("Randn", 2, "a number of rows and a number of columns"),
    f("RandInt", 2, "two Integers, the lowest and the highest"),
    f("Sample", 1, "a 1×n row of weights"),
    f("Argmax", 1, "a 1×n row"),
    f("Rows", 1, "a matrix"),
    f("Cols", 1, "a matrix"),
    f("Length", 1, "a String"),
    f("Round", 1, "a number"),
    f("Trunc", 1, "a number"),
    f("Min", 2, "two numbers"),
    f("Max", 2, "two numbers"),
    f("ReadText", 1, "a file path"),
    f("Vocab", 1, "a String"),
    f("Encode", 2, "a String and a vocabulary String"),
    f("Decode", 2, "a 1×N row of ids and a vocabulary String"),
    f("ParamCount", 0, "nothing"),
    f("ParamStr", 1, "an Integer"),
    f("StrToInt", 1, "a String"),
    f("StrToFloat", 1, "a String"),
    p("Progress", 2, "a step and a number of steps"),
    p("Plot", 2, "a matrix and a file path"),
    f("CheckBlame", 1, "a variable"),
    f("Blame", 1, "a variable"),
    p("Nudge", 2, "a variable and a rate"),
    p("Show", 1, "a matrix"),
    Builtin {
        name: "Write",
        min_args: 0,
        max_args: usize::MAX,
        kind: Kind::Procedure,
        takes: "values to print",
    },
    Builtin {
        name: "WriteLn",
        min_args: 0,
        max_args: usize::MAX,
        kind: Kind::Procedure,
        takes: "values to print",
    },
];

/// The index in [`BUILTINS`] of the builtin called `name`, if there is one
/// (looked up on every call, so by hash rather than by a scan of the table).
fn index_of(name: &str) -> Option<usize> {
    static BY_NAME: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, usize>> =
        std::sync::OnceLock::new();
    BY_NAME
        .get_or_init(|| {
            BUILTINS
                .iter()
                .enumerate()
                .map(|(i, b)| (b.name, i))
                .collect()
        })
        .get(name)
        .copied()
}

/// The builtin called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Builtin> {
    index_of(name).map(|i| &BUILTINS[i])
}

/// The builtin `name` calls, looked up by its text the first time only.
pub fn find_for(name: &crate::syntax::tree::Name) -> Option<&'static Builtin> {
    match name.found.builtin.get() {
        0 => {
            let at = index_of(&name.text);
            let code = at.map_or(1, |i| i + 2);
            name.found
                .builtin
                .set(u16::try_from(code).expect("fewer than 65534 builtins"));
            at.map(|i| &BUILTINS[i])
        }
        1 => None,
        code => Some(&BUILTINS[usize::from(code) - 2]),
    }
}

/// Names that are not routines but may be read: builtin constants.
pub const CONSTANTS: &[&str] = &["Inf"];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Span;
    use crate::syntax::tree::Name;

    #[test]
    fn a_name_finds_the_same_builtin_the_first_time_and_after() {
        for b in BUILTINS {
            let name = Name::new(b.name.to_string(), Span::default());
            for _ in 0..2 {
                assert_eq!(find_for(&name).map(|f| f.name), Some(b.name));
            }
        }
        let name = Name::new("NoSuchBuiltin".to_string(), Span::default());
        for _ in 0..2 {
            assert!(find_for(&name).is_none());
        }
    }
}
