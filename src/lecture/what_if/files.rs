//! Where a what-if's files go: its own folder under `what-if/`, named after the device and its
//! changes (readable, bounded, and the same whatever the order of the flags), and the rule that
//! it writes nothing outside that folder, links followed.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{Change, WHAT_IF_DIR, typed};
use crate::lecture::givens;

/// The longest folder name a what-if gets, in bytes: file systems take 255, and a shorter name
/// leaves room for the paths inside it.
pub const MAX_FOLDER_NAME: usize = 160;

/// Hex digits of the hash that ends a what-if's folder name (48 bits).
const HASH_DIGITS: usize = 12;

/// The changes in one order whatever the order of the flags: the lecture's order of sections,
/// and within a section the order its givens are declared in.
pub fn in_lecture_order(changes: &[Change]) -> Vec<&Change> {
    let rank = |c: &Change| {
        givens::all()
            .iter()
            .position(|(s, g)| s.id == c.section.id && g.name == c.given.name)
            .unwrap_or(usize::MAX)
    };
    let mut sorted: Vec<&Change> = changes.iter().collect();
    sorted.sort_by_key(|c| rank(c));
    sorted
}

/// The what-if's own folder: the device and each change (`SECTION.NAMEVALUE`), cut to fit
/// [`MAX_FOLDER_NAME`], then a hash of the device and the changes in full
/// (`cpu-…-custom_model.d8-1a2b3c4d5e6f`). The same what-if always gets the same name, in
/// whatever order its flags came; two different ones share a name only if their hashes collide,
/// and a cut name cannot make them. The trace inside is named after the device, as every trace
/// is (`trace::load_named` holds to that).
pub fn folder_name(slug: &str, changes: &[Change]) -> String {
    let sorted = in_lecture_order(changes);
    let mut hasher = Sha256::new();
    hasher.update(slug.as_bytes());
    for c in &sorted {
        // The value in the trace's form: `4096`, `4_096` and `4.096e3` are one what-if.
        hasher.update(format!("\n{}.{}={}", c.section.id, c.given.name, c.value).as_bytes());
    }
    let hash: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let mut readable = slug.to_string();
    for c in &sorted {
        readable.push_str(&format!("-{}.{}{}", c.section.id, c.given.name, typed(&c.value)));
    }
    let mut name: String = readable
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-') {
                ch
            } else {
                '-'
            }
        })
        .take(MAX_FOLDER_NAME - HASH_DIGITS - 1)
        .collect();
    name.push('-');
    name.push_str(&hash[..HASH_DIGITS]);
    name
}

/// Where a what-if's trace is written: `<lecture dir>/what-if/<folder_name>/<slug>.json`.
pub fn trace_path(lecture_dir: &Path, slug: &str, changes: &[Change]) -> PathBuf {
    folder(lecture_dir)
        .join(folder_name(slug, changes))
        .join(format!("{slug}.json"))
}

/// The device traces' folder, for a what-if trace at `path` (`trace_path`).
pub fn lecture_dir_of(path: &Path) -> Option<&Path> {
    path.parent()?.parent()?.parent()
}

/// Every what-if trace under `lecture_dir`, sorted; none when there is no what-if folder yet, and
/// an error naming a folder that cannot be read.
pub fn all(lecture_dir: &Path) -> crate::error::Result<Vec<PathBuf>> {
    let read = |dir: &Path| -> crate::error::Result<Vec<PathBuf>> {
        let entries = std::fs::read_dir(dir).map_err(|err| crate::trace::Error::io(dir, err))?;
        Ok(entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
    };
    let what_ifs = folder(lecture_dir);
    // No folder yet is no what-if yet; a folder that cannot be read is said to be so (`exists`
    // would say no for a folder it may not look into).
    match std::fs::metadata(&what_ifs) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        _ => {}
    }
    let mut out = Vec::new();
    for dir in read(&what_ifs)?.into_iter().filter(|dir| dir.is_dir()) {
        out.extend(
            read(&dir)?
                .into_iter()
                .filter(|p| p.extension().is_some_and(|x| x == "json")),
        );
    }
    out.sort();
    Ok(out)
}

/// Refuses to write at `path` (a what-if's trace, or its book's folder) unless it leads to a place
/// inside `what_ifs` (the folder of what-ifs), links followed: a what-if writes only in its own
/// folder, never through a link to a file or folder outside it. A trace path is first held to the
/// rule every run keeps (`trace::io::check_link`: no dangling link, none to a file that is not a
/// trace); a what-if then also refuses a link to a trace elsewhere, such as the device's own,
/// which it promises to leave as it is.
pub fn check_inside(what_ifs: &Path, path: &Path) -> crate::error::Result<()> {
    let refuse = |why: String| crate::error::Error::File {
        path: path.to_path_buf(),
        msg: format!(
            "{why}: a what-if writes only inside {}. Remove the link; nothing was run",
            what_ifs.display()
        ),
    };
    let is_link = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    if path.extension().is_some_and(|x| x == "json") {
        crate::trace::io::check_link(path)?;
    }
    let base = std::fs::canonicalize(what_ifs)
        .map_err(|e| refuse(format!("{} cannot be resolved ({e})", what_ifs.display())))?;
    // The nearest folder that exists, resolved, and the rest (which holds no link yet).
    let target = crate::trace::atomic_file::follow_links(path)?;
    if is_link(path) && !target.exists() {
        return Err(refuse(format!(
            "is a link to {}, which does not exist",
            target.display()
        )));
    }
    let existing = target.ancestors().find(|p| p.exists()).unwrap_or(&target);
    let resolved = std::fs::canonicalize(existing).map_err(|e| refuse(format!("cannot be resolved ({e})")))?;
    if !resolved.starts_with(&base) {
        return Err(refuse(format!(
            "leads to {}, outside the folder of what-ifs",
            resolved.display()
        )));
    }
    Ok(())
}

/// The folder of what-if traces for the device traces in `lecture_dir`.
pub fn folder(lecture_dir: &Path) -> PathBuf {
    lecture_dir.join(WHAT_IF_DIR)
}
