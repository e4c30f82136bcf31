//! The documentation stays true to the tree: every relative link of the docs names a file that
//! exists and every `#anchor` a heading of it; the README stays a front door (under 20 KB, with
//! its picture) and BENCHMARKS.md and RELIABILITY.md stay references (under 15 KB each, their
//! history in `docs/history/`); ARCHITECTURE.md's tables name every source file and every
//! integration module, and nothing that is gone. Beside this file: every path and Rust name the
//! design docs mention resolves against the tree (`names.rs`, with `rust_items.rs`), and every
//! section named in the code and the docs is a heading (`sections.rs`). No network: only
//! relative links are followed.

mod names;
mod rust_items;
mod sections;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The README's bound: a front door a newcomer reads in minutes (issue 25).
const README_MAX_BYTES: usize = 20_000;

/// The bound of BENCHMARKS.md and RELIABILITY.md: a table of current figures a reader takes in
/// at once; every dated measurement goes to `docs/history/` (issue 40).
const REFERENCE_MAX_BYTES: usize = 15_000;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The documents whose links are walked: the top-level ones, every page under docs/ and the
/// dated history under docs/history/.
fn documents(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut docs: Vec<PathBuf> = [
        "README.md",
        "CONTRIBUTING.md",
        "ARCHITECTURE.md",
        "BENCHMARKS.md",
        "RELIABILITY.md",
    ]
    .iter()
    .map(|name| root.join(name))
    .collect();
    for folder in ["docs", "docs/history"] {
        let mut pages: Vec<PathBuf> = fs::read_dir(root.join(folder))
            .map_err(|e| format!("{folder}/: {e}"))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
            .collect();
        pages.sort();
        docs.extend(pages);
    }
    Ok(docs)
}

/// The lines of a Markdown text outside fenced code blocks, with their line numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => lines.push((i + 1, line)),
            _ => {}
        }
    }
    lines
}

/// A line with its inline code spans removed (a link inside backticks is text, not a link).
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        let closing = "`".repeat(ticks);
        if let Some(end) = after.find(&closing) {
            rest = &after[end + ticks..];
        } else {
            out.push_str(&rest[start..]);
            rest = "";
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the inline links and images of a line (`[text](target)`, `![alt](target)`),
/// and of a reference definition (`[name]: target`).
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].trim();
        // `[text](target "title")`: the target is the first word.
        let target = target.split_whitespace().next().unwrap_or("");
        targets.push(target.trim_matches(['<', '>']).to_owned());
        rest = &after[end..];
    }
    let trimmed = line.trim_start();
    if trimmed.starts_with('[')
        && let Some(at) = trimmed.find("]: ")
    {
        targets.push(trimmed[at + 3..].trim().to_owned());
    }
    targets
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a Markdown text offers: its headings' slugs, a repeated one suffixed `-1`, `-2`.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim_end_matches('#'));
        let n = seen.entry(base.clone()).or_insert(0);
        anchors.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    anchors
}

/// Every broken relative link of `doc`, one line each (`file:line: target: why`).
fn broken_links(doc: &Path) -> Result<Vec<String>, String> {
    let text = fs::read_to_string(doc).map_err(|e| format!("{}: {e}", doc.display()))?;
    let dir = doc.parent().unwrap_or(Path::new("."));
    let mut broken = Vec::new();
    for (number, line) in prose_lines(&text) {
        for target in link_targets(line) {
            if target.is_empty()
                || target.contains("://")
                || target.starts_with("mailto:")
                || target.starts_with("//")
            {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                doc.to_path_buf()
            } else {
                dir.join(path)
            };
            let at = format!("{}:{number}: {target}", doc.display());
            if !file.exists() {
                broken.push(format!("{at}: no such file"));
                continue;
            }
            if anchor.is_empty() {
                continue;
            }
            if file.extension().is_none_or(|ext| ext != "md") {
                broken.push(format!("{at}: an anchor into a file that is not Markdown"));
                continue;
            }
            let target_text =
                fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            if !anchors(&target_text).contains(anchor) {
                broken.push(format!("{at}: no heading with this anchor"));
            }
        }
    }
    Ok(broken)
}

