//! Finding a section's function in its source file. The trace stores a hash of the function's
//! tokens so the book can tell when the code changed after its numbers were recorded, and the book
//! prints the function's text with the recorded values beside the lines that produced them.
//!
//! The hash is taken over Rust tokens, not text: reformatting (indentation, line breaks, the
//! trailing commas rustfmt adds or removes) and plain `//` comments leave it alone, so running
//! `cargo fmt` or fixing a comment does not turn a GPU trace nobody can re-record stale. Doc
//! comments are tokens (`#[doc = "…"]`) and do count. Lexing is proc-macro2's: strings, raw
//! strings, char literals and comments are handled by the same lexer rustc's macros use.

use std::str::FromStr;

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use sha2::{Digest, Sha256};

/// A function's text (with its doc comments and attributes), where it sits in its file, and its
/// tokens with the line each starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSource {
    /// 1-based line of the file where the function (its first doc comment or attribute) starts.
    pub start_line: u32,
    /// 1-based line of its closing brace.
    pub end_line: u32,
    /// The whole lines `start_line..=end_line` of the file.
    pub text: String,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    text: String,
    line: u32,
}

impl FunctionSource {
    /// SHA-256 of the function's tokens, one per line, in order.
    pub fn hash(&self) -> String {
        let mut digest = Sha256::new();
        for token in &self.tokens {
            digest.update(token.text.as_bytes());
            digest.update(b"\n");
        }
        hex(&digest.finalize())
    }

    /// The index of the first token on file line `line`, if the function has one there (a value
    /// recorded on that line can then be placed again after the text is reformatted).
    pub fn token_at_line(&self, line: u32) -> Option<usize> {
        self.tokens.iter().position(|t| t.line == line)
    }

    /// The file line of token `index`.
    pub fn line_of_token(&self, index: usize) -> Option<u32> {
        self.tokens.get(index).map(|t| t.line)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a function could not be read from a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("the file is not valid Rust tokens: {0}")]
    Lex(String),
    #[error("no top-level function `{0}` in the file")]
    NotFound(String),
}

/// Finds the top-level `fn name(…) … { … }` in `file` and returns it from its first doc comment
/// or attribute to its closing brace.
pub fn function_source(file: &str, name: &str) -> Result<FunctionSource, SourceError> {
    // The lexer and the walk below recurse into every bracket: refuse what would overflow the stack.
    check_nesting(file)?;
    let stream = TokenStream::from_str(file).map_err(|e| SourceError::Lex(e.to_string()));
    let found = stream.and_then(|stream| find_function(stream, file, name));
    // proc-macro2 keeps every lexed text in a thread-local map so spans can report lines; free it.
    proc_macro2::extra::invalidate_current_thread_spans();
    found
}

/// How deeply brackets may nest in a source file (rustfmt'd code rarely passes 20).
pub const MAX_NESTING: usize = 256;

/// Refuses a file whose brackets nest past [`MAX_NESTING`]. Brackets inside strings and comments
/// count too, which can only overcount: a bound, not a parser.
fn check_nesting(file: &str) -> Result<(), SourceError> {
    let mut depth = 0usize;
    for (i, line) in file.lines().enumerate() {
        for c in line.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            if depth > MAX_NESTING {
                return Err(SourceError::Lex(format!(
                    "brackets nest more than {MAX_NESTING} deep by line {}",
                    i + 1
                )));
            }
        }
    }
    Ok(())
}

fn find_function(stream: TokenStream, file: &str, name: &str) -> Result<FunctionSource, SourceError> {
    let top: Vec<TokenTree> = stream.into_iter().collect();
    let is_ident = |t: &TokenTree, s: &str| matches!(t, TokenTree::Ident(i) if i == s);
    for (i, tree) in top.iter().enumerate() {
        let Some(next) = top.get(i + 1) else { break };
        if !(is_ident(tree, "fn") && is_ident(next, name)) {
            continue;
        }
        // The body: the first brace group after the name (generics, arguments and the return
        // type come before it; none of them is a brace group at the top level).
        let Some(body) = top[i..]
            .iter()
            .position(|t| matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace))
        else {
            continue;
        };
        let first = item_start(&top, i);
        let start_line = line(top[first].span());
        let end_line = match &top[i + body] {
            TokenTree::Group(g) => g.span_close().end().line as u32,
            other => line(other.span()),
        };
        let mut tokens = Vec::new();
        for tree in &top[first..=i + body] {
            flatten(tree, &mut tokens);
        }
        drop_trailing_commas(&mut tokens);
        let text = file
            .lines()
            .skip(start_line as usize - 1)
            .take((end_line - start_line + 1) as usize)
            .collect::<Vec<_>>()
            .join("\n");
        return Ok(FunctionSource {
            start_line,
            end_line,
            text,
            tokens,
        });
    }
    Err(SourceError::NotFound(name.to_string()))
}

