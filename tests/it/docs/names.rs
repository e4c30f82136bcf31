//! The names the design docs mention resolve against the tree: a renamed file, type or method
//! fails here with the document, the line and the name, so whoever moves code knows which
//! sentence to mend.
//!
//! Every inline code span (`...`) of a document's prose is looked at; a span is checked when it
//! looks like one of these, and left alone otherwise (a flag, a command, SQL, a figure):
//!
//! - **A path**: no spaces, at least one `/`, not under `target/` (what a build makes), ending
//!   in `/` (a folder) or in `.rs`, `.toml`,
//!   `.py`, `.sh`, `.md`, `.json` or `.lock`. One starting with `src/`, `tests/`, `benches/`,
//!   `examples/`, `assets/`, `docs/`, `.cargo/` or `.ci/` must exist from the repository's root.
//!   Any other (`engine/lane/said.rs`, `live/app.rs`, `commands/tui.rs`, as the prose names a
//!   file inside `src/` or inside the folder its sentence is about) must be the end, in whole
//!   segments, of some path under `src/`, `tests/` or `benches/`. A `*` matches within one
//!   segment. Absolute paths (`/dev/shm`), URLs and placeholders in capitals (`NAME.rs`,
//!   `X.db`) are not the tree's.
//! - **A file name**: `something.rs` alone must be the name of a file under `src/`, `tests/` or
//!   `benches/`.
//! - **A Rust path** (`Type::name`, `module::Type`, `module::function`, `Type::name()`, with any
//!   `(...)` call or `<...>` generics after it dropped, and `crate::` before it): the segments up
//!   to the first type (a name starting with a capital and holding a small letter) are a module
//!   path, matched as the end of a module's path in whole segments (`protocol::Grant` is
//!   `worker::protocol::Grant`); the type must be defined or re-exported (`pub use`) in such a
//!   module (anywhere in `src/` when no module is named); the segment after it must be one of its
//!   members: a `fn`, `const` or `type` of an `impl` or `trait` block for a type of that name, an
//!   enum variant or a named field. With no type, the last segment is a module or an item defined
//!   in the module before it (a `CONSTANT` counts as an item); such a path may also name a test
//!   or a helper of `tests/it/` (`faults::the_checks_convict_every_kind_of_damage`). After
//!   `crate::` (or `reclaim::`, the library's name) the modules are matched from the crate's
//!   root. Paths into other crates (`std::`, `ratatui::`,
//!   `rusqlite::`, ...: `EXTERNAL_CRATES`) are not checked.
//! - **A type alone** (`LaneSnapshot`, `Binding<A>`): a struct, enum, trait, type alias or enum
//!   variant defined in `src/`, unless it is another crate's (`EXTERNAL_TYPES`) or a key of the
//!   keyboard (`Esc`: `KEYS`). In a table row about a folder of `src/` (`| `src/map/` | ...`),
//!   it must be defined in that folder's modules: a type of another folder is named with its
//!   module there (`engine::ExecJob`).
//! - **A function called alone** (`kill_all()`, empty parentheses): a `fn` of that name in
//!   `src/` or in `tests/it/`, unless another crate's (`EXTERNAL_FUNCTIONS`).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use super::rust_items::Index;

/// Crates whose paths the prose names (`std::net`) and that `src/` does not define.
const EXTERNAL_CRATES: &[&str] = &[
    "std",
    "core",
    "alloc",
    "clap",
    "clap_complete",
    "clap_mangen",
    "crossterm",
    "httparse",
    "insta",
    "libc",
    "nix",
    "portable_pty",
    "postgres",
    "proptest",
    "rand",
    "rand_chacha",
    "ratatui",
    "roxmltree",
    "rusqlite",
    "serde",
    "serde_json",
    "sha2",
    "signal_hook",
    "tempfile",
    "thiserror",
    "toml",
    "vt100",
];

/// Functions of other crates the prose names on their own (`unwrap()`).
const EXTERNAL_FUNCTIONS: &[&str] = &["unwrap", "expect"];

/// Types of other crates the prose names on their own.
const EXTERNAL_TYPES: &[&str] = &["ChaCha8Rng", "Instant", "OnceLock", "TestBackend", "StdRng"];

/// Keys of the keyboard the prose names in code spans (`Esc`): not Rust names.
const KEYS: &[&str] = &[
    "Esc",
    "Enter",
    "Tab",
    "Backspace",
    "Home",
    "End",
    "PageUp",
    "PageDown",
];

/// Where a path of the prose may start from the repository's root.
const ROOT_FOLDERS: &[&str] = &[
    "src/",
    "tests/",
    "benches/",
    "examples/",
    "assets/",
    "docs/",
    ".cargo/",
    ".ci/",
];

