//! Every builtin, declared once: its name, its parameters and their kinds,
//! what it does (the dispatch), whether the tape records it, a doc line with
//! a tiny example, and for each parameter a sample argument for the tests.
//!
//! Everything else is derived from [`BUILTINS`]: the lookup by name, the
//! checker's arity and variable-name checks, the interpreter's dispatch (a
//! `match` on [`Does`], so a builtin without code is a compile error), the
//! REPL's `:help NAME`, `docs/BUILTINS.md`, and the tests that go over every
//! builtin (finite differences and CheckBlame for each recorded one, wrong
//! counts and kinds for all).

use crate::tape::Op;
use crate::tape::ops::Unary;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Gives a value; used in expressions.
    Function,
    /// Gives nothing; used as a statement.
    Procedure,
}

/// What an argument must be. The checker reads `Variable`, and refuses an
/// argument written as a literal of a kind the parameter cannot take; the
/// rest is for readers (`:help`, the reference) and the tests: computed
/// values are checked when the call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Number,
    Matrix,
    NumberOrMatrix,
    Integer,
    Text,
    /// A variable's name, not a value (`Blame(w)`).
    Variable,
    /// Row or column numbers, ids or targets: read, never blamed.
    Selector,
    /// A number that is read, never blamed (`Power`'s exponent).
    Exponent,
    /// Any number of values of any kind (`WriteLn`).
    Values,
}

impl ParamKind {
    /// Whether blame reaches an argument of this kind, in a recorded builtin.
    pub fn is_blamed(self) -> bool {
        !matches!(self, ParamKind::Selector | ParamKind::Exponent)
    }

    pub fn describe(self) -> &'static str {
        match self {
            ParamKind::Number => "number",
            ParamKind::Matrix => "matrix",
            ParamKind::NumberOrMatrix => "number or matrix",
            ParamKind::Integer => "Integer",
            ParamKind::Text => "String",
            ParamKind::Variable => "variable name",
            ParamKind::Selector => "selector (whole numbers from 1; no blame)",
            ParamKind::Exponent => "number (no blame)",
            ParamKind::Values => "any values, each with an optional :w or :w:d",
        }
    }
}

pub struct Param {
    pub name: &'static str,
    pub kind: ParamKind,
    /// An argument that works in a call beside the other samples: what the
    /// tests call the builtin with.
    pub sample: &'static str,
}

impl Param {
    /// Whether the argument must be an Integer: an Integer parameter, or a
    /// selector that is one number (a row or column number, a count), not a
    /// row of them (ids, targets), as its sample shows.
    pub fn wants_an_integer(&self) -> bool {
        self.kind == ParamKind::Integer
            || (self.kind == ParamKind::Selector && self.sample.parse::<i64>().is_ok())
    }
}

/// A recorded matrix operation that takes matrices only and needs nothing
/// from its call but its inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatrixOp {
    Transpose,
    Sum,
    Mean,
    RowSum,
    RowMean,
    ColSum,
    RowSoftmax,
    LayerNorm,
    HStack,
    VStack,
}

impl MatrixOp {
    pub fn op(self) -> Op {
        match self {
            MatrixOp::Transpose => Op::Transpose,
            MatrixOp::Sum => Op::Sum,
            MatrixOp::Mean => Op::Mean,
            MatrixOp::RowSum => Op::RowSum,
            MatrixOp::RowMean => Op::RowMean,
            MatrixOp::ColSum => Op::ColSum,
            MatrixOp::RowSoftmax => Op::RowSoftmax,
            MatrixOp::LayerNorm => Op::LayerNorm,
            MatrixOp::HStack => Op::HStack,
            MatrixOp::VStack => Op::VStack,
        }
    }
}