/// Walks back from `fn` over qualifiers (`pub`, `pub(crate)`, `const`, `async`, `unsafe`,
/// `extern "C"`) and attributes, doc comments included.
fn item_start(top: &[TokenTree], fn_at: usize) -> usize {
    let mut first = fn_at;
    while first > 0 {
        match &top[first - 1] {
            TokenTree::Ident(i) if ["pub", "const", "async", "unsafe", "extern"].contains(&i.to_string().as_str()) => {
                first -= 1
            }
            TokenTree::Literal(_) if first >= 2 && matches!(&top[first - 2], TokenTree::Ident(i) if i == "extern") => {
                first -= 1
            }
            TokenTree::Group(g)
                if g.delimiter() == Delimiter::Parenthesis
                    && first >= 2
                    && matches!(&top[first - 2], TokenTree::Ident(i) if i == "pub") =>
            {
                first -= 1
            }
            TokenTree::Group(g)
                if g.delimiter() == Delimiter::Bracket
                    && first >= 2
                    && matches!(&top[first - 2], TokenTree::Punct(p) if p.as_char() == '#') =>
            {
                first -= 2
            }
            _ => break,
        }
    }
    first
}

fn line(span: Span) -> u32 {
    span.start().line as u32
}

fn flatten(tree: &TokenTree, out: &mut Vec<Token>) {
    let mut push = |text: String, span: Span| out.push(Token { text, line: line(span) });
    match tree {
        TokenTree::Group(g) => {
            let (open, close) = match g.delimiter() {
                Delimiter::Parenthesis => ("(", ")"),
                Delimiter::Brace => ("{", "}"),
                Delimiter::Bracket => ("[", "]"),
                Delimiter::None => ("", ""),
            };
            push(open.to_string(), g.span_open());
            for inner in g.stream() {
                flatten(&inner, out);
            }
            out.push(Token {
                text: close.to_string(),
                line: g.span_close().start().line as u32,
            });
        }
        TokenTree::Ident(i) => push(i.to_string(), i.span()),
        TokenTree::Punct(p) => push(p.as_char().to_string(), p.span()),
        TokenTree::Literal(l) => push(l.to_string(), l.span()),
    }
}

/// rustfmt adds a comma after the last item of a list it breaks over lines and removes it when it
/// joins the list again: a comma right before a closing delimiter is formatting, not code.
fn drop_trailing_commas(tokens: &mut Vec<Token>) {
    let closes = |t: Option<&Token>| t.is_some_and(|t| matches!(t.text.as_str(), ")" | "]" | "}"));
    let mut kept = Vec::with_capacity(tokens.len());
    for i in 0..tokens.len() {
        if tokens[i].text == "," && closes(tokens.get(i + 1)) {
            continue;
        }
        kept.push(tokens[i].clone());
    }
    *tokens = kept;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_nested_past_the_bound_are_an_error_not_an_overflow() {
        for n in [MAX_NESTING + 1, 50_000, 100_000] {
            let file = format!("fn f() {}{}", "{".repeat(n), "}".repeat(n));
            let err = function_source(&file, "f").expect_err("too deep");
            assert!(err.to_string().contains("more than 256 deep"), "{err}");
        }
        let file = format!("fn f() {}{}", "{".repeat(MAX_NESTING), "}".repeat(MAX_NESTING));
        assert!(function_source(&file, "f").is_ok());
    }

    const FILE: &str = r##"use x;

/// Doc line.
#[allow(unused)]
pub fn target(cx: &mut Ctx<'_>) -> Result<()> {
    let s = "}{ fn other(";
    let r = r#"}"#;
    let c = '}';
    // } in a comment
    /* { */
    if true { cx.go(1, 2) }
}

fn other() {}
"##;

    /// The same function reformatted: other line breaks and indentation, a trailing comma, other
    /// plain comments.
    const REFORMATTED: &str = r##"use x;
/// Doc line.
#[allow(unused)]
pub fn target(
    cx: &mut Ctx<'_>,
) -> Result<()> {
        let s = "}{ fn other(";
  let r = r#"}"#; let c = '}';
    // a different comment
    if true {
        cx.go(
            1,
            2,
        )
    }
}
"##;

    #[test]
    fn extracts_the_whole_function_with_docs() {
        let f = function_source(FILE, "target").expect("found");
        assert_eq!((f.start_line, f.end_line), (3, 12));
        assert!(f.text.starts_with("/// Doc line."));
        assert!(f.text.ends_with("if true { cx.go(1, 2) }\n}"));
        assert_eq!(function_source(FILE, "other").expect("found").text, "fn other() {}");
        assert_eq!(
            function_source(FILE, "missing"),
            Err(SourceError::NotFound("missing".into()))
        );
        assert!(function_source(FILE, "arget").is_err());
        assert_ne!(f.hash(), function_source(FILE, "other").expect("found").hash());
    }

    #[test]
    fn reformatting_keeps_the_hash_and_tokens_find_their_new_lines() {
        let (a, b) = (
            function_source(FILE, "target").expect("found"),
            function_source(REFORMATTED, "target").expect("found"),
        );
        assert_eq!(a.hash(), b.hash());
        // `if true { cx.go(` starts line 11 in FILE and line 10 after reformatting.
        let token = a.token_at_line(11).expect("a token on line 11");
        assert_eq!(b.line_of_token(token), Some(10));
    }

    #[test]
    fn changing_code_or_a_doc_comment_changes_the_hash() {
        let base = function_source(FILE, "target").expect("found").hash();
        for edited in [
            FILE.replace("cx.go(1, 2)", "cx.go(1, 3)"),
            FILE.replace("/// Doc line.", "/// Other doc."),
            FILE.replace("let c", "let d"),
        ] {
            assert_ne!(
                function_source(&edited, "target").expect("found").hash(),
                base,
                "{edited}"
            );
        }
    }

    #[test]
    fn unbalanced_text_is_a_lex_error() {
        assert!(matches!(function_source("fn f() {", "f"), Err(SourceError::Lex(_))));
    }
}
