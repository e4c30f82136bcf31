//! The job's unit of work: task ids, their deterministic payloads and idempotency keys.

use sha2::{Digest, Sha256};

/// Segments an enrichment can assign; the choice depends only on the task, so reruns agree.
const SEGMENTS: [&str; 6] = ["amber", "birch", "cobalt", "dune", "ember", "fjord"];

/// `task-000` .. `task-199`: zero-padded to at least three digits, as in the postmortem.
#[must_use]
pub fn task_id(index: u64) -> String {
    format!("task-{index:03}")
}

/// Parses `task-111` (or a bare `111`) back to its index: lenient, for what a user types
/// (`--kill-at-task 111`). Rows are judged by `canonical_index`.
#[must_use]
pub fn parse_task_id(text: &str) -> Option<u64> {
    let digits = text.strip_prefix("task-").unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The index of a task id written exactly as `task_id` writes it, and `None` for any other
/// spelling (`task-01`, `task-0000`, `111`, ` task-001`): a row keyed `task-01` is not the row of
/// task 1, so the verdict must not count it as one.
#[must_use]
pub fn canonical_index(text: &str) -> Option<u64> {
    let digits = text.strip_prefix("task-")?;
    if digits.len() < 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let index: u64 = digits.parse().ok()?;
    (task_id(index) == text).then_some(index)
}

/// The "enrichment" a worker computes for a task: small, cheap and the same on every run, so a
/// rerun produces the same payload and therefore the same idempotency key.
#[must_use]
pub fn payload(index: u64) -> String {
    // A multiplicative hash spreads neighbouring tasks over segments and scores.
    let mixed = index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let segment = SEGMENTS[(mixed >> 59) as usize % SEGMENTS.len()];
    let score = (mixed >> 32) % 1000;
    format!("segment={segment} score={score}")
}

/// A kill or crash aimed at a task the queue does not have: it would never happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} {} is beyond the queue of {items} items ({} is the last task); it would never happen",
    task_id(*task),
    task_id(items.saturating_sub(1))
)]
pub struct BeyondQueue {
    /// The flag or scenario field that named the task.
    pub what: String,
    pub task: u64,
    pub items: u64,
}

/// Refuses a kill or crash aimed at a task the queue does not have. The one check of a task
/// against the queue, for flags and scenarios alike.
pub fn check_in_queue(what: &str, task: u64, items: u64) -> Result<(), BeyondQueue> {
    if task < items {
        Ok(())
    } else {
        Err(BeyondQueue {
            what: what.to_string(),
            task,
            items,
        })
    }
}

