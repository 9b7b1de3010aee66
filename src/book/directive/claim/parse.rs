//! Reading a claim: words into tokens, tokens into a [`Claim`] (the grammar is in `mod.rs`).
//! Every error says what was expected and where.

use super::super::StateChoice;
use super::{Claim, Cmp, Expr, Func, Op};
use crate::address::address_of;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Num(f64),
    /// A key (`a.b.c@first`) or a word (`and`, `ratio`).
    Word(String),
    Sym(&'static str),
}

/// The most tokens a claim may have: claims are a line of prose's worth; a longer one is a
/// mistake or an attack, and an expression tree that long would be walked recursively.
pub const MAX_TOKENS: usize = 1000;

/// How deeply `not`, parentheses, unary minus and function calls may nest.
pub const MAX_DEPTH: usize = 64;

const SYMBOLS: [&str; 14] = ["<=", ">=", "==", "!=", "<", ">", "(", ")", "[", "]", ",", "+", "-", "*"];

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        if out.len() == MAX_TOKENS {
            return Err(format!(
                "a claim of more than {MAX_TOKENS} tokens ({} characters): split it into several claims",
                text.len()
            ));
        }
        let c = rest.chars().next().unwrap_or(' ');
        let len = if c.is_ascii_digit() || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit())) {
            let len = number_len(rest);
            let word = &rest[..len];
            let x: f64 = word.parse().map_err(|_| format!("`{word}` is not a number"))?;
            if !x.is_finite() {
                return Err(format!(
                    "`{word}` is too large to be a number (it would read as infinity)"
                ));
            }
            out.push(Token::Num(x));
            len
        } else if c.is_ascii_alphabetic() || c == '_' {
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '@')))
                .unwrap_or(rest.len());
            out.push(Token::Word(rest[..len].to_string()));
            len
        } else if c == '/' {
            out.push(Token::Sym("/"));
            1
        } else if let Some(sym) = SYMBOLS.iter().find(|s| rest.starts_with(**s)) {
            out.push(Token::Sym(sym));
            sym.len()
        } else {
            return Err(format!("unexpected `{c}` in claim"));
        };
        rest = rest[len..].trim_start();
    }
    Ok(out)
}

/// Digits, a point, an exponent (`1.5e-3`).
fn number_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
        i += 1;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            i = j;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    i
}

/// Parses a claim; keys without `@STATE` take `state`.
pub fn parse_claim(text: &str, state: StateChoice) -> Result<Claim, String> {
    let tokens = tokens(text)?;
    if tokens.is_empty() {
        return Err("empty claim: write a comparison such as `a.b > c.d`".into());
    }
    let mut parser = Parser {
        tokens,
        at: 0,
        state,
        depth: 0,
    };
    let claim = parser.or()?;
    match parser.peek() {
        None => Ok(claim),
        Some(t) => Err(format!("unexpected {} after a complete claim", show(t))),
    }
}

fn show(token: &Token) -> String {
    match token {
        Token::Num(x) => format!("number `{x}`"),
        Token::Word(w) => format!("`{w}`"),
        Token::Sym(s) => format!("`{s}`"),
    }
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    state: StateChoice,
    /// How many `not`s, parentheses, minus signs and calls enclose the token being read.
    depth: usize,
}

impl Parser {
    /// Runs `f` one level deeper, refusing to go past [`MAX_DEPTH`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Parser) -> Result<T, String>) -> Result<T, String> {
        if self.depth == MAX_DEPTH {
            return Err(format!(
                "the claim nests `not`, parentheses, minus signs or calls more than {MAX_DEPTH} deep"
            ));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn is_word(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w == word)
    }

    fn is_sym(&self, sym: &str) -> bool {
        matches!(self.peek(), Some(Token::Sym(s)) if *s == sym)
    }

    fn require(&mut self, sym: &str, after: &str) -> Result<(), String> {
        match self.next() {
            Some(Token::Sym(s)) if s == sym => Ok(()),
            Some(t) => Err(format!("expected `{sym}` {after}, found {}", show(&t))),
            None => Err(format!("expected `{sym}` {after}, found the end of the claim")),
        }
    }

    fn or(&mut self) -> Result<Claim, String> {
        let mut claim = self.and()?;
        while self.is_word("or") {
            self.at += 1;
            claim = Claim::Or(Box::new(claim), Box::new(self.and()?));
        }
        Ok(claim)
    }

    fn and(&mut self) -> Result<Claim, String> {
        let mut claim = self.unary()?;
        while self.is_word("and") {
            self.at += 1;
            claim = Claim::And(Box::new(claim), Box::new(self.unary()?));
        }
        Ok(claim)
    }

