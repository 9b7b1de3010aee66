//! The committed CPU traces must come from the code as it is: the book refuses stale sections, so a
//! section changed without re-running the lecture would break `mdbook serve book` on a fresh clone.
//! CPU traces are named after their CPU (`cpu-<model>.json`); every one committed is checked.

mod common;

use std::path::Path;

use cs336::book::sections::resolve_source;
use cs336::trace::source::function_source;

#[test]
fn committed_cpu_traces_match_the_current_sections() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cpu: Vec<_> = common::committed_traces()
        .into_iter()
        .filter(|(_, t)| t.provenance.device.kind == "cpu")
        .collect();
    assert!(!cpu.is_empty(), "no CPU trace is committed under trace/");
    for (path, trace) in cpu {
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        assert_eq!(
            name.as_deref(),
            Some(trace.provenance.device.slug.as_str()),
            "named by its CPU"
        );
        assert!(trace.provenance.device.slug.starts_with("cpu-"), "{}", path.display());
        let mut stale = Vec::new();
        for def in cs336::lecture::SECTIONS {
            let code = function_source(def.source, def.id).unwrap_or_else(|e| panic!("{}: {e}", def.file));
            let Some(s) = trace.section(def.id) else {
                stale.push(format!("{} (missing)", def.id));
                continue;
            };
            if s.source_hash != code.hash() {
                stale.push(format!("{} (code changed)", def.id));
                continue;
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
            // Same tokens: every value's token still starts the line it was recorded on.
            for (value, v) in &s.values {
                let states = v.history.iter().map(|h| (h.line, h.token)).chain([(v.line, v.token)]);
                for (line, token) in states {
                    let placed = token.and_then(|t| code.line_of_token(t));
                    assert_eq!(placed, Some(line).filter(|&l| l != 0), "{}.{value}", def.id);
                }
            }
        }
        assert!(
            stale.is_empty(),
            "{} is out of date for: {}; run `cargo run --release --bin lecture` and commit the trace",
            path.display(),
            stale.join(", ")
        );
    }
}
