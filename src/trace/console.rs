//! The terminal is an output like any other: a closed pipe (`lecture --list | head -1`), a full
//! device (`> /dev/full`) or a stderr that fails must not panic the process, and above all must
//! not lose a run's work. [`Console`] writes lines to stdout and remembers the first failure
//! instead of panicking, so a run goes on, writes its trace, and reports the failure (or, for a
//! reader that simply stopped reading, nothing) at the end. Text from traces and from the command
//! line reaches the terminal through [`terminal_safe`], so an id holding an escape sequence cannot
//! clear the screen or retitle the window.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};

/// Lines to stdout, and what went wrong writing them.
#[derive(Debug, Default)]
pub struct Console {
    failed: Option<io::Error>,
}

impl Console {
    pub fn new() -> Console {
        Console::default()
    }

    /// Writes one line. After a failure nothing more is written: the reader is gone or the device
    /// is full, and what the process still has to do (write its trace) comes first.
    pub fn line(&mut self, args: fmt::Arguments) {
        if self.failed.is_some() {
            return;
        }
        if let Err(StdoutError(e)) = write_line(args) {
            self.failed = Some(e);
        }
    }

    /// The failure to report once the work is done: `None` when every line was written, or when
    /// the only trouble was a reader that closed the pipe (a quiet end, as `head` expects).
    pub fn finish(self) -> Option<io::Error> {
        self.failed.filter(|e| e.kind() != io::ErrorKind::BrokenPipe)
    }
}

/// Standard output could not be written. Commands that print as they go (the benchmarks) return
/// it through `?` from [`outln!`](crate::outln), and end with [`exit`]: quietly when the reader
/// closed the pipe, with this message otherwise.
#[derive(Debug, thiserror::Error)]
#[error("could not write to standard output: {0}")]
pub struct StdoutError(pub io::Error);

/// Writes one line to stdout, returning the failure instead of panicking as `println!` does.
pub fn write_line(args: fmt::Arguments) -> Result<(), StdoutError> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(StdoutError)
}

/// `println!` that returns a [`StdoutError`] instead of panicking on a closed pipe or a full disk.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::console::write_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::console::write_line(format_args!($($arg)*))
    };
}

/// How a command that printed through [`outln!`](crate::outln) ends: success; a quiet success when
/// its reader closed the pipe (as `bench … | head` expects); else the error on stderr and failure.
pub fn exit(result: anyhow::Result<()>) -> std::process::ExitCode {
    let Err(e) = result else {
        return std::process::ExitCode::SUCCESS;
    };
    let closed_pipe = e.chain().any(|c| {
        c.downcast_ref::<StdoutError>()
            .is_some_and(|s| s.0.kind() == io::ErrorKind::BrokenPipe)
    });
    if closed_pipe {
        return std::process::ExitCode::SUCCESS;
    }
    warn(format_args!("error: {}", terminal_safe(&format!("{e:#}"))));
    std::process::ExitCode::FAILURE
}

/// Writes a line to stderr, ignoring a failure: there is nowhere left to report it.
pub fn warn(args: fmt::Arguments) {
    let _ = io::stderr().lock().write_fmt(format_args!("{args}\n"));
}

/// At most `max` characters of `text`, for a message: a value, a directive, a command line can be
/// a megabyte long, and a message that repeats it whole buries what it says.
pub fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}… ({} characters in all)", &text[..cut], text.chars().count()),
        None => text.to_string(),
    }
}

/// A path for a message: whole up to 200 characters, else its start and its end (which names the
/// file) around an ellipsis, with its length; a path can be tens of kilobytes long.
pub fn shorten_path(path: &std::path::Path) -> String {
    const HEAD: usize = 80;
    const TAIL: usize = 120;
    let text = path.display().to_string();
    let n = text.chars().count();
    if n <= HEAD + TAIL {
        return text;
    }
    let head: String = text.chars().take(HEAD).collect();
    let tail: String = text.chars().skip(n - TAIL).collect();
    format!("{head}…{tail} (a path of {n} characters)")
}

/// `text` with every control character but newline and tab, and every bidirectional override,
/// written as `\u{…}`: what a terminal would act on instead of show.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    let acts = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if acts(c) {
                    format!("\\u{{{:x}}}", c as u32)
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// [`terminal_safe`] for text that must stay on its line (a file name, a key): newlines and tabs
/// are written as `\u{…}` too, so a name cannot start a line that looks like another message.
pub fn line_safe(text: &str) -> Cow<'_, str> {
    if !text.contains(['\n', '\t']) {
        return terminal_safe(text);
    }
    let safe = terminal_safe(text);
    Cow::Owned(safe.replace('\n', "\\u{a}").replace('\t', "\\u{9}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_overrides_are_shown_not_obeyed() {
        assert_eq!(terminal_safe("plain text\n\tindented"), "plain text\n\tindented");
        assert_eq!(terminal_safe("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(terminal_safe("\u{1b}]0;title\u{7}"), "\\u{1b}]0;title\\u{7}");
        assert_eq!(terminal_safe("x\u{202e}gnp.exe"), "x\\u{202e}gnp.exe");
        assert_eq!(terminal_safe("\r\u{9b}\u{7f}"), "\\u{d}\\u{9b}\\u{7f}");
        assert_eq!(terminal_safe("ünïcode ×"), "ünïcode ×");
    }

    #[test]
    fn a_name_stays_on_its_line() {
        assert_eq!(line_safe("what-if/cpu-x"), "what-if/cpu-x");
        assert_eq!(line_safe("a\nfake line\tb"), "a\\u{a}fake line\\u{9}b");
        assert_eq!(line_safe("a\u{1b}[2J\n"), "a\\u{1b}[2J\\u{a}");
    }
}
