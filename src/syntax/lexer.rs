//! The lexer: source text to a flat list of tokens, each with its byte span.
//!
//! Built on logos. Keywords are matched case-insensitively after an identifier
//! is lexed, so `BEGIN` and `begin` are the same token while identifiers keep
//! their case. Comments are lexed and then dropped. Every character that does
//! not start a token becomes a located error; the lexer never stops early, so
//! the parser sees as much of the file as can be made sense of.

use logos::Logos;

use crate::diagnostic::{Diagnostic, SourceId, Span};

/// Why a piece of text is not a token.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LexError {
    #[default]
    UnexpectedCharacter,
    UnterminatedString,
    /// `"like this"`: one error for the whole string, not one per quote.
    DoubleQuoted,
    UnterminatedComment,
    IntegerTooLarge,
    RealTooLarge,
    DigitAfterDot,
    DigitBeforeDot,
    /// `1e`, `2.5e-`: an exponent's letter with no digit after it (found
    /// as a number and a name `e` side by side).
    ExponentWithoutDigits,
}

fn skip_block_comment(lex: &mut logos::Lexer<RawToken>, close: &str) -> Result<(), LexError> {
    match lex.remainder().find(close) {
        Some(at) => {
            lex.bump(at + close.len());
            Ok(())
        }
        None => {
            lex.bump(lex.remainder().len());
            Err(LexError::UnterminatedComment)
        }
    }
}

fn parse_integer(lex: &mut logos::Lexer<RawToken>) -> Result<i64, LexError> {
    lex.slice().parse().map_err(|_| LexError::IntegerTooLarge)
}

fn parse_real(lex: &mut logos::Lexer<RawToken>) -> Result<f64, LexError> {
    match lex.slice().parse::<f64>() {
        // A literal past the largest f64 (`1e309`) would silently be inf.
        Ok(x) if x.is_infinite() => Err(LexError::RealTooLarge),
        Ok(x) => Ok(x),
        Err(_) => Err(LexError::UnexpectedCharacter),
    }
}

fn digit_after_dot() -> Result<(), LexError> {
    Err(LexError::DigitAfterDot)
}

fn digit_before_dot() -> Result<(), LexError> {
    Err(LexError::DigitBeforeDot)
}

fn unterminated_string() -> Result<(), LexError> {
    Err(LexError::UnterminatedString)
}

fn double_quoted() -> Result<(), LexError> {
    Err(LexError::DoubleQuoted)
}

/// `text` as a string literal of the language: in single quotes, a quote
/// doubled, and a character no literal can hold (a line end, a tab)
/// escaped as Rust writes it, so that a message shows it.
pub fn string_literal(text: &str) -> String {
    let mut shown = String::from("'");
    for c in text.chars() {
        match c {
            '\'' => shown.push_str("''"),
            c if c.is_control() => shown.extend(c.escape_debug()),
            c => shown.push(c),
        }
    }
    shown.push('\'');
    shown
}

/// `text` as [`string_literal`] shows it, but only its first 40
/// characters and then how long it is: a message about a long string
/// (a file's whole line, a number of 200,000 digits) stays short.
pub fn string_literal_clipped(text: &str) -> String {
    const SHOWN: usize = 40;
    let count = text.chars().count();
    if count <= SHOWN {
        return string_literal(text);
    }
    let head: String = text.chars().take(SHOWN).collect();
    format!("{}... (of {count} characters)", string_literal(&head))
}

fn parse_string(lex: &mut logos::Lexer<RawToken>) -> String {
    let body = lex.slice();
    body[1..body.len() - 1].replace("''", "'")
}

#[derive(Logos, Debug, Clone, PartialEq)]
#[logos(error = LexError)]
#[logos(skip r"[ \t\r\n\f]+")]
enum RawToken {
    #[token("{", |lex| skip_block_comment(lex, "}"))]
    #[token("(*", |lex| skip_block_comment(lex, "*)"))]
    /// A line comment ends at a line break, a lone `\r` too (as editors and
    /// the diagnostics' line numbers count lines).
    #[regex(r"//[^\r\n]*", allow_greedy = true)]
    Comment,

    #[regex(r"[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice().to_string())]
    Word(String),

    #[regex(r"[0-9]+", parse_integer)]
    Integer(i64),
    /// `1..3`: an integer, then `..`. Without it the longest match would
    /// read `1.`, a real with no digit after its dot, and then `.3`.
    #[regex(r"[0-9]+\.\.")]
    IntegerThenDotDot,
    #[regex(r"[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?", parse_real)]
    #[regex(r"[0-9]+[eE][+-]?[0-9]+", parse_real)]
    Real(f64),
    #[regex(r"[0-9]+\.", |_| digit_after_dot())]
    #[regex(r"\.[0-9]+", |_| digit_before_dot())]
    BadNumber,