const FILE_ENDINGS: &[&str] = &[".rs", ".toml", ".py", ".sh", ".md", ".json", ".lock"];

/// The repository's files and folders that prose paths resolve against.
pub struct Tree {
    root: std::path::PathBuf,
    /// Every file and folder under `src/`, `tests/` and `benches/`, relative to the root, with
    /// `/` separators; folders end in `/`.
    entries: Vec<String>,
    index: Index,
    /// The integration tests' own definitions: a helper the prose names (`strategies()`).
    tests: Index,
}

impl Tree {
    pub fn read(root: &Path) -> Result<Tree, String> {
        let mut entries = Vec::new();
        for top in ["src", "tests", "benches"] {
            walk(&root.join(top), &format!("{top}/"), &mut entries)?;
        }
        Ok(Tree {
            root: root.to_path_buf(),
            entries,
            index: Index::of_tree(&root.join("src"))?,
            tests: Index::of_tree(&root.join("tests/it"))?,
        })
    }

    /// Why `span` names nothing in the tree, or `None` when it resolves or is not a name. In a
    /// row of a folder of `src/` (`scope`, its module), a type named alone must be that
    /// folder's own.
    fn unresolved(&self, span: &str, scope: Option<&str>) -> Option<String> {
        if looks_like_path(span) {
            return self.path_unresolved(span);
        }
        if let Some(file) = span.strip_suffix(".rs")
            && is_ident(file)
            && !is_placeholder(file)
        {
            let found = self
                .entries
                .iter()
                .any(|entry| entry.rsplit('/').next() == Some(span));
            return (!found).then(|| "no file of this name under src/, tests/ or benches/".into());
        }
        let name = rust_name(span).filter(|name| !KEYS.contains(&name.as_str()))?;
        if let Some(module) = scope
            && !name.contains("::")
            && is_type_name(&name)
            && !EXTERNAL_TYPES.contains(&name.as_str())
        {
            return (!self.index.defines_under(module, &name))
                .then(|| format!("no type {name} in {module} (this row's folder)"));
        }
        let why = resolve_rust(&self.index, &name)?;
        // A test named by its path (`faults::the_checks_convict_every_kind_of_damage`) or a
        // helper of the integration tests (`strategies()`) is the tests' own.
        let in_tests = !name.starts_with("crate::")
            && !name.split("::").any(is_type_name)
            && resolve_rust(&self.tests, &name).is_none();
        (!in_tests).then_some(why)
    }

    fn path_unresolved(&self, span: &str) -> Option<String> {
        if ROOT_FOLDERS.iter().any(|top| span.starts_with(top)) {
            return (!exists(&self.root, span)).then(|| "no such path in the repository".into());
        }
        let wanted: Vec<&str> = span.trim_end_matches('/').split('/').collect();
        let folder = span.ends_with('/');
        let found = self.entries.iter().any(|entry| {
            if entry.ends_with('/') != folder {
                return false;
            }
            let parts: Vec<&str> = entry.trim_end_matches('/').split('/').collect();
            parts.len() >= wanted.len()
                && parts[parts.len() - wanted.len()..]
                    .iter()
                    .zip(&wanted)
                    .all(|(part, pattern)| glob(pattern, part))
        });
        (!found).then(|| "no path under src/, tests/ or benches/ ends like this".into())
    }
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() {
            out.push(format!("{prefix}{name}/"));
            walk(&path, &format!("{prefix}{name}/"), out)?;
        } else {
            out.push(format!("{prefix}{name}"));
        }
    }
    Ok(())
}

/// Whether `path` (relative to `root`, a `*` allowed within its last segment) exists.
fn exists(root: &Path, path: &str) -> bool {
    let trimmed = path.trim_end_matches('/');
    let (dir, last) = trimmed.rsplit_once('/').unwrap_or(("", trimmed));
    if !last.contains('*') {
        return root.join(trimmed).exists();
    }
    fs::read_dir(root.join(dir)).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|entry| glob(last, &entry.file_name().to_string_lossy()))
    })
}

/// `*` matches any run of characters; everything else itself.
fn glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            name.len() >= head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail)
        }
    }
}

fn is_ident(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `NAME`, `X`: a word in capitals standing for any name.
fn is_placeholder(text: &str) -> bool {
    text.chars().any(|c| c.is_ascii_uppercase()) && !text.chars().any(|c| c.is_ascii_lowercase())
}

/// A name starting with a capital and holding a small letter: a type (or a variant).
fn is_type_name(text: &str) -> bool {
    text.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && text.chars().any(|c| c.is_ascii_lowercase())
}

fn looks_like_path(span: &str) -> bool {
    span.contains('/')
        && !span.starts_with('/')
        && !span.starts_with("target/")
        && !span.starts_with('~')
        && !span.contains("://")
        && span
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '*'))
        && (span.ends_with('/') || FILE_ENDINGS.iter().any(|end| span.ends_with(end)))
        && !span
            .split('/')
            .any(|segment| is_placeholder(segment.split('.').next().unwrap_or(segment)))
}

