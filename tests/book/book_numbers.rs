//! No number is typed into a chapter's prose: a number the book states comes from the trace,
//! through a directive. This test reads every chapter's prose (outside code, HTML comments and
//! directives) and fails on a standalone numeric token (`64`, `1e26`, `2,415`), or on a spelled-out
//! count that the trace holds (`eight H100s`, `sixteen bytes`). Digits inside names (`float32`,
//! `H100`, `GPT-3`, `w1`) and ordered-list markers are not numbers. True constants, which no run
//! could measure differently, are on [`ALLOWED`] with the reason.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::Path;

use cs336::book::directive::find;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde_json::Value;

/// (chapter, exact phrase, why its number is not a measurement). A phrase is removed from the
/// prose before the check; a phrase that no longer occurs fails the test, so the list stays true.
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "arithmetic_intensity.md",
        "depends on two rates",
        "FLOP/s and bytes/s, listed right after it: the lesson's structure",
    ),
    (
        "arithmetic_intensity.md",
        "reads two and writes one (6n² bytes) for 2n³ FLOPs: an\n  intensity of n/3,",
        "the matrix product's formula in n, which the run checks against its tensors and its FLOP counter",
    ),
    (
        "arithmetic_intensity.md",
        "comes within a factor of ten",
        "the bound of the claim that decides the sentence, written in its `0.1 *`",
    ),
    (
        "arithmetic_intensity.md",
        "$\\min\\left(1, \\frac{\\text{intensity}}{\\text{peak} / \\text{bandwidth}}\\right)$",
        "the roofline's formula, which the run computes for each operation",
    ),
    (
        "checkpoint_schedule.md",
        "$L(L-1)/2$",
        "the layers keeping none computes again, 0 + 1 + … + (L − 1): a formula in L, which the tests hold the run's counts to",
    ),
    (
        "checkpoint_schedule.md",
        "is two float32 B × D tensors and two single floats",
        "what the claim just before checks, that the working set is 2·B·D·4 + 8 bytes: the sentence is only shown when it holds",
    ),
    (
        "deep_network.md",
        "num_layers · (2 · B · D · D + B · D)",
        "the forward pass's FLOPs as a formula in the givens, which the run checks against its FLOP counter",
    ),
    (
        "deep_network.md",
        "(2 · num_layers − 1) · 2 · B · D · D",
        "backward's matmul FLOPs as a formula in the givens, which the run checks against its FLOP counter",
    ),
    (
        "deep_network.md",
        "num_layers + (num_layers − 1) + 1",
        "the tensors the graph keeps, as a formula in the givens, which the run checks against the saved tensors",
    ),
    ("intro.md", "# CS336 Lecture 2, executed", "the lecture's name"),
    (
        "gradients.md",
        "\\operatorname{mean}(h_2^2)",
        "the network's loss: the mean of the squared output, a definition",
    ),
    (
        "optimizer.md",
        "$$g_2 \\leftarrow g_2 + g^2,",
        "AdaGrad's update rule: the running sum of squared gradients, a definition",
    ),
    (
        "optimizer.md",
        "$\\mathrm{lr} \\cdot |g| / \\sqrt{g^2 + \\epsilon}$",
        "the update rule on its first step (g2 = g²), derived from the rule above",
    ),
    ("tensors_memory.md", "Nemotron 3 Super", "a model's name"),
    (
        "intro.md",
        "it asks two questions",
        "the lecture's two questions, memory and compute: its structure, not a measurement",
    ),
    (
        "intro.md",
        "## The two resources",
        "memory and compute: the book's structure",
    ),
    (
        "intro.md",
        "keeping the two apart",
        "FLOP and FLOP/s: the two units named just before",
    ),
    (
        "intro.md",
        "two questions answered on the back",
        "the first chapter's two questions",
    ),
    (
        "how_this_book_is_made.md",
        "compares two measured quantities",
        "a comparison is between two values by definition",
    ),
    (
        "tensors_on_gpus.md",
        "for each of the two tensors",
        "the copy and the new tensor named just before: the experiment's design (the assert below holds the sum to it)",
    ),
    (
        "mixed_precision_training.md",
        "trained three times",
        "the three runs listed right after it (float32, bfloat16, mixed)",
    ),
    (
        "mixed_precision_training.md",
        "within a factor of two of",
        "the bound of the claim that decides the sentence, written in its `ratio(…) in [0.5, 2]`",
    ),
    (
        "note_about_randomness.md",
        "Two draws from generators",
        "the section draws twice to compare: the experiment's design",
    ),
    (
        "note_about_randomness.md",
        "seed 0 was",
        "the seed the code passes (its value names `x_seed_0`)",
    ),
    (
        "note_about_randomness.md",
        "with seed 1",
        "the seed the code passes (its value names `x_seed_1`)",
    ),
    (
        "motivating_questions.md",
        "opens with two questions",
        "the lecture's two questions, the chapter's two headings",
    ),
    (
        "motivating_questions.md",
        "AdamW's two running averages",
        "AdamW keeps a first and a second moment by definition",
    ),
    (
        "data_loading.md",
        "the two were about as fast",
        "pinned and pageable: the two copies the sentence compares",
    ),
    (
        "custom_model.md",
        "one D × 1 column",
        "the head's single output: the Cruncher's definition, not a setting",
    ),
    (
        "train_loop.md",
        "w* = (0, 1, …, D − 1)",
        "the true weights are 0 to D − 1 by construction (`arange(D)`); D itself is quoted",
    ),
    (
        "train_loop.md",
        "D × 1 layer",
        "the head's single output: the Cruncher's definition, not a setting",
    ),
    (
        "train_loop.md",
        "## Two learning rates",
        "the two runs the section's code makes, whose rates the next sentence quotes",
    ),
    (
        "train_loop.md",
        "at two learning rates",
        "the two AdaGrad runs whose rates the table quotes",
    ),
    (
        "train_loop.md",
        "Two things shape these curves",
        "the paragraph's two points, not a measurement",
    ),
    (
        "tensors_memory.md",
        "in two variants",
        "fp8's two formats, E4M3 and E5M2, named right after",
    ),
    (
        "tensors_memory.md",
        "the step from 1 to the next representable number",
        "eps is defined at the number one",
    ),
    (
        "tensors_memory.md",
        "the gap between 1 and the next number up",
        "eps is defined at the number one",
    ),
    (
        "tensor_operations_flops.md",
        "strict about two words",
        "FLOP and FLOP/s, the two words listed right after",
    ),
    (
        "tensor_operations_flops.md",
        "the 2023 US executive order",
        "the order's year: part of its name",
    ),
    (
        "tensor_operations_flops.md",
        "two zeros in every four values",
        "the definition of the H100's 2:4 structured sparsity, a fixed pattern",
    ),
    (
        "tensor_operations_flops.md",
        "product of its three dimensions",
        "B, D and K: a matrix product has three dimensions by definition",
    ),
    (
        "cpu_peak.md",
        "a 16×32 by a 32×16 tile of bfloat16 numbers into 16×16 float32 sums,\n16,384 FLOPs",
        "the tdpbf16ps instruction's tile shapes, fixed by Intel's instruction set, the same on every AMX machine",
    ),
    (
        "tensor_operations_flops.md",
        "Two effects shape such curves",
        "the paragraph's two points, not a measurement",
    ),
    (
        "tensor_operations_flops.md",
        "Which of the two this device",
        "the two effects just described",
    ),
    (
        "gradients.md",
        "Two matrix multiplications",
        "the network's two layers, w1 and w2: its definition",
    ),
    (
        "gradients.md",
        "two more of the same size",
        "the weight's and the input's gradient, named right after: the chain rule's structure",
    ),
    (
        "einops.md",
        "the two FLOPs per multiply-add",
        "a multiply-add is two floating-point operations by definition",
    ),
    (
        "checkpointing.md",
        "on day three",
        "an example of when a crash may come, not a measurement",
    ),
];

