//! The nights in the home, as `reclaim kept` lists them, and their removal: only a real folder
//! holding reclaim's marker, never one a running reclaim holds (its lock), never through a link.

use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::{COMPANION_MARK, Keep, MARKER, Marker, check_home, lock};

/// One folder in the home.
#[derive(Debug, Clone)]
pub struct Listed {
    pub name: String,
    pub path: PathBuf,
    /// Its marker, if it has one reclaim can read: without it the folder is not reclaim's.
    pub marker: Option<Marker>,
    /// Bytes on disk, its files and theirs.
    pub bytes: u64,
    /// A running reclaim holds it.
    pub in_use: bool,
}

impl Listed {
    /// What the night's end says, or why there is none.
    #[must_use]
    pub fn verdict(&self) -> String {
        match &self.marker {
            None => "not reclaim's (no marker): left alone".into(),
            Some(_) if self.in_use => "in use (a reclaim is running it)".into(),
            Some(m) => m
                .verdict
                .clone()
                .unwrap_or_else(|| "unfinished (its reclaim was killed)".into()),
        }
    }
}

/// Every folder in `home`, oldest first (none when there is no home).
#[must_use]
pub fn list(home: &Path) -> Vec<Listed> {
    if check_home(home).is_err() {
        return Vec::new();
    }
    let Ok(entries) = fs::read_dir(home) else {
        return Vec::new();
    };
    let mut listed: Vec<Listed> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| {
            let path = e.path();
            let marker = read_marker(&path);
            let in_use = marker.is_some() && lock(&path).is_none();
            let companion = (marker.as_ref())
                .and_then(companion)
                .map_or(0, |c| disk_usage(&c));
            Listed {
                name: e.file_name().to_string_lossy().into_owned(),
                bytes: disk_usage(&path).saturating_add(companion),
                path,
                marker,
                in_use,
            }
        })
        .collect();
    listed.sort_by(|a, b| {
        let started = |l: &Listed| {
            (l.marker.as_ref()).map_or(0, |m| m.started_ms.max(m.started.saturating_mul(1000)))
        };
        started(a)
            .cmp(&started(b))
            .then_with(|| a.name.cmp(&b.name))
    });
    listed
}

/// Why a folder cannot be removed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoveError {
    #[error("{0} is not a night reclaim kept (`reclaim kept` lists them)")]
    NotKept(String),
    #[error(
        "{0} is in use by a running reclaim; it is removed when that night ends, as its --keep says"
    )]
    InUse(String),
    #[error("cannot remove {0}: {1}")]
    Failed(String, String),
    #[error(
        "{0} is kept with a PostgreSQL cluster whose server is running (pid {2} in {1}): stop it first, as its owner: pg_ctl -D {1}/data stop"
    )]
    CompanionRunning(String, String, i32),
}

/// Removes the night `name` (a folder name in `home`, or its path): only a real folder there
/// holding reclaim's marker, and only when no running reclaim holds it.
pub fn remove(home: &Path, name: &str) -> Result<PathBuf, RemoveError> {
    let given = Path::new(name);
    let shown_name = crate::base::text::escape_controls(name);
    let leaf = match given.file_name() {
        Some(leaf)
            if given
                .parent()
                .is_none_or(|p| p.as_os_str().is_empty() || same_dir(p, home)) =>
        {
            leaf
        }
        _ => return Err(RemoveError::NotKept(shown_name)),
    };
    let path = home.join(leaf);
    if check_home(home).is_err()
        || !fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir())
        || read_marker(&path).is_none()
    {
        return Err(RemoveError::NotKept(shown_name));
    }
    let Some(held) = lock(&path) else {
        return Err(RemoveError::InUse(shown_name));
    };
    if let Some(folder) = read_marker(&path).as_ref().and_then(companion) {
        if let Some(pid) = crate::base::postmaster::may_run_in(&folder.join("data")) {
            let shown_folder = crate::base::text::escape_controls(&folder.display().to_string());
            return Err(RemoveError::CompanionRunning(shown_name, shown_folder, pid));
        }
        fs::remove_dir_all(&folder).map_err(|e| {
            RemoveError::Failed(
                crate::base::text::escape_controls(&folder.display().to_string()),
                e.to_string(),
            )
        })?;
    }
    // Links inside are removed, never followed (`remove_dir_all` does not follow them).
    let removed = fs::remove_dir_all(&path);
    drop(held);
    removed.map_err(|e| RemoveError::Failed(shown_name, e.to_string()))?;
    Ok(path)
}

/// Removes what the policies say should go: a finished `never` night (its reclaim died before
/// removing it) and the oldest finished `failed` nights beyond `bound`. Nights kept `always`
/// and nights in use are left alone. Returns how many went.
#[must_use]
pub fn prune(home: &Path, bound: usize) -> usize {
    let nights = list(home);
    let mut failed: Vec<&Listed> = Vec::new();
    let mut removed = 0;
    for night in &nights {
        let Some(marker) = (night.marker.as_ref()).filter(|m| !night.in_use && m.held.is_none())
        else {
            continue;
        };
        match marker.policy {
            Keep::Always => {}
            Keep::Failed => failed.push(night),
            Keep::Never => removed += usize::from(remove(home, &night.name).is_ok()),
        }
    }
    // `list` is oldest first.
    let beyond = failed.len().saturating_sub(bound);
    for night in &failed[..beyond] {
        removed += usize::from(remove(home, &night.name).is_ok());
    }
    removed
}