    #[regex(r"'([^'\r\n]|'')*'", parse_string, allow_greedy = true)]
    Str(String),
    #[regex(r"'([^'\r\n]|'')*", |_| unterminated_string(), allow_greedy = true)]
    OpenString,
    #[regex(r#""([^"\\\r\n]|\\[^\r\n])*""#, |_| double_quoted())]
    DoubleQuoted,

    #[token(":=")]
    Assign,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("=")]
    Eq,
    #[token("<>")]
    Ne,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token(",")]
    Comma,
    #[token(";")]
    Semi,
    #[token(":")]
    Colon,
    #[token(".")]
    Dot,
    #[token("..")]
    DotDot,
}

/// A token as the parser sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Ident(String),
    Integer(i64),
    Real(f64),
    Str(String),
    // keywords
    Program,
    And,
    Begin,
    Break,
    Continue,
    Div,
    Do,
    Downto,
    Else,
    End,
    For,
    Function,
    If,
    Mod,
    Not,
    Or,
    Procedure,
    Repeat,
    Tape,
    Then,
    To,
    Until,
    Var,
    While,
    True,
    False,
    // symbols
    Assign,
    Plus,
    Minus,
    Star,
    Slash,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Semi,
    Colon,
    Dot,
    /// `..`, no part of the language: lexed whole so that the parser can
    /// say that `for i := 1..3 do` counts with `to`, and that there are no
    /// ranges elsewhere.
    DotDot,
    /// Text that is not a token; its diagnostic has already been reported.
    Error,
}

/// The language's words: each with its token and what `:help WORD` says
/// of it (one line, then an example). `keyword` reads this table, so a
/// word cannot be added without its help.
pub const KEYWORDS: &[(&str, Token, &str)] = &[
    (
        "program",
        Token::Program,
        "names the program, on its first line: `program Name;` (optional)",
    ),
    (
        "and",
        Token::And,
        "true when both Booleans are; the right one is not worked out when the left is false: `if (i > 0) and (x[1, i] > 0) then ...`",
    ),
    (
        "begin",
        Token::Begin,
        "groups statements where one is expected, up to its `end`: `for i := 1 to 3 do begin ... end;`",
    ),
    (
        "break",
        Token::Break,
        "leaves the innermost loop at once: `if x > 7 then break;`",
    ),
    (
        "continue",
        Token::Continue,
        "goes on with the innermost loop's next turn: `if i mod 2 = 0 then continue;`",
    ),
    (
        "div",
        Token::Div,
        "Integer division, rounded toward zero: `7 div 2` is 3",
    ),
    (
        "do",
        Token::Do,
        "the one statement a `for` or `while` runs each turn follows it: `while n < 3 do n := n + 1;`",
    ),
    (
        "downto",
        Token::Downto,
        "a `for` that counts down by one: `for j := 3 downto 1 do Write(j);`",
    ),
    (
        "else",
        Token::Else,
        "the statement an `if` runs when its condition is false: `if n = 0 then WriteLn('zero') else WriteLn('more');`",
    ),
    (
        "end",
        Token::End,
        "closes a `begin` or a `tape`; `end;` after a tape walks it back and makes the blame ready",
    ),
    (
        "for",
        Token::For,
        "counts an Integer by one from a bound to another, both worked out once: `for i := 1 to 10 do total := total + i;`",
    ),
    (
        "function",
        Token::Function,
        "a routine that gives back the value it assigns to `Result`: `function Square(x: Real): Real; begin Result := x * x; end;`",
    ),
    (
        "if",
        Token::If,
        "runs a statement when a Boolean is true: `if x > 0 then WriteLn('positive');`",
    ),
    (
        "mod",
        Token::Mod,
        "the remainder of Integer division, with the sign of the left side: `7 mod 2` is 1",
    ),
    (
        "not",
        Token::Not,
        "the opposite of a Boolean: `while not done do ...`",
    ),
    (
        "or",
        Token::Or,
        "true when either Boolean is; the right one is not worked out when the left is true: `if (n = 0) or (x > 1) then ...`",
    ),
    (
        "procedure",
        Token::Procedure,
        "a routine that gives nothing, called as a statement: `procedure Greet(name: String); begin WriteLn('hello, ', name); end;`",
    ),
    (
        "repeat",
        Token::Repeat,
        "runs the statements up to its `until` again and again, at least once, until the condition is true: `repeat n := n - 1; until n = 0;`",
    ),
    (
        "tape",
        Token::Tape,
        "records the statements up to its `end;`, then walks them back, so that `Blame(x)` says how much the tape's last number moves with `x`: `tape y := w * w; end;`",
    ),
    (
        "then",
        Token::Then,
        "the one statement an `if` runs when its condition is true follows it: `if x > 0 then WriteLn('yes');`",
    ),
    (
        "to",
        Token::To,
        "a `for` that counts up by one: `for i := 1 to 10 do ...`",
    ),
    (
        "until",
        Token::Until,
        "ends a `repeat`: the loop stops once its condition is true: `until n = 0;`",
    ),
    (
        "var",
        Token::Var,
        "declares variables with a type, checked on every assignment: `var i, j: Integer; h: Matrix;`; before a parameter, it names the caller's variable: `procedure Swap(var a, b: Integer);`",
    ),
    (
        "while",
        Token::While,
        "runs a statement while a Boolean is true, checked before each turn: `while n < 3 do n := n + 1;`",
    ),
    ("true", Token::True, "the Boolean true"),
    ("false", Token::False, "the Boolean false"),
];

