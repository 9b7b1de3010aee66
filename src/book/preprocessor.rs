//! The mdbook preprocessor: reads `[preprocessor.lecture]` from `book.toml`, renders every
//! chapter, and fails with every problem in the book at once.

use std::path::{Path, PathBuf};

use anyhow::Context;
use mdbook_preprocessor::book::{Book, BookItem};
use mdbook_preprocessor::{Preprocessor, PreprocessorContext};

use super::bibliography::{self, Bibliography};
use super::citations;
use super::problem::{BookError, Cause, Problem};
use super::render::render_chapter;
use super::titles;
use super::traces::{TraceChoice, Traces, clean};
use super::what_if;

/// The name in `[preprocessor.lecture]`.
pub const NAME: &str = "lecture";

/// Where traces are, relative to the book's root, unless `trace-dir` says otherwise.
pub const DEFAULT_TRACE_DIR: &str = "../trace/lecture_02";

/// The crate root (the folder a trace's `source_file` is relative to), relative to the book's
/// root, unless `source-root` says otherwise.
pub const DEFAULT_SOURCE_ROOT: &str = "..";

/// Renders the lecture's directives. The fields override the book's settings (the `lecture`
/// binary passes the trace it has just written and the folder it wrote it to).
#[derive(Debug, Clone, Default)]
pub struct LecturePreprocessor {
    pub trace: Option<PathBuf>,
    /// The trace held to the code (`BuildOptions::strict`).
    pub strict: Option<PathBuf>,
    pub trace_dir: Option<PathBuf>,
    pub source_root: Option<PathBuf>,
    /// The device's own trace, when the book is a what-if's (`BuildOptions::baseline`).
    pub baseline: Option<PathBuf>,
}

/// The settings under `[preprocessor.lecture]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub trace_dir: PathBuf,
    pub default: TraceChoice,
    pub source_root: PathBuf,
    /// The bibliography `{{cite}}` and `{{references}}` read (`bibliography`, default
    /// `references.toml` beside `book.toml`).
    pub bibliography: PathBuf,
}

impl Settings {
    pub fn read(ctx: &PreprocessorContext) -> anyhow::Result<Settings> {
        let key = |k: &str| format!("preprocessor.{NAME}.{k}");
        let dir: Option<String> = ctx
            .config
            .get(&key("trace-dir"))
            .with_context(|| format!("reading `{}` in book.toml", key("trace-dir")))?;
        let choice: Option<String> = ctx
            .config
            .get(&key("trace"))
            .with_context(|| format!("reading `{}` in book.toml", key("trace")))?;
        let source_root: Option<String> = ctx
            .config
            .get(&key("source-root"))
            .with_context(|| format!("reading `{}` in book.toml", key("source-root")))?;
        let bibliography: Option<String> = ctx
            .config
            .get(&key("bibliography"))
            .with_context(|| format!("reading `{}` in book.toml", key("bibliography")))?;
        let resolve = |p: &Path| {
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                clean(&ctx.root.join(p))
            }
        };
        let default = match choice.as_deref().map(TraceChoice::parse) {
            Some(TraceChoice::File(p)) => TraceChoice::File(resolve(&p)),
            Some(other) => other,
            None => TraceChoice::Newest,
        };
        Ok(Settings {
            trace_dir: resolve(Path::new(dir.as_deref().unwrap_or(DEFAULT_TRACE_DIR))),
            default,
            source_root: resolve(Path::new(source_root.as_deref().unwrap_or(DEFAULT_SOURCE_ROOT))),
            bibliography: resolve(Path::new(bibliography.as_deref().unwrap_or(bibliography::DEFAULT_FILE))),
        })
    }
}

impl Preprocessor for LecturePreprocessor {
    fn name(&self) -> &str {
        NAME
    }

    fn run(&self, ctx: &PreprocessorContext, mut book: Book) -> anyhow::Result<Book> {
        // `mdbook serve` reads the chapters itself: a chapter that leads outside the book fails
        // the build here, as `lecture book` refuses it before mdbook reads anything.
        let root = ctx.root.display();
        super::inputs::check(&ctx.root)
            .with_context(|| format!("checking the book at `{root}`, the root mdbook gave the preprocessor"))?;
        let settings = Settings::read(ctx)?;
        let default = match &self.trace {
            Some(path) => TraceChoice::File(path.clone()),
            None => settings.default,
        };
        let dir = self.trace_dir.as_ref().unwrap_or(&settings.trace_dir);
        let source_root = self.source_root.as_ref().unwrap_or(&settings.source_root);
        let mut traces = Traces::new(dir, default, source_root)
            .with_strict(self.strict.clone())
            .with_baseline(self.baseline.clone());
        let banner = what_if::banner(&mut traces)?;
        let mut problems = Vec::new();
        // A bibliography that is there must be valid; one that is not fails only the citations.
        let bib = match settings.bibliography.exists() {
            true => Some(Bibliography::load(&settings.bibliography)?),
            false => None,
        };
        citations::render_book(
            &mut book,
            bib.as_ref(),
            &settings.bibliography,
            &ctx.config.book.src,
            |path| titles::section_title(&mut traces, path),
            &mut problems,
        );
        book.for_each_mut(|item| {
            let BookItem::Chapter(chapter) = item else { return };
            let Some(path) = chapter.path.clone() else { return };
            let title = titles::section_title(&mut traces, &path);
            if let Some(title) = &title
                && titles::has_own_heading(&chapter.content)
            {
                problems.push(Problem {
                    chapter: ctx.config.book.src.join(&path),
                    line: 1,
                    directive: String::new(),
                    cause: Cause::Structure(format!(
                        "this chapter is the section `{}`, whose title (\"{title}\") is declared in its `sections!` line \
                         in the code: remove the chapter's own heading, which would declare it again",
                        path.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default()
                    )),
                });
                return;
            }
            match render_chapter(&chapter.content, &mut traces) {
                Ok(content) => match title {
                    Some(title) => {
                        chapter.content = titles::with_heading(&title, &content);
                        chapter.name = title;
                    }
                    None => chapter.content = content,
                },
                Err(found) => problems.extend(found.into_iter().map(|(line, directive, cause)| Problem {
                    chapter: ctx.config.book.src.join(&path),
                    line,
                    directive,
                    cause,
                })),
            }
            // Every page of a what-if book says so first.
            if let Some(banner) = &banner {
                chapter.content = what_if::with_banner(&chapter.content, banner);
            }
        });
        if problems.is_empty() {
            Ok(book)
        } else {
            Err(BookError::Problems(problems).into())
        }
    }
}
