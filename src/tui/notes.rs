//! Speaker notes (`--notes FILE`): each caption the night reaches, with the notes the scenario
//! gives it, appended to a file a second screen follows (`tail -f FILE`). Each line is written
//! whole and flushed at once.

use std::fs::File;
use std::io::{self, BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};

use crate::base::clock::SimTime;
use crate::base::paths::{self, PathKind};
use crate::error::{Context as _, Error};
use nix::fcntl::{Flock, FlockArg};

/// The first line of every notes file reclaim writes (then `: ` and the title): the only
/// existing file `--notes` appends to.
const FIRST_LINE: &str = "# reclaim speaker notes: ";

/// What a screen hands the notes, oldest first: the event loop writes it (a screen does no
/// I/O of its own).
#[derive(Debug, Clone, PartialEq)]
pub enum NoteLine {
    /// A night begins (`night 2, from 02:00`).
    Night(String),
    /// A caption reached at its moment: its text and its speaker notes, figures filled in.
    Caption {
        at: SimTime,
        text: String,
        notes: Option<String>,
    },
}

/// An open notes file, locked (`flock`) so two dashboards never interleave their nights in it.
#[derive(Debug)]
pub struct Notes {
    path: PathBuf,
    file: Flock<File>,
    title: String,
    /// The night's heading last written: a file made again starts with it.
    night: Option<String>,
    /// Why the notes stopped (a full disk): nothing more is written, and the dashboard ends
    /// saying so (exit 2) once the terminal is restored.
    failed: Option<io::Error>,
}

impl Notes {
    /// Checks `path` as `open` will, creating nothing: run before anything else starts.
    pub fn check(path: &Path, others: &[&Path], warehouses: &[&Path]) -> Result<(), Error> {
        let (resolved, new) = resolve(path, others, warehouses)?;
        if !new {
            // Held by another dashboard: refused now, not once the night has begun.
            let file = File::open(&resolved)
                .context(|| format!("cannot read the notes {}", paths::shown(path)))?;
            lock(file, path)?;
        }
        Ok(())
    }

