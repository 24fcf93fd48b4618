use atl_solver::*;
fn run(label: &str, facts: &[&str], goal: &str, rlimit: u32) {
    let p = |s: &str| atl_lang::parser::parse_pred_str(s).unwrap();
    let s = Solver::with_config(SolverConfig { rlimit, ..Default::default() });
    let f = Facts { sizes: vec![], facts: facts.iter().map(|x| p(x)).collect() };
    let t = std::time::Instant::now();
    let v = s.prove(&f, &p(goal));
    eprintln!("{label}: {v} {:?}", t.elapsed());
}
#[test]
fn smoke() {
    let r = 1_000_000;
    run("V0", &[], "c1 == 0 || (q*c1)/c1 == q", r);
    run("V1", &["c1 > 0"], "(q*c1)/c1 == q", r);
    run("V2", &["c1 < 0"], "(q*c1)/c1 == q", r);
    for sign in ["c1 > 0", "c1 < 0"] {
      run("DM", &[sign, "(q*c1)/c1 == q"], "(x*(q*c1) + y) / c1 == x*((q*c1)/c1) + y/c1", r);
      run("MM1", &[sign, "(q*c1)/c1 == q", "(x*(q*c1) + y) / c1 == x*((q*c1)/c1) + y/c1"], "(x*(q*c1) + y) % c1 == y % c1", r);
      run("CD", &[sign, "(q*c1)/c1 == q"], "cdiv(x*(q*c1) + y, c1) == x*((q*c1)/c1) + cdiv(y, c1)", r);
      run("MOD2a", &[sign, "(q*c1)/c1 == q"], "(x - (q*c1)*(x/(q*c1)))/c1 == x/c1 - q*(x/(q*c1))", r);
      run("MOD2b", &[sign, "(q*c1)/c1 == q", "(x - (q*c1)*(x/(q*c1)))/c1 == x/c1 - q*(x/(q*c1))"], "x % (q*c1) % c1 == x % c1", r);
    }
}
