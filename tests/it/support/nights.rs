//! Nights the tests read back: a night's lines after the clock, its text without the pids and
//! paths that differ between runs, a real warehouse made by a worker, a tmpfs to fill.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use std::time::Duration;

use super::tempdir;
use super::{Run, assert_one_line_error, path_arg, reclaim_in_dir, snapshot};

/// The hang guard of `reclaim_in`.
const LIMIT: Duration = Duration::from_secs(60);

/// `reclaim ARGS...` with `dir` as its working directory and TMPDIR, against the hang guard.
pub(crate) fn reclaim_in(dir: &Path, args: &[&str]) -> Run {
    reclaim_in_dir(dir, args, LIMIT)
}

/// Every file under `dir`, recursively, with its bytes.
pub(crate) fn snapshot_tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut all = BTreeMap::new();
    for (path, bytes) in snapshot(dir) {
        if path.is_dir() {
            all.extend(snapshot_tree(&path));
        }
        all.insert(path, bytes);
    }
    all
}

/// A real guarded warehouse of `items` rows at `db`, cleanly closed (no WAL left beside it).
pub(crate) fn warehouse(db: &Path, items: &str) {
    let run = reclaim_in(
        db.parent().unwrap_or(Path::new(".")),
        &[
            "worker",
            "--strategy",
            "guarded",
            "--items",
            items,
            "--delay-ms",
            "0",
            "--db",
            path_arg(db),
        ],
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
}

/// A tmpfs mounted for one test, lazily unmounted when dropped (even after a failed assertion).
pub(crate) struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs with `options` on `dir`; `None`, with a message, where this machine does not
    /// allow it (not root, no mount namespace, a container without CAP_SYS_ADMIN).
    pub(crate) fn mount(dir: &Path, options: &str) -> Option<Self> {
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir)
            .output();
        match output {
            Ok(out) if out.status.success() => Some(Self {
                dir: dir.to_path_buf(),
            }),
            Ok(out) => {
                println!(
                    "skipped: cannot mount a tmpfs ({options}) here: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                None
            }
            Err(e) => {
                println!("skipped: cannot run mount: {e}");
                None
            }
        }
    }

    pub(crate) fn remount(&self, options: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.dir)
            .status()
            .unwrap_or_else(|e| panic!("cannot run mount: {e}"));
        assert!(
            status.success(),
            "remount,{options} of {} failed",
            self.dir.display()
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// A fresh folder and a tmpfs on a subfolder of it; the folder outlives the mount.
pub(crate) fn mounted(options: &str) -> Option<(tempfile::TempDir, PathBuf, Tmpfs)> {
    let tmp = tempdir();
    let dir = tmp.path().join("mnt");
    fs::create_dir(&dir).unwrap_or_else(|e| panic!("cannot make {}: {e}", dir.display()));
    let mount = Tmpfs::mount(&dir, options)?;
    Some((tmp, dir, mount))
}

/// The text after the clock, when `line` is a timeline line in the postmortem's format:
/// `02:11:47  runner  notice  instance reclaimed by host`.
pub(crate) fn after_clock(line: &str) -> Option<&str> {
    let (clock, rest) = line.split_at_checked(8)?;
    let well_formed = clock.bytes().enumerate().all(|(i, b)| {
        if i == 2 || i == 5 {
            b == b':'
        } else {
            b.is_ascii_digit()
        }
    });
    if well_formed {
        rest.strip_prefix("  ")
    } else {
        None
    }
}

/// What `run` printed, with what differs from night to night by nature put aside: pids (and a
/// server's backend and transaction numbers), run ids (a pid and a start time), the wall time
/// and paths of temporary folders.
pub(crate) fn without_pids_and_paths(stdout: &str) -> String {
    let mut out = String::new();
    for line in stdout.lines() {
        let mut after_pid = false;
        let words: Vec<String> = line
            .split(' ')
            .map(|w| {
                let word = if after_pid && w.trim_end_matches([')', ':']).parse::<u32>().is_ok() {
                    "PID".to_string()
                } else if let Some(pid) = w.strip_prefix("pid=") {
                    assert!(pid.parse::<u32>().is_ok(), "{line}");
                    "pid=PID".to_string()
                } else if w.starts_with("run_id=run-") {
                    "run_id=RUN".to_string()
                } else if w.starts_with("elapsed=") {
                    // The wall time a night took.
                    "elapsed=WALL".to_string()
                } else if w.trim_start_matches('(').starts_with('/') {
                    "PATH".to_string()
                } else {
                    w.to_string()
                };
                // A server's backend and transaction numbers are its processes' and its
                // counter's, like pids.
                after_pid = matches!(w.trim_start_matches('('), "pid" | "backend" | "xid");
                word
            })
            .collect();
        out.push_str(&words.join(" "));
        out.push('\n');
    }
    out
}

/// A scenario file holding `text` is refused by `reclaim tui --scenario FILE` (validated before
/// a terminal is needed, so plain pipes do) with one line naming `needle`; no night is started
/// and the file is left as it was.
pub(crate) fn assert_scenario_refused(name: &str, text: &[u8], needle: &str) {
    let tmp = tempdir();
    let file = tmp.path().join(name);
    fs::write(&file, text).unwrap_or_else(|e| panic!("cannot write {name}: {e}"));
    let before = snapshot_tree(tmp.path());
    let run = reclaim_in(tmp.path(), &["tui", "--scenario", path_arg(&file)]);
    assert_one_line_error(&run, needle);
    assert!(run.stderr.contains(name), "{name}: {}", run.stderr);
    assert!(run.stdout.is_empty(), "{name}: {}", run.stdout);
    assert!(
        snapshot_tree(tmp.path()) == before,
        "{name}: reclaim changed or added files"
    );
}