/// The operators, each with what `:help OP` says of it (one line, then an
/// example).
pub const OPERATORS: &[(&str, &str)] = &[
    (
        ":=",
        "gives a variable a value, or a matrix one element: `x := 3;`, `m[1, 2] := 0.5;` (a comparison is written `=`)",
    ),
    (
        "+",
        "adds numbers, or matrices element by element (a number, a 1×1, a 1×n row or an m×1 column is spread over the other side), and joins strings: `x + b`, `'a' + 'b'`",
    ),
    (
        "-",
        "subtracts, spreading as `+` does; before a value, negates it: `a - b`, `-x`",
    ),
    (
        "*",
        "multiplies numbers, scales a matrix by a number, and of two matrices is the matrix product (the left one's columns are as many as the right one's rows): `e * Wq`; element by element is `Hadamard(a, b)`",
    ),
    (
        "/",
        "divides, element by element and spreading as `+` does, and always gives Reals: `7 / 2` is 3.5 (a whole-number division is `div`)",
    ),
    (
        "=",
        "true when two values of one type are equal (an Integer and a Real compare as numbers): `if n = 3 then ...` (a value is given with `:=`)",
    ),
    (
        "<>",
        "true when two values of one type differ: `while s <> 'end' do ...`",
    ),
    (
        "<",
        "compares two numbers, or two strings by code point: `if x < 0 then ...`",
    ),
    (
        "<=",
        "compares two numbers, or two strings by code point: `while i <= n do ...`",
    ),
    (
        ">",
        "compares two numbers, or two strings by code point: `if loss > 1 then ...`",
    ),
    (
        ">=",
        "compares two numbers, or two strings by code point: `until step >= 100`",
    ),
];

/// What `:help OP` says of an operator, if `op` is one.
/// What `:help` says of a mark of punctuation (not a hover's: a mark
/// beside a word is not what the pointer is on).
pub fn punctuation_help(mark: &str) -> Option<String> {
    PUNCTUATION
        .iter()
        .find(|(p, _)| *p == mark)
        .map(|(_, help)| format!("{mark} (punctuation): {help}\n"))
}

/// The language's punctuation, with what `:help` says of each.
pub const PUNCTUATION: &[(&str, &str)] = &[
    (
        "(",
        "groups a part of an expression, `(a + b) * c`, and holds a call's arguments, `Tanh(x)`; closed by `)`",
    ),
    (")", "closes a `(`"),
    (
        "[",
        "writes a matrix, `[[1, 2], [3, 4]]` (a row alone, `[1, 2]`, is a 1×n matrix), and reads or sets an element, `m[2, 1]`, counting from 1; closed by `]`",
    ),
    ("]", "closes a `[`"),
    (
        ",",
        "separates a call's arguments, a matrix's elements and rows, an element's row and column, and names declared together: `Max(a, b)`, `m[1, 2]`, `var i, j: Integer;`",
    ),
    (
        ";",
        "ends a statement: `x := 1;` (there is none before `else`)",
    ),
    (
        ":",
        "gives a declared name its type, `var x: Real;`, and in Write and WriteLn a field width and decimals, `x:8:2`; `:=` is assignment",
    ),
    (
        ".",
        "ends a program after its last `end`, `end.`, and writes a Real, `0.5`",
    ),
];

pub fn operator_help(op: &str) -> Option<&'static str> {
    OPERATORS
        .iter()
        .find(|(o, _)| *o == op)
        .map(|(_, help)| *help)
}

fn keyword(word: &str) -> Option<Token> {
    let word = word.to_ascii_lowercase();
    KEYWORDS
        .iter()
        .find(|(w, _, _)| *w == word)
        .map(|(_, token, _)| token.clone())
}

/// What `:help WORD` says of a keyword of the language, if `word` is one
/// (in any case).
pub fn keyword_help(word: &str) -> Option<&'static str> {
    let word = word.to_ascii_lowercase();
    KEYWORDS
        .iter()
        .find(|(w, _, _)| *w == word)
        .map(|(_, _, help)| *help)
}

