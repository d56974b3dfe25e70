//! What a program does with values written out (literals) or held in
//! variables of declared types is judged by the checks, before anything
//! runs, in the words the run gives for the same values held in variables
//! of no declared type; and the checks refuse nothing the run takes: a
//! value given where a type is declared, and operators on such values.

use tapec::syntax::tree::TypeName;

const LITERALS: [&str; 4] = ["1", "-2.5", "'text'", "true"];

/// The first error line of what a program's run says on stderr, if any.
fn first_error(text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("tapec-declared-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let (_, err, _) = tapec::run_untrusted(text.as_bytes().to_vec(), dir, 10_000, 1 << 16);
    err.lines()
        .find(|l| l.starts_with("Error"))
        .unwrap_or("")
        .to_string()
}

/// The places a type is declared, each as a program that gives the value
/// `v` to one so declared: written as `v` is the literal itself, and in the
/// program the run is held to, the literal reaches it through a variable
/// (`held`) of no declared type.
fn places(ty: &str, v: &str, held: bool) -> Vec<String> {
    let through = if held { "held" } else { v };
    let hold = |first: &str| {
        if held {
            format!("held := {v};\n{first}")
        } else {
            first.to_string()
        }
    };
    vec![
        hold(&format!("var x: {ty};\nx := {through};\n")),
        if held {
            format!("procedure P(held);\nvar x: {ty};\nbegin\n  x := held;\nend;\nP({v});\n")
        } else {
            format!("procedure P;\nvar x: {ty};\nbegin\n  x := {v};\nend;\nP;\n")
        },
        hold(&format!(
            "procedure P(x: {ty});\nbegin\nend;\nP({through});\n"
        )),
        format!(
            "function F({}): {ty};\nbegin\n  Result := {through};\nend;\nWriteLn(F({}));\n",
            if held { "held" } else { "" },
            if held { v } else { "" }
        ),
    ]
}

#[test]
fn a_literal_of_a_refused_type_is_the_error_its_run_gives() {
    let mut refused_before_running = 0;
    for ty in TypeName::ALL {
        for literal in LITERALS {
            let written = places(ty.name(), literal, false);
            let held = places(ty.name(), literal, true);
            for (written, held) in written.iter().zip(&held) {
                let ran = first_error(held);
                let checked = first_error(written);
                assert_eq!(checked, ran, "{written}");
                let (program, errors) = tapec::syntax::parse(written, 0);
                assert!(errors.is_empty(), "{written}: {errors:?}");
                let found =
                    tapec::eval::constants::check_program(&program, &Default::default(), false);
                assert_eq!(found.errors.is_empty(), ran.is_empty(), "{written}");
                if !found.errors.is_empty() {
                    refused_before_running += 1;
                }
            }
        }
    }
    // Of 5 types × 4 literals, the types take 1 + 2 + 1 + 1 + 0 = 5: the
    // other 15, in each of the 4 places.
    assert_eq!(refused_before_running, 60);
}

/// The errors the checks find in a program, as `tapec check` finds them.
fn checked(text: &str) -> usize {
    let mut err = Vec::new();
    match tapec::check_bytes("literals.tape", text.as_bytes().to_vec(), &mut err) {
        0 => 0,
        _ => String::from_utf8_lossy(&err)
            .lines()
            .filter(|l| l.starts_with("Error"))
            .count(),
    }
}

/// An operator on literals of kinds it refuses is refused by the checks in
/// the words of the run, and no other. One difference is by design: the
/// checks judge kinds wherever they stand, so `true or 1` is refused though
/// its run, cut short, never reads the `1`; they say what the run says of
/// `false or 1`.
#[test]
fn an_operator_on_literals_is_the_error_its_run_gives() {
    let binary = [
        "+", "-", "*", "/", "div", "mod", "and", "or", "=", "<>", "<", "<=", ">", ">=",
    ];
    let literals = [LITERALS.as_slice(), &["false"]].concat();
    let boolean = |v: &str| matches!(v, "true" | "false");
    let mut cases = Vec::new();
    for &a in &literals {
        for op in binary {
            for &b in &literals {
                let cut_short = matches!((a, op), ("false", "and") | ("true", "or")) && !boolean(b);
                // What the run says where it reads `b`.
                let read = if cut_short {
                    if a == "true" { "false" } else { "true" }
                } else {
                    a
                };
                cases.push((
                    format!("x := {a} {op} {b};\n"),
                    format!("a := {read};\nb := {b};\nx := a {op} b;\n"),
                    cut_short,
                ));
            }
        }
        for op in ["-", "not "] {
            cases.push((
                format!("x := {op}({a});\n"),
                format!("a := {a};\nx := {op}a;\n"),
                false,
            ));
        }
    }
    let mut refused_before_running = 0;
    for (written, held, cut_short) in &cases {
        let ran = first_error(held);
        assert_eq!(first_error(written), ran, "{written}");
        let found = checked(written);
        assert_eq!(found > 0, !ran.is_empty(), "{written}");
        if *cut_short {
            let unread = held.replacen("a := true", "a := false", 1);
            let unread = if unread == *held {
                held.replacen("a := false", "a := true", 1)
            } else {
                unread
            };
            assert_eq!(first_error(&unread), "", "{written} is cut short");
        }
        refused_before_running += usize::from(found > 0);
    }
    // The run takes the other 69 (numbers with numbers, strings joined
    // or compared, Booleans combined, and the like), and so do the checks.
    assert_eq!((refused_before_running, cases.len()), (291, 360));
}

/// An operator on variables of declared types, and its value given to a
/// variable of a declared type, are judged by the checks in the words of
/// the run of the same program with the variables' types not declared,
/// and the checks refuse exactly what that run refuses.
#[test]
fn an_operation_on_declared_variables_is_the_error_its_run_gives() {
    let binary = [
        "+", "-", "*", "/", "div", "mod", "and", "or", "=", "<>", "<", "<=", ">", ">=",
    ];
    let types = ["Integer", "Real", "String", "Boolean"];
    // A value of each type that no operator refuses for its value; a
    // Boolean on the left that does not cut `and` or `or` short.
    let value = |ty: &str, op: &str| match ty {
        "Integer" => "1",
        "Real" => "1.5",
        "String" => "'s'",
        _ if op == "or" => "false",
        _ => "true",
    };
    let mut refused_before_running = 0;
    let mut cases = 0;
    for a in types {
        for b in types {
            for op in binary {
                for n in types {
                    let (va, vb) = (value(a, op), value(b, ""));
                    let declared = format!(
                        "var a: {a}; b: {b}; n: {n};\na := {va};\nb := {vb};\nn := a {op} b;\n"
                    );
                    let held = format!("var n: {n};\na := {va};\nb := {vb};\nn := a {op} b;\n");
                    let ran = first_error(&held);
                    assert_eq!(first_error(&declared), ran, "{declared}");
                    let found = checked(&declared);
                    assert_eq!(found > 0, !ran.is_empty(), "{declared}");
                    // Without a value, the declared program is refused all
                    // the same: the kinds are known before the run.
                    let unvalued = format!("var a: {a}; b: {b}; n: {n};\nn := a {op} b;\n");
                    assert_eq!(checked(&unvalued), found, "{unvalued}");
                    refused_before_running += usize::from(found > 0);
                    cases += 1;
                }
            }
        }
    }
    // Of 4 × 4 kinds of operands, 14 operators and 4 declared types for
    // the value, the run takes 58: Integers' 17 (`+ - *`, `div` and `mod`
    // given to an Integer or a Real, `/` to a Real, the six comparisons to
    // a Boolean), the 30 of Reals with numbers (`+ - * /` to a Real,
    // comparisons), a String's 7 (`+`, comparisons) and a Boolean's 4
    // (`and`, `or`, `=`, `<>`). The checks refuse the other 838.
    assert_eq!((refused_before_running, cases), (838, 896));
}

/// A row or column number, a matrix element and a field width written as
/// a literal of a kind or value the run refuses are refused by the checks
/// in the run's words (the same literal held in a variable of no declared
/// type reaches the run), and no others are: an Integer row number, which
/// only the matrix can refuse, is the run's to judge.
#[test]
fn an_index_element_or_field_width_literal_is_the_error_its_run_gives() {
    // Each place, and whether `@` is a row or column number there.
    let places = [
        ("WriteLn(m[@, 1]);", true),
        ("WriteLn(m[1, @]);", true),
        ("m[@, 2] := 1;", true),
        ("m[2, @] := 1;", true),
        ("m[1, 1] := @;", false),
        ("x := [[1, @], [3, 4]];", false),
        ("x := [2, @];", false),
        ("WriteLn(1:@);", false),
        ("WriteLn(1.5:8:@);", false),
    ];
    let literals = ["1", "0", "-2.5", "2.0", "'text'", "false", "5000", "-1"];
    let (mut refused_before_running, mut cases) = (0, 0);
    for (place, index) in places {
        for literal in literals {
            let written = format!("m := Zeros(2, 2);\n{}\n", place.replace('@', literal));
            let held = format!(
                "m := Zeros(2, 2);\nheld := {literal};\n{}\n",
                place.replace('@', "held")
            );
            let ran = first_error(&held);
            assert_eq!(first_error(&written), ran, "{written}");
            let found = checked(&written);
            if index && ["0", "5000", "-1"].contains(&literal) {
                // An Integer out of the matrix's range is the run's to say.
                assert_eq!(found, 0, "{written}");
                assert!(!ran.is_empty(), "{written}");
            } else {
                assert_eq!(found > 0, !ran.is_empty(), "{written}");
            }
            refused_before_running += usize::from(found > 0);
            cases += 1;
        }
    }
    // Of 9 places × 8 literals, the checks refuse `-2.5`, `2.0`, `'text'`
    // and `false` as row or column numbers (4 places × 4: 16), `'text'`
    // and `false` as elements (3 × 2: 6), and all but `1` and `0` as
    // field widths (2 × 6: 12): 34.
    assert_eq!((refused_before_running, cases), (34, 72));
    // A width the checks refuse for another reason is refused once.
    assert_eq!(checked("WriteLn(1:-'a');\nWriteLn(1:2:-true);\n"), 2);
    // Decimals of a String are the run's error about the String, which
    // the checks leave to it.
    assert_eq!(checked("WriteLn('a':5:-1);\n"), 0);
    // Rows of other lengths are the error, not an element in them.
    assert_eq!(checked("x := [[1], 'a'];\n"), 1);
}