    fn unary(&mut self) -> Result<Claim, String> {
        if self.is_word("not") {
            self.at += 1;
            return Ok(Claim::Not(Box::new(self.nested(Parser::unary)?)));
        }
        if self.is_word("has") {
            self.at += 1;
            return match self.next() {
                Some(Token::Word(w)) => Ok(Claim::Has(self.key(&w)?)),
                _ => Err("`has` takes a key, `has SECTION.NAME`".into()),
            };
        }
        if self.is_word("finite") {
            self.at += 1;
            return match self.next() {
                Some(Token::Word(w)) => Ok(Claim::Finite(self.key(&w)?)),
                _ => Err("`finite` takes a key, `finite SECTION.NAME`".into()),
            };
        }
        // `(` opens either a claim (`(a or b) and c`) or an expression (`(a + b) > c`).
        if self.is_sym("(") {
            let start = self.at;
            self.at += 1;
            let inner = self.nested(Parser::or);
            if let Err(e) = &inner
                && e.contains(&format!("more than {MAX_DEPTH} deep"))
            {
                return inner;
            }
            if let Ok(claim) = inner
                && self.is_sym(")")
            {
                self.at += 1;
                let continues =
                    matches!(self.peek(), Some(Token::Sym(s)) if !matches!(*s, ")" | "]" | ",")) || self.is_word("in");
                if !continues {
                    return Ok(claim);
                }
            }
            self.at = start;
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Claim, String> {
        let left = self.expr()?;
        let cmp = match self.peek() {
            Some(Token::Sym("<")) => Cmp::Lt,
            Some(Token::Sym("<=")) => Cmp::Le,
            Some(Token::Sym(">")) => Cmp::Gt,
            Some(Token::Sym(">=")) => Cmp::Ge,
            Some(Token::Sym("==")) => Cmp::Eq,
            Some(Token::Sym("!=")) => Cmp::Ne,
            Some(Token::Word(w)) if w == "in" => {
                self.at += 1;
                self.require("[", "after `in`")?;
                let low = self.expr()?;
                self.require(",", "between the ends of a range")?;
                let high = self.expr()?;
                self.require("]", "to close the range")?;
                return Ok(Claim::Within(left, low, high));
            }
            _ => {
                return match left {
                    Expr::Key(address) => Ok(Claim::Bool(address)),
                    other => Err(format!(
                        "`{other}` is a number, not a claim: compare it (`<`, `<=`, `>`, `>=`, `==`, `!=`, `in [LOW, HIGH]`)"
                    )),
                };
            }
        };
        self.at += 1;
        let right = self.expr()?;
        Ok(Claim::Compare(left, cmp, right))
    }

    fn expr(&mut self) -> Result<Expr, String> {
        let mut e = self.term()?;
        loop {
            let op = match self.peek() {
                Some(Token::Sym("+")) => Op::Add,
                Some(Token::Sym("-")) => Op::Sub,
                _ => return Ok(e),
            };
            self.at += 1;
            e = Expr::Bin(op, Box::new(e), Box::new(self.term()?));
        }
    }

    fn term(&mut self) -> Result<Expr, String> {
        let mut e = self.factor()?;
        loop {
            let op = match self.peek() {
                Some(Token::Sym("*")) => Op::Mul,
                Some(Token::Sym("/")) => Op::Div,
                _ => return Ok(e),
            };
            self.at += 1;
            e = Expr::Bin(op, Box::new(e), Box::new(self.factor()?));
        }
    }

    fn factor(&mut self) -> Result<Expr, String> {
        match self.next() {
            Some(Token::Num(x)) => Ok(Expr::Num(x)),
            Some(Token::Sym("-")) => Ok(Expr::Neg(Box::new(self.nested(Parser::factor)?))),
            Some(Token::Sym("(")) => {
                let e = self.nested(Parser::expr)?;
                self.require(")", "to close `(`")?;
                Ok(e)
            }
            Some(Token::Word(w)) if self.is_sym("(") => {
                let func = Func::from_name(&w)
                    .ok_or_else(|| format!("unknown function `{w}` (functions: ratio, reldiff, abs, min, max)"))?;
                self.at += 1;
                let mut args = vec![self.nested(Parser::expr)?];
                while self.is_sym(",") {
                    self.at += 1;
                    args.push(self.nested(Parser::expr)?);
                }
                self.require(")", &format!("to close `{w}(`"))?;
                if args.len() != func.arity() {
                    return Err(format!("`{w}` takes {} argument(s), got {}", func.arity(), args.len()));
                }
                Ok(Expr::Call(func, args))
            }
            Some(Token::Word(w)) if matches!(w.as_str(), "and" | "or" | "not" | "has" | "finite" | "in") => {
                Err(format!("expected a number or a key, found `{w}`"))
            }
            Some(Token::Word(w)) => Ok(Expr::Key(self.key(&w)?)),
            Some(t) => Err(format!("expected a number or a key, found {}", show(&t))),
            None => Err("the claim ends where a number or a key was expected".into()),
        }
    }

    /// `SECTION.NAME[.PATH][@STATE]`.
    fn key(&self, word: &str) -> Result<super::Address, String> {
        let (key, state) = match word.split_once('@') {
            Some((key, state)) => (key, StateChoice::parse(state)?),
            None => (word, self.state),
        };
        let mut address = address_of(key)?;
        address.state = state;
        Ok(address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::directive::Address;

    fn key(s: &str) -> Expr {
        let (a, b) = s.split_once('.').unwrap_or((s, ""));
        Expr::Key(Address::new(a, b, &[]))
    }

    #[test]
    fn parses_the_forms_and_precedence() {
        let p = |s: &str| parse_claim(s, StateChoice::Last).map(|c| c.to_string());
        assert_eq!(p("a.b > c.d"), Ok("a.b > c.d".into()));
        assert_eq!(p("a.b < 2 * c.d"), Ok("a.b < (2 * c.d)".into()));
        assert_eq!(
            p("ratio(a.b, c.d) in [0.8, 1.25]"),
            Ok("ratio(a.b, c.d) in [0.8, 1.25]".into())
        );
        assert_eq!(p("reldiff(a.b, c.d) < 5e-2"), Ok("reldiff(a.b, c.d) < 0.05".into()));
        assert_eq!(
            p("not a.b and has c.d or x.y"),
            Ok("((not a.b and has c.d) or x.y)".into())
        );
        assert_eq!(p("(a.b or c.d) and x.y"), Ok("((a.b or c.d) and x.y)".into()));
        assert_eq!(p("(a.b + 1) / 2 >= -c.d"), Ok("((a.b + 1) / 2) >= -c.d".into()));
        assert_eq!(p("a.b.0.x@first == a.b"), Ok("a.b.0.x@first == a.b".into()));
        assert_eq!(
            parse_claim("a.b<c.d", StateChoice::Last),
            Ok(Claim::Compare(key("a.b"), Cmp::Lt, key("c.d")))
        );
    }

    #[test]
    fn malformed_claims_say_what_is_wrong() {
        let err = |s: &str| parse_claim(s, StateChoice::Last).expect_err(s);
        assert!(err("").contains("empty claim"));
        assert!(err("a.b >").contains("ends where a number or a key"));
        assert!(err("a.b > c.d e.f").contains("after a complete claim"));
        assert!(err("2 * a.b").contains("is a number, not a claim"));
        assert!(err("ratio(a.b) > 1").contains("takes 2 argument(s), got 1"));
        assert!(err("mean(a.b, c.d) > 1").contains("unknown function `mean`"));
        assert!(err("a.b in [1, 2").contains("expected `]`"));
        assert!(err("a.b > c").contains("SECTION.NAME"));
        assert!(err("a.b & c.d").contains("unexpected `&`"));
        assert!(err("a.b@middle").contains("`first`, `last` or an index"));
        assert!(err("(a.b > c.d").contains("expected `)`"));
        assert!(err("1e999 > 1").contains("too large to be a number"));
    }

    #[test]
    fn deep_and_long_claims_are_errors_not_aborts() {
        let err = |s: &str| parse_claim(s, StateChoice::Last).expect_err("refused");
        // Nested 100,000 deep: refused by the token limit; 200 deep (within it): by the depth limit.
        for n in [100_000, 200] {
            let why = if n > MAX_TOKENS {
                "more than 1000 tokens"
            } else {
                "more than 64 deep"
            };
            for text in [
                format!("{}1{} == 1", "(".repeat(n), ")".repeat(n)),
                format!("{}a.b", "not ".repeat(n)),
                format!("{}1 > 0", "-".repeat(n)),
                format!("{}1{} > 0", "abs(".repeat(n), ")".repeat(n)),
            ] {
                assert!(err(&text).contains(why), "{n}: {}", err(&text));
            }
        }
        let long = format!("{}1 > 0", "1 + ".repeat(1_000_000 / 2));
        assert!(err(&long).contains("more than 1000 tokens"));
        // Within the limits, deep and long claims still parse.
        let ok = format!("{}a.b{} > 0", "(".repeat(MAX_DEPTH - 1), ")".repeat(MAX_DEPTH - 1));
        assert!(parse_claim(&ok, StateChoice::Last).is_ok(), "{ok}");
        let ok = format!("{}1 > 0", "1 + ".repeat(400));
        assert!(parse_claim(&ok, StateChoice::Last).is_ok());
    }

    proptest::proptest! {
        /// Any mix of the nesting forms, however deep, parses or is refused: never a stack overflow.
        #[test]
        fn any_nesting_is_refused_or_parsed(forms in proptest::collection::vec(0u8..5, 0..3000)) {
            let mut text = String::new();
            for f in &forms {
                text.push_str(["(", "not ", "-", "abs(", "1 + "][*f as usize]);
            }
            text.push_str("a.b");
            for f in forms.iter().rev() {
                if matches!(f, 0 | 3) {
                    text.push(')');
                }
            }
            text.push_str(" > 0");
            let _ = parse_claim(&text, StateChoice::Last);
        }
    }
}
