//! The book: its build, claims, histories, markup, numbers, provenance, references, sources, stepping, strictness, charts and number formats, and a browser stepping through it.
//! One test binary for the topic (each links the whole library once); each module was a binary of
//! its own.

#[path = "../common/mod.rs"]
mod common;

mod book_browser;
mod book_build;
mod book_checks;
mod book_claims;
mod book_history;
mod book_hostile;
mod book_kinds;
mod book_markup;
mod book_numbers;
mod book_provenance;
mod book_references;
mod book_sources;
mod book_steps;
mod book_strict;
mod book_what_if;
mod chapter_titles;
mod chart_bounds;
mod chart_graphs;
mod chart_layouts;
mod number_formats;
mod prose_names;
mod pytorch_panels;
mod registry;