/// Which code a call runs: one variant per builtin or family, so the
/// interpreter's `match` on it is checked by the compiler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Does {
    /// An elementwise function of a number or a matrix.
    Unary(Unary),
    Power,
    Matrix(MatrixOp),
    Hadamard,
    /// `Row` (true) or `Col`: one row or column, recorded as a range.
    RowOrCol(bool),
    /// `RowRange` (true) or `ColRange`.
    Range(bool),
    Embed,
    CrossEntropy,
    /// `Zeros`, `Ones`, `Random`, `Randn`: a matrix of a shape.
    Filled(Filling),
    Fill,
    Eye,
    CausalMask,
    Seed,
    RandInt,
    Sample,
    Argmax,
    Rows,
    Cols,
    Length,
    /// `Round` (true) or `Trunc`.
    Round(bool),
    /// `Min` (true) or `Max`.
    Min(bool),
    ReadText,
    Save,
    Load,
    Vocab,
    Encode,
    Decode,
    ParamCount,
    ParamStr,
    StrToInt,
    StrToFloat,
    Progress,
    Plot,
    CheckBlame,
    Blame,
    Nudge,
    Show,
    /// `WriteLn` (true) or `Write`.
    Write(bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Filling {
    Zeros,
    Ones,
    Random,
    Randn,
}

pub struct Builtin {
    pub name: &'static str,
    pub does: Does,
    pub kind: Kind,
    pub params: &'static [Param],
    /// Takes any number of arguments (`Write`, `WriteLn`).
    pub variadic: bool,
    /// How many of the last parameters may be left out (`Plot`'s path and
    /// title).
    pub optional: usize,
    /// Whether a call inside a tape records an operation.
    pub recorded: bool,
    /// What it takes, for messages about wrong arguments.
    pub takes: &'static str,
    /// One sentence: what it gives or does.
    pub doc: &'static str,
    /// A tiny example call.
    pub example: &'static str,
}

impl Builtin {
    pub fn min_args(&self) -> usize {
        if self.variadic {
            0
        } else {
            self.params.len() - self.optional
        }
    }

    /// `usize::MAX` for any number.
    pub fn max_args(&self) -> usize {
        if self.variadic {
            usize::MAX
        } else {
            self.params.len()
        }
    }

    /// Whether its first argument is a variable's name, not a value.
    pub fn takes_a_variable(&self) -> bool {
        self.params
            .first()
            .is_some_and(|p| p.kind == ParamKind::Variable)
    }

    /// `Name(a, b)`, with the parameters' names.
    pub fn signature(&self) -> String {
        let first_optional = self.params.len() - self.optional;
        let names: Vec<String> = self
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i >= first_optional {
                    format!("[{}]", p.name)
                } else {
                    p.name.to_string()
                }
            })
            .collect();
        if names.is_empty() && !self.variadic {
            self.name.to_string()
        } else {
            format!("{}({})", self.name, names.join(", "))
        }
    }

    /// What `:help NAME` prints.
    pub fn help(&self) -> String {
        let mut text = format!("{} — {}\n", self.signature(), self.doc);
        for p in self.params {
            text.push_str(&format!("  {}: {}\n", p.name, p.kind.describe()));
        }
        let what = match (self.kind, self.recorded) {
            (Kind::Procedure, _) => "a procedure",
            (Kind::Function, true) => "recorded inside a tape",
            (Kind::Function, false) => "not recorded",
        };
        text.push_str(&format!("  {what}; for example: {}\n", self.example));
        text
    }
}

const fn param(name: &'static str, kind: ParamKind, sample: &'static str) -> Param {
    Param { name, kind, sample }
}

use ParamKind::*;

/// The sample matrix most builtins are tried on: 2×3, every element
/// different, of both signs.
const SAMPLE: &str = "[[0.5, -1.2, 2.0], [1.5, 0.3, -0.7]]";

const A_MATRIX: &[Param] = &[param("a", Matrix, SAMPLE)];
const A_VALUE: &[Param] = &[param("a", NumberOrMatrix, SAMPLE)];
const A_POSITIVE_SAMPLE: &str = "[[0.5, 1.2, 2.0], [1.5, 0.3, 0.7]]";
const A_POSITIVE: &[Param] = &[param("a", NumberOrMatrix, A_POSITIVE_SAMPLE)];
const A_SHAPE: &[Param] = &[param("rows", Integer, "2"), param("cols", Integer, "3")];
const A_SIZE: &[Param] = &[param("n", Integer, "3")];
const A_NUMBER: &[Param] = &[param("x", Number, "2.5")];
const TWO_NUMBERS: &[Param] = &[param("a", Number, "2"), param("b", Number, "3.5")];
const A_STRING: &[Param] = &[param("s", Text, "'hello'")];
const A_VARIABLE: &[Param] = &[param("x", Variable, "w")];

