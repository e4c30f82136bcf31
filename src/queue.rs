//! A job's queue: the keys of its work, in order. Every verdict judges a job against its queue:
//! a key of the queue with no row is missing, a row whose key is not in the queue is outside it.
//!
//! reclaim's own workers always work through the postmortem's `task-000 .. task-NNN`. Someone
//! else's job (`--exec`) names its work its own way, and says so with `--key-format 'ord-%05d'`,
//! `--keys-from FILE` or `--keys-sql "SELECT ..."`; the job can read the queue back from the file
//! `RECLAIM_KEYS_FILE` names instead of computing it.

use std::fmt;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::sync::Arc;

use thiserror::Error;

/// The most keys a listed queue may hold (a formatted one holds up to `limits::MAX_ITEMS`).
pub const MAX_LISTED: usize = 10_000_000;
/// The longest key, in bytes: a key is a name, not a document.
pub const MAX_KEY_BYTES: usize = 1_000;
/// The largest keys file or `-` read, in bytes.
const MAX_KEYS_BYTES: u64 = 256 << 20;

/// The keys of a job's work.
#[derive(Clone, PartialEq, Eq)]
pub enum Queue {
    /// `prefix`, the index zero-padded to at least `width` digits, `suffix`: the default
    /// `task-%03d` (the spelling `task::task_id` writes) or the user's `--key-format`.
    Formatted(Arc<KeyFormat>, u64),
    /// Keys listed one by one (`--keys-from`, `--keys-sql`), in the queue's order.
    Listed(Arc<Listed>),
}

/// `prefix` + index padded with zeros to `width` + `suffix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFormat {
    prefix: String,
    width: usize,
    suffix: String,
    /// As the user wrote it, for messages.
    written: String,
}

/// Listed keys and where each stands, held compactly: 10 million keys of 8 bytes cost about
/// 200 MB, not one `String` and one hash-map entry each (1.5 GB).
pub struct Listed {
    /// Every key, one after the other, with no separator.
    blob: String,
    /// Where each key ends in `blob`, in the queue's order.
    ends: Vec<u32>,
    /// An open-addressing hash table of `index + 1` (0: empty), a power of two long, at most
    /// two thirds full: where each key stands.
    table: Vec<u32>,
    /// Where the list came from, for messages: `keys.txt`, `--keys-sql`.
    origin: String,
}

impl PartialEq for Listed {
    fn eq(&self, other: &Self) -> bool {
        self.blob == other.blob && self.ends == other.ends && self.origin == other.origin
    }
}

impl Eq for Listed {}

impl Listed {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn key(&self, index: usize) -> Option<&str> {
        let end = *self.ends.get(index)? as usize;
        let start = index.checked_sub(1).map_or(0, |i| self.ends[i] as usize);
        self.blob.get(start..end)
    }

    /// The table's first slot for `key` (the table's length is a power of two).
    fn slot(&self, key: &str) -> usize {
        use std::hash::{BuildHasher as _, BuildHasherDefault};
        // A fixed hasher: the same keys make the same table on every run.
        let hash = BuildHasherDefault::<std::hash::DefaultHasher>::default().hash_one(key);
        (hash as usize) & (self.table.len() - 1)
    }

    /// Where `key` stands, or the empty slot where it would go.
    fn find(&self, key: &str) -> Result<u64, usize> {
        let mask = self.table.len() - 1;
        let mut slot = self.slot(key);
        loop {
            match self.table[slot] {
                0 => return Err(slot),
                stored => {
                    let index = stored as usize - 1;
                    if self.key(index) == Some(key) {
                        return Ok(index as u64);
                    }
                }
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Adds `key` as the next key; the index of the key it repeats, if it does.
    fn push(&mut self, key: &str) -> Result<(), u64> {
        self.blob.push_str(key);
        // The blob stays under MAX_KEYS_BYTES (256 MiB) and the count under MAX_LISTED.
        self.ends
            .push(u32::try_from(self.blob.len()).unwrap_or(u32::MAX));
        let index = self.ends.len() - 1;
        match self.find(key) {
            Ok(first) => Err(first),
            Err(slot) => {
                self.table[slot] = u32::try_from(index + 1).unwrap_or(u32::MAX);
                Ok(())
            }
        }
    }
}

/// Why a queue could not be made; each names the option and what to do.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum QueueError {
    #[error(
        "--key-format {0:?} needs exactly one integer conversion (%d or %05d; %% for a literal %)"
    )]
    Format(String),
    #[error("{origin}: {detail}")]
    List { origin: String, detail: String },
    /// The keys file cannot be read as one (a FIFO, a folder, missing): the path's own refusal.
    #[error("{0}")]
    Path(String),
}

