//! The lecture's sections, in lecture order. Each is one function that runs the step it teaches
//! and records what it observed through its `SectionCtx` (the recorder); `SECTIONS` lists them
//! with their titles and source files, and `run` turns a run into a trace.

mod checkpointing;
mod compute;
mod data_loading;
mod einops;
mod gradients;
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

pub(crate) use recorder::record;
pub use recorder::{Recordable, SectionCtx};

use crate::error::Result;

pub const LECTURE: &str = "lecture_02";

pub struct SectionDef {
    pub id: &'static str,
    pub title: &'static str,
    /// Path of the file holding the function, relative to the crate root.
    pub file: &'static str,
    /// That file's text as compiled into this binary (for the staleness hash and the book).
    pub source: &'static str,
    pub run: fn(&mut SectionCtx) -> Result<()>,
}

macro_rules! sections {
    ($($module:ident :: $id:ident => $title:expr),* $(,)?) => {
        /// Every section, in the order the lecture presents them.
        pub const SECTIONS: &[SectionDef] = &[$(
            SectionDef {
                id: stringify!($id),
                title: $title,
                file: concat!("src/lecture/", stringify!($module), ".rs"),
                source: include_str!(concat!(stringify!($module), ".rs")),
                run: $module::$id,
            },
        )*];
    };
}

sections! {
    napkin::motivating_questions => "Motivating questions",
    memory::tensors_basics => "Tensors: the basics",
    memory::tensors_memory => "Tensors: memory",
    memory::tensors_on_gpus => "Tensors on GPUs",
    operations::tensor_storage => "Tensor storage",
    operations::tensor_slicing => "Slicing and views",
    operations::tensor_elementwise => "Elementwise operations",
    operations::tensor_matmul => "Matrix multiplication",
    einops::einops_motivation => "einops: why name dimensions",
    einops::jaxtyping_basics => "Named dimensions, checked",
    einops::einops_einsum => "einops: einsum",
    einops::einops_reduce => "einops: reduce",
    einops::einops_rearrange => "einops: rearrange",
    compute::tensor_operations_flops => "Counting FLOPs",
    gradients::gradients_basics => "Gradients: the basics",
    gradients::gradients_flops => "Gradients: FLOPs",
    models::module_parameters => "Parameters and initialisation",
    models::custom_model => "A custom model",
    randomness::note_about_randomness => "Randomness",
    data_loading::data_loading => "Data loading",
    optimizer::optimizer => "Optimizer",
    train_loop::train_loop => "Training loop",
    checkpointing::checkpointing => "Checkpointing",
    mixed_precision::mixed_precision_training => "Mixed precision training",
}

pub fn find(id: &str) -> Option<&'static SectionDef> {
    SECTIONS.iter().find(|s| s.id == id)
}