    /// Opens `path` for the notes of `title`: a new file (created now, so `tail -F` can follow
    /// it), or a notes file reclaim wrote before (appended to). Anything else (a file reclaim
    /// did not write, a folder, a FIFO, a device, a dangling link, one of `others`, a notes
    /// file another reclaim is writing, a warehouse of `warehouses` or one of its companions) is
    /// refused and left as it is.
    pub fn open(
        path: &Path,
        title: &str,
        others: &[&Path],
        warehouses: &[&Path],
    ) -> Result<Self, Error> {
        let (resolved, new) = resolve(path, others, warehouses)?;
        let file = File::options()
            .append(true)
            .create_new(new)
            .open(&resolved)
            .context(|| format!("cannot write the notes to {}", paths::shown(path)))?;
        let mut notes = Self {
            path: resolved,
            file: lock(file, path)?,
            // A scenario's strings are written escaped: a second screen `tail -F`s this file.
            title: crate::base::text::escape_controls(title),
            night: None,
            failed: None,
        };
        if new {
            notes
                .write_header()
                .context(|| format!("cannot write the notes to {}", paths::shown(path)))?;
        }
        Ok(notes)
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The notes stopped: `error` is kept for the dashboard's last word.
    pub fn stop(&mut self, error: io::Error) {
        self.failed.get_or_insert(error);
    }

    /// Whether the notes stopped.
    #[must_use]
    pub fn stopped(&self) -> bool {
        self.failed.is_some()
    }

    /// Why the notes stopped, as the error the dashboard ends with (one line, exit 2): the
    /// captions after that moment are not in the file.
    pub fn failure(&mut self) -> Option<Error> {
        let source = self.failed.take()?;
        Some(Error::Io {
            context: format!(
                "the notes {} stopped (the captions after that are not in it)",
                paths::shown(&self.path)
            ),
            source,
        })
    }

    /// Appends one line of what a screen reached.
    pub fn write_line(&mut self, line: &NoteLine) -> io::Result<()> {
        match line {
            NoteLine::Night(what) => self.night(what),
            NoteLine::Caption { at, text, notes } => self.reached(*at, text, notes.as_deref()),
        }
    }

    /// A night starts (the first, or again after `n`, `s` or `R`): `what` says which.
    pub fn night(&mut self, what: &str) -> io::Result<()> {
        let text = format!(
            "\n== {}: {} ==\n",
            self.title,
            crate::base::text::escape_controls(what)
        );
        self.night = Some(text.clone());
        self.write(&text)
    }

    /// The night reached a caption at `at`: its text, then its notes indented under it.
    pub fn reached(&mut self, at: SimTime, caption: &str, notes: Option<&str>) -> io::Result<()> {
        let mut text = format!("\n{at}  {}\n", crate::base::text::escape_controls(caption));
        for line in notes.unwrap_or_default().lines().map(str::trim_end) {
            if !line.is_empty() {
                text.push_str("          ");
                text.push_str(&crate::base::text::escape_controls(line));
            }
            text.push('\n');
        }
        self.write(&text)
    }

    fn write_header(&mut self) -> io::Result<()> {
        let header = format!(
            "{FIRST_LINE}{}\n# each caption as the night reaches it, with what to say\n",
            self.title
        );
        self.write_raw(&header)
    }

    /// Appends `text`. A notes file deleted meanwhile (a second screen's `tail -F` waits for
    /// it) is made again; one replaced by another file is not written to.
    fn write(&mut self, text: &str) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt as _;
        match std::fs::symlink_metadata(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let file = File::options()
                    .append(true)
                    .create_new(true)
                    .open(&self.path)?;
                self.file = Flock::lock(file, FlockArg::LockExclusiveNonblock)
                    .map_err(|(_, errno)| io::Error::from(errno))?;
                self.write_header()?;
                if let Some(night) = self.night.clone().filter(|n| n != text) {
                    self.write_raw(&night)?;
                }
            }
            Err(e) => return Err(e),
            Ok(there) => {
                let ours = self.file.metadata()?;
                if (there.dev(), there.ino()) != (ours.dev(), ours.ino()) {
                    return Err(io::Error::other("it was replaced by another file"));
                }
            }
        }
        self.write_raw(text)
    }

    /// Appends `text` whole or not at all: a failed write (a full disk) is cut back to where
    /// the file ended, so no half line is left, and the data is synced so a disk that fills
    /// later (delayed allocation) fails here, where the screen can say so. Not a temporary file
    /// renamed into place, as exports are: the notes are a log a second screen follows with
    /// `tail -f`, which would lose the file at each rename.
    fn write_raw(&mut self, text: &str) -> io::Result<()> {
        let before = self.file.metadata()?.len();
        let written = self
            .file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.sync_data());
        if let Err(error) = written {
            let _ = self.file.set_len(before);
            return Err(error);
        }
        Ok(())
    }
}

/// Takes the notes file's lock, or says that another reclaim holds it.
fn lock(file: File, path: &Path) -> Result<Flock<File>, Error> {
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| {
        if errno == nix::errno::Errno::EWOULDBLOCK {
            Error::Refused(format!(
                "--notes {} is being written by another reclaim; give this one a file of its own",
                paths::shown(path)
            ))
        } else {
            Error::Io {
                context: format!("cannot lock the notes {}", paths::shown(path)),
                source: io::Error::from(errno),
            }
        }
    })
}