/// The Rust path a span names, `::`-separated, without a call's `(...)`, generics or `crate::`;
/// `None` when the span is not one (see the module's comment for what is).
fn rust_name(span: &str) -> Option<String> {
    let called = span.ends_with("()");
    let name = span.split(['(', '<']).next()?;
    // `f(...)` and `Type<...>` only when the call or the generics end the span.
    if name.len() < span.len() && !span.ends_with([')', '>']) {
        return None;
    }
    let renamed = name
        .strip_prefix("reclaim::")
        .map(|path| format!("crate::{path}"));
    let name = renamed.as_deref().unwrap_or(name);
    let segments: Vec<&str> = name.split("::").collect();
    if !segments.iter().all(|segment| is_ident(segment)) {
        return None;
    }
    let checked = segments.len() > 1 || is_type_name(name) || called;
    checked.then(|| name.to_owned())
}

/// The modules of `index` that `segments` names: from the crate's root after `crate::`, as the
/// end of a module's path otherwise.
fn modules_named<'a>(index: &'a Index, segments: &[&str], absolute: bool) -> Vec<&'a str> {
    index
        .modules_ending_with(segments)
        .into_iter()
        .filter(|module| !absolute || module.split("::").count() == segments.len())
        .collect()
}

/// Why the Rust path `name` does not resolve in `index`, or `None`.
fn resolve_rust(index: &Index, name: &str) -> Option<String> {
    let absolute = name.starts_with("crate::");
    let segments: Vec<&str> = name.trim_start_matches("crate::").split("::").collect();
    if EXTERNAL_CRATES.contains(&segments[0]) {
        return None;
    }
    let Some(at) = segments.iter().position(|segment| is_type_name(segment)) else {
        return resolve_in_module(index, &segments, absolute);
    };
    let owner = segments[at];
    let modules = &segments[..at];
    if modules.is_empty() {
        if segments.len() == 1 && EXTERNAL_TYPES.contains(&owner) {
            return None;
        }
        let variant_alone = segments.len() == 1 && index.is_variant(owner);
        if !index.is_type(owner) && !variant_alone {
            return Some(format!("no struct, enum, trait or type {owner} in src/"));
        }
    } else {
        let found = modules_named(index, modules, absolute);
        if found.is_empty() {
            return Some(format!("no module {} in src/", modules.join("::")));
        }
        if !found.iter().any(|module| index.defines(module, owner)) {
            return Some(format!("{owner} is not defined in {}", found.join(" or ")));
        }
    }
    let member = segments.get(at + 1)?;
    (!index.has_member(owner, member))
        .then(|| format!("{owner} has no fn, const, variant or field named {member}"))
}

/// A path of modules with, at its end, a module or an item of the module before it.
fn resolve_in_module(index: &Index, segments: &[&str], absolute: bool) -> Option<String> {
    if segments.len() == 1 && !absolute {
        let name = segments[0];
        return (!index.is_function(name) && !EXTERNAL_FUNCTIONS.contains(&name))
            .then(|| format!("no fn {name} in src/ or tests/"));
    }
    if !modules_named(index, segments, absolute).is_empty() {
        return None;
    }
    let (item, modules) = segments.split_last()?;
    let found = modules_named(index, modules, absolute);
    if found.is_empty() {
        return Some(format!("no module {} in src/", segments.join("::")));
    }
    (!found.iter().any(|module| index.defines(module, item)))
        .then(|| format!("{item} is not defined in {}", found.join(" or ")))
}

/// The inline code spans of a Markdown text's prose (fenced blocks left out), each with the
/// line it starts on. A span may wrap across lines, not across a blank one.
pub fn code_spans(text: &str) -> Vec<(usize, String)> {
    let mut prose: Vec<&str> = vec![""; text.lines().count()];
    for (number, line) in super::prose_lines(text) {
        prose[number - 1] = line;
    }
    let prose = prose.join("\n");
    let mut spans = Vec::new();
    let mut at = 0;
    while let Some(found) = prose[at..].find('`') {
        let start = at + found;
        let ticks = prose[start..].chars().take_while(|&c| c == '`').count();
        let after = start + ticks;
        let paragraph_end = prose[after..]
            .find("\n\n")
            .map_or(prose.len(), |end| after + end);
        match close_of(&prose[after..paragraph_end], ticks) {
            Some(end) => {
                let content = prose[after..after + end].replace('\n', " ");
                let line = prose[..start].matches('\n').count() + 1;
                spans.push((line, content.trim().to_owned()));
                at = after + end + ticks;
            }
            None => at = after,
        }
    }
    spans
}

