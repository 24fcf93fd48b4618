//! Issue 17's reproducers through the command line: each is refused with its
//! diagnostic (or, for `simpl` under a guard, derives a program equal to its source),
//! and none is certified. The engine's and the checker's own tests cover the
//! mechanisms; this file checks what a user of `atl check`/`atl emit` sees.

use atl_cli::{EXIT_OK, EXIT_USER, run};

/// Writes `source` to a fresh file and runs `atl ARGS… FILE`; (status, stdout, stderr).
fn atl_on(source: &str, args: &[&str]) -> (i32, String, String) {
    let dir = std::env::temp_dir().join(format!("atl-holes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(format!("{:x}.atl", fxhash(source)));
    std::fs::write(&file, source).expect("write");
    let mut all = vec!["atl".to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    all.push(file.display().to_string());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run(all, &mut out, &mut err, false);
    (
        code,
        String::from_utf8(out).expect("utf-8"),
        String::from_utf8(err).expect("utf-8"),
    )
}

fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

const HEAD: &str = "size n\ninput f : [n]\n";

#[test]
fn a_possibly_negative_range_in_a_written_definition_is_refused() {
    let (code, _, err) = atl_on(
        &format!("{HEAD}input g : [n]\ndef a = (gen i < n - 5: f[i]) ++ g\n"),
        &["check"],
    );
    assert_eq!(code, EXIT_USER);
    assert!(err.contains("E0413") && err.contains("n - 5 >= 0"), "{err}");
    // With the bound stated, it is accepted.
    let (code, _, err) = atl_on(
        &format!("{HEAD}assume n >= 5\ninput g : [n]\ndef a = (gen i < n - 5: f[i]) ++ g\n"),
        &["check"],
    );
    assert_eq!(code, EXIT_OK, "{err}");
}

#[test]
fn a_possibly_negative_input_extent_is_refused() {
    let (code, _, err) = atl_on("size n\ninput f : [n - 3]\ndef a = f\n", &["check"]);
    assert_eq!(code, EXIT_USER);
    assert!(err.contains("E0413"), "{err}");
}

#[test]
fn contradictory_assumes_are_refused() {
    for assume in ["n <= 0", "n >= 5 && n <= 4", "2 * n == 7"] {
        let (code, _, err) = atl_on(
            &format!("{HEAD}assume {assume}\ndef a = gen i < n: f[i]\n"),
            &["check"],
        );
        assert_eq!(code, EXIT_USER, "{assume}");
        assert!(err.contains("E0414"), "{assume}: {err}");
    }
}

#[test]
fn the_reproducers_are_refused_by_check_and_emit() {
    let cases = [
        (
            "def a = gen j < n: (([n >= 4] * (gen i < n: f[i])) ++ f)[j + n]\n\
             derive b from a { rw split_gen in [0, 0, 0, 0] with k := 4 }",
            "E0844",
        ),
        (
            "def a = split(2, f)\nderive b from a { rw split_def with io := ii, ii := ii }",
            "E0803",
        ),
        (
            "def a = gen i < n: f[i]\nderive b from a { rw shift_gen with d := i }",
            "E0846",
        ),
        (
            "size x\nsize y\nsize z\nsize w\n\
             assume x <= 4611686018427387904 && y <= 4611686018427387904\n\
             assume z <= 4611686018427387904 && w <= 4611686018427387904\n\
             assume 4 * x * y + 4 * z * w >= n\n\
             def spec = gen i < n: [i < 1] * f[i]\nderive bad from spec { rw guard_elim }",
            "E0811",
        ),
    ];
    for (body, code_expected) in cases {
        let source = format!("{HEAD}{body}\n");
        for cmd in ["check", "emit"] {
            let (code, _, err) = atl_on(&source, &[cmd]);
            assert_eq!(code, EXIT_USER, "{cmd}: {source}");
            assert!(err.contains(code_expected), "{cmd}: {source}\n{err}");
        }
    }
}

#[test]
fn simpl_under_a_guard_keeps_the_extent() {
    let source = format!(
        "{HEAD}def a = gen j < n: (([n <= 4] * (gen i < min(n, 4): f[i])) ++ f)[j + min(n, 4)]\n\
         derive b from a {{ simpl }}\n"
    );
    for n in 1..=8 {
        let sizes = format!("n={n}");
        let args = |def: &'static str| {
            [
                "eval",
                "--def",
                def,
                "--sizes",
                &sizes,
                "--input",
                "f=random:3",
                "--json",
            ]
            .map(String::from)
        };
        let a = atl_on(
            &source,
            &args("a").iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let b = atl_on(
            &source,
            &args("b").iter().map(String::as_str).collect::<Vec<_>>(),
        );
        assert_eq!(a.0, EXIT_OK, "{}", a.2);
        assert_eq!(b.0, EXIT_OK, "{}", b.2);
        assert_eq!(a.1, b.1, "n = {n}");
    }
}

#[test]
fn window_names_its_binder_apart_from_the_sizes() {
    // Found by the soundness fuzzer: `window` called its new binder `w`, the name of a
    // size, and the independent checker refused the derivation (E0847).
    let (code, _, err) = atl_on(
        "size n, w\ndef a = (let u1 = (gen i < 1: 1.0) in 1.0)\nderive d from a { window u1 in 0..0 + min(n, 4) }\n",
        &["check"],
    );
    assert_eq!(code, EXIT_OK, "{err}");
}
