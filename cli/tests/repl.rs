//! REPL sessions driven through byte buffers ([`atl_cli::repl`]), and one end-to-end run
//! of the real binary in a terminal (tmux) for completion and history.

use std::path::{Path, PathBuf};

use atl_cli::repl::{Session, run_script};

fn temp_copy(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atl-repl-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let target = dir.join("pipeline.atl");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/pipeline/pipeline.atl");
    std::fs::copy(src, &target).expect("copy example");
    target
}

fn session_output(session: &mut Session, script: &str) -> String {
    let mut out = Vec::new();
    run_script(session, script, &mut out);
    String::from_utf8(out).expect("UTF-8")
}

#[test]
fn fuse_tile_undo_redo_save_and_replay() {
    let file = temp_copy("save");
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(session.load(&file, &mut out));
    let script = "\
:focus pipeline
rw unfold_let
rw get_gen
rw get_gen
rw<- tile_id with k := 8
rw split_def
rw get_gen
:undo
:undo
:redo
rw get_gen
:history
:save! mytiled
";
    let text = session_output(&mut session, script);
    // After fusion the program is the thesis's fused pipeline.
    assert!(
        text.contains("gen i < n: [0 <= i - 1] * f[i - 1] + f[i]"),
        "{text}"
    );
    assert!(
        text.contains("undid `rw get_gen`") && text.contains("undid `rw split_def`"),
        "{text}"
    );
    assert!(text.contains("redid `rw split_def`"), "{text}");
    assert!(
        text.contains("saved `derive mytiled from pipeline` (6 steps)"),
        "{text}"
    );
    assert_eq!(
        session.step_texts(),
        [
            "rw unfold_let",
            "rw get_gen",
            "rw get_gen",
            "rw<- tile_id with k := 8",
            "rw split_def",
            "rw get_gen"
        ]
    );
    // `atl derive` replays the saved block to the same program.
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let code = atl_cli::run(
        [
            "atl",
            "derive",
            &file.display().to_string(),
            "--def",
            "mytiled",
        ],
        &mut stdout,
        &mut stderr,
        false,
    );
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&stderr));
    let derived = String::from_utf8(stdout).expect("UTF-8");
    let (checked, _) = atl_lang::check_source(&std::fs::read_to_string(&file).expect("file"));
    let checked = checked.expect("saved file checks");
    assert!(checked.program.derive("mytiled").is_some());
    let current = session.current_program().expect("a program");
    let printed = atl_lang::pretty::body_to_string(current, Default::default(), "  ");
    assert!(
        derived.contains(&printed),
        "replayed:\n{derived}\nsession:\n{printed}"
    );
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}

#[test]
fn errors_do_not_end_the_session_and_leave_the_program_unchanged() {
    let file = temp_copy("errors");
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(session.load(&file, &mut out));
    let before = session.current_program().cloned();
    let text = session_output(
        &mut session,
        ":focus pipeline\nrw get_gen\nrw no_such_rule\nrw split_gen with k := n + 1\n:frobnicate\nrw unfold_let\n",
    );
    assert!(text.contains("E0806"), "no-match diagnostic:\n{text}");
    assert!(
        text.contains("did you mean") || text.contains("E0801"),
        "{text}"
    );
    assert!(
        text.contains("E0811") && text.contains("counterexample"),
        "refuted condition:\n{text}"
    );
    assert!(text.contains("unknown command `:frobnicate`"), "{text}");
    // The failed steps changed nothing; the last one applied.
    assert_eq!(session.step_texts(), ["rw unfold_let"]);
    assert_ne!(session.current_program().cloned(), before);
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}

#[test]
fn sites_rules_eval_shape_and_multiline_input() {
    let file = temp_copy("sites");
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(session.load(&file, &mut out));
    let text = session_output(
        &mut session,
        ":focus pipeline\nrw unfold_let\n:sites get_gen\n:rule get_gen\n:rules trunc\n:shape\n:eval n=5\n:unicode on\nrw get_gen around (\n  gen i < n: ?)\n",
    );
    // Two matches, the first guarded (condition proved), listed with paths.
    assert!(text.contains("  1. at [0, 0, 0]"), "{text}");
    assert!(text.contains("  2. at [0, 1]"), "{text}");
    assert!(
        text.contains("get_gen: (gen ?i < ?n: ?e)[?k] => ?e[?i := ?k]"),
        "{text}"
    );
    assert!(
        text.contains("trunc_pad_r") && !text.contains("\nget_gen "),
        "{text}"
    );
    assert!(text.contains("[n]"), "shape:\n{text}");
    assert!(text.contains("bit-identical to the original"), "{text}");
    assert!(text.contains("⊞ i < n"), "unicode output:\n{text}");
    assert_eq!(
        session.step_texts().len(),
        2,
        "the multi-line step applied: {text}"
    );
}

