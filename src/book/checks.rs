//! `{{check SECTION.NAME}}`: a tick where the prose states a fact that the section's code checked
//! on the line that computes it (`check!`). The book quotes the check; it does not decide it
//! again. The trace holds a check only because it held, so the tick needs nothing but the record;
//! its hover gives the claim, the trace and the line.

use std::path::Path;

use super::directive::Address;
use super::html::escape_inline;
use super::problem::Cause;
use super::traces::Traces;
use crate::trace::{Kind, Trace};

pub(super) fn render(traces: &mut Traces, path: &Path, trace: &Trace, address: &Address) -> Result<String, Cause> {
    let found = traces.resolve(path, trace, address)?;
    let bad = |msg: String| Cause::BadValue {
        trace: path.to_path_buf(),
        address: address.to_string(),
        msg,
    };
    if found.record.kind() != Some(Kind::Checked) {
        let kind = found.record.kind().map_or("no kind (older code)", Kind::word);
        return Err(bad(format!(
            "`{{{{check}}}}` quotes a fact the section checked with `check!`, and this value is of kind {kind}: \
             quote it with `{{{{value {address}}}}}`, or check it in the section's code"
        )));
    }
    // Reading the trace refused a checked value that is not its claim's text (`validate`).
    let claim = found.value.as_str().unwrap_or_default();
    let mark = match &found.older_code {
        Some(older) => traces.older_mark(path, &address.section, older),
        None => String::new(),
    };
    let title = format!(
        "checked by the run: {claim} · {address} · {} trace · {}:{}",
        trace.provenance.device.slug, found.section.source_file, found.line
    );
    // A chapter's first tick says what the mark means; the rest carry it on hover.
    let words = match traces.first_tick() {
        true => " <span class=\"lecture-muted\">(✓: the run's code checked this as it ran)</span>",
        false => "",
    };
    Ok(format!(
        "<span class=\"lecture-check\" role=\"img\" aria-label=\"checked\" title=\"{}\">✓</span>{words}{mark}",
        escape_inline(&title)
    ))
}
