//! The house's shape, from the source: every `crate::`, `super::` and `self::` path in src/
//! (tests left out) makes the module graph; it has no circle, and no module imports one on a
//! higher floor of the table below (ARCHITECTURE.md tells the same floors).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The floors, lowest first: a module may use its own floor and those below. Within a floor
/// the file graph must still have no circle.
const FLOORS: &[(&str, &[&str])] = &[
    ("the ground: text, clock, paths, files, signals", &["base"]),
    (
        "the job's words",
        &["task", "queue", "heartbeat", "verdict"],
    ),
    ("storage", &["warehouse"]),
    (
        "processes and the worker",
        &["observer", "worker", "supervisor", "fake_vendor"],
    ),
    ("the engine", &["engine"]),
    ("what drives it", &["error", "record", "scenario"]),
    ("the headless driver", &["harness", "map"]),
    ("the dashboard", &["tui"]),
    ("what draws or parses for a command", &["cli", "export"]),
    ("the commands", &["commands"]),
];

/// Every module of src/ (`engine::lane::said`), with its file's text up to its tests.
fn modules() -> BTreeMap<String, String> {
    fn walk(dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
                let rel = path.strip_prefix(&src).unwrap_or(&path).with_extension("");
                let mut segments: Vec<String> = rel
                    .iter()
                    .map(|s| s.to_string_lossy().into_owned())
                    .collect();
                if segments.last().is_some_and(|s| s == "mod") {
                    segments.pop();
                }
                if segments == ["lib"] || segments == ["main"] {
                    continue;
                }
                let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
                out.insert(segments.join("::"), without_tests_and_comments(&text));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    out
}

/// The code of a file: up to its `#[cfg(test)]` module, without `//` comments (which name
/// modules they do not use).
fn without_tests_and_comments(text: &str) -> String {
    let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or(text);
    code.lines()
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths (`a::b::c`) that start with `prefix` in `code`, each as its segments, braces of
/// a `use` opened into their items.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let head: String = rest
            .chars()
            .take_while(|&c| c.is_alphanumeric() || c == '_' || c == ':')
            .collect();
        let head_segments: Vec<String> = head
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let after = &rest[head.len()..];
        if let Some(opened) = after.strip_prefix('{') {
            let inside = opened.split('}').next().unwrap_or_default();
            for item in inside.split(',') {
                let mut segments = head_segments.clone();
                segments.extend(
                    item.trim()
                        .split("::")
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty() && s != "{" && s != "self"),
                );
                out.push(segments);
            }
        }
        out.push(head_segments);
    }
    out
}

/// The graph: each module and the modules it names, by the longest prefix of each path that is
/// a module (`crate::engine::window::KillWindow` is `engine::window`).
fn graph(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let resolve = |segments: &[String]| -> Option<String> {
        (1..=segments.len())
            .rev()
            .map(|n| segments[..n].join("::"))
            .find(|name| modules.contains_key(name))
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, code) in modules {
        let own: Vec<String> = name.split("::").map(str::to_string).collect();
        // `super::` in a file is its parent's module (a mod.rs is its folder's module).
        let parent = &own[..own.len().saturating_sub(1)];
        let mut targets = Vec::new();
        for path in paths_after(code, "crate::") {
            targets.extend(resolve(&path));
        }
        for path in paths_after(code, "super::") {
            targets.extend(resolve(&[parent, &path[..]].concat()));
        }
        for path in paths_after(code, "self::") {
            targets.extend(resolve(&[&own[..], &path[..]].concat()));
        }
        let entry = edges.entry(name.clone()).or_default();
        for target in targets {
            // A module using what its parent (or any ancestor) defines is how Rust nests
            // modules, not a circle; and a module naming itself is no edge.
            let ancestor = name.starts_with(&format!("{target}::"));
            if target != *name && !ancestor {
                entry.insert(target);
            }
        }
    }
    edges
}

/// The circles of the graph, each as the modules around it (one per edge that closes one in a
/// depth-first walk: every graph with a circle has at least one).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(from) = stack.iter().position(|n| n == node) {
            let mut circle = stack[from..].to_vec();
            circle.push(node.to_string());
            found.push(circle);
            return;
        }
        if done.contains(node) {
            return;
        }
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, done, stack, found);
        }
        stack.pop();
        done.insert(node.to_string());
    }
    let (mut done, mut found) = (BTreeSet::new(), Vec::new());
    for node in edges.keys() {
        visit(node, edges, &mut done, &mut Vec::new(), &mut found);
    }
    found
}

