//! The commands as a person runs them: `lecture` (runs, `get`, `book`, concurrency, clumsy and hostile inputs), `bench`, and the GPU check's scripts rehearsed without a GPU.
//! One test binary for the topic (each links the whole library once); each module was a binary of
//! its own.

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod cli_bench_elementwise;
mod cli_book;
mod cli_book_guard;
mod cli_book_includes;
mod cli_check_first;
mod cli_concurrency;
mod cli_disturbed;
mod cli_hostile3;
mod cli_hostile4;
mod cli_inputs;
mod cli_what_if;
mod cli_what_if_books;
mod cli_what_if_hostile;
mod gpu_check_script;
mod gpu_summary;
