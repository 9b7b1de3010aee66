//! `lecture compare A B`: two traces of one lecture, value by value.

use std::path::Path;

use anyhow::{Result, bail};

use cs336::console::{Console, terminal_safe};
use cs336::trace;

/// Prints the comparison, and fails when the traces differ where their kinds say two runs must
/// agree. Traces of two different lectures share no section to compare: refused, not called equal.
pub fn compare(out: &mut Console, a: &Path, b: &Path) -> Result<()> {
    let (x, y) = (trace::load(a)?, trace::load(b)?);
    if x.lecture != y.lecture {
        bail!(
            "{} is a trace of `{}` and {} one of `{}`: only two traces of the same lecture can be compared",
            a.display(),
            terminal_safe(&x.lecture),
            b.display(),
            terminal_safe(&y.lecture)
        );
    }
    let (na, nb) = (a.display().to_string(), b.display().to_string());
    let summary = trace::compare::summarize([&na, &nb], &x, &y);
    for line in &summary.lines {
        out.line(format_args!("{}", terminal_safe(line)));
    }
    if summary.differ {
        bail!("the traces differ where their kinds say two runs must agree (listed above)");
    }
    Ok(())
}