/// Operators of other languages a learner reaches for, longest first, with
/// what this language writes instead: the lexer's error at such a
/// character and `:help` of one both name the replacement.
pub const FOREIGN_OPERATORS: &[(&str, &str)] = &[
    ("!=", "<>"),
    ("==", "="),
    ("&&", "and"),
    ("||", "or"),
    ("**", "Power"),
    ("!", "not"),
    ("&", "and"),
    ("|", "or"),
    ("%", "mod"),
    ("^", "Power"),
    ("..", "to"),
];

/// The operator of another language `text` starts with, if any, and what
/// this language writes for it.
pub fn foreign_operator(text: &str) -> Option<(&'static str, &'static str)> {
    FOREIGN_OPERATORS
        .iter()
        .find(|(op, _)| text.starts_with(op))
        .copied()
}

/// What an error says of an operator of another language, `op`, which this
/// language writes `ours`: its message and its hint.
pub fn foreign_operator_words(op: &str, ours: &str) -> (String, String) {
    match ours {
        "Power" => (
            "there is no power operator".to_string(),
            "write `Sqr(x)` for x², or `Power(x, 2)` for any power".to_string(),
        ),
        "to" => (
            "there are no ranges: `..` is not part of the language".to_string(),
            "a `for` loop counts with `to`: `for i := 1 to 3 do`; whole rows are \
             `RowRange(m, first, count)`, whole columns `ColRange(m, first, count)`"
                .to_string(),
        ),
        _ => {
            let help = operator_help(ours)
                .or_else(|| keyword_help(ours))
                .unwrap_or("");
            (
                format!("there is no `{op}` operator"),
                format!("write `{ours}`: {help}"),
            )
        }
    }
}

/// What `:help NAME` prints when `name` is an operator or a keyword (in
/// any case), with its newline: the prompt, a notebook's inspection and the
/// editor's hover all show this one text. An operator is looked for first,
/// as `:help` does, though no spelling is both.
pub fn word_help(name: &str) -> Option<String> {
    if let Some(help) = operator_help(name) {
        return Some(format!("{name} (an operator): {help}\n"));
    }
    keyword_help(name).map(|help| {
        format!(
            "{} (a word of the language): {help}\n",
            name.to_ascii_lowercase()
        )
    })
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            Token::Ident(name) => return write!(f, "`{name}`"),
            Token::Integer(n) => return write!(f, "the number {n}"),
            Token::Real(x) => return write!(f, "the number {x}"),
            Token::Str(_) => "a string",
            Token::Program => "`program`",
            Token::And => "`and`",
            Token::Begin => "`begin`",
            Token::Break => "`break`",
            Token::Continue => "`continue`",
            Token::Div => "`div`",
            Token::Do => "`do`",
            Token::Downto => "`downto`",
            Token::Else => "`else`",
            Token::End => "`end`",
            Token::For => "`for`",
            Token::Function => "`function`",
            Token::If => "`if`",
            Token::Mod => "`mod`",
            Token::Not => "`not`",
            Token::Or => "`or`",
            Token::Procedure => "`procedure`",
            Token::Repeat => "`repeat`",
            Token::Tape => "`tape`",
            Token::Then => "`then`",
            Token::To => "`to`",
            Token::Until => "`until`",
            Token::Var => "`var`",
            Token::While => "`while`",
            Token::True => "`true`",
            Token::False => "`false`",
            Token::Assign => "`:=`",
            Token::Plus => "`+`",
            Token::Minus => "`-`",
            Token::Star => "`*`",
            Token::Slash => "`/`",
            Token::Eq => "`=`",
            Token::Ne => "`<>`",
            Token::Lt => "`<`",
            Token::Le => "`<=`",
            Token::Gt => "`>`",
            Token::Ge => "`>=`",
            Token::LParen => "`(`",
            Token::RParen => "`)`",
            Token::LBracket => "`[`",
            Token::RBracket => "`]`",
            Token::Comma => "`,`",
            Token::Semi => "`;`",
            Token::Colon => "`:`",
            Token::Dot => "`.`",
            Token::DotDot => "`..`",
            Token::Error => "an invalid token",
        };
        f.write_str(text)
    }
}

/// A character as an error shows it: as itself if it can be seen, else
/// escaped (`\t`, `\u{7f}`).
/// `ch` as a message shows it: itself if it prints as a letter does, else
/// escaped (`\u{200b}`), so that a character that is invisible, joins the
/// one before it or turns the line's direction cannot hide or garble it.
pub fn shown(ch: char) -> String {
    let escaped = ch.escape_debug().to_string();
    if (ch.is_whitespace() || escaped.starts_with('\\')) && !matches!(ch, '\'' | '"' | '\\') {
        escaped
    } else {
        ch.to_string()
    }
}

/// What a `{` that opens a comment as C opens a block hides.
pub(crate) const BRACES_HINT: &str = "`{ ... }` is a comment, so the statements inside it are \
     skipped: a block of statements is written `begin ... end`";