impl KeyFormat {
    /// Parses a printf-like format with exactly one `%d` or `%0Nd` (`%%` is a literal `%`).
    pub fn parse(text: &str) -> Result<Self, QueueError> {
        let wrong = || QueueError::Format(text.to_string());
        let mut prefix = String::new();
        let mut suffix = String::new();
        let mut width = None;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            let out = if width.is_some() {
                &mut suffix
            } else {
                &mut prefix
            };
            if c != '%' {
                out.push(c);
                continue;
            }
            if chars.peek() == Some(&'%') {
                chars.next();
                out.push('%');
                continue;
            }
            if width.is_some() {
                return Err(wrong());
            }
            let mut digits = String::new();
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                digits.push(d);
                chars.next();
            }
            if chars.next() != Some('d') || (!digits.is_empty() && !digits.starts_with('0')) {
                return Err(wrong());
            }
            let n: usize = if digits.is_empty() {
                1
            } else {
                digits.parse().map_err(|_| wrong())?
            };
            if n > 30 {
                return Err(wrong());
            }
            width = Some(n.max(1));
        }
        let width = width.ok_or_else(wrong)?;
        // Every key must fit in a key (and in a crash point's line): the longest number is 20
        // digits.
        if text.chars().any(char::is_control)
            || prefix.len() + suffix.len() + width.max(20) > MAX_KEY_BYTES
        {
            return Err(wrong());
        }
        Ok(Self {
            prefix,
            width,
            suffix,
            written: text.to_string(),
        })
    }

    /// The postmortem's spelling, `task-%03d`.
    #[must_use]
    pub fn tasks() -> Self {
        Self {
            prefix: "task-".into(),
            width: 3,
            suffix: String::new(),
            written: "task-%03d".into(),
        }
    }

    #[must_use]
    pub fn key(&self, index: u64) -> String {
        format!(
            "{}{index:0width$}{}",
            self.prefix,
            self.suffix,
            width = self.width
        )
    }

    /// The index of a key spelled exactly as `key` spells it; `None` for any other spelling
    /// (`ord-1` is not `ord-00001`'s row).
    #[must_use]
    pub fn index_of(&self, key: &str) -> Option<u64> {
        let digits = key.strip_prefix(&self.prefix)?.strip_suffix(&self.suffix)?;
        if digits.len() < self.width || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let index: u64 = digits.parse().ok()?;
        // A longer spelling than the padding needs (`ord-000042` for width 5) is not the key.
        (digits.len() == self.width || !digits.starts_with('0')).then_some(index)
    }
}

impl Queue {
    /// The postmortem's queue: `task-000 .. task-(items-1)`.
    #[must_use]
    pub fn tasks(items: u64) -> Self {
        Self::Formatted(Arc::new(KeyFormat::tasks()), items)
    }

    /// `items` keys in the user's format.
    #[must_use]
    pub fn formatted(format: KeyFormat, items: u64) -> Self {
        Self::Formatted(Arc::new(format), items)
    }

    /// A listed queue: every key non-empty, at most `MAX_KEY_BYTES`, without control characters,
    /// and once only; at least one key.
    pub fn listed(keys: &[String], origin: &str) -> Result<Self, QueueError> {
        Self::listed_from(keys.iter().map(String::as_str), origin)
    }

