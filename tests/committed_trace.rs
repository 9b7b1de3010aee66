//! The committed CPU trace must come from the code as it is: the book refuses stale sections, so a
//! section changed without re-running the lecture would break `mdbook serve book` on a fresh clone.

use std::path::Path;

#[test]
fn committed_cpu_trace_matches_the_current_sections() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("trace/lecture_02/cpu.json");
    let trace = cs336::trace::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut stale = Vec::new();
    for def in cs336::lecture::SECTIONS {
        let code =
            cs336::trace::source::function_source(def.source, def.id).unwrap_or_else(|e| panic!("{}: {e}", def.file));
        match trace.section(def.id) {
            None => stale.push(format!("{} (missing)", def.id)),
            Some(s) if s.source_hash != code.hash() => stale.push(format!("{} (code changed)", def.id)),
            Some(_) => {}
        }
    }
    assert!(
        stale.is_empty(),
        "{} is out of date for: {}; run `cargo run --release --bin lecture` and commit the trace",
        path.display(),
        stale.join(", ")
    );
}
