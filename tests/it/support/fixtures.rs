//! Files as fixtures, each compared with a snapshot beside it: a broken file under
//! `tests/fixtures/KIND/refused/` is refused by every command given for it in exactly the line
//! its `NAME.refusal` holds, exit 2, nothing printed on stdout and nothing in its folder changed;
//! a valid one is read to what its own snapshot holds. The fixture's path is written `FILE`.
//! `RECLAIM_BLESS=1 cargo test --test it MODULE` writes the snapshots anew, as insta's review
//! does: read the diff before committing it.

use std::fs;
use std::path::{Path, PathBuf};

use super::{path_arg, reclaim_in, snapshot_tree, tempdir};

/// `tests/fixtures/RELATIVE`, as committed.
pub(crate) fn fixture_dir(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(relative)
}

/// What one command said about a fixture: `text` for the snapshot, and what was wrong besides.
pub(crate) struct Said {
    pub(crate) what: String,
    pub(crate) text: String,
    pub(crate) wrong: Vec<String>,
}

/// Every `NAME.EXT` in `tests/fixtures/RELATIVE` (at least `at_least` of them: a folder read
/// empty would pass vacuously), copied alone into a folder of its own, is given to
/// `read(file, folder)`; each `Said` must hold its `NAME.SNAPSHOT` exactly and nothing wrong.
pub(crate) fn assert_fixtures_as_snapshotted(
    relative: &str,
    ext: &str,
    at_least: usize,
    snapshot: &str,
    read: impl Fn(&str, &Path) -> Vec<Said>,
) {
    let dir = fixture_dir(relative);
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .collect();
    names.sort();
    assert!(names.len() >= at_least, "{}: {names:?}", dir.display());
    let bless = std::env::var_os("RECLAIM_BLESS").is_some();
    let mut failures = Vec::new();
    for name in names {
        let tmp = tempdir();
        let file = tmp.path().join(&name);
        fs::copy(dir.join(&name), &file).unwrap_or_else(|e| panic!("{name}: {e}"));
        let stem = name.strip_suffix(&format!(".{ext}")).unwrap_or(&name);
        let snapshot = dir.join(format!("{stem}.{snapshot}"));
        for said in read(path_arg(&file), tmp.path()) {
            let what = format!("{name} ({})", said.what);
            failures.extend(said.wrong.iter().map(|w| format!("{what}: {w}")));
            if bless {
                fs::write(&snapshot, &said.text).unwrap_or_else(|e| panic!("{name}: {e}"));
                continue;
            }
            let expected = fs::read_to_string(&snapshot).unwrap_or_else(|e| {
                panic!("{}: {e} (RECLAIM_BLESS=1 writes it)", snapshot.display())
            });
            if said.text != expected {
                failures.push(format!(
                    "{what}:\n  expected {expected:?}\n  said     {:?}",
                    said.text
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Each of `commands` (`reclaim ARGS` in `dir`, the file shown as `file`) refuses it: exit 2,
/// one line on stderr (its text, for the snapshot), nothing on stdout, nothing in `dir` changed.
pub(crate) fn refusals(file: &str, dir: &Path, commands: &[&[&str]]) -> Vec<Said> {
    commands
        .iter()
        .map(|args| {
            let before = snapshot_tree(dir);
            let run = reclaim_in(dir, args);
            let mut wrong = Vec::new();
            if run.code != Some(2) || !run.stdout.is_empty() {
                wrong.push(format!("exit {:?}, stdout {:?}", run.code, run.stdout));
            }
            if run.stderr.lines().count() != 1 {
                wrong.push(format!("not one line: {:?}", run.stderr));
            }
            if snapshot_tree(dir) != before {
                wrong.push("reclaim changed or added files".into());
            }
            Said {
                what: args[..args.len().min(2)].join(" ").replace(file, "FILE"),
                text: run.stderr.replace(file, "FILE"),
                wrong,
            }
        })
        .collect()
}