const fn function(
    name: &'static str,
    does: Does,
    params: &'static [Param],
    takes: &'static str,
    doc: &'static str,
    example: &'static str,
) -> Builtin {
    Builtin {
        name,
        does,
        kind: Kind::Function,
        params,
        variadic: false,
        optional: 0,
        recorded: false,
        takes,
        doc,
        example,
    }
}

const fn recorded(
    name: &'static str,
    does: Does,
    params: &'static [Param],
    takes: &'static str,
    doc: &'static str,
    example: &'static str,
) -> Builtin {
    Builtin {
        recorded: true,
        ..function(name, does, params, takes, doc, example)
    }
}

const fn procedure(
    name: &'static str,
    does: Does,
    params: &'static [Param],
    takes: &'static str,
    doc: &'static str,
    example: &'static str,
) -> Builtin {
    Builtin {
        kind: Kind::Procedure,
        ..function(name, does, params, takes, doc, example)
    }
}

const fn elementwise(
    name: &'static str,
    u: Unary,
    params: &'static [Param],
    doc: &'static str,
    example: &'static str,
) -> Builtin {
    recorded(
        name,
        Does::Unary(u),
        params,
        "a number or a matrix",
        doc,
        example,
    )
}

const fn of_matrix(
    name: &'static str,
    op: MatrixOp,
    doc: &'static str,
    example: &'static str,
) -> Builtin {
    recorded(name, Does::Matrix(op), A_MATRIX, "a matrix", doc, example)
}

