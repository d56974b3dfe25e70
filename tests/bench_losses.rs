//! `bench/gpt.tape` against losses computed by an independent float64
//! implementation from the same seed: a cross-check of every operation the
//! GPT uses, its blame, the generator and the order of draws.

fn last_line(args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let (out, err, code) = tapec::run_captured(std::path::Path::new("bench/gpt.tape"), &args, None);
    assert_eq!(code, 0, "bench/gpt.tape failed:\n{err}");
    out.lines().last().unwrap_or_default().to_string()
}

#[test]
fn size_s_matches_the_independent_loss() {
    assert_eq!(
        last_line(&["27", "8", "16", "64", "200"]),
        "step 200 loss 0.068948"
    );
}

#[test]
fn size_m_matches_the_independent_loss() {
    assert_eq!(
        last_line(&["65", "32", "64", "256", "100"]),
        "step 100 loss 0.145318"
    );
}
