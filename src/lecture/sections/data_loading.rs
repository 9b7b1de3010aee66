//! Data loading: token ids in a memory-mapped file, batches cut from random positions, and pinned
//! memory on a GPU.

use crate::atomic_file;
use crate::data::npy::{self, Order};
use crate::data::{self, TokenFile};
use crate::error::{Error, Result};
use crate::lecture::trainer::{message_in, temp_dir};
use crate::lecture::{SectionCtx, record};

/// Token ids live in a file; a memory map reads only the pages a batch touches.
pub fn data_loading(cx: &mut SectionCtx) -> Result<()> {
    // LLaMA's training data, about 2.8 TB: far more than memory, so it is mapped, not read.
    record!(cx, given llama_data_bytes = 2.8e12, bytes)?;
    let dir = temp_dir()?;
    let path = dir.path().join("data.npy");
    let (first_token, last_token) = (1, 10);
    record!(cx, given first_token, none)?;
    record!(cx, given last_token, none)?;
    let orig_data: Vec<i32> = (first_token..=last_token).collect();
    data::write_tokens(&path, &orig_data)?;
    let data = TokenFile::open(&path)?;
    record!(cx, computed data = data.to_vec(), none)?;
    let equal_to_original = data.to_vec() == orig_data;
    record!(cx, computed equal_to_original)?;

    // A batch of B sequences of length L, starting at random positions.
    let (batch_size, sequence_length) = (2, 4);
    record!(cx, given batch_size)?;
    record!(cx, given sequence_length)?;
    let batch = data::get_batch(&data, batch_size, sequence_length, &mut cx.rng, &cx.device)?;
    record!(cx, computed x = &batch.inputs)?;
    record!(cx, computed starts = &batch.starts, none)?;
    let rows = batch.inputs.to_vec::<i64>()?;
    let rows_consecutive = rows
        .chunks(sequence_length)
        .all(|r| r.windows(2).all(|w| w[1] == w[0] + 1));
    record!(cx, computed rows_consecutive)?;
    if cx.device.is_cpu() {
        record!(cx, device pinned_memory = "not applicable: the batch already lives in host memory")?;
    }
    if let Some(gpu) = cx.device.cuda().cloned() {
        // get_batch staged the batch in pinned (page-locked) host memory and copied it
        // asynchronously. Why: the GPU reads pinned memory directly, while ordinary (pageable)
        // memory must first be copied by the driver into a pinned buffer of its own.
        record!(cx, device pinned_memory = "staged in pinned host memory, copied to the GPU asynchronously")?;
        // The host side of the CPU–GPU picture: the memory the batch is staged in.
        if let Some(host_memory_bytes) = crate::host::memory_bytes() {
            record!(cx, device host_memory_bytes, bytes)?;
        }
        let h2d_bytes = 256usize << 20;
        let pageable = crate::bench::cuda::bench_host_to_device(&gpu.0, h2d_bytes, false, 1, 5)?;
        let pinned = crate::bench::cuda::bench_host_to_device(&gpu.0, h2d_bytes, true, 1, 5)?;
        record!(cx, given h2d_bytes, bytes)?;
        record!(cx, clock h2d_pageable_bytes_per_sec = pageable.bytes_per_sec, bytes_per_sec)?;
        record!(cx, clock h2d_pinned_bytes_per_sec = pinned.bytes_per_sec, bytes_per_sec)?;
        let pinned_over_pageable = pinned.bytes_per_sec / pageable.bytes_per_sec;
        record!(cx, clock pinned_over_pageable, ratio)?;
    }

    // The same tokens as NumPy's `np.save` writes them: magic bytes, a header naming the dtype,
    // the memory order and the shape, then the elements. The loader tells the formats apart by
    // those first bytes, not by the file's name. int32 (`<i4`) is read in place through the map;
    // uint16 (`<u2`, enough for a GPT-2-sized vocabulary) is converted to int32: a copy in memory.
    record!(cx, computed raw_format = data.format().describe())?;
    let saved_i4 = dir.path().join("saved_i4.npy");
    npy::save(&saved_i4, &orig_data, &[orig_data.len()], Order::C)?;
    let bytes = std::fs::read(&saved_i4).map_err(|e| Error::io(&saved_i4, e))?;
    let magic = bytes.get(..npy::MAGIC.len()).unwrap_or_default();
    let npy_magic_bytes = magic.escape_ascii().to_string();
    record!(cx, computed npy_magic_bytes)?;
    let tokens_i4 = TokenFile::open(&saved_i4)?;
    record!(cx, computed npy_i4_format = tokens_i4.format().describe())?;
    record!(cx, computed npy_i4_copied_into_memory = tokens_i4.format().converted())?;
    let saved_u2 = dir.path().join("saved_u2.npy");
    let orig_u2: Vec<u16> = (1..=10).collect();
    npy::save(&saved_u2, &orig_u2, &[orig_u2.len()], Order::C)?;
    let tokens_u2 = TokenFile::open(&saved_u2)?;
    record!(cx, computed npy_u2_format = tokens_u2.format().describe())?;
    record!(cx, computed npy_u2_copied_into_memory = tokens_u2.format().converted())?;
    let npy_equal_to_original = tokens_i4.to_vec() == orig_data && tokens_u2.to_vec() == orig_data;
    record!(cx, computed npy_equal_to_original)?;

    // Bad input: 10 bytes is not a whole number of int32 tokens; a sequence longer than the data.
    let odd = dir.path().join("odd.npy");
    atomic_file::write(&odd, &[0u8; 10])?;
    let err = TokenFile::open(&odd).err().map(|e| message_in(dir.path(), &e));
    record!(cx, computed odd_length_error = err.unwrap_or_else(|| "no error".into()))?;
    let err = data::get_batch(&data, batch_size, 10, &mut cx.rng, &cx.device)
        .err()
        .map(|e| message_in(dir.path(), &e));
    record!(cx, computed too_short_error = err.unwrap_or_else(|| "no error".into()))?;
    // A `.npy` in Fortran (column-major) order, and one of floats, are refused.
    let fortran = dir.path().join("fortran.npy");
    npy::save(&fortran, &orig_data, &[2, 5], Order::Fortran)?;
    let err = TokenFile::open(&fortran).err().map(|e| message_in(dir.path(), &e));
    record!(cx, computed npy_fortran_error = err.unwrap_or_else(|| "no error".into()))?;
    let floats = dir.path().join("floats.npy");
    npy::save(&floats, &[1.0f32, 2.0, 3.0], &[3], Order::C)?;
    let err = TokenFile::open(&floats).err().map(|e| message_in(dir.path(), &e));
    record!(cx, computed npy_dtype_error = err.unwrap_or_else(|| "no error".into()))?;
    Ok(())
}
