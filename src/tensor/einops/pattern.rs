//! The pattern language shared by `einsum`, `reduce`, `rearrange` and the run-time dimension
//! names: space-separated axis names (`batch seq hidden`), `...` for any number of dimensions, and
//! parenthesised groups (`(heads hidden1)`) for one dimension that holds several axes. Inputs are
//! separated by commas and the output follows `->`.
//!
//! The parser checks only what every user of a pattern needs (syntax, an axis named twice on one
//! side, `...` twice on one side); what depends on the operation (groups allowed? may an axis
//! disappear?) is checked by the operation, with the same error type.

use crate::error::Error;

/// One entry of a side of a pattern: one tensor dimension, or (for `...`) any number of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Axis(String),
    Ellipsis,
    /// `(a b c)`: one dimension whose size is the product of the axes' sizes, `a` outermost.
    /// `()` is a dimension of size 1.
    Group(Vec<String>),
}

/// The dimensions of one tensor, as a pattern names them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Side {
    pub items: Vec<Item>,
}

impl Side {
    pub fn has_ellipsis(&self) -> bool {
        self.items.contains(&Item::Ellipsis)
    }

    pub fn has_groups(&self) -> bool {
        self.items.iter().any(|i| matches!(i, Item::Group(_)))
    }

    /// Every axis name, groups flattened, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.items.iter().flat_map(|item| -> Box<dyn Iterator<Item = &str>> {
            match item {
                Item::Axis(name) => Box::new(std::iter::once(name.as_str())),
                Item::Group(names) => Box::new(names.iter().map(String::as_str)),
                Item::Ellipsis => Box::new(std::iter::empty()),
            }
        })
    }

    pub fn contains(&self, name: &str) -> bool {
        self.names().any(|n| n == name)
    }

    /// Dimensions the side names explicitly (everything but `...`).
    pub fn fixed_dims(&self) -> usize {
        self.items.iter().filter(|i| !matches!(i, Item::Ellipsis)).count()
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .items
            .iter()
            .map(|item| match item {
                Item::Axis(name) => name.clone(),
                Item::Ellipsis => "...".into(),
                Item::Group(names) => format!("({})", names.join(" ")),
            })
            .collect();
        f.write_str(&parts.join(" "))
    }
}

/// `inputs -> output`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pub text: String,
    pub inputs: Vec<Side>,
    pub output: Side,
}

impl Pattern {
    pub fn parse(text: &str) -> Result<Pattern, Error> {
        let fail = |msg: String| pattern_error(text, msg);
        let arrows: Vec<usize> = text.match_indices("->").map(|(i, _)| i).collect();
        let arrow = match arrows.as_slice() {
            [one] => *one,
            [] => return Err(fail("no `->`: a pattern reads `inputs -> output`".into())),
            more => {
                return Err(fail(format!(
                    "`->` appears {} times; a pattern has exactly one",
                    more.len()
                )));
            }
        };
        let (lhs, rhs) = (&text[..arrow], &text[arrow + 2..]);
        if let Some(comma) = rhs.find(',') {
            let at = text[..arrow + 2 + comma].chars().count() + 1;
            return Err(fail(format!(
                "`,` at character {at} is after `->`: there is one output"
            )));
        }
        let mut inputs = Vec::new();
        let mut start = 0;
        for (n, part) in lhs.split(',').enumerate() {
            let side = parse_side(part, start).map_err(|m| fail(format!("input {}: {m}", n + 1)))?;
            inputs.push(side);
            start += part.chars().count() + 1;
        }
        let output = parse_side(rhs, text[..arrow + 2].chars().count()).map_err(|m| fail(format!("output: {m}")))?;
        Ok(Pattern {
            text: text.to_string(),
            inputs,
            output,
        })
    }

    /// An error about this pattern.
    pub fn error(&self, msg: impl Into<String>) -> Error {
        pattern_error(&self.text, msg)
    }

    /// Operations whose axes are single dimensions (einsum, dimension names) reject groups.
    pub fn reject_groups(&self, op: &str) -> Result<(), Error> {
        for (n, side) in self.inputs.iter().enumerate() {
            if side.has_groups() {
                return Err(self.error(format!(
                    "input {}: {op} does not take parenthesised groups; use rearrange to split or merge dimensions",
                    n + 1
                )));
            }
        }
        if self.output.has_groups() {
            return Err(self.error(format!(
                "output: {op} does not take parenthesised groups; use rearrange to split or merge dimensions"
            )));
        }
        Ok(())
    }
}

