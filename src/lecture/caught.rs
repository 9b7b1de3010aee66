//! Errors a section provokes on purpose, to record what they say.

use crate::error::{Error, Result};

/// The message of an error the section provokes on purpose; succeeding would be the bug.
pub(crate) fn expect_error<T>(result: Result<T>) -> Result<String> {
    match result {
        Ok(_) => Err(Error::invalid("section", "a call that must fail succeeded")),
        Err(e) => Ok(e.to_string()),
    }
}
