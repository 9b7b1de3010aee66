//! The flags a command would ignore, refused with a word instead (the Reference lists them).

use anyhow::{Result, bail};

use cs336::console::terminal_safe;

use super::{Cli, Command};

/// Refuses flags that the command would otherwise ignore without a word.
pub fn check(cli: &Cli) -> Result<()> {
    let command = match &cli.command {
        Some(Command::Book { .. }) => Some("book"),
        Some(Command::Givens) => Some("givens"),
        Some(Command::WhatIf { .. }) => Some("what-if"),
        Some(Command::Get { .. }) => Some("get"),
        Some(Command::TraceName) => Some("trace-name"),
        Some(Command::Compare { .. }) => Some("compare"),
        None => None,
    };
    if cli.list && (command.is_some() || !cli.sections.is_empty()) {
        bail!("`--list` lists the sections and does nothing else: drop it, or the rest");
    }
    if !cli.set.is_empty() && (command.is_some() || !cli.sections.is_empty() || cli.list) {
        bail!("`--set` runs the sections whose givens it changes: drop `--section`, `--list` or the command");
    }
    if cli.yes && cli.set.is_empty() {
        bail!("`--yes` lets a long what-if run: it needs `--set`");
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = cli.sections.iter().find(|id| !seen.insert(id.as_str())) {
        bail!(
            "`--section {}` is given twice: each section runs once per run",
            terminal_safe(twice)
        );
    }
    if cli.list {
        let ignored = ignored(&[
            ("--seed", cli.seed.is_some()),
            ("--no-book", cli.no_book),
            ("--device", cli.device.is_some()),
            ("--trace-dir", cli.trace_dir.is_some()),
        ]);
        if !ignored.is_empty() {
            bail!(
                "`--list` lists the sections and reads no trace and no device, so {} would do nothing: drop {}",
                ignored.join(" and "),
                them(&ignored)
            );
        }
    }
    if let Some(command) = command {
        // `book --what-if FILE` reads the traces beside that file, never `--trace-dir`.
        let what_if_book = matches!(&cli.command, Some(Command::Book { what_if: Some(_), .. }));
        let ignored = ignored(&[
            ("--seed", cli.seed.is_some()),
            ("--no-book", cli.no_book),
            (
                "--device",
                cli.device.is_some() && matches!(command, "book" | "compare" | "what-if"),
            ),
            (
                "--trace-dir",
                cli.trace_dir.is_some() && (matches!(command, "compare" | "givens" | "trace-name") || what_if_book),
            ),
        ]);
        if !ignored.is_empty() {
            bail!(
                "`{command}` runs no section, so {} would do nothing: drop {}{}",
                ignored.join(" and "),
                them(&ignored),
                match command {
                    "givens" | "trace-name" => " (it reads no trace either)",
                    "compare" => " (it reads the two files it is given)",
                    "book" if what_if_book => " (a what-if's book reads the traces beside the what-if's)",
                    "what-if" => " (it lists the what-ifs of every device)",
                    _ => "",
                }
            );
        }
    }
    Ok(())
}

/// The flags of `given` that were given.
fn ignored(given: &[(&'static str, bool)]) -> Vec<&'static str> {
    given.iter().filter(|(_, on)| *on).map(|(flag, _)| *flag).collect()
}

fn them(flags: &[&str]) -> &'static str {
    if flags.len() == 1 { "it" } else { "them" }
}