/// Parses a list of names with no `->` (the dimension names of one tensor, as in
/// `"batch seq hidden"`).
pub fn parse_names(text: &str) -> Result<Side, Error> {
    if text.contains("->") || text.contains(',') {
        return Err(pattern_error(
            text,
            "dimension names are one list of names, without `->` or `,`",
        ));
    }
    parse_side(text, 0).map_err(|m| pattern_error(text, m))
}

pub fn pattern_error(text: &str, msg: impl Into<String>) -> Error {
    Error::Pattern {
        pattern: text.to_string(),
        msg: msg.into(),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Ellipsis,
    Open,
    Close,
}

/// `offset` is where `text` starts in the whole pattern (in characters), so that positions in messages (counted
/// in characters from 1) point into what the user wrote.
fn tokenize(text: &str, offset: usize) -> Result<Vec<(usize, Token)>, String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let position = |i: usize| offset + text[..chars[i].0].chars().count() + 1;
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        let at = position(i);
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' || c == ')' {
            tokens.push((at, if c == '(' { Token::Open } else { Token::Close }));
            i += 1;
        } else if c == '.' {
            let dots = chars[i..].iter().take_while(|(_, c)| *c == '.').count();
            if dots != 3 {
                return Err(format!("{dots} dot(s) at character {at}: write exactly `...`"));
            }
            tokens.push((at, Token::Ellipsis));
            i += 3;
        } else if c.is_alphanumeric() || c == '_' {
            let len = chars[i..]
                .iter()
                .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
                .count();
            let name: String = chars[i..i + len].iter().map(|(_, c)| c).collect();
            if c.is_numeric() {
                return Err(format!(
                    "`{name}` at character {at} is not an axis name: names start with a letter or `_` (use `()` for a dimension of size 1)"
                ));
            }
            tokens.push((at, Token::Name(name)));
            i += len;
        } else {
            return Err(format!("unexpected character `{c}` at character {at}"));
        }
    }
    Ok(tokens)
}

fn parse_side(text: &str, offset: usize) -> Result<Side, String> {
    let mut items = Vec::new();
    let mut group: Option<(usize, Vec<String>)> = None;
    for (at, token) in tokenize(text, offset)? {
        match (token, &mut group) {
            (Token::Name(name), Some((_, names))) => names.push(name),
            (Token::Name(name), None) => items.push(Item::Axis(name)),
            (Token::Ellipsis, Some(_)) => {
                return Err(format!("`...` inside parentheses (character {at}) is not supported"));
            }
            (Token::Ellipsis, None) => items.push(Item::Ellipsis),
            (Token::Open, Some((open, _))) => {
                return Err(format!(
                    "nested `(` at character {at} (the group opened at character {open} is not closed)"
                ));
            }
            (Token::Open, None) => group = Some((at, Vec::new())),
            (Token::Close, Some(_)) => {
                items.push(Item::Group(group.take().map(|(_, names)| names).unwrap_or_default()))
            }
            (Token::Close, None) => return Err(format!("`)` at character {at} closes no `(`")),
        }
    }
    if let Some((open, _)) = group {
        return Err(format!("`(` at character {open} is never closed"));
    }
    let side = Side { items };
    check_unique(&side)?;
    Ok(side)
}

