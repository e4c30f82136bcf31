//! References to a section by its name resolve: a comment or a page that says `BENCHMARKS.md,
//! "The test suite's time"` (how the code and the docs point into a document without a link)
//! names a heading that document has. The quoted name is the start of the heading, backticks
//! left out, and may wrap across lines (and their comment markers). The dated history under
//! `docs/history/` is kept as it was written and is not checked.

use std::fs;
use std::path::{Path, PathBuf};

/// Where such references are written: the code, the build files and the docs.
fn sources(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<PathBuf> = ["Cargo.toml", ".cargo/config.toml", ".ci/run"]
        .iter()
        .map(|name| root.join(name))
        .collect();
    let history = root.join("docs/history");
    files.extend(
        super::documents(root)?
            .into_iter()
            .filter(|doc| !doc.starts_with(&history)),
    );
    for dir in ["src", "benches", "tests"] {
        let mut found = Vec::new();
        super::rust_files(&root.join(dir), "", &mut found)?;
        files.extend(found.into_iter().map(|file| root.join(dir).join(file)));
    }
    Ok(files)
}

/// A file's lines without their comment markers, joined with single spaces, each line's start
/// kept as (offset in the joined text, line number).
fn joined(text: &str) -> (String, Vec<(usize, usize)>) {
    let mut out = String::new();
    let mut starts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_start();
        let line = ["//!", "///", "//", "#", "*"]
            .iter()
            .find_map(|marker| line.strip_prefix(marker))
            .unwrap_or(line)
            .trim();
        starts.push((out.len(), i + 1));
        out.push_str(line);
        out.push(' ');
    }
    (out, starts)
}

/// Every reference to a section of `text` (a document's file name, a comma, the section's name
/// in double quotes): (line, file, section).
pub fn references(text: &str) -> Vec<(usize, String, String)> {
    let (joined, starts) = joined(text);
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(hit) = joined[at..].find(".md, \"") {
        let dot = at + hit;
        let file_start = joined[..dot]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
            .map_or(0, |before| before + 1);
        let quote = dot + ".md, \"".len();
        let Some(length) = joined[quote..].find('"') else {
            break;
        };
        let file = format!("{}.md", &joined[file_start..dot]);
        let section = joined[quote..quote + length]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let line = starts
            .iter()
            .rev()
            .find(|(offset, _)| *offset <= dot)
            .map_or(1, |(_, line)| *line);
        if file_start < dot {
            found.push((line, file, section));
        }
        at = quote + length;
    }
    found
}

/// The headings of a Markdown text, backticks left out.
fn headings(text: &str) -> Vec<String> {
    super::prose_lines(text)
        .into_iter()
        .filter_map(|(_, line)| {
            let hashes = line.chars().take_while(|&c| c == '#').count();
            ((1..=6).contains(&hashes) && line[hashes..].starts_with(' '))
                .then(|| line[hashes..].trim().replace('`', ""))
        })
        .collect()
}

/// Every reference of `file` that names no heading of its document, one line each.
fn broken_references(root: &Path, file: &Path) -> Result<Vec<String>, String> {
    let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let dir = file.parent().unwrap_or(root);
    let mut broken = Vec::new();
    for (line, doc, section) in references(&text) {
        let at = format!("{}:{line}: {doc}, \"{section}\"", file.display());
        let target = [dir.join(&doc), root.join(&doc)]
            .into_iter()
            .find(|path| path.is_file());
        let Some(target) = target else {
            broken.push(format!("{at}: no such document"));
            continue;
        };
        let target_text =
            fs::read_to_string(&target).map_err(|e| format!("{}: {e}", target.display()))?;
        let wanted = section.replace('`', "").to_lowercase();
        if !headings(&target_text)
            .iter()
            .any(|heading| heading.to_lowercase().starts_with(&wanted))
        {
            broken.push(format!("{at}: no heading starts so"));
        }
    }
    Ok(broken)
}

#[test]
fn every_section_named_in_the_code_and_the_docs_is_a_heading_of_its_document() {
    let root = super::root();
    let mut broken = Vec::new();
    for file in sources(&root).unwrap() {
        broken.extend(broken_references(&root, &file).unwrap());
    }
    assert!(
        broken.is_empty(),
        "sections named that their documents do not have:\n{}",
        broken.join("\n")
    );
}

#[test]
fn a_reference_wrapped_across_comment_lines_is_read_whole_and_a_stale_one_is_found() {
    let dir = crate::support::tempdir();
    fs::write(
        dir.path().join("NOTES.md"),
        "# Notes\n\n## The test suite's time (`cargo test`)\n",
    )
    .expect("written");
    let code = dir.path().join("code.rs");
    fs::write(
        &code,
        "/// Four threads (NOTES.md, \"The test suite's\n/// time\"); and (NOTES.md, \"Gone\").\n\
         # a build file (NOTES.md, \"the TEST suite\")\n",
    )
    .expect("written");
    let found = references(&fs::read_to_string(&code).expect("read"));
    assert_eq!(
        found,
        [
            (1, "NOTES.md".to_owned(), "The test suite's time".to_owned()),
            (2, "NOTES.md".to_owned(), "Gone".to_owned()),
            (3, "NOTES.md".to_owned(), "the TEST suite".to_owned()),
        ]
    );
    let broken = broken_references(dir.path(), &code).unwrap();
    assert_eq!(broken.len(), 1, "{broken:#?}");
    assert!(
        broken[0].ends_with("code.rs:2: NOTES.md, \"Gone\": no heading starts so"),
        "{broken:#?}"
    );
}