/// Where the notes go, and whether that file is new.
fn resolve(path: &Path, others: &[&Path], warehouses: &[&Path]) -> Result<(PathBuf, bool), Error> {
    const WHAT: &str = "--notes";
    let entry = paths::look(path).context(|| format!("cannot look at {}", path.display()))?;
    let (resolved, new) = match entry {
        PathKind::File(_) => (paths::existing_file(path, WHAT)?, false),
        _ => (
            paths::new_file(path, WHAT, "give --notes a new file")?,
            true,
        ),
    };
    for db in warehouses {
        paths::refuse_companion(&resolved, WHAT, &paths::resolved(db), None)?;
    }
    for other in others {
        if paths::same_file(&resolved, &paths::resolved(other)) {
            return Err(Error::Refused(format!(
                "--notes {} is the file {} names too; give the notes a file of their own",
                paths::shown(path),
                paths::shown(other)
            )));
        }
    }
    if !new && !written_by_reclaim(&resolved) {
        return Err(Error::Refused(format!(
            "--notes {} exists and is not a notes file reclaim wrote; give a new file \
             (tail -F follows it from the moment reclaim creates it)",
            paths::shown(path)
        )));
    }
    Ok((resolved, new))
}

fn written_by_reclaim(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut first = String::new();
    // At most 4 KiB: a huge file with no newline is not read whole to look at its start.
    BufReader::new(io::Read::take(file, 4096))
        .read_line(&mut first)
        .is_ok_and(|_| first.starts_with(FIRST_LINE))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario's title, captions and notes reach a terminal that `tail -F`s the file: no
    /// escape sequence of theirs is written raw.
    #[test]
    fn a_scenarios_control_characters_are_written_escaped() -> Result<(), Error> {
        let dir = tempfile::tempdir().context(|| "tempdir".into())?;
        let path = dir.path().join("notes.txt");
        let mut notes = Notes::open(&path, "t\u{1b}]0;TT\u{7}", &[], &[])?;
        notes.night("night\u{1b}[2J 1").context(|| "write".into())?;
        notes
            .reached(
                SimTime(7200.0),
                "cap\u{1b}[31mRED\u{9b}2J",
                Some("NOTES\u{1b}]0;pwned\u{7}\u{202e}"),
            )
            .context(|| "write".into())?;
        let text = std::fs::read_to_string(&path).context(|| "read".into())?;
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(text.contains("cap\\u{1b}[31mRED\\u{9b}2J"), "{text}");
        assert!(
            text.contains("NOTES\\u{1b}]0;pwned\\u{7}\\u{202e}"),
            "{text}"
        );
        assert!(
            text.starts_with("# reclaim speaker notes: t\\u{1b}]0;TT\\u{7}\n"),
            "{text}"
        );
        Ok(())
    }

    /// Notes that cannot be written any more stop, and say why once, as an error.
    #[test]
    fn notes_that_cannot_be_written_stop_and_say_so() -> Result<(), Error> {
        let dir = tempfile::tempdir().context(|| "tempdir".into())?;
        let path = dir.path().join("notes.txt");
        let mut notes = Notes::open(&path, "The incident", &[], &[])?;
        // Replaced by another file: never written to.
        let other = dir.path().join("other.txt");
        std::fs::write(&other, "mine\n").context(|| "write".into())?;
        std::fs::rename(&other, &path).context(|| "rename".into())?;
        let line = NoteLine::Night("night 1".into());
        let Err(e) = notes.write_line(&line) else {
            panic!("a replaced notes file was written to");
        };
        assert!(!notes.stopped());
        notes.stop(e);
        assert!(notes.stopped());
        let said = notes.failure().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            said.starts_with("the notes ") && said.contains("stopped (the captions after that are not in it): it was replaced by another file"),
            "{said}"
        );
        assert!(notes.failure().is_none(), "said once");
        assert_eq!(
            std::fs::read_to_string(&path).context(|| "read".into())?,
            "mine\n"
        );
        Ok(())
    }

    #[test]
    fn a_new_file_gets_a_header_and_each_caption_with_its_notes() -> Result<(), Error> {
        let dir = tempfile::tempdir().context(|| "tempdir".into())?;
        let path = dir.path().join("notes.txt");
        let mut notes = Notes::open(&path, "The incident", &[], &[])?;
        notes.night("night 1").context(|| "write".into())?;
        notes
            .reached(
                SimTime(7200.0 + 707.0),
                "The host kills it.",
                Some("Ask the room.\n\nThen wait."),
            )
            .context(|| "write".into())?;
        let text = std::fs::read_to_string(&path).context(|| "read".into())?;
        assert_eq!(
            text,
            "# reclaim speaker notes: The incident\n# each caption as the night reaches it, with \
             what to say\n\n== The incident: night 1 ==\n\n02:11:47  The host kills it.\n          \
             Ask the room.\n\n          Then wait.\n"
        );
        // A second session appends to a file reclaim wrote.
        drop(notes);
        let mut again = Notes::open(&path, "The incident", &[], &[])?;
        again.night("night 1").context(|| "write".into())?;
        let text = std::fs::read_to_string(&path).context(|| "read".into())?;
        assert!(
            text.ends_with("Then wait.\n\n== The incident: night 1 ==\n"),
            "{text}"
        );
        // While one dashboard writes it, a second is refused, before and at opening.
        let held = Notes::open(&path, "The incident", &[], &[]);
        assert!(
            matches!(&held, Err(Error::Refused(m)) if m.contains("another reclaim")),
            "{held:?}"
        );
        assert!(Notes::check(&path, &[], &[]).is_err());
        // Deleted while in use (a `tail -F` waits for it): made again, header first.
        std::fs::remove_file(&path).context(|| "rm".into())?;
        again.night("night 2").context(|| "write".into())?;
        let text = std::fs::read_to_string(&path).context(|| "read".into())?;
        assert!(
            text.starts_with("# reclaim speaker notes: The incident\n"),
            "{text}"
        );
        assert!(text.ends_with("== The incident: night 2 ==\n"), "{text}");
        Ok(())
    }

    #[test]
    fn a_file_reclaim_did_not_write_is_refused_and_left_alone() -> Result<(), Error> {
        let dir = tempfile::tempdir().context(|| "tempdir".into())?;
        let path = dir.path().join("essay.txt");
        std::fs::write(&path, "my essay\n").context(|| "write".into())?;
        let refused = Notes::open(&path, "t", &[], &[]);
        assert!(
            matches!(&refused, Err(Error::Refused(m)) if m.contains("not a notes file")),
            "{refused:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).context(|| "read".into())?,
            "my essay\n"
        );
        // A first line that only looks like one.
        let sneaky = dir.path().join("sneaky.md");
        std::fs::write(&sneaky, "# reclaim speaker notesXYZ\n").context(|| "write".into())?;
        assert!(Notes::open(&sneaky, "t", &[], &[]).is_err());
        let record = dir.path().join("night.jsonl");
        let refused = Notes::open(&record, "t", &[&record], &[]);
        assert!(matches!(refused, Err(Error::Refused(_))), "{refused:?}");
        assert!(!record.exists());
        assert!(Notes::open(dir.path(), "t", &[], &[]).is_err());
        // A recorded night's warehouse and its companions, there or not yet, are not notes.
        let db = dir.path().join("night1-1-naive.db");
        std::fs::write(&db, "").context(|| "write".into())?;
        for name in [
            "night1-1-naive.db",
            "night1-1-naive.db-journal",
            "night1-1-naive.db-wal",
        ] {
            let refused = Notes::open(&dir.path().join(name), "t", &[], &[&db]);
            assert!(
                matches!(refused, Err(Error::Path(_))),
                "{name}: {refused:?}"
            );
        }
        assert!(!dir.path().join("night1-1-naive.db-journal").exists());
        assert!(!dir.path().join("night1-1-naive.db-wal").exists());
        assert_eq!(std::fs::read(&db).context(|| "read".into())?, b"");
        Ok(())
    }
}
