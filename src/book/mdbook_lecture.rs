//! `mdbook-lecture`: the lecture's mdbook preprocessor as a command, for `mdbook build` and
//! `mdbook serve`. `book/book.toml` runs it through cargo, so it needs no install of its own.
//! mdbook first asks `mdbook-lecture supports RENDERER`, then pipes `[context, book]` JSON in and
//! reads the rendered book JSON back.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use cs336_book::LecturePreprocessor;
use cs336_trace::console::{terminal_safe, warn};
use mdbook_preprocessor::Preprocessor;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let result = match args.as_slice() {
        // Everything we emit is markdown with inline HTML, which every renderer passes through.
        [supports, _renderer] if supports == "supports" => Ok(()),
        [] => run(),
        _ => {
            warn(format_args!(
                "usage: mdbook-lecture [supports RENDERER]  (mdbook runs this; see book/book.toml)"
            ));
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            warn(format_args!("error: {}", terminal_safe(&format!("{e:#}"))));
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let (ctx, book) = mdbook_preprocessor::parse_input(std::io::stdin()).context("reading the book from mdbook")?;
    if ctx.mdbook_version != mdbook_preprocessor::MDBOOK_VERSION {
        warn(format_args!(
            "warning: mdbook-lecture was built against mdbook {}, but is being called from mdbook {}",
            mdbook_preprocessor::MDBOOK_VERSION,
            terminal_safe(&ctx.mdbook_version)
        ));
    }
    let book = LecturePreprocessor::default().run(&ctx, book)?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &book).context("writing the book back to mdbook")?;
    out.flush()?;
    Ok(())
}