#[test]
fn every_relative_link_and_anchor_of_the_docs_resolves() {
    let root = root();
    let docs = documents(&root).unwrap();
    assert!(docs.len() > 5, "the docs under docs/ are found: {docs:?}");
    let mut broken = Vec::new();
    for doc in &docs {
        broken.extend(broken_links(doc).unwrap());
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_checker_finds_a_missing_file_and_a_missing_anchor() {
    let dir = crate::support::tempdir();
    fs::write(
        dir.path().join("other.md"),
        "# Other\n\n## The `run` command: a night\n",
    )
    .expect("written");
    let doc = dir.path().join("doc.md");
    fs::write(
        &doc,
        "# Doc\n\n[ok](other.md#the-run-command-a-night) [gone](missing.md) \
         [bad](other.md#nowhere) [self](#doc) `[code](ignored.md)`\n\n\
         ```\n[fenced](ignored.md)\n```\n[site](https://example.com/x.md)\n",
    )
    .expect("written");
    let broken = broken_links(&doc).unwrap();
    assert_eq!(broken.len(), 2, "{broken:#?}");
    assert!(
        broken[0].contains("missing.md: no such file"),
        "{broken:#?}"
    );
    assert!(
        broken[1].contains("other.md#nowhere: no heading"),
        "{broken:#?}"
    );
}

#[test]
fn anchors_follow_githubs_rules() {
    let text = "# reclaim\n## `reclaim run --scenario`: a scenario, headless\n\
                ## Your job's side effects\n## Notes\n## Notes\n```\n# not a heading\n```\n";
    let found = anchors(text);
    let expected: BTreeSet<String> = [
        "reclaim",
        "reclaim-run---scenario-a-scenario-headless",
        "your-jobs-side-effects",
        "notes",
        "notes-1",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    assert_eq!(found, expected);
}

#[test]
fn the_readme_is_under_20_kb_and_shows_a_picture_that_exists() {
    let root = root();
    let readme = fs::read_to_string(root.join("README.md")).expect("README.md");
    assert!(
        readme.len() < README_MAX_BYTES,
        "README.md is {} bytes; the front door stays under {README_MAX_BYTES}: move detail to docs/",
        readme.len()
    );
    let images: Vec<String> = prose_lines(&readme)
        .into_iter()
        .filter(|(_, line)| line.contains("!["))
        .flat_map(|(_, line)| link_targets(line))
        .collect();
    assert!(!images.is_empty(), "README.md shows no image");
    for image in images {
        let bytes = fs::read(root.join(&image)).unwrap_or_default();
        let png = bytes.starts_with(b"\x89PNG\r\n\x1a\n");
        let svg = String::from_utf8_lossy(&bytes).contains("<svg");
        assert!(
            png || svg,
            "the README's image {image} is not a PNG or SVG file"
        );
    }
}

#[test]
fn benchmarks_and_reliability_are_references_under_15_kb_with_their_history_beside_them() {
    let root = root();
    for (doc, history) in [
        ("BENCHMARKS.md", "docs/history/benchmarks.md"),
        ("RELIABILITY.md", "docs/history/reliability.md"),
    ] {
        let text = fs::read_to_string(root.join(doc)).expect(doc);
        assert!(
            text.len() < REFERENCE_MAX_BYTES,
            "{doc} is {} bytes; a reference stays under {REFERENCE_MAX_BYTES}: keep the current \
             figure of each target and move the dated measurements to {history}",
            text.len()
        );
        assert!(
            root.join(history).is_file(),
            "{doc}'s dated history {history} is missing"
        );
        assert!(
            text.contains(history.trim_start_matches("docs/")),
            "{doc} links its history ({history})"
        );
    }
}

/// The rows of the table under `heading` in ARCHITECTURE.md: (first column without its
/// backticks, the whole row).
fn table_rows(text: &str, heading: &str) -> Vec<(String, String)> {
    let start = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has a section {heading:?}"));
    let section = &text[start + heading.len() + 2..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    section
        .lines()
        .filter_map(|line| {
            let cell = line.strip_prefix("| `")?;
            let end = cell.find('`')?;
            Some((cell[..end].to_owned(), line.to_owned()))
        })
        .collect()
}

/// Every `.rs` file under `dir`, as a path relative to it with `/` separators.
fn rust_files(dir: &Path, prefix: &str, out: &mut Vec<String>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() {
            rust_files(&path, &format!("{prefix}{name}/"), out)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(format!("{prefix}{name}"));
        }
    }
    Ok(())
}

/// Whether the table names exactly `entries` (paths under the root, folders ending in `/`), and
/// each folder's row every `.rs` file inside it; the differences, one line each.
fn table_mismatches(
    root: &Path,
    rows: &[(String, String)],
    entries: &BTreeSet<String>,
) -> Result<Vec<String>, String> {
    let named: BTreeSet<String> = rows.iter().map(|(path, _)| path.clone()).collect();
    let mut wrong: Vec<String> = entries
        .difference(&named)
        .map(|path| format!("{path} exists but has no row"))
        .chain(
            named
                .difference(entries)
                .map(|path| format!("{path} has a row but is not in the tree")),
        )
        .collect();
    for (path, row) in rows.iter().filter(|(path, _)| path.ends_with('/')) {
        let dir = root.join(path);
        if !dir.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&dir, "", &mut files)?;
        files.sort();
        for file in files {
            if !row.contains(&format!("`{file}`")) {
                wrong.push(format!("{path}{file} is not named in the row of {path}"));
            }
        }
    }
    Ok(wrong)
}

#[test]
fn architectures_file_table_names_every_source_file_and_nothing_gone() {
    let root = root();
    let text = fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let rows = table_rows(&text, "## Files");
    let entries: BTreeSet<String> = fs::read_dir(root.join("src"))
        .expect("src/")
        .map(|entry| {
            let path = entry.expect("a readable entry").path();
            let name = path
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                format!("src/{name}/")
            } else {
                format!("src/{name}")
            }
        })
        .collect();
    let wrong = table_mismatches(&root, &rows, &entries).unwrap();
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's file table is out of date:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn architectures_test_table_names_every_integration_module() {
    let root = root();
    let text = fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let rows = table_rows(&text, "## Tests");
    let main = fs::read_to_string(root.join("tests/it/main.rs")).expect("tests/it/main.rs");
    let entries: BTreeSet<String> = main
        .lines()
        .filter_map(|line| line.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .map(|module| {
            if root.join("tests/it").join(module).is_dir() {
                format!("tests/it/{module}/")
            } else {
                format!("tests/it/{module}.rs")
            }
        })
        .collect();
    let wrong = table_mismatches(&root, &rows, &entries).unwrap();
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's test table is out of date:\n{}",
        wrong.join("\n")
    );
}