/// The graph between top-level folders: an edge from `a` to `b` wherever a module of `a`
/// names one of `b`.
fn folder_graph(edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let top = |m: &str| m.split("::").next().unwrap_or(m).to_string();
    let mut folders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in edges {
        let entry = folders.entry(top(from)).or_default();
        entry.extend(targets.iter().map(|t| top(t)).filter(|t| *t != top(from)));
    }
    folders
}

fn floor_of(module: &str) -> Option<usize> {
    let top = module.split("::").next().unwrap_or(module);
    FLOORS
        .iter()
        .position(|(_, members)| members.contains(&top))
}

#[test]
fn the_module_graph_has_no_circle() {
    let edges = graph(&modules());
    assert!(edges.len() > 40, "{} modules read", edges.len());
    assert!(
        edges["engine::lane::kills"].contains("engine::window"),
        "the graph reads `use crate::` lines"
    );
    let said: Vec<String> = circles(&edges).iter().map(|c| c.join(" -> ")).collect();
    assert!(said.is_empty(), "import circles:\n{}", said.join("\n"));
}

#[test]
fn the_top_level_folders_have_no_circle() {
    let folders = folder_graph(&graph(&modules()));
    assert!(folders.contains_key("warehouse") && folders.contains_key("base"));
    let said: Vec<String> = circles(&folders).iter().map(|c| c.join(" -> ")).collect();
    assert!(
        said.is_empty(),
        "circles between top-level folders:\n{}",
        said.join("\n")
    );
}

#[test]
fn no_module_imports_one_on_a_higher_floor() {
    let modules = modules();
    let mut unplaced: Vec<&str> = modules
        .keys()
        .map(|m| m.split("::").next().unwrap_or(m))
        .filter(|top| floor_of(top).is_none())
        .collect();
    unplaced.dedup();
    assert!(
        unplaced.is_empty(),
        "modules on no floor of FLOORS: {unplaced:?}"
    );
    let mut upward = Vec::new();
    for (from, targets) in graph(&modules) {
        for to in targets {
            let (a, b) = (floor_of(&from), floor_of(&to));
            if b > a {
                upward.push(format!(
                    "{from} ({}) -> {to} ({})",
                    FLOORS[a.unwrap_or(0)].0,
                    FLOORS[b.unwrap_or(0)].0
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports of a higher floor:\n{}",
        upward.join("\n")
    );
}

#[test]
fn a_circle_and_an_upward_import_are_found() {
    let modules: BTreeMap<String, String> = [
        ("engine", "use crate::worker::Strategy;"),
        ("worker", "fn f() { crate::engine::tick(); }"),
        (
            "worker::naive",
            "use super::{Ctx, Row}; use crate::text::escape;",
        ),
        ("text", "// crate::engine in a comment is no edge"),
    ]
    .into_iter()
    .map(|(m, code)| (m.to_string(), without_tests_and_comments(code)))
    .collect();
    let edges = graph(&modules);
    assert_eq!(
        edges["worker::naive"],
        BTreeSet::from(["text".to_string()]),
        "a child using its parent is no edge"
    );
    assert!(edges["text"].is_empty());
    let found = circles(&edges);
    assert_eq!(found.len(), 1, "{found:?}");
    let circle = &found[0];
    assert_eq!(circle.first(), circle.last());
    assert!(circle.contains(&"engine".to_string()) && circle.contains(&"worker".to_string()));
    assert!(floor_of("worker") < floor_of("engine"));
}

#[test]
fn a_circle_between_two_folders_is_found_though_no_file_closes_one() {
    // store::rows -> warehouse::pg and warehouse::follow -> store::schema: no file circle, but
    // the two folders lean on each other.
    let modules: BTreeMap<String, String> = [
        ("store::rows", "use crate::warehouse::pg::Sink;"),
        ("store::schema", "pub fn create() {}"),
        ("warehouse::pg", "pub struct Sink;"),
        ("warehouse::follow", "use crate::store::schema::create;"),
    ]
    .into_iter()
    .map(|(m, code)| (m.to_string(), without_tests_and_comments(code)))
    .collect();
    let edges = graph(&modules);
    assert!(circles(&edges).is_empty(), "no circle between files");
    let found = circles(&folder_graph(&edges));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains(&"store".to_string()) && found[0].contains(&"warehouse".to_string()));
}