/// An axis stands for one size and one position: naming it twice on one side is a mistake (a
/// diagonal, in einsum terms, which we do not support).
fn check_unique(side: &Side) -> Result<(), String> {
    let mut seen: Vec<&str> = Vec::new();
    for name in side.names() {
        if seen.contains(&name) {
            return Err(format!("axis `{name}` appears twice in `{side}`"));
        }
        seen.push(name);
    }
    if side.items.iter().filter(|i| **i == Item::Ellipsis).count() > 1 {
        return Err(format!("`...` appears more than once in `{side}`"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(n: &str) -> Item {
        Item::Axis(n.into())
    }

    fn msg(text: &str) -> String {
        match Pattern::parse(text) {
            Err(Error::Pattern { pattern, msg }) => {
                assert_eq!(pattern, text);
                msg
            }
            other => panic!("expected a pattern error for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn parses_inputs_output_groups_and_ellipsis() {
        let p = Pattern::parse("batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2").unwrap();
        assert_eq!(p.inputs.len(), 2);
        assert_eq!(p.inputs[0].items, vec![axis("batch"), axis("seq1"), axis("hidden")]);
        assert_eq!(p.inputs[1].items, vec![axis("batch"), axis("seq2"), axis("hidden")]);
        assert_eq!(p.output.items, vec![axis("batch"), axis("seq1"), axis("seq2")]);

        let p = Pattern::parse("...(heads hidden1)->... heads hidden1").unwrap();
        assert_eq!(
            p.inputs[0].items,
            vec![Item::Ellipsis, Item::Group(vec!["heads".into(), "hidden1".into()])]
        );
        assert_eq!(p.output.items, vec![Item::Ellipsis, axis("heads"), axis("hidden1")]);
        assert!(p.inputs[0].has_ellipsis() && p.inputs[0].has_groups());
        assert_eq!(p.inputs[0].fixed_dims(), 1);
        assert_eq!(p.inputs[0].names().collect::<Vec<_>>(), ["heads", "hidden1"]);
        assert_eq!(p.inputs[0].to_string(), "... (heads hidden1)");
    }

    #[test]
    fn empty_sides_groups_and_unicode_names() {
        let p = Pattern::parse(" -> ").unwrap();
        assert_eq!(p.inputs, vec![Side::default()]);
        assert_eq!(p.output, Side::default());
        let p = Pattern::parse("a () -> a").unwrap();
        assert_eq!(p.inputs[0].items, vec![axis("a"), Item::Group(vec![])]);
        let p = Pattern::parse("α_1 _b ->").unwrap();
        assert_eq!(p.inputs[0].items, vec![axis("α_1"), axis("_b")]);
        let p = Pattern::parse(",->").unwrap();
        assert_eq!(p.inputs.len(), 2);
    }

    #[test]
    fn syntax_errors_name_the_problem_and_position() {
        assert!(msg("a b").contains("no `->`"));
        assert!(msg("a -> b -> c").contains("`->` appears 2 times"));
        assert!(msg("a -> b, c").contains("one output"));
        let m = msg("a (b c -> a");
        assert!(
            m.contains("`(` at character 3 is never closed") && m.starts_with("input 1"),
            "{m}"
        );
        assert!(msg("a b) -> a").contains("`)` at character 4 closes no `(`"));
        assert!(msg("(a (b)) -> a").contains("nested `(` at character 4"));
        assert!(msg("a .. -> a").contains("2 dot(s) at character 3"));
        assert!(msg("a .... -> a").contains("4 dot(s)"));
        assert!(msg("(a ...) -> a").contains("`...` inside parentheses"));
        let m = msg("a, b 2 -> a");
        assert!(
            m.starts_with("input 2") && m.contains("`2` at character 6 is not an axis name"),
            "{m}"
        );
        let m = msg("a * b -> a");
        assert!(m.contains("unexpected character `*` at character 3"), "{m}");
        assert!(msg("a -> a + b").starts_with("output: unexpected character `+` at character 8"));
    }

    #[test]
    fn repeated_axes_and_ellipses_are_errors() {
        assert!(msg("a a -> a").contains("axis `a` appears twice in `a a`"));
        assert!(msg("a (b a) -> a").contains("axis `a` appears twice"));
        let m = msg("a -> a a");
        assert!(m.starts_with("output") && m.contains("axis `a` appears twice"), "{m}");
        assert!(msg("... a ... -> a").contains("`...` appears more than once"));
    }

    #[test]
    fn names_lists() {
        assert_eq!(
            parse_names("batch ... hidden").unwrap().items,
            vec![axis("batch"), Item::Ellipsis, axis("hidden")]
        );
        assert!(matches!(parse_names("a -> b"), Err(Error::Pattern { .. })));
        assert!(matches!(parse_names("a, b"), Err(Error::Pattern { .. })));
        assert!(matches!(parse_names("a a"), Err(Error::Pattern { .. })));
    }

    #[test]
    fn groups_rejected_where_not_allowed() {
        let p = Pattern::parse("a (b c) -> a").unwrap();
        let Err(Error::Pattern { msg, .. }) = p.reject_groups("einsum") else {
            panic!()
        };
        assert!(msg.contains("einsum does not take parenthesised groups"), "{msg}");
        assert!(Pattern::parse("a b -> a").unwrap().reject_groups("einsum").is_ok());
    }
}