pub const BUILTINS: &[Builtin] = &[
    recorded(
        "Hadamard",
        Does::Hadamard,
        &[
            param("a", NumberOrMatrix, SAMPLE),
            param("b", NumberOrMatrix, "[[1.0, 2.0, -0.5]]"),
        ],
        "two matrices (or numbers) of shapes that broadcast",
        "the elementwise product, broadcast as `+` is",
        "Hadamard([[1, 2]], [[3, 4]])  { [[3, 8]] }",
    ),
    of_matrix(
        "Transpose",
        MatrixOp::Transpose,
        "the n×m matrix of rows and columns swapped",
        "Transpose([[1, 2]])  { [[1], [2]] }",
    ),
    of_matrix(
        "Sum",
        MatrixOp::Sum,
        "the sum of all elements, a Real",
        "Sum([[1, 2], [3, 4]])  { 10.0 }",
    ),
    of_matrix(
        "Mean",
        MatrixOp::Mean,
        "the mean of all elements, a Real",
        "Mean([[1, 2], [3, 4]])  { 2.5 }",
    ),
    of_matrix(
        "RowSum",
        MatrixOp::RowSum,
        "the m×1 column of each row's sum",
        "RowSum([[1, 2], [3, 4]])  { [[3], [7]] }",
    ),
    of_matrix(
        "RowMean",
        MatrixOp::RowMean,
        "the m×1 column of each row's mean",
        "RowMean([[1, 2], [3, 4]])  { [[1.5], [3.5]] }",
    ),
    of_matrix(
        "ColSum",
        MatrixOp::ColSum,
        "the 1×n row of each column's sum",
        "ColSum([[1, 2], [3, 4]])  { [[4, 6]] }",
    ),
    of_matrix(
        "RowSoftmax",
        MatrixOp::RowSoftmax,
        "each row's softmax: positive, summing to 1 (-inf gives 0)",
        "RowSoftmax([[0, 0]])  { [[0.5, 0.5]] }",
    ),
    elementwise(
        "Tanh",
        Unary::Tanh,
        A_VALUE,
        "the hyperbolic tangent of each element",
        "Tanh(0.5)  { 0.462117 }",
    ),
    elementwise(
        "Exp",
        Unary::Exp,
        A_VALUE,
        "e to the power of each element",
        "Exp(1)  { 2.718282 }",
    ),
    elementwise(
        "Log",
        Unary::Log,
        A_POSITIVE,
        "the natural logarithm of each element",
        "Log(Exp(2))  { 2.0 }",
    ),
    elementwise(
        "Sqrt",
        Unary::Sqrt,
        A_POSITIVE,
        "the square root of each element",
        "Sqrt(2)  { 1.414214 }",
    ),
    elementwise(
        "ReLU",
        Unary::ReLU,
        A_VALUE,
        "each element, or 0 where it is negative",
        "ReLU([[-1, 2]])  { [[0, 2]] }",
    ),
    elementwise(
        "Sigmoid",
        Unary::Sigmoid,
        A_VALUE,
        "1 / (1 + e^-x) of each element",
        "Sigmoid(0)  { 0.5 }",
    ),
    elementwise(
        "Abs",
        Unary::Abs,
        A_VALUE,
        "the size of each element (an Integer stays an Integer)",
        "Abs(-3)  { 3 }",
    ),
    elementwise(
        "Sqr",
        Unary::Sqr,
        A_VALUE,
        "the square of each element (an Integer stays an Integer)",
        "Sqr(-3)  { 9 }",
    ),
    recorded(
        "Power",
        Does::Power,
        &[
            param("a", NumberOrMatrix, A_POSITIVE_SAMPLE),
            param("p", Exponent, "1.5"),
        ],
        "a number or a matrix, and a number",
        "each element to the power p (a Real or a matrix, even of Integers)",
        "Power(2, 10)  { 1024.0 }",
    ),
    of_matrix(
        "LayerNorm",
        MatrixOp::LayerNorm,
        "each row shifted to mean 0 and scaled to variance 1 (epsilon 1e-5)",
        "LayerNorm([[1, 3]])  { about [[-1, 1]] }",
    ),
    recorded(
        "Embed",
        Does::Embed,
        &[
            param("table", Matrix, "[[0.5, -1.2], [1.5, 0.3], [-0.7, 2.0]]"),
            param("ids", Selector, "[[3, 1, 3]]"),
        ],
        "a table (matrix) and a 1×T row of row numbers",
        "the T rows of the table that the ids name, one under the other",
        "Embed(table, [[2, 1]])  { table's rows 2 and 1 }",
    ),
    recorded(
        "CrossEntropy",
        Does::CrossEntropy,
        &[
            param("logits", Matrix, SAMPLE),
            param("targets", Selector, "[[3, 1]]"),
        ],
        "a T×V matrix of logits and a 1×T row of column numbers",
        "the mean over rows of -log softmax(row)[target], a Real",
        "CrossEntropy([[0, 0]], [[1]])  { 0.693147 }",
    ),
    recorded(
        "Row",
        Does::RowOrCol(true),
        &[param("a", Matrix, SAMPLE), param("i", Selector, "2")],
        "a matrix and a row number",
        "row i (from 1) as a 1×n matrix",
        "Row([[1, 2], [3, 4]], 2)  { [[3, 4]] }",
    ),
    recorded(
        "Col",
        Does::RowOrCol(false),
        &[param("a", Matrix, SAMPLE), param("j", Selector, "3")],
        "a matrix and a column number",
        "column j (from 1) as an m×1 matrix",
        "Col([[1, 2], [3, 4]], 1)  { [[1], [3]] }",
    ),
    recorded(
        "RowRange",
        Does::Range(true),
        &[
            param("a", Matrix, "[[0.5, -1.2], [1.5, 0.3], [-0.7, 2.0]]"),
            param("first", Selector, "2"),
            param("count", Selector, "2"),
        ],
        "a matrix, a first row and a count",
        "count rows from row first (from 1)",
        "RowRange(m, 2, 3)  { rows 2, 3 and 4 }",
    ),
    recorded(
        "ColRange",
        Does::Range(false),
        &[
            param("a", Matrix, SAMPLE),
            param("first", Selector, "1"),
            param("count", Selector, "2"),
        ],
        "a matrix, a first column and a count",
        "count columns from column first (from 1)",
        "ColRange(m, 1, 2)  { columns 1 and 2 }",
    ),
    recorded(
        "HStack",
        Does::Matrix(MatrixOp::HStack),
        &[
            param("a", Matrix, "[[0.5, -1.2], [1.5, 0.3]]"),
            param("b", Matrix, "[[2.0], [-0.7]]"),
        ],
        "two matrices with the same number of rows",
        "a and b side by side",
        "HStack([[1]], [[2]])  { [[1, 2]] }",
    ),
    recorded(
        "VStack",
        Does::Matrix(MatrixOp::VStack),
        &[
            param("a", Matrix, "[[0.5, -1.2], [1.5, 0.3]]"),
            param("b", Matrix, "[[2.0, -0.7]]"),
        ],
        "two matrices with the same number of columns",
        "a above b",
        "VStack([[1]], [[2]])  { [[1], [2]] }",
    ),
    function(
        "Zeros",
        Does::Filled(Filling::Zeros),
        A_SHAPE,
        "a number of rows and a number of columns",
        "a matrix of zeros",
        "Zeros(2, 3)",
    ),
    function(
        "Ones",
        Does::Filled(Filling::Ones),
        A_SHAPE,
        "a number of rows and a number of columns",
        "a matrix of ones",
        "Ones(1, 4)",
    ),
    function(
        "Fill",
        Does::Fill,
        &[
            param("rows", Integer, "2"),
            param("cols", Integer, "3"),
            param("x", Number, "0.5"),
        ],
        "a number of rows, a number of columns and a value",
        "a matrix with every element x",
        "Fill(2, 2, 0.5)",
    ),
    function(
        "Eye",
        Does::Eye,
        A_SIZE,
        "a size",
        "the n×n identity matrix",
        "Eye(3)",
    ),
    function(
        "CausalMask",
        Does::CausalMask,
        A_SIZE,
        "a size",
        "the n×n matrix of 0 on and below the diagonal, -inf above",
        "CausalMask(3)",
    ),
    procedure(
        "Seed",
        Does::Seed,
        &[param("n", Integer, "42")],
        "an Integer",
        "starts the random generator from n, so a run repeats",
        "Seed(42)",
    ),
    function(
        "Random",
        Does::Filled(Filling::Random),
        A_SHAPE,
        "a number of rows and a number of columns",
        "a matrix of uniform numbers in [0, 1)",
        "Random(2, 3)",
    ),
    function(
        "Randn",
        Does::Filled(Filling::Randn),
        A_SHAPE,
        "a number of rows and a number of columns",
        "a matrix of standard normal numbers",
        "Randn(4, 4)",
    ),
    function(
        "RandInt",
        Does::RandInt,
        &[param("lo", Integer, "1"), param("hi", Integer, "6")],
        "two Integers, the lowest and the highest",
        "an Integer drawn uniformly from lo to hi, both included, as lo + floor(u · (hi - lo + 1)) of a uniform u of 53 bits (so over more than 2^53 Integers not every one can come)",
        "RandInt(1, 6)",
    ),
    function(
        "Sample",
        Does::Sample,
        &[param("p", Matrix, "[[0.2, 0.5, 0.3]]")],
        "a 1×n row of weights",
        "a column of the row p, drawn with those weights, an Integer",
        "Sample([[0.1, 0.9]])",
    ),
    function(
        "Argmax",
        Does::Argmax,
        &[param("a", Matrix, "[[0.2, 0.5, 0.3]]")],
        "a 1×n row",
        "the column of the largest element of a row (the first wins), an Integer",
        "Argmax([[1, 5, 2]])  { 2 }",
    ),
    function(
        "Rows",
        Does::Rows,
        A_MATRIX,
        "a matrix",
        "the number of rows, an Integer",
        "Rows([[1, 2], [3, 4]])  { 2 }",
    ),
    function(
        "Cols",
        Does::Cols,
        A_MATRIX,
        "a matrix",
        "the number of columns, an Integer",
        "Cols([[1, 2, 3]])  { 3 }",
    ),
    function(
        "Length",
        Does::Length,
        A_STRING,
        "a String",
        "the number of characters, an Integer",
        "Length('abc')  { 3 }",
    ),
    function(
        "Round",
        Does::Round(true),
        A_NUMBER,
        "a number",
        "the nearest Integer, halves away from zero",
        "Round(2.5)  { 3 }",
    ),
    function(
        "Trunc",
        Does::Round(false),
        A_NUMBER,
        "a number",
        "the Integer toward zero",
        "Trunc(-2.7)  { -2 }",
    ),
    function(
        "Min",
        Does::Min(true),
        TWO_NUMBERS,
        "two numbers",
        "the smaller number (an Integer when both are)",
        "Min(2, 3)  { 2 }",
    ),
    function(
        "Max",
        Does::Min(false),
        TWO_NUMBERS,
        "two numbers",
        "the larger number (an Integer when both are)",
        "Max(2, 3.5)  { 3.5 }",
    ),
    function(
        "ReadText",
        Does::ReadText,
        &[param("path", Text, "'data.txt'")],
        "a file path",
        "the text of a file (UTF-8; a byte-order mark at its start is left out), from the program's folder",
        "ReadText('input.txt')",
    ),
    procedure(
        "Save",
        Does::Save,
        &[
            param("m", Matrix, "[[0.1, -2], [1e308, 5e-324]]"),
            param("path", Text, "'saved.txt'"),
        ],
        "a matrix and a file path",
        "writes a matrix to a text file, one row a line, every number read back to the same bits",
        "Save(w, 'w.txt')",
    ),
    function(
        "Load",
        Does::Load,
        &[param("path", Text, "'saved.txt'")],
        "a file path",
        "reads back a matrix that Save wrote (rows of numbers separated by spaces)",
        "w := Load('w.txt')",
    ),
    function(
        "Vocab",
        Does::Vocab,
        A_STRING,
        "a String",
        "the distinct characters of s, sorted",
        "Vocab('hello')  { 'ehlo' }",
    ),
    function(
        "Encode",
        Does::Encode,
        &[param("s", Text, "'hello'"), param("vocab", Text, "'ehlo'")],
        "a String and a vocabulary String",
        "the 1×N row of each character's place (from 1) in vocab",
        "Encode('hi', 'hi')  { [[1, 2]] }",
    ),
    function(
        "Decode",
        Does::Decode,
        &[
            param("ids", Matrix, "[[2, 1]]"),
            param("vocab", Text, "'ehlo'"),
        ],
        "a 1×N row of ids and a vocabulary String",
        "the String of the vocab characters that the ids name",
        "Decode([[2, 1]], 'hi')  { 'ih' }",
    ),
    function(
        "ParamCount",
        Does::ParamCount,
        &[],
        "nothing",
        "the number of arguments after the program's path",
        "ParamCount",
    ),
    function(
        "ParamStr",
        Does::ParamStr,
        &[param("i", Integer, "0")],
        "an Integer",
        "argument i (0 is the program's path)",
        "ParamStr(1)",
    ),
    function(
        "StrToInt",
        Does::StrToInt,
        &[param("s", Text, "'42'")],
        "a String",
        "the Integer the String spells",
        "StrToInt('42')  { 42 }",
    ),
    function(
        "StrToFloat",
        Does::StrToFloat,
        &[param("s", Text, "'2.5'")],
        "a String",
        "the Real the String spells: digits with an optional sign, dot and exponent, or `inf` as WriteLn writes infinity (or `Inf`, the language's name); digits too large for a Real are an error, as in a literal",
        "StrToFloat('2.5')  { 2.5 }",
    ),
    procedure(
        "Progress",
        Does::Progress,
        &[param("step", Integer, "1"), param("steps", Integer, "10")],
        "a step and a number of steps",
        "draws a progress bar on stderr, on a terminal only",
        "Progress(step, 1000)",
    ),
    Builtin {
        optional: 2,
        ..procedure(
            "Plot",
            Does::Plot,
            &[
                param("points", Matrix, "[[1, 2, 3]]"),
                param("path", Text, "'plot.svg'"),
                param("title", Text, "'loss'"),
            ],
            "a matrix, and optionally a file path and a title",
            "a line chart of each row against its column number: an SVG file at the path, or without one (or with '') drawn here in braille",
            "Plot(losses)  { or Plot(losses, 'loss.svg', 'training loss') }",
        )
    },
    function(
        "CheckBlame",
        Does::CheckBlame,
        A_VARIABLE,
        "a variable",
        "the largest difference between Blame(x) and central finite differences, a Real",
        "CheckBlame(w)  { about 1e-10 }",
    ),
    function(
        "Blame",
        Does::Blame,
        A_VARIABLE,
        "a variable",
        "the blame of x's value on the last tape: same shape, Real for a number",
        "Blame(w)",
    ),
    procedure(
        "Nudge",
        Does::Nudge,
        &[param("x", Variable, "w"), param("rate", Number, "0.1")],
        "a variable and a rate",
        "sets x := x - rate * Blame(x): the training step",
        "Nudge(w, 0.1)",
    ),
    procedure(
        "Show",
        Does::Show,
        &[param("m", Matrix, "[[1, 2]]")],
        "a matrix",
        "prints a matrix, one row a line",
        "Show(Eye(2))",
    ),
    Builtin {
        variadic: true,
        ..procedure(
            "Write",
            Does::Write(false),
            &[param("values", Values, "'x = ', 1.5")],
            "values to print",
            "prints the values, with `:w` and `:w:d` fields",
            "Write('x = ', x:0:3)",
        )
    },
    Builtin {
        variadic: true,
        ..procedure(
            "WriteLn",
            Does::Write(true),
            &[param("values", Values, "'x = ', 1.5")],
            "values to print",
            "prints the values and ends the line",
            "WriteLn('loss ', loss:8:4)",
        )
    },
];