/// The deterministic idempotency key: the task id, a colon, then sha256 of `task_id:payload` in
/// hex (the postmortem's key).
///
/// The task-id prefix is for the UNIQUE index: a bare hash lands each insert on a random page of
/// the index, so a batch of 100 rows dirtied about 100 index pages and the WAL carried each one;
/// with the prefix, neighbouring tasks sort together and a batch fills a page or two
/// (BENCHMARKS.md, "Worker throughput").
#[must_use]
pub fn idem_key(task_id: &str, payload: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hasher = Sha256::new();
    hasher.update(task_id.as_bytes());
    hasher.update(b":");
    hasher.update(payload.as_bytes());
    let digest = hasher.finalize();
    let mut key = String::with_capacity(task_id.len() + 1 + 64);
    key.push_str(task_id);
    key.push(':');
    for byte in digest {
        key.push(char::from(HEX[usize::from(byte >> 4)]));
        key.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    key
}

/// A set of task indices below a bound, one bit each: what a worker found checkpointed, what
/// the observer has seen.
#[derive(Debug, Clone, Default)]
pub struct TaskBits {
    words: Vec<u64>,
}

impl TaskBits {
    /// An empty set of the tasks of a queue of `len` items.
    #[must_use]
    pub fn with_len(len: u64) -> Self {
        Self {
            words: vec![0; len.div_ceil(64) as usize],
        }
    }

    /// The set of the tasks of a queue of `items` among `ids` (spelled as `parse_task_id`
    /// reads them); other ids are left out.
    pub fn of<'a>(ids: impl IntoIterator<Item = &'a str>, items: u64) -> Self {
        let mut bits = Self::with_len(items);
        for id in ids {
            bits.insert_id(id, items);
        }
        bits
    }

    /// Adds the task named `id` if it is one of the first `items`.
    pub fn insert_id(&mut self, id: &str, items: u64) {
        if let Some(index) = parse_task_id(id).filter(|&i| i < items) {
            self.set(index);
        }
    }

    /// Sets bit `i` (below the bound); returns whether it was already set.
    pub fn set(&mut self, i: u64) -> bool {
        let (word, bit) = ((i / 64) as usize, i % 64);
        let mask = 1u64 << bit;
        let was = self.words[word] & mask != 0;
        self.words[word] |= mask;
        was
    }

    #[must_use]
    pub fn get(&self, i: u64) -> bool {
        self.words
            .get((i / 64) as usize)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    /// The bits set here and not in `other`.
    #[must_use]
    pub fn without(&self, other: &Self) -> Self {
        Self {
            words: (self.words.iter().enumerate())
                .map(|(i, w)| w & !other.words.get(i).copied().unwrap_or(0))
                .collect(),
        }
    }

    /// How many bits are set here and not in `other`.
    #[must_use]
    pub fn count_not_in(&self, other: &Self) -> u64 {
        (self.words.iter().enumerate())
            .map(|(i, w)| u64::from((w & !other.words.get(i).copied().unwrap_or(0)).count_ones()))
            .sum()
    }

    /// Whether every bit set here is set in `other` too.
    #[must_use]
    pub fn within(&self, other: &Self) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_padded_to_three_digits_and_round_trip() {
        assert_eq!(task_id(7), "task-007");
        assert_eq!(task_id(199), "task-199");
        assert_eq!(task_id(123_456), "task-123456");
        assert_eq!(parse_task_id("task-111"), Some(111));
        assert_eq!(parse_task_id("42"), Some(42));
        assert_eq!(parse_task_id("task-"), None);
        assert_eq!(parse_task_id("task-1x"), None);
    }

    #[test]
    fn a_set_of_tasks_holds_the_queues_own_and_leaves_out_the_rest() {
        let set = TaskBits::of(["task-000", "task-063", "task-064", "task-200", "x"], 200);
        let held: Vec<u64> = (0..200).filter(|&i| set.get(i)).collect();
        assert_eq!(held, [0, 63, 64]);
        assert!(!set.get(200), "beyond the queue");
        let mut more = set.clone();
        assert!(!more.set(199));
        assert!(more.set(199), "set twice says it was there");
        assert!(set.within(&more) && !more.within(&set));
        more.clear();
        assert!((0..200).all(|i| !more.get(i)));
    }

    #[test]
    fn only_the_canonical_spelling_of_a_task_id_counts() {
        assert_eq!(canonical_index("task-000"), Some(0));
        assert_eq!(canonical_index("task-199"), Some(199));
        assert_eq!(canonical_index("task-123456"), Some(123_456));
        assert_eq!(canonical_index(&task_id(u64::MAX)), Some(u64::MAX));
        for other in [
            "task-01",
            "task-1",
            "task-0000",
            "task-0199",
            "199",
            "task-",
            "task-+12",
            " task-001",
            "task-001 ",
            "TASK-001",
            "task-99999999999999999999999",
        ] {
            assert_eq!(canonical_index(other), None, "{other:?}");
        }
    }

    #[test]
    fn payload_and_key_are_deterministic_and_distinct() {
        assert_eq!(payload(5), payload(5));
        let a = idem_key(&task_id(1), &payload(1));
        let b = idem_key(&task_id(2), &payload(2));
        assert_eq!(a.len(), "task-001:".len() + 64);
        assert_ne!(a, b);
        assert_eq!(a, idem_key("task-001", &payload(1)));
    }

    #[test]
    fn key_is_the_task_id_then_sha256_of_id_and_payload() {
        // printf 'task-000:x' | sha256sum
        assert_eq!(
            idem_key("task-000", "x"),
            "task-000:7ef4f3bc4620432647fcfd2c0eea5b8b8b3355760a4c985b24479b4971f45ea5"
        );
    }
}