/// Spelled-out numbers and their values.
const SPELLED: &[(&str, i64)] = &[
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("sixteen", 16),
    ("twenty", 20),
    ("thirty", 30),
    ("hundred", 100),
    ("thousand", 1000),
];

/// A number found in prose: its line and the token.
#[derive(Debug, PartialEq)]
struct Typed {
    line: usize,
    token: String,
}

/// Whether `token` is a number: digits with optional grouping commas, decimals, exponent, sign,
/// percent sign (`64`, `2,415`, `0.5`, `1e26`, `-3`, `50%`).
fn is_number(token: &str) -> bool {
    let t = token.trim_start_matches(['-', '+', '−']).trim_end_matches('%');
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(t[i + 1..].trim_start_matches(['-', '+']))),
        None => (t, None),
    };
    let digits_ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    let mut parts = mantissa.splitn(2, '.');
    let whole = parts.next().unwrap_or("");
    let whole_ok = whole.split(',').all(digits_ok);
    let frac_ok = parts.next().is_none_or(digits_ok);
    whole_ok && frac_ok && exponent.is_none_or(digits_ok)
}

/// Tokens of a text: runs of letters, digits and the characters that join a name or a number
/// (`-`, `.`, `,`, `_`, `%`), trimmed of trailing punctuation.
fn tokens(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '.' | ',' | '_' | '%' | '−')))
        .map(|t| t.trim_matches(|c: char| matches!(c, '.' | ',' | '-')))
        .filter(|t| !t.is_empty())
        .collect()
}

/// Every integer the trace records (counts, sizes), for the spelled-out check.
fn integers(value: &Value, out: &mut BTreeSet<i64>) {
    match value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.insert(i);
            } else if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 1e6
            {
                out.insert(f as i64);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| integers(v, out)),
        Value::Object(fields) => fields.values().for_each(|v| integers(v, out)),
        _ => {}
    }
}