    /// `listed`, read from `keys` (gone over twice: first to size what holds them, so a file's
    /// keys are never held one `String` each on their way in).
    fn listed_from<'a>(
        keys: impl Iterator<Item = &'a str> + Clone,
        origin: &str,
    ) -> Result<Self, QueueError> {
        let (count, bytes) = keys.clone().fold((0, 0), |(n, b), k| (n + 1, b + k.len()));
        let wrong = |detail: String| QueueError::List {
            origin: origin.to_string(),
            detail,
        };
        if count == 0 {
            return Err(wrong("holds no key: a queue needs at least one".into()));
        }
        if count > MAX_LISTED {
            return Err(wrong(format!(
                "holds {count} keys; at most {MAX_LISTED} are judged"
            )));
        }
        let mut listed = Listed {
            blob: String::with_capacity(bytes),
            ends: Vec::with_capacity(count),
            table: vec![0; (count * 3 / 2 + 1).next_power_of_two()],
            origin: origin.to_string(),
        };
        for (n, key) in keys.enumerate() {
            let shown = crate::base::text::escape_controls(key);
            if key.is_empty() {
                return Err(wrong(format!("key {} is empty", n + 1)));
            }
            if key.len() > MAX_KEY_BYTES {
                return Err(wrong(format!(
                    "key {} is {} bytes long; a key is at most {MAX_KEY_BYTES}",
                    n + 1,
                    key.len()
                )));
            }
            if key.chars().any(char::is_control) {
                return Err(wrong(format!(
                    "key {} ({shown}) holds a control character",
                    n + 1
                )));
            }
            if let Err(first) = listed.push(key) {
                return Err(wrong(format!(
                    "holds {shown} twice (keys {} and {}); each unit of work is one key",
                    first + 1,
                    n + 1
                )));
            }
        }
        Ok(Self::Listed(Arc::new(listed)))
    }

    /// The keys of a file, one a line (`-`: standard input); blank lines and a final newline
    /// are not keys, a `\r` before a newline is dropped.
    pub fn from_file(path: &Path) -> Result<Self, QueueError> {
        let origin = path.display().to_string();
        let wrong = |detail: String| QueueError::List {
            origin: format!(
                "--keys-from {}",
                crate::base::text::escape_controls(&origin)
            ),
            detail,
        };
        let mut bytes = Vec::new();
        if origin == "-" {
            std::io::stdin()
                .take(MAX_KEYS_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| wrong(e.to_string()))?;
        } else {
            let real = crate::base::paths::existing_file(path, "--keys-from")
                .map_err(|e| QueueError::Path(e.to_string()))?;
            // Opened without waiting (a FIFO swapped in after the check would block) and read
            // only if what was opened is a regular file.
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
                .open(real)
                .map_err(|e| wrong(e.to_string()))?;
            if !file.metadata().is_ok_and(|m| m.is_file()) {
                return Err(wrong("is not a regular file".into()));
            }
            file.take(MAX_KEYS_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| wrong(e.to_string()))?;
        }
        if bytes.len() as u64 > MAX_KEYS_BYTES {
            return Err(wrong(format!(
                "is over {} MiB; a keys file is one key a line",
                MAX_KEYS_BYTES >> 20
            )));
        }
        let text = String::from_utf8(bytes).map_err(|_| wrong("is not UTF-8 text".into()))?;
        let keys = text
            .lines()
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .filter(|l| !l.trim().is_empty());
        Self::listed_from(keys, &format!("--keys-from {origin}"))
    }

    #[must_use]
    pub fn len(&self) -> u64 {
        match self {
            Self::Formatted(_, items) => *items,
            Self::Listed(listed) => listed.len() as u64,
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The key at `index` (the caller keeps `index < len`).
    #[must_use]
    pub fn key(&self, index: u64) -> String {
        match self {
            Self::Formatted(format, _) => format.key(index),
            Self::Listed(listed) => usize::try_from(index)
                .ok()
                .and_then(|i| listed.key(i))
                .unwrap_or_default()
                .to_string(),
        }
    }

    /// Where `key` stands in the queue; `None` when it is not one of the queue's keys.
    #[must_use]
    pub fn index_of(&self, key: &str) -> Option<u64> {
        match self {
            Self::Formatted(format, items) => format.index_of(key).filter(|i| i < items),
            Self::Listed(listed) => listed.find(key).ok(),
        }
    }

    /// The `--key-format` a formatted queue was written with (`None` for a listed one).
    #[must_use]
    pub fn format_text(&self) -> Option<&str> {
        match self {
            Self::Formatted(format, _) => Some(&format.written),
            Self::Listed(_) => None,
        }
    }

    /// Whether this is the postmortem's own `task-NNN` queue.
    #[must_use]
    pub fn is_tasks(&self) -> bool {
        matches!(self, Self::Formatted(format, _) if **format == KeyFormat::tasks())
    }

    /// Where a key typed by the user stands (`--kill-at-task ord-00042`): the key itself, or, in
    /// a formatted queue, its bare number (`42`), as `--kill-at-task 111` always worked.
    #[must_use]
    pub fn resolve(&self, typed: &str) -> Option<u64> {
        if let Some(index) = self.index_of(typed) {
            return Some(index);
        }
        match self {
            // `task-111` or `111` for the postmortem's queue; only the bare number for another
            // (`task-050` is no key of `ord-%05d`).
            Self::Formatted(format, items) => {
                let index = if **format == KeyFormat::tasks() {
                    crate::task::parse_task_id(typed)?
                } else if !typed.is_empty() && typed.bytes().all(|b| b.is_ascii_digit()) {
                    typed.parse().ok()?
                } else {
                    return None;
                };
                (index < *items).then_some(index)
            }
            Self::Listed(_) => None,
        }
    }

    /// `task-000 .. task-199`, `ord-00000 .. ord-00049`, `50 keys from --keys-from keys.txt
    /// (a-1 .. z-9)`: the queue in a few words.
    #[must_use]
    pub fn describe(&self) -> String {
        let n = self.len();
        let ends = if n == 0 {
            "empty".to_string()
        } else {
            format!(
                "{} .. {}",
                crate::base::text::escape_controls(&self.key(0)),
                crate::base::text::escape_controls(&self.key(n - 1))
            )
        };
        match self {
            Self::Formatted(format, _) if **format == KeyFormat::tasks() => ends,
            Self::Formatted(format, _) => format!(
                "{ends} (--key-format {})",
                crate::base::text::escape_controls(&format.written)
            ),
            Self::Listed(listed) => format!(
                "{} from {} ({ends})",
                crate::base::text::count(n, "key", "keys"),
                crate::base::text::escape_controls(&listed.origin)
            ),
        }
    }

    /// The queue written one key a line, for `RECLAIM_KEYS_FILE`.
    pub fn write_lines(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut buffered = std::io::BufWriter::new(out);
        for i in 0..self.len() {
            writeln!(buffered, "{}", self.key(i))?;
        }
        buffered.flush()
    }
}

impl fmt::Debug for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl serde::Serialize for Queue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_queue_spells_keys_as_task_id_does() {
        let q = Queue::tasks(1200);
        for i in [0, 7, 199, 999, 1000, 1199] {
            assert_eq!(q.key(i), crate::task::task_id(i));
            assert_eq!(q.index_of(&q.key(i)), Some(i));
            assert_eq!(
                q.index_of(&q.key(i)),
                crate::task::canonical_index(&q.key(i))
            );
        }
        for other in [
            "task-01",
            "task-0000",
            "task-0199",
            "199",
            "task-1200",
            "TASK-001",
        ] {
            assert_eq!(q.index_of(other), None, "{other}");
        }
        assert!(q.is_tasks());
        assert_eq!(q.describe(), "task-000 .. task-1199");
    }

    #[test]
    fn a_key_format_has_one_integer_conversion() {
        let f = KeyFormat::parse("ord-%05d").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.key(42), "ord-00042");
        assert_eq!(f.index_of("ord-00042"), Some(42));
        assert_eq!(f.index_of("ord-42"), None);
        assert_eq!(f.index_of("ord-000042"), None);
        assert_eq!(f.index_of("ord-123456"), Some(123_456));
        let bare = KeyFormat::parse("%d").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(bare.key(0), "0");
        assert_eq!(bare.index_of("10"), Some(10));
        assert_eq!(bare.index_of("010"), None);
        let pct = KeyFormat::parse("%d%%").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pct.key(5), "5%");
        for bad in ["ord", "%s", "%d-%d", "%5d", "%05x", "%", "a%0d%", "x\n%d"] {
            assert!(KeyFormat::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_listed_queue_refuses_empty_long_control_and_twice() {
        let q = Queue::listed(&["b".into(), "a".into()], "t").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(q.index_of("a"), Some(1));
        assert_eq!(q.index_of("c"), None);
        assert_eq!(q.resolve("b"), Some(0));
        assert_eq!(q.resolve("0"), None);
        assert!(Queue::listed(&[], "t").is_err());
        let orders = Queue::formatted(
            KeyFormat::parse("ord-%05d").unwrap_or_else(|e| panic!("{e}")),
            100,
        );
        assert_eq!(orders.resolve("ord-00050"), Some(50));
        assert_eq!(orders.resolve("50"), Some(50));
        assert_eq!(orders.resolve("task-050"), None);
        assert_eq!(orders.resolve("ord-00100"), None);
        assert_eq!(Queue::tasks(200).resolve("task-111"), Some(111));
        assert_eq!(Queue::tasks(200).resolve("111"), Some(111));
        assert!(Queue::listed(&["a".into(), "a".into()], "t").is_err());
        assert!(Queue::listed(&["a\u{1b}]".into()], "t").is_err());
        assert!(Queue::listed(&["x".repeat(MAX_KEY_BYTES + 1)], "t").is_err());
        let said = Queue::listed(&["a".into(), "a".into()], "keys.txt")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(said.contains("holds a twice (keys 1 and 2)"), "{said}");
    }
}