/// Where a run of exactly `ticks` backticks starts in `text`.
fn close_of(text: &str, ticks: usize) -> Option<usize> {
    let mut at = 0;
    while let Some(found) = text[at..].find('`') {
        let start = at + found;
        let run = text[start..].chars().take_while(|&c| c == '`').count();
        if run == ticks {
            return Some(start);
        }
        at = start + run;
    }
    None
}

/// Every name of `text` (a document called `doc`) that does not resolve against `tree`, one
/// line each: `doc:line: `name`: why`.
pub fn unresolved_names(tree: &Tree, doc: &str, text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut seen = BTreeSet::new();
    code_spans(text)
        .into_iter()
        .filter_map(|(line, span)| {
            let scope = lines.get(line - 1).and_then(|row| folder_of_row(row));
            let why = tree.unresolved(&span, scope.as_deref())?;
            seen.insert((line, span.clone()))
                .then(|| format!("{doc}:{line}: `{span}`: {why}"))
        })
        .collect()
}

/// The module of the `src/` folder a table row is about (`| `src/engine/` | ...` ->
/// `engine`), if it is such a row.
fn folder_of_row(row: &str) -> Option<String> {
    let cell = row.strip_prefix("| `src/")?;
    let folder = cell.split('`').next()?.strip_suffix('/')?;
    Some(folder.replace('/', "::"))
}

/// The documents whose names are resolved: the design docs a contributor reads to find code.
const DESIGN_DOCS: &[&str] = &[
    "ARCHITECTURE.md",
    "CONTRIBUTING.md",
    "README.md",
    "BENCHMARKS.md",
    "RELIABILITY.md",
    "docs/headless.md",
    "docs/own-job.md",
    "docs/reference.md",
    "docs/strategies.md",
    "docs/teaching.md",
];

#[test]
fn every_path_and_rust_name_of_the_design_docs_resolves() {
    let root = super::root();
    let tree = Tree::read(&root).unwrap();
    let mut unresolved = Vec::new();
    for doc in DESIGN_DOCS {
        let text = fs::read_to_string(root.join(doc)).unwrap();
        unresolved.extend(unresolved_names(&tree, doc, &text));
    }
    assert!(
        unresolved.is_empty(),
        "names in the docs that the tree does not have (rename them in the prose, or see \
         tests/it/docs/names.rs for what is checked):\n{}",
        unresolved.join("\n")
    );
}

#[test]
fn a_stale_path_and_a_stale_name_are_found_on_their_lines() {
    let root = super::root();
    let tree = Tree::read(&root).unwrap();
    let doc = "# A design\n\
               \n\
               The loop is in `src/engine/mod.rs` and `engine/lane/said.rs`; strategies are\n\
               `Strategy::all()`, a line is `WorkerLine::Other`, the clock `base::clock::SimClock`.\n\
               \n\
               The screen is `tui/app.rs`, drawn by `App::update` from `Facts`, kept in\n\
               `src/tui/gone/`; `Strategy::fly` and `engine::nowhere` are gone too, and so is\n\
               `crate::text::escape_controls` (now `crate::base::text::escape_controls`); a test\n\
               is `faults::the_checks_convict_every_kind_of_damage`.\n\
               \n\
               ```\n\
               `tui/fenced.rs` is in a fence\n\
               ```\n\
               Flags (`--exec`), SQL (`max(rowid)`), `/dev/shm` and `src/worker/NAME.rs` are\n\
               not names of the tree.\n";
    let found = unresolved_names(&tree, "plan.md", doc);
    let names: Vec<&str> = found
        .iter()
        .map(|line| line.split('`').nth(1).unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "tui/app.rs",
            "App::update",
            "Facts",
            "src/tui/gone/",
            "Strategy::fly",
            "engine::nowhere",
            "crate::text::escape_controls",
        ],
        "{found:#?}"
    );
    assert!(
        found[0].starts_with("plan.md:6: `tui/app.rs`: "),
        "{found:#?}"
    );
    assert!(
        found[4].starts_with("plan.md:7: `Strategy::fly`: Strategy has no"),
        "{found:#?}"
    );
}

#[test]
fn code_spans_wrap_across_lines_but_not_paragraphs() {
    let text = "a `one` b ``two `inner` x``\nc `wrapped\nspan` d\n\ne `open\n\nf g `three`";
    let spans = code_spans(text);
    assert_eq!(
        spans,
        [
            (1, "one".to_owned()),
            (1, "two `inner` x".to_owned()),
            (2, "wrapped span".to_owned()),
            (7, "three".to_owned()),
        ],
        "{spans:#?}"
    );
}