/// The folder a night's marker names as kept with it, when it is one reclaim kept: a real
/// folder (not a link) in the temp dir, holding `COMPANION_MARK`. A marker edited to name
/// anything else names nothing.
fn companion(marker: &Marker) -> Option<PathBuf> {
    let folder = marker.companion.as_ref()?;
    let real = fs::symlink_metadata(folder).is_ok_and(|m| m.is_dir())
        && fs::symlink_metadata(folder.join(COMPANION_MARK)).is_ok_and(|m| m.is_file());
    let in_temp = folder
        .parent()
        .is_some_and(|p| same_dir(p, &std::env::temp_dir()));
    (real && in_temp).then(|| folder.clone())
}

fn read_marker(dir: &Path) -> Option<Marker> {
    let path = dir.join(MARKER);
    if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    // A marker is a line of JSON; anything larger is not one.
    let text = fs::read(&path).ok().filter(|t| t.len() < 64 * 1024)?;
    serde_json::from_slice(&text).ok()
}

/// Bytes on disk under `path`, links not followed.
fn disk_usage(path: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return 0;
    };
    let own = meta.blocks().saturating_mul(512);
    if !meta.is_dir() {
        return own;
    }
    fs::read_dir(path).map_or(own, |entries| {
        entries
            .filter_map(Result::ok)
            .fold(own, |sum, e| sum.saturating_add(disk_usage(&e.path())))
    })
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || crate::base::paths::same_file(a, b)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{at, home_in};
    use super::super::{BOUND, NightDir, ensure_home};
    use super::*;

    #[test]
    fn the_default_keeps_at_most_the_bound_and_never_touches_always() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = home_in(&dir);
        let always = NightDir::create_in(&home, "reclaim run", "naive", Keep::Always, at(0))
            .unwrap_or_else(|e| panic!("{e}"))
            .settle(true, "v", at(1));
        let mut pruned = 0;
        for n in 1..=BOUND as u64 + 5 {
            let night =
                NightDir::create_in(&home, "reclaim run", "naive", Keep::Failed, at(n * 10))
                    .unwrap_or_else(|e| panic!("{e}"));
            pruned += night.settle(true, "v", at(n * 10 + 1)).pruned;
        }
        assert_eq!(pruned, 5);
        let listed = list(&home);
        assert_eq!(listed.len(), BOUND + 1);
        assert!(always.path.is_dir(), "--keep always is never pruned");
        // The oldest went: the first failed night kept is the 6th.
        assert_eq!(listed[1].marker.as_ref().map(|m| m.started), Some(60));
    }

    #[test]
    fn a_companion_is_counted_and_removed_with_its_night_and_nothing_else_is() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = home_in(&dir);
        let rows = vec![7u8; 256 << 10];
        // A kept cluster's folder, marked; and one a doctored marker names, not marked.
        let companion = (tempfile::Builder::new()
            .prefix("reclaim-pg-test-")
            .tempdir())
        .unwrap_or_else(|e| panic!("{e}"));
        fs::write(companion.path().join(COMPANION_MARK), "").unwrap_or_else(|e| panic!("{e}"));
        fs::write(companion.path().join("rows"), &rows).unwrap_or_else(|e| panic!("{e}"));
        let stranger = (tempfile::Builder::new().prefix("not-reclaims-").tempdir())
            .unwrap_or_else(|e| panic!("{e}"));
        fs::write(stranger.path().join("rows"), &rows).unwrap_or_else(|e| panic!("{e}"));
        for (at_s, folder) in [(0, companion.path()), (10, stranger.path())] {
            let mut night =
                NightDir::create_in(&home, "reclaim run", "naive", Keep::Failed, at(at_s))
                    .unwrap_or_else(|e| panic!("{e}"));
            night.attach(folder);
            assert!(night.settle(true, "v", at(at_s + 1)).kept);
        }
        let listed = list(&home);
        assert_eq!(listed.len(), 2);
        assert!(listed[0].bytes >= 256 << 10, "{}", listed[0].bytes);
        assert!(listed[1].bytes < 256 << 10, "{}", listed[1].bytes);
        for night in &listed {
            remove(&home, &night.name).unwrap_or_else(|e| panic!("{e}"));
        }
        assert!(!companion.path().exists(), "the companion stays");
        assert!(
            stranger.path().join("rows").is_file(),
            "a stranger's folder went"
        );
    }

    #[test]
    fn only_reclaims_own_folders_are_removed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = home_in(&dir);
        ensure_home(&home).unwrap_or_else(|e| panic!("{e}"));
        let theirs = home.join("photos");
        fs::create_dir(&theirs).unwrap_or_else(|e| panic!("{e}"));
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap_or_else(|e| panic!("{e}"));
        fs::write(outside.join(MARKER), "{}").unwrap_or_else(|e| panic!("{e}"));
        for name in ["photos", "../outside", "nothing", "", "/etc"] {
            assert!(
                matches!(remove(&home, name), Err(RemoveError::NotKept(_))),
                "{name}"
            );
        }
        assert!(theirs.is_dir() && outside.is_dir());
        assert_eq!(prune(&home, 0), 0);
        assert!(theirs.is_dir());
    }
}
