//! The lecture's sections, in lecture order. Each is one function that runs the step it teaches
//! and records what it observed through its `SectionCtx` (the recorder); each file ends with the
//! table of its sections and their titles, `SECTIONS` lists them all in lecture order, and `run`
//! turns a run into a trace.

mod accumulation;
mod activations;
mod arithmetic_intensity;
mod checkpoint_schedule;
mod checkpointing;
mod compute;
mod data_loading;
mod deep_network;
mod einops;
pub mod givens;
mod gradients;
mod graph;
mod memory;
mod mixed_precision;
mod models;
mod napkin;
mod operations;
mod optimizer;
pub mod provenance;
mod randomness;
pub mod recorder;
pub mod run;
mod train_loop;
mod trainer;
pub mod watch;
pub mod what_if;
mod what_if_files;
mod what_if_overhead;

pub(crate) use recorder::record;
pub use recorder::{Recordable, SectionCtx};

use crate::error::Result;

pub const LECTURE: &str = "lecture_02";

#[derive(Clone, Copy)]
pub struct SectionDef {
    pub id: &'static str,
    pub title: &'static str,
    /// Path of the file holding the function, relative to the crate root.
    pub file: &'static str,
    /// That file's text as compiled into this binary (for the staleness hash and the book).
    pub source: &'static str,
    pub run: fn(&mut SectionCtx) -> Result<()>,
    /// The PyTorch that does the same steps (`src/lecture/pytorch/<id>.py`), shown beside the
    /// code in the book. Included at compile time, so a section without one does not build.
    pub pytorch: &'static str,
}

/// A file's sections, in lecture order, with their titles: `SECTIONS` of that file. Written at the
/// end of the file that holds them, so that adding a section to a file is a change to that file.
macro_rules! sections {
    ($($id:ident => $title:expr),* $(,)?) => {
        pub(super) const SECTIONS: &[super::SectionDef] = &[$(
            super::SectionDef {
                id: stringify!($id),
                title: $title,
                file: file!(),
                source: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/", file!())),
                run: $id,
                pytorch: include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/src/lecture/pytorch/",
                    stringify!($id),
                    ".py"
                )),
            },
        )*];
    };
}
pub(crate) use sections;

/// Every section, in the order the lecture presents them: each file's `SECTIONS`, file by file in
/// the order listed here.
macro_rules! lecture_files {
    ($($module:ident),* $(,)?) => {
        const NUM_SECTIONS: usize = 0 $(+ $module::SECTIONS.len())*;
        /// Every section, in the order the lecture presents them.
        pub const SECTIONS: &[SectionDef] = &concat::<NUM_SECTIONS>(&[$($module::SECTIONS),*]);
    };
}

lecture_files!(
    napkin,
    memory,
    operations,
    einops,
    compute,
    arithmetic_intensity,
    deep_network,
    gradients,
    models,
    randomness,
    data_loading,
    optimizer,
    accumulation,
    activations,
    checkpoint_schedule,
    train_loop,
    checkpointing,
    mixed_precision,
);

/// The sections of `files`, one after another (a const fn: `SECTIONS` is built when compiling).
const fn concat<const N: usize>(files: &[&[SectionDef]]) -> [SectionDef; N] {
    const fn none(_: &mut SectionCtx) -> Result<()> {
        Ok(())
    }
    let empty = SectionDef {
        id: "",
        title: "",
        file: "",
        source: "",
        run: none,
        pytorch: "",
    };
    let mut out = [empty; N];
    let (mut k, mut f) = (0, 0);
    while f < files.len() {
        let mut i = 0;
        while i < files[f].len() {
            out[k] = files[f][i];
            k += 1;
            i += 1;
        }
        f += 1;
    }
    assert!(k == N, "every section has its place");
    out
}

pub fn find(id: &str) -> Option<&'static SectionDef> {
    SECTIONS.iter().find(|s| s.id == id)
}