/// The index in [`BUILTINS`] of the builtin called `name`, if there is one
/// (by hash rather than by a scan of the table).
pub fn index_of(name: &str) -> Option<usize> {
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
/// What `Inf`, the one constant of the language, is: for `:help Inf` and
/// hover.
pub const INF_HELP: &str = "A constant of the language: positive infinity. `-Inf` is negative \
                            infinity, and `Exp(-Inf)` is exactly 0.";

/// What `Result` is, for `:help Result`.
pub const RESULT_HELP: &str = "in a function, the variable that holds what it gives back: \
                               assign it before the function ends (`Result := x * x;`). \
                               A procedure gives back nothing and has no `Result`.";

pub fn find(name: &str) -> Option<&'static Builtin> {
    index_of(name).map(|i| &BUILTINS[i])
}

/// Every elementwise function, from the declarations, in their order.
pub fn unary_functions() -> impl Iterator<Item = Unary> {
    BUILTINS.iter().filter_map(|b| match b.does {
        Does::Unary(u) => Some(u),
        _ => None,
    })
}

/// Names that are not routines but may be read: builtin constants.
pub const CONSTANTS: &[&str] = &["Inf"];

/// The reference of every builtin, `docs/BUILTINS.md`: generated from the
/// declarations (a test keeps the file current).
pub fn reference() -> String {
    let mut text = String::from(
        "# Builtins\n\n\
         Generated from `src/declarations.rs` by `cargo test --test declared` \
         (`UPDATE_GOLDEN=1` rewrites it). At the REPL, `:help NAME` prints one entry.\n\n\
         Recorded builtins, called inside a tape, record an operation whose blame reaches \
         every numeric argument except selectors.\n\n\
         | call | gives | takes | recorded | example |\n|---|---|---|---|---|\n",
    );
    for b in BUILTINS {
        let takes: Vec<String> = b
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, p.kind.describe()))
            .collect();
        let recorded = match (b.kind, b.recorded) {
            (Kind::Procedure, _) => "procedure",
            (Kind::Function, true) => "yes",
            (Kind::Function, false) => "no",
        };
        text.push_str(&format!(
            "| `{}` | {} | {} | {} | `{}` |\n",
            b.signature(),
            b.doc.replace('|', "\\|"),
            takes.join(", "),
            recorded,
            b.example.replace('|', "\\|"),
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_is_declared_once_with_its_doc_and_samples() {
        let mut names: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), BUILTINS.len(), "a name declared twice");
        for b in BUILTINS {
            assert!(!b.doc.is_empty() && !b.example.is_empty(), "{}", b.name);
            assert!(b.params.iter().all(|p| !p.sample.is_empty()), "{}", b.name);
            assert!(b.help().starts_with(&b.signature()), "{}", b.name);
        }
    }
}
