//! Finding a section's function in its source file. The trace stores a hash of that text so the
//! book can tell when the code changed after its numbers were recorded, and the book prints the
//! text with the recorded values beside the lines that produced them.

use sha2::{Digest, Sha256};

/// A function's text (with its doc comments and attributes) and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSource {
    pub start_line: u32,
    pub text: String,
}

impl FunctionSource {
    pub fn hash(&self) -> String {
        hex(&Sha256::digest(self.text.as_bytes()))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Finds `fn name(` in `file` and returns everything from its doc comments to its closing brace.
pub fn function_source(file: &str, name: &str) -> Option<FunctionSource> {
    let needle = format!("fn {name}(");
    let mut search_from = 0;
    let fn_pos = loop {
        let pos = search_from + file[search_from..].find(&needle)?;
        let before = file[..pos].chars().next_back();
        if before.is_none_or(|c| c.is_whitespace()) {
            break pos;
        }
        search_from = pos + needle.len();
    };
    let open = fn_pos + file[fn_pos..].find('{')?;
    let close = matching_brace(file, open)?;

    // Walk back over the signature's line start, then doc comments and attributes.
    let lines: Vec<&str> = file[..fn_pos].split('\n').collect();
    let mut first = lines.len() - 1;
    while first > 0 {
        let prev = lines[first - 1].trim_start();
        if prev.starts_with("///") || prev.starts_with("#[") {
            first -= 1;
        } else {
            break;
        }
    }
    let start_offset: usize = lines[..first].iter().map(|l| l.len() + 1).sum();
    Some(FunctionSource { start_line: first as u32 + 1, text: file[start_offset..=close].to_string() })
}

/// Index of the `}` matching the `{` at `open`, skipping braces inside comments, strings and
/// character literals.
fn matching_brace(text: &str, open: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => i = text[i..].find('\n').map_or(bytes.len(), |n| i + n),
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = text[i + 2..].find("*/").map_or(bytes.len(), |n| i + 2 + n + 1),
            b'r' if matches!(bytes.get(i + 1), Some(b'"') | Some(b'#')) && (i == 0 || !is_ident(bytes[i - 1])) => {
                let hashes = bytes[i + 1..].iter().take_while(|&&b| b == b'#').count();
                if bytes.get(i + 1 + hashes) == Some(&b'"') {
                    let terminator = format!("\"{}", "#".repeat(hashes));
                    let body = i + 2 + hashes;
                    i = text[body..].find(&terminator).map_or(bytes.len(), |n| body + n + terminator.len() - 1);
                }
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' => {
                // A char literal ('x', '\n', '{') rather than a lifetime ('a).
                if bytes.get(i + 1) == Some(&b'\\') {
                    i = text[i + 2..].find('\'').map_or(bytes.len(), |n| i + 2 + n);
                } else if let Some(c) = text[i + 1..].chars().next()
                    && text[i + 1 + c.len_utf8()..].starts_with('\'')
                {
                    i += c.len_utf8() + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r##"use x;

/// Doc line.
#[allow(unused)]
pub fn target(cx: &mut Ctx<'_>) -> Result<()> {
    let s = "}{";
    let r = r#"}"#;
    let c = '}';
    // } in a comment
    /* { */
    if true { cx.go() }
}

fn other() {}
"##;

    #[test]
    fn extracts_the_whole_function_with_docs() {
        let f = function_source(FILE, "target").expect("found");
        assert_eq!(f.start_line, 3);
        assert!(f.text.starts_with("/// Doc line."));
        assert!(f.text.ends_with("if true { cx.go() }\n}"));
        assert_eq!(function_source(FILE, "other").expect("found").text, "fn other() {}");
        assert!(function_source(FILE, "missing").is_none());
        assert!(function_source(FILE, "arget").is_none());
        assert_ne!(f.hash(), function_source(FILE, "other").expect("found").hash());
    }
}