#[test]
fn completion_offers_commands_rules_and_definitions() {
    let file = temp_copy("complete");
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(session.load(&file, &mut out));
    assert!(session.completions(":fo").contains(&":focus".to_string()));
    assert_eq!(
        session.completions("rw get_ge"),
        ["get_gen", "get_gen_guard", "get_gen_offset"]
    );
    assert!(
        session
            .completions(":focus pi")
            .contains(&"pipeline".to_string())
    );
    assert!(
        session
            .completions("unfold f")
            .contains(&"fused".to_string())
    );
}

/// `:help` and completion list every step and directive of the step table (before the
/// table, they knew only the rewrites and five tactics).
#[test]
fn help_and_completion_list_the_directives() {
    let mut session = Session::new(false).expect("library loads");
    assert_eq!(session.completions("win"), ["window"]);
    assert_eq!(
        session.completions("compute_"),
        ["compute_at", "compute_inline", "compute_root"]
    );
    let mut out = Vec::new();
    session.handle(":help", &mut out);
    let help = String::from_utf8(out).unwrap();
    for step in atl_lang::steps::STEPS {
        assert!(
            help.contains(step.synopsis),
            "`{}` missing:\n{help}",
            step.name
        );
    }
}

/// The real binary in a terminal: Tab completes a rule name, and the history recalls a
/// previous line with the Up arrow. Skipped when tmux is not installed.
#[test]
fn terminal_session_completes_and_recalls_history() {
    if std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_err()
    {
        return;
    }
    let file = temp_copy("tmux");
    let exe = env!("CARGO_BIN_EXE_atl");
    let name = format!("atl-test-{}", std::process::id());
    let history = file.parent().expect("dir").join("history");
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .args(args)
            .output()
            .expect("tmux runs")
    };
    let start = tmux(&[
        "new-session",
        "-d",
        "-s",
        &name,
        "-x",
        "200",
        "-y",
        "50",
        &format!(
            "ATL_HISTORY={} {exe} repl {}",
            history.display(),
            file.display()
        ),
    ]);
    assert!(
        start.status.success(),
        "{}",
        String::from_utf8_lossy(&start.stderr)
    );
    let capture = || {
        let out = tmux(&["capture-pane", "-p", "-t", &name]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let wait_for = |needle: &str| {
        for _ in 0..100 {
            if capture().contains(needle) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        false
    };
    assert!(wait_for("pipeline>"), "prompt:\n{}", capture());
    tmux(&["send-keys", "-t", &name, ":focus pipeline", "Enter"]);
    assert!(wait_for("pipeline>"), "{}", capture());
    // Tab completion of a unique rule-name prefix.
    tmux(&["send-keys", "-t", &name, "rw unfold_l", "Tab"]);
    assert!(wait_for("rw unfold_let"), "completion:\n{}", capture());
    tmux(&["send-keys", "-t", &name, "Enter"]);
    assert!(
        wait_for("(gen j < n: f[j])[i - 1]"),
        "step applied:\n{}",
        capture()
    );
    tmux(&["send-keys", "-t", &name, ":undo", "Enter"]);
    assert!(wait_for("undid `rw unfold_let`"), "{}", capture());
    // Up twice recalls `rw unfold_let` from the history.
    tmux(&["send-keys", "-t", &name, "Up", "Up", "Enter"]);
    for _ in 0..100 {
        if capture().matches("(gen j < n: f[j])[i - 1]").count() >= 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let screen = capture();
    // The steps are unsaved: the first Ctrl-D warns, the second leaves.
    tmux(&["send-keys", "-t", &name, "C-d"]);
    assert!(wait_for("not saved"), "unsaved warning:\n{}", capture());
    tmux(&["send-keys", "-t", &name, "C-d"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    tmux(&["kill-session", "-t", &name]);
    assert!(
        screen.matches("(gen j < n: f[j])[i - 1]").count() >= 2,
        "history recall:\n{screen}"
    );
    // The history file is written on exit.
    let saved = std::fs::read_to_string(&history).unwrap_or_default();
    assert!(saved.contains("rw unfold_let"), "history file: {saved:?}");
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}

#[test]
fn pads_ir_and_c_show_the_lowering_of_the_current_program() {
    let file = temp_copy("lower");
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(session.load(&file, &mut out));
    let text = session_output(
        &mut session,
        ":focus tiled\n:loops\n:applicable\n:pads\n:ir\n:c\n",
    );
    assert!(text.contains("the loops of the program:"), "{text}");
    // A tiled loop nest: exchanging two gens applies somewhere.
    assert!(text.contains("rules that apply"), "{text}");
    assert!(text.contains("  gen_swap "), "{text}");
    // Directives are tried and listed as typed.
    assert!(text.contains("directives that apply"), "{text}");
    assert!(text.contains("gate: passes"), "{text}");
    // The kernel is named after the focus, never the session's internal name.
    assert!(text.contains("kernel tiled(n; f: [n])"), "{text}");
    assert!(!text.contains("__current"), "{text}");
    assert!(text.contains("int tiled(int64_t n"), "{text}");
    // Validated, so printed without the note; `--no-validate` prints it with the note,
    // anything else is a usage line.
    assert!(!text.contains("NOT VALIDATED"), "{text}");
    let text = session_output(
        &mut session,
        ":c --no-validate
:c please
",
    );
    assert!(text.contains("/* NOT VALIDATED"), "{text}");
    assert!(text.contains("usage: :c [--no-validate]"), "{text}");
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}

#[test]
fn loop_annotations_are_steps_that_lowering_applies() {
    let file = temp_copy("annotate");
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(session.load(&file, &mut out));
    // Automatically `ii` (8 iterations) is vectorized, and stops at the extent in the
    // last tile; `unroll ii` asks otherwise (8 iterations, the guard unrolled too).
    let text = session_output(&mut session, ":focus tiled\n:ir\nunroll ii\n:ir\n");
    assert!(
        text.contains("for ii in 0..min(8, n - 8 * io) {  # gen, vector"),
        "{text}"
    );
    assert!(text.contains("for ii in 0..8 {  # gen, unroll"), "{text}");
    assert!(
        text.contains("for io in 0..(n + 7) / 8 {  # gen, parallel"),
        "{text}"
    );
    // The program is unchanged by the annotation.
    let shown: Vec<&str> = text.split("tiled =\n").skip(1).collect();
    assert_eq!(shown.len(), 2, "{text}");
    assert_eq!(
        shown[0].split("tiled>").next(),
        shown[1].split("  (the program's text").next()
    );
    // What the step did is said, and `:show` and `:loops` show the annotation.
    assert!(
        text.contains("(the program's text is unchanged; loop annotations added: unroll ii)"),
        "{text}"
    );
    let text = session_output(&mut session, ":show\n:loops\n");
    assert!(text.contains("  loop annotations: unroll ii\n"), "{text}");
    assert!(
        text.contains("gen ii < 8  [stage (the definition)]  {unroll}"),
        "{text}"
    );
    assert!(
        !text.contains("gen io < cdiv(n, 8)  [stage (the definition)]  {"),
        "{text}"
    );
    // Refused: a second, conflicting annotation of `ii`; `vectorize` of a loop that is
    // not innermost; an annotation of a loop the program does not have.
    let text = session_output(&mut session, "parallel ii\nvectorize io\nparallel q\n");
    assert!(text.contains("[E0843]"), "{text}");
    assert!(text.contains("[E0841]"), "{text}");
    assert!(text.contains("[E0821]"), "{text}");
    assert_eq!(session.step_texts(), ["unroll ii"]);
    // The C has the unroll pragma, and the saved derivation replays from the file.
    let text = session_output(&mut session, ":c\n:save! tiled_unrolled\n");
    assert!(text.contains("ATL__UNROLL(GCC unroll 8)"), "{text}");
    assert!(
        text.contains("saved `derive tiled_unrolled from tiled` (1 step)"),
        "{text}"
    );
    let saved = std::fs::read_to_string(&file).expect("saved file");
    assert!(
        saved.contains("derive tiled_unrolled from tiled {\n  unroll ii\n}"),
        "{saved}"
    );
    // Undone, the automatic choice is back.
    let text = session_output(&mut session, ":undo\n:ir\n");
    assert!(
        text.contains("for ii in 0..min(8, n - 8 * io) {  # gen, vector"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}

/// `vector_width 256` is a step like a loop annotation: the program is unchanged, the
/// session says the width, the C has the pragma, a second width is refused (E0849), and
/// the saved derivation keeps the step; undone, the pragma is gone.
#[test]
fn the_vector_width_is_a_step_that_reaches_the_c() {
    let file = temp_copy("vector_width");
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(session.load(&file, &mut out));
    let text = session_output(
        &mut session,
        ":focus tiled
vector_width 256
vector_width 512
:c
:save! tiled_narrow
",
    );
    assert!(text.contains("(the program's text is unchanged)"), "{text}");
    assert!(text.contains("vector width: 256 bits"), "{text}");
    assert!(text.contains("[E0849]"), "{text}");
    assert!(
        text.contains("#pragma GCC target(\"prefer-vector-width=256\")"),
        "{text}"
    );
    assert_eq!(session.step_texts(), ["vector_width 256"]);
    let saved = std::fs::read_to_string(&file).expect("saved file");
    assert!(
        saved.contains("derive tiled_narrow from tiled {\n  vector_width 256\n}"),
        "{saved}"
    );
    let text = session_output(
        &mut session,
        ":undo
:c
",
    );
    assert!(!text.contains("prefer-vector-width"), "{text}");
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}

/// `:sites` without a rule lists every rule's sites, `:sites <-` alone says how to use
/// it, instead of looking up a rule named `` (E0801); neither changes anything.
#[test]
fn sites_without_a_rule_shows_its_usage() {
    let file = temp_copy("sites_usage");
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(session.load(&file, &mut out));
    let text = session_output(&mut session, ":focus pipeline\n:sites\n:sites <-\n");
    assert!(!text.contains("E0801"), "{text}");
    assert!(text.contains("rules that apply"), "{text}");
    assert_eq!(
        text.matches("`:sites RULE` lists the places").count(),
        1,
        "{text}"
    );
    assert!(session.step_texts().is_empty());
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}

#[test]
fn applicable_lists_directives_that_apply_as_typed_and_completion_knows_the_loops() {
    let dir = std::env::temp_dir().join(format!("atl-repl-{}-applicable", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("blur.atl");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/blur/blur.atl");
    std::fs::copy(src, &file).expect("copy example");
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(session.load(&file, &mut out));
    let text = session_output(&mut session, ":focus blur\n:applicable\n");
    let listed: Vec<String> = text
        .split("directives that apply (each tried on a copy):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no directive list:\n{text}"))
        .lines()
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split("  (").next().unwrap_or(l).trim().to_string())
        .collect();
    for wanted in [
        "compute_inline bx",
        "compute_root bx",
        "compute_at bx at y1",
        "parallel bx.y",
    ] {
        assert!(
            listed.iter().any(|l| l == wanted),
            "{wanted} not in {listed:?}"
        );
    }
    // Every directive listed applies when typed (a fresh focus each time), and one
    // that is not listed (vectorizing an outer loop) does not.
    for directive in &listed {
        let text = session_output(&mut session, &format!(":focus blur\n{directive}\n"));
        assert!(
            !text.contains("Error"),
            "`{directive}` was listed but fails:\n{text}"
        );
    }
    assert!(!listed.iter().any(|l| l == "vectorize bx.y"), "{listed:?}");
    // `:sites` without a rule lists every rule's sites.
    let text = session_output(&mut session, ":focus blur\n:sites\n");
    assert!(text.contains("rules that apply"), "{text}");
    assert!(text.contains("unfold_let"), "{text}");
    // Completion after a directive offers the loops (as directives accept them) and
    // the stages.
    let _ = session_output(&mut session, ":focus blur\n");
    let words = session.completions("split ");
    for wanted in ["bx.x", "bx.y", "x1", "y1", "bx"] {
        assert!(
            words.iter().any(|w| w == wanted),
            "{wanted} not in {words:?}"
        );
    }
    // (Not `by`: `compute_at` has no such word; only `at`.)
    assert_eq!(
        session.completions("compute_at b"),
        vec!["bx", "bx.x", "bx.y"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A session on a file holding `source`, focused on its last definition.
fn session_on(name: &str, source: &str) -> (Session, PathBuf) {
    let dir = std::env::temp_dir().join(format!("atl-repl-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("rows.atl");
    std::fs::write(&file, source).expect("write the program");
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(
        session.load(&file, &mut out),
        "{}",
        String::from_utf8_lossy(&out)
    );
    (session, dir)
}

const ROWS: &str = "size n
input g : [n, n]
def rows = gen i < n: sum k < n: g[i, k]
";

/// What a file says of `split k by 4 into ko, ki` in a derivation declared
/// `grade exact` (the expected message of the REPL's refusals).
const SPLIT_REFUSED: &str = "[E0855] Error: `split k by 4 into ko, ki` would reassociate the additions of the reduction `k`, in a derivation declared `grade exact`";

/// `grade exact` in the REPL is the file's: typed before a reassociating step, that
/// step is refused (E0855, the program unchanged), through the whole expansion of a
/// directive (`tail separate` ends with an exact step); typed after one, the
/// declaration is refused; `:undo`, `:redo` and a new focus keep it consistent.
#[test]
fn grade_exact_refuses_reassociating_steps_as_a_file_does() {
    let (mut session, dir) = session_on("grade_exact", ROWS);
    // Without the declaration the split is accepted (graded `real`).
    let text = session_output(&mut session, ":focus rows\nsplit k by 4 into ko, ki\n");
    assert!(!text.contains("Error"), "{text}");
    assert_eq!(session.step_texts(), ["split k by 4 into ko, ki"]);
    let split = session.current_program().cloned().expect("a program");

    // Declared first: the split is refused and the program is unchanged.
    let text = session_output(
        &mut session,
        ":focus rows\ngrade exact\nsplit k by 4 into ko, ki\nsplit k by 4 into ko, ki tail separate\n",
    );
    assert_eq!(text.matches("[E0855]").count(), 2, "{text}");
    assert!(text.contains(SPLIT_REFUSED), "{text}");
    assert!(
        text.contains("[E0855] Error: `split k by 4 into ko, ki tail separate` would reassociate"),
        "{text}"
    );
    assert_eq!(session.step_texts(), ["grade exact"]);
    let spec = session.current_program().cloned().expect("a program");
    assert_ne!(spec, split);
    // An exact step is still accepted after the declaration.
    let text = session_output(&mut session, "parallel i\n");
    assert!(!text.contains("Error"), "{text}");
    assert_eq!(session.step_texts(), ["grade exact", "parallel i"]);

    // Undoing the declaration lifts it; redoing it brings it back.
    let text = session_output(
        &mut session,
        ":undo\n:undo\n:redo\nsplit k by 4 into ko, ki\n",
    );
    assert!(text.contains(SPLIT_REFUSED), "{text}");
    assert_eq!(session.step_texts(), ["grade exact"]);
    let text = session_output(&mut session, ":undo\nsplit k by 4 into ko, ki\n");
    assert!(!text.contains("Error"), "{text}");
    assert_eq!(session.step_texts(), ["split k by 4 into ko, ki"]);
    assert_eq!(session.current_program(), Some(&split));

    // Declared after the split: the declaration is refused, with the file's message
    // (at the split, the declaration as "declared here").
    let text = session_output(&mut session, "grade exact\n");
    assert!(text.contains(SPLIT_REFUSED), "{text}");
    assert!(text.contains("declared here"), "{text}");
    assert_eq!(session.step_texts(), ["split k by 4 into ko, ki"]);
    assert_eq!(session.current_program(), Some(&split));

    // A new focus starts without the declaration and without the split.
    let text = session_output(&mut session, ":focus rows\ngrade exact\n");
    assert!(!text.contains("Error"), "{text}");
    assert_eq!(session.step_texts(), ["grade exact"]);
    assert_eq!(session.current_program(), Some(&spec));
    let _ = std::fs::remove_dir_all(dir);
}

/// The REPL's message is the one `atl derive` gives for the same steps in a file.
#[test]
fn grade_exact_refusal_is_worded_as_in_a_file() {
    let source =
        format!("{ROWS}derive late from rows {{\n  split k by 4 into ko, ki\n  grade exact\n}}\n");
    let (_, dir) = session_on("grade_exact_file", ROWS);
    let file = dir.join("late.atl");
    std::fs::write(&file, &source).expect("write");
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let code = atl_cli::run(
        ["atl", "derive", &file.display().to_string()],
        &mut stdout,
        &mut stderr,
        false,
    );
    let stderr = String::from_utf8_lossy(&stderr);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains(SPLIT_REFUSED), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A directive that expands into several rule steps (`tail separate`: `sum_tile`,
/// `split_sum`, `simpl_guard`) is one step for undo, but the independent checker that
/// `:c` runs first sees all of its rule steps (it refused the session with E0847 when
/// it was given only the last one).
#[test]
fn c_after_a_directive_of_several_rule_steps_passes_the_checker() {
    let (mut session, dir) = session_on("several_steps", ROWS);
    let text = session_output(
        &mut session,
        ":focus rows\nsplit k by 4 into ko, ki tail separate\n:c\n",
    );
    assert!(!text.contains("E0847"), "{text}");
    assert!(text.contains("int rows(int64_t n"), "{text}");
    assert_eq!(
        session.step_texts(),
        ["split k by 4 into ko, ki tail separate"]
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// As in a file, a focus that starts from a derivation graded `real` (itself, or a base
/// of it) cannot be declared `grade exact`; one that starts from the specification or
/// an exact derivation can. A derivation saved from the session counts too.
#[test]
fn grade_exact_refuses_a_focus_whose_base_is_real() {
    let source = format!(
        "{ROWS}derive tiled from rows {{\n  split k by 4 into ko, ki\n}}\nderive annotated from tiled {{\n  parallel i\n}}\nderive exact_rows from rows {{\n  parallel i\n}}\n"
    );
    let (mut session, dir) = session_on("grade_exact_base", &source);
    for (focus, base) in [("tiled", "tiled"), ("annotated", "tiled")] {
        let text = session_output(&mut session, &format!(":focus {focus}\ngrade exact\n"));
        assert!(
            text.contains(&format!("[E0855] Error: the derivation from `{focus}` is declared `grade exact`, but it starts from `{base}`, which is graded `real`")),
            "{text}"
        );
        assert!(session.step_texts().is_empty(), "{text}");
    }
    for focus in ["rows", "exact_rows"] {
        let text = session_output(&mut session, &format!(":focus {focus}\ngrade exact\n"));
        assert!(!text.contains("Error"), "{text}");
        assert_eq!(session.step_texts(), ["grade exact"]);
    }
    // Saved from the session: a split makes `mine` real.
    let text = session_output(
        &mut session,
        ":focus rows\nsplit k by 4 into ko, ki\n:save! mine\n:focus mine\ngrade exact\n",
    );
    assert!(text.contains("saved `derive mine from rows`"), "{text}");
    assert!(
        text.contains("but it starts from `mine`, which is graded `real`"),
        "{text}"
    );
    assert!(session.step_texts().is_empty(), "{text}");
    let _ = std::fs::remove_dir_all(dir);
}

/// After `grade exact`, `:applicable` no longer lists a directive that would be refused
/// (exchanging two sums, graded `real`); `grade` is offered by completion.
#[test]
fn applicable_leaves_out_what_grade_exact_refuses() {
    let (mut session, dir) = session_on(
        "grade_exact_applicable",
        "size n\ninput g : [n, n, n]\ndef two = gen i < n: sum j < n: sum k < n: g[i, j, k]\n",
    );
    assert_eq!(session.completions("gra"), ["grade"]);
    // After a directive's name: its own keywords (from the step table), and loops only
    // where it names some.
    assert_eq!(session.completions("grade "), ["exact"]);
    assert_eq!(session.completions("grade e"), ["exact"]);
    let words = session.completions("split ");
    for wanted in ["by", "into", "tail", "separate", "i", "j", "k"] {
        assert!(
            words.iter().any(|w| w == wanted),
            "{wanted} not in {words:?}"
        );
    }
    for unwanted in ["exact", "pad", "as"] {
        assert!(
            !words.iter().any(|w| w == unwanted),
            "{unwanted} in {words:?}"
        );
    }
    assert!(
        session
            .completions("boundary g ")
            .contains(&"pad".to_string())
    );
    let listed = |text: &str| -> Vec<String> {
        text.split("directives that apply (each tried on a copy):\n")
            .nth(1)
            .unwrap_or("")
            .lines()
            .take_while(|l| l.starts_with("  "))
            .map(|l| l.split("  (").next().unwrap_or(l).trim().to_string())
            .collect()
    };
    let text = session_output(&mut session, ":focus two\n:applicable\n");
    assert!(listed(&text).iter().any(|l| l == "reorder k, j"), "{text}");
    let text = session_output(&mut session, "grade exact\n:applicable\n");
    assert!(!listed(&text).is_empty(), "{text}");
    assert!(!listed(&text).iter().any(|l| l == "reorder k, j"), "{text}");
    let text = session_output(&mut session, "reorder k, j\n");
    assert!(text.contains("[E0855]"), "{text}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A directive with nothing to do is said so and recorded as no step.
#[test]
fn a_reorder_already_in_order_changes_nothing() {
    let (mut session, dir) = session_on(
        "reorder_noop",
        "size n, m\ninput A : [n, m]\ndef s = gen i < n, j < m: A[i, j]\n",
    );
    let text = session_output(&mut session, "reorder i, j\n");
    assert!(text.contains("changes nothing"), "{text}");
    assert!(session.step_texts().is_empty(), "{text}");
    let text = session_output(&mut session, "reorder j, i\n");
    assert!(text.contains("transpose"), "{text}");
    assert_eq!(session.step_texts(), ["reorder j, i"]);
    let _ = std::fs::remove_dir_all(dir);
}

/// A session on a copy of the matmul example, focused on `matmul`.
fn matmul_session(name: &str) -> (Session, PathBuf) {
    let dir = std::env::temp_dir().join(format!("atl-repl-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("matmul.atl");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/matmul/matmul.atl");
    std::fs::copy(src, &file).expect("copy example");
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(session.load(&file, &mut out));
    session_output(&mut session, ":focus matmul\n");
    (session, file)
}

/// `:save NAME FILE` writes a new file (the program and the derivation) that `atl
/// check` replays and that `atl derive` replays to the session's program; it never
/// touches the loaded file, refuses to overwrite, and `:save NAME` alone only says how.
#[test]
fn save_writes_where_the_user_says_and_never_appends_silently() {
    let (mut session, file) = matmul_session("save-file");
    let original = std::fs::read_to_string(&file).expect("file");
    let target = file.parent().expect("dir").join("mine.atl");
    let text = session_output(
        &mut session,
        &format!(
            "rw gen_sum\nsplit j by 8 into jo, ji\n:save mine\n:save mine {}\n",
            target.display()
        ),
    );
    assert!(text.contains("not saved: `:save mine FILE`"), "{text}");
    assert!(
        text.contains("saved `derive mine from matmul` (2 steps) to"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).expect("file"),
        original,
        "the loaded file is unchanged"
    );
    let saved = std::fs::read_to_string(&target).expect("new file");
    assert!(saved.starts_with(&original), "{saved}");
    assert!(
        saved.ends_with("derive mine from matmul {\n  rw gen_sum\n  split j by 8 into jo, ji\n}\n"),
        "{saved}"
    );
    let run = |args: &[&str]| {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let code = atl_cli::run(args.iter().copied(), &mut stdout, &mut stderr, false);
        (
            code,
            String::from_utf8(stdout).expect("UTF-8"),
            String::from_utf8(stderr).expect("UTF-8"),
        )
    };
    let target_s = target.display().to_string();
    let (code, _, err) = run(&["atl", "check", &target_s]);
    assert_eq!(code, 0, "{err}");
    let (code, derived, err) = run(&["atl", "derive", &target_s, "--def", "mine"]);
    assert_eq!(code, 0, "{err}");
    let printed = atl_lang::pretty::body_to_string(
        session.current_program().expect("a program"),
        Default::default(),
        "  ",
    );
    assert!(derived.contains(&printed), "{derived}\n{printed}");
    // An existing file is refused; `:save!` overwrites it.
    let text = session_output(&mut session, &format!(":save other {target_s}\n"));
    assert!(text.contains("exists; `:save! other"), "{text}");
    assert!(
        !std::fs::read_to_string(&target)
            .expect("file")
            .contains("other")
    );
    let text = session_output(&mut session, &format!(":save! other {target_s}\n"));
    assert!(text.contains("saved `derive other from matmul`"), "{text}");
    let (code, _, err) = run(&["atl", "check", &target_s]);
    assert_eq!(code, 0, "{err}");
    // Saved: leaving does not ask.
    assert_eq!(session.unsaved_steps(), 0);
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}

/// Leaving with unsaved steps asks once; `:quit!` leaves at once; after an undo of
/// every step there is nothing to lose.
#[test]
fn quit_with_unsaved_steps_asks_once() {
    use atl_cli::repl::Control;
    let (mut session, file) = matmul_session("quit");
    let mut out = Vec::new();
    assert_eq!(session.handle(":quit", &mut out), Control::Quit);
    session_output(&mut session, "rw gen_sum\n");
    assert_eq!(session.unsaved_steps(), 1);
    let mut out = Vec::new();
    assert_eq!(session.handle(":quit", &mut out), Control::Continue);
    let text = String::from_utf8(out).expect("UTF-8");
    assert!(
        text.contains("1 step on `matmul` not saved: `:save NAME FILE` writes it"),
        "{text}"
    );
    assert_eq!(session.leave(&mut Vec::new()), Control::Quit);
    // A new step asks again; `:quit!` does not.
    session_output(&mut session, "split j by 8 into jo, ji\n");
    assert_eq!(session.handle(":quit", &mut Vec::new()), Control::Continue);
    session_output(&mut session, "rw gen_sum\n");
    assert_eq!(session.handle(":quit!", &mut Vec::new()), Control::Quit);
    session_output(&mut session, ":undo\n:undo\n:undo\n");
    assert_eq!(session.unsaved_steps(), 0);
    assert_eq!(session.handle(":quit", &mut Vec::new()), Control::Quit);
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}

/// The REPL's own wording and names: `:eval` size errors name `:eval`, unknown steps
/// and commands get a did-you-mean, completion after `parallel` offers only gens, and
/// `:help` stays within 100 columns.
#[test]
fn the_sessions_own_words() {
    let (mut session, file) = matmul_session("words");
    let text = session_output(&mut session, ":eval M=7\nvectorise j\n:sav x\n:eval x\n");
    assert!(text.contains("`:eval N=…,K=…`"), "{text}");
    assert!(!text.contains("--sizes"), "{text}");
    assert!(text.contains("did you mean `vectorize`?"), "{text}");
    assert!(
        text.contains("unknown command `:sav` (did you mean `:save`?)"),
        "{text}"
    );
    assert!(text.contains("usage: :eval M=4,N=4,K=4"), "{text}");
    // `parallel` and `vectorize` take gens only: `k` (a sum) is not offered.
    assert_eq!(session.completions("parallel "), ["i", "j"]);
    // `unroll` takes any loop, and its keyword (`unroll k off`).
    assert_eq!(session.completions("unroll "), ["i", "j", "k", "off"]);
    let help = session_output(&mut session, ":help\n");
    for line in help.lines().skip(1) {
        assert!(line.chars().count() <= 100, "too wide: {line:?}");
    }
    assert!(help.contains("  :bench [SIZES]"), "{help}");
    // On a narrow terminal the table is laid out narrower.
    session.set_width(72);
    let help = session_output(&mut session, ":help\n");
    for line in help.lines().skip(1) {
        assert!(line.chars().count() <= 72, "too wide: {line:?}");
    }
    let text = session_output(&mut session, ":eval M=2,N=2,K=2,Q=3\n");
    assert!(
        text.contains("the program has no size `Q`; its sizes: M, N, K"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}

/// A line that is not UTF-8 in a script is reported and skipped; the session goes on.
#[test]
fn a_line_that_is_not_utf8_does_not_end_the_session() {
    let (mut session, file) = matmul_session("bytes");
    let mut out = Vec::new();
    atl_cli::repl::run_script_bytes(
        &mut session,
        b"rw gen_sum\n\xff\xfeabc\n:history\n",
        &mut out,
    );
    let text = String::from_utf8(out).expect("UTF-8");
    assert!(
        text.contains("line 2 is not UTF-8 text (byte 0xff at column 1); skipped"),
        "{text}"
    );
    assert!(text.contains("1. rw gen_sum"), "{text}");
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}

/// `:bench` compiles and times the current program against the focus's original, as
/// `atl bench` does: both names, their medians and the ratio.
#[test]
fn bench_times_the_current_program_against_the_original() {
    let (mut session, file) = matmul_session("bench");
    let text = session_output(
        &mut session,
        "rw gen_sum\n:bench M=32,N=32,K=32 --runs 3\n:bench --vs tiled M=16,N=16,K=16 --runs 2\n:bench Q=3\n:bench --vs nope\n",
    );
    assert!(
        text.contains("sizes K=32,M=32,N=32 (float, 1 thread); checked against the interpreter at K=19,M=19,N=19"),
        "{text}"
    );
    assert!(text.contains("matmul_current           median"), "{text}");
    assert!(text.contains("ratio matmul / matmul_current = "), "{text}");
    assert!(text.contains("ratio tiled / matmul_current = "), "{text}");
    assert!(
        text.contains("the program has no size `Q`; its sizes: K, M, N"),
        "{text}"
    );
    assert!(text.contains("no definition named `nope`"), "{text}");
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}

/// `store_root` and `fold_storage` typed in the REPL reach lowering as in a file: the
/// program is unchanged, `:ir` shows the buffer kept for the whole kernel and folded,
/// and `:undo` takes the fold back.
#[test]
fn storage_placement_is_a_step_that_reaches_the_kernel() {
    let (mut session, dir) = session_on(
        "storage",
        "size H, W
input img : [H, W]
def blur =
  let bx = gen y < H, x < W: img[y, x] + [x + 1 < W] * img[y, x + 1] in
  gen y < H, x < W: bx[y, x] + [y + 1 < H] * bx[y + 1, x]
",
    );
    let text = session_output(
        &mut session,
        ":focus blur
compute_at bx at y1
store_root bx
fold_storage bx by 2
:ir
",
    );
    assert!(
        text.contains("alloc bx[H + 1, W] fold 2 = uninit[2 * W]"),
        "{text}"
    );
    let text = session_output(&mut session, ":undo\n:ir\n");
    assert!(
        text.contains("alloc bx[H + 1, W] = uninit[H * W + W]"),
        "{text}"
    );
    assert_eq!(
        session.step_texts(),
        ["compute_at bx at y1", "store_root bx"]
    );
    let _ = std::fs::remove_dir_all(dir);
}
