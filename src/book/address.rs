//! What a directive points at: `SECTION.NAME[.PATH]`, and which state of the value (`state=`):
//! a value recorded as a history has earlier states besides its final one.

/// Which state of a value: `first`, `last` (the final state, the default) or an index counted
/// from 0 over the value's history followed by its final state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StateChoice {
    First,
    #[default]
    Last,
    Index(usize),
}

impl StateChoice {
    /// `first`, `last` or a number.
    pub fn parse(word: &str) -> Result<StateChoice, String> {
        match word {
            "first" => Ok(StateChoice::First),
            "last" => Ok(StateChoice::Last),
            _ => word
                .parse()
                .map(StateChoice::Index)
                .map_err(|_| format!("`state={word}`: a state is `first`, `last` or an index from 0")),
        }
    }

    /// The index among `count` states, if there is such a state.
    pub fn index(self, count: usize) -> Option<usize> {
        match self {
            StateChoice::First => (count > 0).then_some(0),
            StateChoice::Last => count.checked_sub(1),
            StateChoice::Index(k) => (k < count).then_some(k),
        }
    }
}

impl std::fmt::Display for StateChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateChoice::First => f.write_str("first"),
            StateChoice::Last => f.write_str("last"),
            StateChoice::Index(k) => write!(f, "{k}"),
        }
    }
}

/// `SECTION.NAME` with an optional path into the recorded JSON (`.max`, `.0`) and the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub section: String,
    pub name: String,
    pub path: Vec<String>,
    pub state: StateChoice,
}

impl Address {
    /// The final state of `section.name[.path]`.
    pub fn new(section: &str, name: &str, path: &[&str]) -> Address {
        Address {
            section: section.to_string(),
            name: name.to_string(),
            path: path.iter().map(|s| s.to_string()).collect(),
            state: StateChoice::Last,
        }
    }
}

/// `SECTION.NAME.PATH`, and ` state=K` unless it is the final state.
impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.section, self.name)?;
        for step in &self.path {
            write!(f, ".{step}")?;
        }
        if self.state != StateChoice::Last {
            write!(f, " state={}", self.state)?;
        }
        Ok(())
    }
}

/// Letters, digits and `_`.
pub fn identifier(word: &str, what: &str) -> Result<String, String> {
    let ok = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(word.to_string())
    } else {
        Err(format!("`{word}` is not a valid {what} (letters, digits and `_`)"))
    }
}

/// Parses `SECTION.NAME[.PATH]` (the final state; `state=` is a separate option).
pub fn address_of(word: &str) -> Result<Address, String> {
    let mut parts = word.split('.');
    let (Some(section), Some(name)) = (parts.next(), parts.next()) else {
        return Err(format!("`{word}` is not of the form SECTION.NAME[.PATH]"));
    };
    let section = identifier(section, "section id")?;
    let name = identifier(name, "value name")?;
    let path = parts.map(|p| identifier(p, "path step")).collect::<Result<_, _>>()?;
    Ok(Address {
        section,
        name,
        path,
        state: StateChoice::Last,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_first_last_or_an_index_within_the_count() {
        assert_eq!(StateChoice::parse("first"), Ok(StateChoice::First));
        assert_eq!(StateChoice::parse("last"), Ok(StateChoice::Last));
        assert_eq!(StateChoice::parse("3"), Ok(StateChoice::Index(3)));
        assert!(StateChoice::parse("-1").unwrap_err().contains("first"));
        assert!(StateChoice::parse("middle").is_err());
        assert_eq!(StateChoice::First.index(2), Some(0));
        assert_eq!(StateChoice::Last.index(2), Some(1));
        assert_eq!(StateChoice::Index(1).index(2), Some(1));
        assert_eq!(StateChoice::Index(2).index(2), None);
        assert_eq!(StateChoice::Last.index(1), Some(0));
        let mut a = Address::new("optimizer", "state", &["layers", "0"]);
        assert_eq!(a.to_string(), "optimizer.state.layers.0");
        a.state = StateChoice::First;
        assert_eq!(a.to_string(), "optimizer.state.layers.0 state=first");
    }

    #[test]
    fn directives_that_quote_a_value_take_a_state() {
        use crate::directive::{Claim, Directive, parse};
        use crate::format::Format;
        let mut first = Address::new("optimizer", "state", &["layers", "0"]);
        first.state = StateChoice::First;
        assert_eq!(
            parse("value optimizer.state.layers.0 state=first format=plain"),
            Ok(Directive::Value {
                address: first,
                format: Format::Plain,
                unit: None,
                trace: None
            })
        );
        let mut third = Address::new("a", "b", &[]);
        third.state = StateChoice::Index(2);
        assert_eq!(
            parse("if has a.b state=2"),
            Ok(Directive::If {
                claim: Claim::Has(third.clone()),
                trace: None
            })
        );
        assert_eq!(
            parse("compare a.b state=2"),
            Ok(Directive::Compare {
                address: third,
                format: Format::Auto,
                unit: None
            })
        );
        let err = |s: &str| parse(s).expect_err(s);
        assert!(err("code a state=1").contains("takes no state"));
        assert!(err("value a.b state=middle").contains("`first`, `last` or an index"));
        assert!(err("value a.b state=1 state=2").contains("twice"));
    }
}