/// Whether the `{` at `at` in `text` opens a comment as C opens a block:
/// at the end of a line of code that a block may follow there (after a
/// `)`, `then`, `do`, `else` or a type's name, or on a line that starts
/// an `if`, a loop or a routine: `if (x > 0) {`, `while i < 3 {`,
/// `function F(a: Real): Real {`), with a `;` before its `}`. After a
/// `;`, or after an assignment's value, it is a comment.
pub(crate) fn opens_like_a_block(text: &str, at: usize) -> bool {
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let code = text[line_start..at].trim_end();
    let rest = &text[at + 1..];
    let line_end = rest.find('\n').unwrap_or(rest.len());
    let close = rest.find('}').unwrap_or(rest.len());
    let last_word = code
        .rsplit(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let first_word = code
        .trim_start()
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let opens = !code.ends_with(';')
        && (code.ends_with(')')
            || matches!(
                last_word.as_str(),
                "then" | "do" | "else" | "real" | "integer" | "boolean" | "string" | "matrix"
            )
            || matches!(
                first_word.as_str(),
                "if" | "while" | "for" | "else" | "function" | "procedure"
            ));
    opens && rest[..line_end].trim().is_empty() && rest[..close].contains(';')
}

/// `text` is the erring slice, `rest` the source from its start on (where
/// an operator of another language may go on past the slice).
fn lex_error_diagnostic(error: LexError, text: &str, rest: &str, span: Span) -> Diagnostic {
    match error {
        LexError::UnexpectedCharacter => {
            let ch = text.chars().next().unwrap_or(' ');
            let span = Span::new(span.source, span.start, span.start + ch.len_utf8());
            let mut d = Diagnostic::new(span, format!("unexpected character `{}`", shown(ch)))
                .with_label(span, "not part of any token");
            if let Some((op, ours)) = foreign_operator(rest) {
                let span = Span::new(span.source, span.start, span.start + op.len());
                let (message, hint) = foreign_operator_words(op, ours);
                d = Diagnostic::new(span, message)
                    .with_label(span, "not an operator here")
                    .with_hint(hint);
            } else if ch.is_alphabetic() {
                d = d.with_hint("names are made of ASCII letters, digits and `_`");
            } else if ch == '"' {
                d = d.with_hint("strings are written in single quotes: 'like this'");
            } else if ch == '}' {
                d = d.with_hint(
                    "a `}` only closes a comment, at the first `}` after its `{`: comments \
                     do not nest, so in `{ a { b } c }` the comment ends after `b`",
                );
            }
            d
        }
        LexError::UnterminatedString => Diagnostic::new(
            span,
            "this string runs past the end of its line",
        )
        .with_label(span, "no closing `'` on this line")
        .with_hint(
            "close the string with `'` before the line ends; write `''` for a quote inside it",
        ),
        LexError::DoubleQuoted => {
            // Its text as other languages read it (`\"` a quote, `\\` a
            // backslash), in single quotes, where only `'` is doubled.
            let mut inner = String::new();
            let mut chars = text[1..text.len() - 1].chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' if matches!(chars.clone().next(), Some('"' | '\\')) => {
                        inner.extend(chars.next())
                    }
                    '\'' => inner.push_str("''"),
                    c => inner.push(c),
                }
            }
            Diagnostic::new(span, "strings are written in single quotes")
                .with_label(span, "in double quotes")
                .with_hint(format!("write '{inner}'"))
        }
        LexError::UnterminatedComment => {
            let opener = if text.starts_with('{') { "{" } else { "(*" };
            let closer = if opener == "{" { "}" } else { "*)" };
            let head = Span::new(span.source, span.start, span.start + opener.len());
            Diagnostic::new(head, "this comment is never closed").with_label(
                head,
                format!("the comment starts here and no `{closer}` follows"),
            )
        }
        LexError::IntegerTooLarge => Diagnostic::new(span, "this integer is too large")
            .with_label(span, "larger than 9223372036854775807")
            .with_hint("integers are 64-bit; write a real such as `1.0e20` for a large number"),
        LexError::RealTooLarge => Diagnostic::new(span, "this real number is too large")
            .with_label(span, "larger than the largest Real, about 1.8e308")
            .with_hint("for an infinite value write `Inf`"),
        LexError::DigitAfterDot => {
            Diagnostic::new(span, "a real number needs digits after its dot")
                .with_label(span, "no digit after the `.`")
                .with_hint(format!("write `{}0`", text))
        }
        LexError::DigitBeforeDot => {
            Diagnostic::new(span, "a real number needs a digit before its dot")
                .with_label(span, "no digit before the `.`")
                .with_hint(format!("write `0{}`", text))
        }
        LexError::ExponentWithoutDigits => {
            let letter = text.rfind(['e', 'E']).unwrap_or(0);
            let at = Span::new(span.source, span.start + letter, span.end);
            Diagnostic::new(span, "a real number needs digits in its exponent")
                .with_label(at, "no digit after this")
                .with_hint(
                    "the power of ten follows the `e`: `1e3` is 1000 and `1e-3` is 0.001; \
                     a name `e` after a number needs an operator between them: `2 * e`",
                )
        }
    }
}

