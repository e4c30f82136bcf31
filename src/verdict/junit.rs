//! `--junit FILE`: results as JUnit XML, the format CI test reporters read (one `<testcase>` per
//! test of `prove`, per strategy x point of `map`). The file is reclaim's: a new path, or one a
//! previous run wrote (its first line says so); it is written aside and renamed into place.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::base::paths::{self, PathError, PathKind};

/// The first line of every file reclaim writes, by which it knows one of its own.
const MARK: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><!-- reclaim junit -->";

/// One test's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The group (`prove.guarded`, `map.naive`).
    pub class: String,
    pub name: String,
    pub outcome: CaseResult,
    /// Said in the test's output (its figures).
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseResult {
    Passed,
    /// The data (or the test) failed: the message says how.
    Failed(String),
    /// The test did not apply, or was not run.
    Skipped(String),
}

/// Where `--junit` writes: the resolved path, and whether it replaces a file reclaim wrote
/// before (a new path is never allowed to replace anything that appeared there meanwhile).
#[derive(Debug, Clone)]
pub struct Target {
    pub path: PathBuf,
    replaces: bool,
}

impl Target {
    #[must_use]
    pub fn display(&self) -> std::path::Display<'_> {
        self.path.display()
    }
}

/// Checks `--junit FILE` before anything starts: a new file in a writable folder, or a JUnit
/// file reclaim wrote before, at that very path.
pub fn check_path(path: &Path) -> Result<Target, PathError> {
    // A link is refused whatever it names, a file reclaim wrote included: replacing the file it
    // resolves to would write wherever whoever planted the link chose.
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(PathError::Link {
            what: "--junit",
            path: paths::shown(path),
        });
    }
    match paths::look(path) {
        Ok(PathKind::File(_)) if written_by_reclaim(path) => Ok(Target {
            path: paths::file_or_new(path, "--junit")?,
            replaces: true,
        }),
        _ => Ok(Target {
            path: paths::new_file(
                path,
                "--junit",
                "give --junit a new file (or one reclaim wrote before)",
            )?,
            replaces: false,
        }),
    }
}

fn written_by_reclaim(path: &Path) -> bool {
    use std::io::Read as _;
    let mut head = vec![0; MARK.len()];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == MARK.as_bytes())
}

/// The XML for one suite of `cases`.
#[must_use]
pub fn render(suite: &str, cases: &[Case]) -> String {
    let failures = cases
        .iter()
        .filter(|c| matches!(c.outcome, CaseResult::Failed(_)))
        .count();
    let skipped = cases
        .iter()
        .filter(|c| matches!(c.outcome, CaseResult::Skipped(_)))
        .count();
    let mut xml = String::new();
    let _ = writeln!(xml, "{MARK}");
    let _ = writeln!(
        xml,
        "<testsuites name=\"reclaim\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
        cases.len()
    );
    let _ = writeln!(
        xml,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\" errors=\"0\">",
        escape(suite),
        cases.len()
    );
    for case in cases {
        let _ = write!(
            xml,
            "    <testcase classname=\"{}\" name=\"{}\">",
            escape(&case.class),
            escape(&case.name)
        );
        match &case.outcome {
            CaseResult::Passed => {}
            CaseResult::Failed(message) => {
                let _ = write!(
                    xml,
                    "<failure message=\"{}\">{}</failure>",
                    escape(message),
                    escape(&case.detail)
                );
            }
            CaseResult::Skipped(message) => {
                let _ = write!(xml, "<skipped message=\"{}\"/>", escape(message));
            }
        }
        let _ = writeln!(
            xml,
            "<system-out>{}</system-out></testcase>",
            escape(&case.detail)
        );
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    xml
}

/// Writes the suite to the target (checked by `check_path`): aside in the same folder, through
/// the file's own handle, then renamed into place, so a reader never sees half a file and a
/// failed write leaves the old one whole; a new path is never put over a file that appeared
/// there meanwhile.
pub fn write(target: &Target, suite: &str, cases: &[Case]) -> std::io::Result<()> {
    use std::io::Write as _;
    let xml = render(suite, cases);
    let folder = target
        .path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut aside = tempfile::Builder::new()
        .prefix(".reclaim-junit-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(
            crate::base::fsafe::KEPT_FILE_MODE,
        ))
        .tempfile_in(folder)?;
    aside.write_all(xml.as_bytes())?;
    aside.as_file().sync_all()?;
    if target.replaces {
        aside.persist(&target.path).map_err(|e| e.error)?;
    } else {
        aside.persist_noclobber(&target.path).map_err(|e| e.error)?;
    }
    Ok(())
}

/// Text as XML character data or an attribute value: markup escaped, and the characters XML
/// 1.0 cannot hold (controls other than tab and newline) written as `\u{..}`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' => out.push(c),
            // Not characters XML 1.0 can hold, written out.
            c if c.is_control() || matches!(c, '\u{fffe}' | '\u{ffff}') => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suite_counts_its_failures_and_escapes_what_it_quotes() {
        let cases = vec![
            Case {
                class: "prove.exec".into(),
                name: "kill <3>".into(),
                outcome: CaseResult::Failed("DATA WRONG (1 missing)".into()),
                detail: "199 rows & \u{1b}[2J".into(),
            },
            Case {
                class: "prove.exec".into(),
                name: "two workers".into(),
                outcome: CaseResult::Passed,
                detail: String::new(),
            },
            Case {
                class: "prove.exec".into(),
                name: "wiped".into(),
                outcome: CaseResult::Skipped("no checkpoint table".into()),
                detail: String::new(),
            },
        ];
        let xml = render("reclaim prove", &cases);
        let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
        let suite = doc
            .descendants()
            .find(|n| n.has_tag_name("testsuite"))
            .unwrap_or_else(|| panic!("{xml}"));
        assert_eq!(suite.attribute("tests"), Some("3"));
        assert_eq!(suite.attribute("failures"), Some("1"));
        assert_eq!(suite.attribute("skipped"), Some("1"));
        let failure = doc
            .descendants()
            .find(|n| n.has_tag_name("failure"))
            .unwrap_or_else(|| panic!("{xml}"));
        assert_eq!(failure.attribute("message"), Some("DATA WRONG (1 missing)"));
        assert_eq!(failure.text(), Some("199 rows & \\u{1b}[2J"));
        assert!(xml.starts_with(MARK));
    }

    #[test]
    fn a_file_reclaim_wrote_is_replaced_at_its_own_path_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let written = dir.path().join("a.xml");
        let first = check_path(&written).unwrap_or_else(|e| panic!("{e}"));
        write(&first, "reclaim prove", &[]).unwrap_or_else(|e| panic!("{e}"));
        let again = check_path(&written).unwrap_or_else(|e| panic!("{e}"));
        assert!(again.replaces, "{}", again.display());
        let before = std::fs::read(&written).unwrap_or_else(|e| panic!("{e}"));
        for (name, to) in [
            ("b.xml", written.clone()),
            ("c.xml", dir.path().join("nowhere.xml")),
        ] {
            let link = dir.path().join(name);
            std::os::unix::fs::symlink(&to, &link).unwrap_or_else(|e| panic!("{e}"));
            let refused = check_path(&link).map(|t| t.path);
            assert!(
                matches!(refused, Err(PathError::Link { .. })),
                "{name}: {refused:?}"
            );
        }
        assert_eq!(std::fs::read(&written).ok(), Some(before));
    }
}
