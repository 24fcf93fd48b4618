//! docs/scheduling.md's `atl` blocks are complete programs: each must pass the front
//! end, every derivation in it must derive without a diagnostic, and every schedule
//! must use directives only (the guide shows no rule step).

mod common;

#[test]
fn every_block_of_the_guide_derives_with_directives_only() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/scheduling.md");
    let text = std::fs::read_to_string(&path).expect("docs/scheduling.md");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```atl") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), l) => {
                block.push_str(l);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(current.is_none(), "an unterminated block");
    assert!(blocks.len() >= 2, "{} blocks", blocks.len());
    for (k, block) in blocks.iter().enumerate() {
        let what = format!("docs/scheduling.md block {}", k + 1);
        common::assert_directive_only(&what, block, &[]);
        let (_, derivations, diags) = common::derive(block);
        assert!(diags.is_empty(), "{what}: {diags:?}");
        assert!(!derivations.is_empty(), "{what}: no derivation");
    }
}