/// Splits `text` into tokens. Errors are reported as diagnostics and leave an
/// `Error` token in place so that parsing can go on.
pub fn lex(text: &str, source: SourceId) -> (Vec<(Token, Span)>, Vec<Diagnostic>) {
    lex_into(text, source, None)
}

/// What [`lex`] gives, and beside it the span of every comment it drops
/// (closed ones; a comment never closed is an `Error` token), in order: for
/// tools that colour a program, such as the editor grammar's test.
pub fn lex_with_comments(
    text: &str,
    source: SourceId,
) -> (Vec<(Token, Span)>, Vec<Span>, Vec<Diagnostic>) {
    let mut comments = Vec::new();
    let (tokens, errors) = lex_into(text, source, Some(&mut comments));
    (tokens, comments, errors)
}

fn lex_into(
    text: &str,
    source: SourceId,
    mut comments: Option<&mut Vec<Span>>,
) -> (Vec<(Token, Span)>, Vec<Diagnostic>) {
    let mut tokens: Vec<(Token, Span)> = Vec::new();
    let mut errors = Vec::new();
    let mut lexer = RawToken::lexer(text);
    // The last comment opened with `{`, for a stray `}` after it.
    let mut last_brace: Option<usize> = None;
    while let Some(result) = lexer.next() {
        let range = lexer.span();
        let mut span = Span::new(source, range.start, range.end);
        let token = match result {
            Ok(RawToken::Comment) => {
                last_brace = text[range.start..].starts_with('{').then_some(range.start);
                if let Some(comments) = comments.as_deref_mut() {
                    comments.push(span);
                }
                continue;
            }
            // `1e;`, `2.5E-;`: a number and, right after it, the letter of an
            // exponent with no digits (and its sign, if any), which would
            // otherwise be a stray name `e` after the number. `1else`,
            // `1end` are a number and a keyword.
            Ok(RawToken::Word(word))
                if (word == "e" || word == "E")
                    && let Some((Token::Integer(_) | Token::Real(_), number)) = tokens.last()
                    && number.end == range.start
                    && !text[number.start..number.end].contains(['e', 'E']) =>
            {
                if text[range.end..].starts_with(['+', '-']) {
                    lexer.bump(1);
                }
                let whole = Span::new(source, number.start, lexer.span().end);
                let written = &text[whole.start..whole.end];
                tokens.pop();
                errors.push(lex_error_diagnostic(
                    LexError::ExponentWithoutDigits,
                    written,
                    written,
                    whole,
                ));
                tokens.push((Token::Error, whole));
                last_brace = None;
                continue;
            }
            Ok(RawToken::Word(word)) => keyword(&word).unwrap_or(Token::Ident(word)),
            Ok(RawToken::Integer(n)) => Token::Integer(n),
            Ok(RawToken::Real(x)) => Token::Real(x),
            Ok(RawToken::Str(s)) => Token::Str(s),
            Ok(RawToken::BadNumber | RawToken::OpenString | RawToken::DoubleQuoted) => Token::Error,
            Ok(RawToken::Assign) => Token::Assign,
            Ok(RawToken::Plus) => Token::Plus,
            Ok(RawToken::Minus) => Token::Minus,
            Ok(RawToken::Star) => Token::Star,
            Ok(RawToken::Slash) => Token::Slash,
            Ok(RawToken::Eq) => Token::Eq,
            Ok(RawToken::Ne) => Token::Ne,
            Ok(RawToken::Lt) => Token::Lt,
            Ok(RawToken::Le) => Token::Le,
            Ok(RawToken::Gt) => Token::Gt,
            Ok(RawToken::Ge) => Token::Ge,
            Ok(RawToken::LParen) => Token::LParen,
            Ok(RawToken::RParen) => Token::RParen,
            Ok(RawToken::LBracket) => Token::LBracket,
            Ok(RawToken::RBracket) => Token::RBracket,
            Ok(RawToken::Comma) => Token::Comma,
            Ok(RawToken::Semi) => Token::Semi,
            Ok(RawToken::Colon) => Token::Colon,
            Ok(RawToken::Dot) => Token::Dot,
            Ok(RawToken::DotDot) => Token::DotDot,
            Ok(RawToken::IntegerThenDotDot) => {
                let digits = Span::new(source, range.start, range.end - 2);
                let slice = &lexer.slice()[..digits.end - digits.start];
                match slice.parse() {
                    Ok(n) => tokens.push((Token::Integer(n), digits)),
                    Err(_) => {
                        let error = LexError::IntegerTooLarge;
                        errors.push(lex_error_diagnostic(error, slice, slice, digits));
                        tokens.push((Token::Error, digits));
                    }
                }
                span.start = digits.end;
                Token::DotDot
            }
            Err(error) => {
                let rest = &lexer.source()[range.start..];
                let mut diagnostic = lex_error_diagnostic(error.clone(), lexer.slice(), rest, span);
                // `if x > 0 {` ... `}`: the comment that `{` opened ended
                // at the first `}`, inside the block C's braces meant.
                if rest.starts_with('}')
                    && let Some(brace) = last_brace.filter(|&b| opens_like_a_block(text, b))
                {
                    let close = brace + text[brace..].find('}').unwrap_or(0);
                    let line = |at: usize| text[..at].matches('\n').count() + 1;
                    diagnostic.labels.extend([
                        (
                            Span::new(source, brace, brace + 1),
                            "a comment starts here".to_string(),
                        ),
                        (
                            Span::new(source, close, close + 1),
                            "and ends here, at the first `}`".to_string(),
                        ),
                    ]);
                    diagnostic.hints = vec![format!(
                        "{BRACES_HINT}; the comment runs from line {} to the first `}}`, on \
                         line {}, so this `}}` closes nothing",
                        line(brace),
                        line(close)
                    )];
                }
                // An unexpected character is reported once per run of bad characters.
                let repeat = error == LexError::UnexpectedCharacter
                    && matches!(tokens.last(), Some((Token::Error, last)) if last.end == span.start);
                if !repeat {
                    errors.push(diagnostic);
                }
                if repeat {
                    if let Some((_, last)) = tokens.last_mut() {
                        last.end = span.end;
                    }
                    continue;
                }
                Token::Error
            }
        };
        // A `}` is told as the end of a block hidden in a comment only
        // right after that comment, with no token between.
        last_brace = None;
        tokens.push((token, span));
    }
    (tokens, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operator_with_help_is_one_token_and_has_an_example() {
        for (op, help) in OPERATORS {
            let tokens = kinds(op);
            assert_eq!(tokens.len(), 1, "{op}: {tokens:?}");
            assert_ne!(tokens[0], Token::Error, "{op}");
            // An example in backquotes that uses it.
            assert!(
                help.split('`')
                    .skip(1)
                    .step_by(2)
                    .any(|code| code.contains(op)),
                "{op}: no example in {help:?}"
            );
        }
    }

    #[test]
    fn a_lone_carriage_return_ends_a_line_comment_and_a_string() {
        // A file saved with old Mac line ends: the comment is one line.
        assert_eq!(
            kinds("// c\ry := 1"),
            vec![Token::Ident("y".into()), Token::Assign, Token::Integer(1)]
        );
        let (message, start, _) = first_error("s := 'ab\rWriteLn(s);");
        assert_eq!(
            (message.as_str(), start),
            ("this string runs past the end of its line", 5)
        );
    }

    #[test]
    fn an_operator_of_another_language_is_one_error_naming_ours() {
        for (op, ours) in FOREIGN_OPERATORS {
            // This language's word is a real operator, keyword or builtin.
            assert!(
                operator_help(ours).is_some()
                    || keyword_help(ours).is_some()
                    || crate::declarations::find(ours).is_some(),
                "{op} -> {ours}"
            );
            let text = format!("a {op} b");
            let (tokens, errors) = lex(&text, 0);
            if errors.is_empty() {
                // Made of this language's tokens (`==`, `**`, `..`): the
                // parser, not the lexer, says what to write.
                assert!(tokens.iter().all(|(t, _)| *t != Token::Error), "{op}");
                continue;
            }
            assert_eq!(errors.len(), 1, "{op}: {errors:?}");
            let (message, hint) = foreign_operator_words(op, ours);
            assert_eq!(errors[0].message, message);
            assert_eq!(errors[0].hints, vec![hint.clone()]);
            assert!(hint.contains(&format!("`{ours}")), "{hint}");
            assert_eq!(
                (errors[0].span.start, errors[0].span.end),
                (2, 2 + op.len())
            );
        }
    }

    fn kinds(text: &str) -> Vec<Token> {
        let (tokens, errors) = lex(text, 0);
        assert!(
            errors.is_empty(),
            "unexpected errors for {text:?}: {errors:?}"
        );
        tokens.into_iter().map(|(t, _)| t).collect()
    }

    fn first_error(text: &str) -> (String, usize, usize) {
        let (_, errors) = lex(text, 0);
        let e = errors.first().expect("an error");
        (e.message.clone(), e.span.start, e.span.end)
    }

    #[test]
    fn keywords_ignore_case_but_names_keep_it() {
        assert_eq!(
            kinds("BEGIN Begin begin Tape x X"),
            vec![
                Token::Begin,
                Token::Begin,
                Token::Begin,
                Token::Tape,
                Token::Ident("x".into()),
                Token::Ident("X".into())
            ]
        );
    }

    #[test]
    fn numbers_and_strings() {
        assert_eq!(
            kinds("0 42 0.5 1.5e-3 2E10 'don''t'"),
            vec![
                Token::Integer(0),
                Token::Integer(42),
                Token::Real(0.5),
                Token::Real(1.5e-3),
                Token::Real(2e10),
                Token::Str("don't".into())
            ]
        );
        assert_eq!(kinds("9223372036854775807"), vec![Token::Integer(i64::MAX)]);
    }

    #[test]
    fn comments_of_three_kinds_are_dropped() {
        assert_eq!(
            kinds("a { one } b (* two *) c // three\n d"),
            vec![
                Token::Ident("a".into()),
                Token::Ident("b".into()),
                Token::Ident("c".into()),
                Token::Ident("d".into())
            ]
        );
    }

    #[test]
    fn every_symbol() {
        assert_eq!(
            kinds(":= + - * / = <> < <= > >= ( ) [ ] , ; : ."),
            vec![
                Token::Assign,
                Token::Plus,
                Token::Minus,
                Token::Star,
                Token::Slash,
                Token::Eq,
                Token::Ne,
                Token::Lt,
                Token::Le,
                Token::Gt,
                Token::Ge,
                Token::LParen,
                Token::RParen,
                Token::LBracket,
                Token::RBracket,
                Token::Comma,
                Token::Semi,
                Token::Colon,
                Token::Dot
            ]
        );
    }

    #[test]
    fn two_dots_are_one_token_even_after_a_number() {
        use Token::{DotDot, Ident, Integer, Real};
        let spans = |text: &str| -> Vec<(usize, usize)> {
            lex(text, 0)
                .0
                .iter()
                .map(|(_, s)| (s.start, s.end))
                .collect()
        };
        assert_eq!(kinds("1..3"), vec![Integer(1), DotDot, Integer(3)]);
        assert_eq!(spans("1..3"), vec![(0, 1), (1, 3), (3, 4)]);
        assert_eq!(
            kinds("n..m"),
            vec![Ident("n".into()), DotDot, Ident("m".into())]
        );
        assert_eq!(kinds("1 .. 3"), vec![Integer(1), DotDot, Integer(3)]);
        assert_eq!(kinds("1.5..2"), vec![Real(1.5), DotDot, Integer(2)]);
        assert_eq!(kinds("1..2.5"), vec![Integer(1), DotDot, Real(2.5)]);
        // Three dots: the first two are `..`, and `.3` has no digit before it.
        assert_eq!(first_error("x := 1...3;").1, 8);
        // A number too large is still reported, at its digits only.
        let (message, start, end) = first_error("99999999999999999999..3");
        assert!(message.contains("too large"));
        assert_eq!((start, end), (0, 20));
        assert_eq!(spans("99999999999999999999..3")[1], (20, 22));
    }

    #[test]
    fn bad_text_is_located() {
        assert_eq!(first_error("x := 1.;").1, 5);
        assert!(first_error("x := .5;").0.contains("digit before"));
        assert!(first_error("x := 1.e5;").0.contains("digits after"));
        // An exponent with no digits is one error, at the whole number.
        for text in ["x := 1e;", "x := 2.5E-;", "x := 3e+ 4;"] {
            let (message, start, _) = first_error(text);
            assert_eq!(message, "a real number needs digits in its exponent");
            assert_eq!(start, 5);
        }
        assert_eq!(first_error("x := 2.5E-;").2, 10);
        assert_eq!(first_error("x := 3e+ 4;").2, 8);
        // A keyword right after a number is a keyword, as before.
        assert_eq!(kinds("1end")[1], Token::End);
        assert_eq!(
            kinds("1else 2.5end 1e5end"),
            vec![
                Token::Integer(1),
                Token::Else,
                Token::Real(2.5),
                Token::End,
                Token::Real(1e5),
                Token::End
            ]
        );
        assert_eq!(kinds("1 e")[1], Token::Ident("e".into()));
        assert_eq!(
            kinds("1e5 e1 x1e"),
            vec![
                Token::Real(1e5),
                Token::Ident("e1".into()),
                Token::Ident("x1e".into())
            ]
        );
        assert!(
            first_error("x := 9223372036854775808;")
                .0
                .contains("too large")
        );
        assert_eq!(
            first_error("x := 'abc\n';").0,
            "this string runs past the end of its line"
        );
        assert_eq!(first_error("x := 1 # 2").1, 7);
        let (msg, start, end) = first_error("été := 1");
        assert!(msg.contains('é'));
        assert_eq!((start, end), (0, 2));
        assert!(first_error("{ open").0.contains("never closed"));
    }

    #[test]
    fn several_errors_in_one_text() {
        let (_, errors) = lex("a # b $ c", 0);
        assert_eq!(errors.len(), 2);
    }
}