/// The numbers typed into `markdown`'s prose, after removing `allowed` phrases.
fn typed_numbers(markdown: &str, recorded: &BTreeSet<i64>, allowed: &[&str]) -> Vec<Typed> {
    // Directives become a word of the same length (so offsets and lines stay; spaces would make a
    // directive that opens a paragraph an indented code block, hiding the paragraph), then
    // allowed phrases.
    let mut prose = markdown.to_string();
    let blank = |range: Range<usize>, prose: &mut String| {
        let len = prose[range.clone()].len();
        let word: String = (0..len)
            .map(|i| if i == 0 || i + 1 == len { ' ' } else { 'X' })
            .collect();
        prose.replace_range(range, &word);
    };
    for found in find(markdown) {
        blank(found.span, &mut prose);
    }
    for phrase in allowed {
        while let Some(at) = prose.find(phrase) {
            blank(at..at + phrase.len(), &mut prose);
        }
    }
    let mut typed = Vec::new();
    let mut in_code = 0usize;
    let options = Options::ENABLE_TABLES | Options::ENABLE_FOOTNOTES | Options::ENABLE_STRIKETHROUGH;
    for (event, range) in Parser::new_ext(&prose, options).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => in_code += 1,
            Event::End(TagEnd::CodeBlock) => in_code = in_code.saturating_sub(1),
            Event::Text(text) if in_code == 0 => {
                let line = prose[..range.start].matches('\n').count() + 1;
                for token in tokens(&text) {
                    let spelled = SPELLED
                        .iter()
                        .find(|(word, _)| token.eq_ignore_ascii_case(word))
                        .is_some_and(|(_, n)| recorded.contains(n));
                    if is_number(token) || spelled {
                        typed.push(Typed {
                            line,
                            token: token.to_string(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    typed
}

fn recorded_integers() -> BTreeSet<i64> {
    let path = Path::new("trace/lecture_02/cpu-intel-r-xeon-r-processor-amx.json");
    let text = std::fs::read_to_string(path).expect("the committed CPU trace");
    let trace: Value = serde_json::from_str(&text).expect("trace JSON");
    let mut out = BTreeSet::new();
    for section in trace["sections"].as_array().expect("sections") {
        for record in section["values"].as_object().expect("values").values() {
            integers(&record["value"], &mut out);
        }
    }
    out
}

#[test]
fn no_chapter_types_a_number() {
    let recorded = recorded_integers();
    let mut found = Vec::new();
    let mut unused: Vec<&(&str, &str, &str)> = ALLOWED.iter().collect();
    let mut chapters: Vec<_> = std::fs::read_dir("book/src")
        .expect("book/src")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    chapters.sort();
    for path in chapters {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if name == "SUMMARY.md" {
            continue;
        }
        let markdown = std::fs::read_to_string(&path).expect("chapter");
        let allowed: Vec<&str> = ALLOWED
            .iter()
            .filter(|(chapter, _, _)| *chapter == name)
            .map(|(_, phrase, _)| *phrase)
            .collect();
        unused.retain(|(chapter, phrase, _)| !(*chapter == name && markdown.contains(phrase)));
        let typed = typed_numbers(&markdown, &recorded, &allowed);
        for t in typed {
            found.push(format!("book/src/{name}:{}: `{}`", t.line, t.token));
        }
    }
    assert!(
        found.is_empty(),
        "numbers typed into the book's prose (quote the trace with a directive, or put a true constant on ALLOWED \
         with its reason):\n{}",
        found.join("\n")
    );
    assert!(
        unused.is_empty(),
        "ALLOWED phrases that no chapter holds any more: {unused:?}"
    );
}

#[test]
fn a_typed_number_is_found_and_names_are_not() {
    let recorded: BTreeSet<i64> = [8, 16].into_iter().collect();
    let md = "# Title\n\n1. First step\n2. Second\n\nWith D = 64 and float32, H100, GPT-3, w1 and sm_90.\n\
              Eight H100s and sixteen bytes, but seven days.\nA 1e26 threshold, 2,415 and 50% and 0.5.\n\
              `64` in code and {{value a.b}} stay.\n\n```text\n12288\n```\n";
    let found: Vec<(usize, String)> = typed_numbers(md, &recorded, &[])
        .into_iter()
        .map(|t| (t.line, t.token))
        .collect();
    let expect = |pairs: &[(usize, &str)]| pairs.iter().map(|(l, t)| (*l, t.to_string())).collect::<Vec<_>>();
    assert_eq!(
        found,
        expect(&[
            (6, "64"),
            (7, "Eight"),
            (7, "sixteen"),
            (8, "1e26"),
            (8, "2,415"),
            (8, "50%"),
            (8, "0.5")
        ])
    );
    // An allowed phrase is not a typed number.
    assert_eq!(
        typed_numbers(
            "two FLOPs per multiply-add",
            &[2].into(),
            &["two FLOPs per multiply-add"]
        ),
        []
    );
    assert_eq!(typed_numbers("two FLOPs per multiply-add", &[2].into(), &[]).len(), 1);
}
