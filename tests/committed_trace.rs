//! The committed CPU trace must come from the code as it is: the book refuses stale sections, so a
//! section changed without re-running the lecture would break `mdbook serve book` on a fresh clone.

use std::path::Path;

use cs336::book::sections::resolve_source;
use cs336::trace::source::function_source;

#[test]
fn committed_cpu_trace_matches_the_current_sections() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("trace/lecture_02/cpu.json");
    let trace = cs336::trace::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut stale = Vec::new();
    for def in cs336::lecture::SECTIONS {
        let code = function_source(def.source, def.id).unwrap_or_else(|e| panic!("{}: {e}", def.file));
        let Some(s) = trace.section(def.id) else {
            stale.push(format!("{} (missing)", def.id));
            continue;
        };
        if s.source_hash != code.hash() {
            stale.push(format!("{} (code changed)", def.id));
        }
        // The book reads the section from the file the trace names, as it is on disk.
        if s.source_file != def.file {
            stale.push(format!("{} (moved from {} to {})", def.id, s.source_file, def.file));
        }
        let file = resolve_source(root, &s.source_file).unwrap_or_else(|e| panic!("{}: {e}", s.source_file));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let on_disk = function_source(&text, def.id).unwrap_or_else(|e| panic!("{}: {e}", s.source_file));
        assert_eq!(
            on_disk.hash(),
            code.hash(),
            "{}: the file differs from the compiled section",
            s.source_file
        );
    }
    assert!(
        stale.is_empty(),
        "{} is out of date for: {}; run `cargo run --release --bin lecture` and commit the trace",
        path.display(),
        stale.join(", ")
    );
}
