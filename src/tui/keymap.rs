//! The one keymap: it decides what a key does, and it draws the footer and the help overlay, so
//! the three can never disagree.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    KillLane,
    KillAll,
    ToggleRandomKills,
    ToggleHang,
    TogglePause,
    SpeedUp,
    SpeedDown,
    NextLane,
    PrevLane,
    CycleStrategy,
    WipeCheckpoints,
    AddWorker,
    Restart,
    Reset,
    ScrollUp,
    ScrollDown,
    ScrollEnd,
    ToggleHelp,
}

/// One binding: the keys, how they are written, what they do, and whether the footer shows it.
pub struct Binding {
    pub keys: &'static [KeyCode],
    pub label: &'static str,
    pub action: Action,
    pub help: &'static str,
    /// Short name for the footer; `None` keeps it to the help screen.
    pub footer: Option<&'static str>,
}

/// The keymap, in the order the help screen lists it.
pub const KEYMAP: &[Binding] = &[
    Binding {
        keys: &[KeyCode::Char('k')],
        label: "k",
        action: Action::KillLane,
        help: "kill the selected lane's worker now (SIGKILL)",
        footer: Some("kill"),
    },
    Binding {
        keys: &[KeyCode::Char('K')],
        label: "K",
        action: Action::KillAll,
        help: "the host reclaims the instance: SIGKILL every lane at once",
        footer: Some("kill all"),
    },
    Binding {
        keys: &[KeyCode::Char('r')],
        label: "r",
        action: Action::ToggleRandomKills,
        help: "random kills on/off (seeded: the same seed, the same storm)",
        footer: Some("random"),
    },
    Binding {
        keys: &[KeyCode::Char('h')],
        label: "h",
        action: Action::ToggleHang,
        help: "hang/resume the selected lane (SIGSTOP/SIGCONT): alive, no progress",
        footer: Some("hang"),
    },
    Binding {
        keys: &[KeyCode::Char(' '), KeyCode::Char('p')],
        label: "space",
        action: Action::TogglePause,
        help: "pause/resume the night (workers stopped, clock frozen)",
        footer: Some("pause"),
    },
    Binding {
        keys: &[KeyCode::Char('+'), KeyCode::Char('=')],
        label: "+/-",
        action: Action::SpeedUp,
        help: "faster/slower: the clock and the running workers, within an item",
        footer: Some("speed"),
    },
    Binding {
        keys: &[KeyCode::Char('-'), KeyCode::Char('_')],
        label: "-",
        action: Action::SpeedDown,
        help: "",
        footer: None,
    },
    Binding {
        keys: &[KeyCode::Tab, KeyCode::Right, KeyCode::Char('l')],
        label: "tab/←→",
        action: Action::NextLane,
        help: "select the next/previous lane (or click a lane)",
        footer: Some("lane"),
    },
    Binding {
        keys: &[KeyCode::BackTab, KeyCode::Left],
        label: "",
        action: Action::PrevLane,
        help: "",
        footer: None,
    },
    Binding {
        keys: &[KeyCode::Char('s')],
        label: "s",
        action: Action::CycleStrategy,
        help: "change the selected lane's strategy (the night restarts on fresh databases)",
        footer: Some("strategy"),
    },
    Binding {
        keys: &[KeyCode::Char('w')],
        label: "w",
        action: Action::WipeCheckpoints,
        help: "delete every checkpoint of the selected lane",
        footer: Some("wipe"),
    },
    Binding {
        keys: &[KeyCode::Char('a')],
        label: "a",
        action: Action::AddWorker,
        help: "add a concurrent worker to the selected lane (duplicate delivery)",
        footer: Some("+worker"),
    },
    Binding {
        keys: &[KeyCode::Char('n')],
        label: "n",
        action: Action::Restart,
        help: "start the night again from 02:00 on fresh databases",
        footer: Some("restart"),
    },
    Binding {
        keys: &[KeyCode::Char('R')],
        label: "R",
        action: Action::Reset,
        help: "reset: the scenario's own strategies, speed and kills, from 02:00",
        footer: None,
    },
    Binding {
        keys: &[KeyCode::Up, KeyCode::PageUp],
        label: "↑↓ end",
        action: Action::ScrollUp,
        help: "scroll the timeline; end follows the night again",
        footer: None,
    },
    Binding {
        keys: &[KeyCode::Down, KeyCode::PageDown],
        label: "",
        action: Action::ScrollDown,
        help: "",
        footer: None,
    },
    Binding {
        keys: &[KeyCode::End],
        label: "",
        action: Action::ScrollEnd,
        help: "",
        footer: None,
    },
    Binding {
        keys: &[KeyCode::Char('?')],
        label: "?",
        action: Action::ToggleHelp,
        help: "this help",
        footer: Some("help"),
    },
    Binding {
        keys: &[KeyCode::Char('q'), KeyCode::Esc],
        label: "q",
        action: Action::Quit,
        help: "quit (Ctrl-C too); every worker is killed, the databases are kept",
        footer: Some("quit"),
    },
];

/// The action bound to a key press, if any. Ctrl-C always quits.
#[must_use]
pub fn action_for(key: KeyEvent) -> Option<Action> {
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    KEYMAP
        .iter()
        .find(|binding| binding.keys.contains(&key.code))
        .map(|binding| binding.action)
}

/// The footer's entries: (key label, short name).
#[must_use]
pub fn footer() -> Vec<(&'static str, &'static str)> {
    KEYMAP
        .iter()
        .filter_map(|b| b.footer.map(|name| (b.label, name)))
        .collect()
}

/// The help screen's lines: (key label, what it does).
#[must_use]
pub fn help_lines() -> Vec<(&'static str, &'static str)> {
    KEYMAP
        .iter()
        .filter(|b| !b.help.is_empty())
        .map(|b| (b.label, b.help))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_key_is_bound_twice() {
        let mut seen = Vec::new();
        for binding in KEYMAP {
            for key in binding.keys {
                assert!(!seen.contains(key), "{key:?} bound twice");
                seen.push(*key);
            }
        }
    }

    #[test]
    fn ctrl_c_and_q_quit_and_k_kills() {
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(action_for(ctrl_c), Some(Action::Quit));
        let q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(action_for(q), Some(Action::Quit));
        let k = KeyEvent::new(KeyCode::Char('k'), KeyModifiers::NONE);
        assert_eq!(action_for(k), Some(Action::KillLane));
    }

    #[test]
    fn every_action_has_a_help_line_through_its_binding_group() {
        assert!(help_lines().iter().any(|(k, _)| *k == "?"));
        assert!(footer().iter().any(|(k, n)| *k == "q" && *n == "quit"));
    }
}
