//! `s := s + t` appends `t` to `s`'s own string where nothing else holds
//! it (`Interpreter::appended_in_place`): what it gives is still the sum
//! of `s` as it was before `t` was worked out, as any sum is worked out
//! left to right, and a copy taken before keeps its text.

fn run(text: &str) -> (String, String, i32) {
    let dir = std::env::temp_dir().join(format!("tapec-strings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    tapec::run_untrusted(text.as_bytes().to_vec(), dir, 1_000_000, 1 << 20)
}

#[test]
fn an_append_adds_to_the_string_as_it_was_before_its_right_side() {
    let (out, err, code) = run("\
function Changes(var p: String): String;
begin
  p := 'changed';
  Result := 'x';
end;

function Takes(var p: String): String;
begin
  Result := p;
  p := '';
end;

function Retypes(var p): String;
begin
  Result := '!';
  p := 0;
end;

s := 'a';
s := s + Changes(s);
WriteLn(s);
out := 'x';
out := out + Takes(out);
WriteLn(out);
t := out;
out := out + '!';
WriteLn(t, ' ', out);
u := 'a';
u := u + Retypes(u);
WriteLn(u);
r := 'ab';
r := r + r;
WriteLn(r);
");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "ax\nxx\nxx xx!\na!\nabab\n");
}
