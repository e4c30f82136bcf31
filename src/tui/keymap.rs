//! The one keymap type, `Binding<A>`, for every screen (the dashboard's `KEYMAP` here, the map's
//! `MAP_KEYS` beside the map): a table decides what a key does, and draws the footer and the
//! help overlay, so the three can never disagree.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Which dashboard the keys drive: a live night, a recording played back, or a live night
/// looked back at while it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Live,
    Replay,
    /// A live night paused and looked back at (`b`, `[`): scrubbed like a replay until `space`
    /// returns to now.
    Review,
    /// The map of crash points (`reclaim map`), a screen of its own.
    Map,
}

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAction {
    ToggleRecord,
    NextCaption,
    /// List the selected lane's duplicated task ids.
    ShowIds,
    ScrubBack,
    ScrubForward,
    PrevEvent,
    NextEvent,
    JumpStart,
    JumpEnd,
    Quit,
    KillLane,
    KillAll,
    ToggleRandomKills,
    ToggleHang,
    /// Stop one worker of the selected lane past a claim's lease (SIGSTOP, SIGCONT later).
    PauseWorker,
    /// Restart the night's private PostgreSQL cluster now (`pg_ctl restart -m immediate`).
    RestartServer,
    /// Lose the answer to the selected lane's next commit (its proxy's, on PostgreSQL).
    LoseAnswer,
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
    /// Ctrl-Z: pause the night, give the terminal back to the shell, stop; `fg` resumes.
    Suspend,
    /// Leave a look back: the live night again, going on where it was.
    BackToNow,
    /// One lane (the selected one) takes the whole width, with larger charts; again for all.
    ToggleZoom,
}

/// One binding: the keys, how they are written, what they do (an `A` of the screen's own), and
/// whether the footer shows it.
pub struct Binding<A: 'static> {
    pub keys: &'static [KeyCode],
    pub label: &'static str,
    pub action: A,
    pub help: &'static str,
    /// How the footer shows it; `None` keeps it to the help screen.
    pub footer: Option<Footer>,
    /// The modes this binding works in.
    pub modes: &'static [Mode],
}

/// A binding's place in the footer: its short name, and its rank when the footer has no room
/// for every key (0: pinned at the right whatever the width; then 1 first, higher later; the
/// ones left out are in the help, and the footer says `? more`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    pub name: &'static str,
    pub rank: u8,
}

impl Footer {
    #[must_use]
    pub const fn new(name: &'static str, rank: u8) -> Self {
        Self { name, rank }
    }

    /// Shown at the right whatever the width (help and quit).
    #[must_use]
    pub fn pinned(self) -> bool {
        self.rank == 0
    }
}

const LIVE: &[Mode] = &[Mode::Live];
const REPLAY: &[Mode] = &[Mode::Replay];
const REVIEW: &[Mode] = &[Mode::Review];
/// A night in time: a replay, or a live night looked back at.
const BROWSE: &[Mode] = &[Mode::Replay, Mode::Review];
const BOTH: &[Mode] = &[Mode::Live, Mode::Replay];
const ALL: &[Mode] = &[Mode::Live, Mode::Replay, Mode::Review];

/// The keymap, in the order the help screen lists it.
pub const KEYMAP: &[Binding<KeyAction>] = &[
    Binding {
        keys: &[KeyCode::Char('k')],
        label: "k",
        action: KeyAction::KillLane,
        help: "kill the selected lane's worker now (SIGKILL)",
        footer: Some(Footer::new("kill", 1)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('K')],
        label: "K",
        action: KeyAction::KillAll,
        help: "the host reclaims the instance: SIGKILL every lane at once",
        footer: Some(Footer::new("kill all", 2)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('r')],
        label: "r",
        action: KeyAction::ToggleRandomKills,
        help: "random kills on/off (seeded: the same seed, the same storm)",
        footer: Some(Footer::new("random", 4)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('h')],
        label: "h",
        action: KeyAction::ToggleHang,
        help: "hang/resume the selected lane (SIGSTOP/SIGCONT): alive, no progress",
        footer: Some(Footer::new("hang", 4)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('x')],
        label: "x D L",
        action: KeyAction::PauseWorker,
        // One line for three faults, so every key still fits the help at 80x24.
        help: "x pause 60 s past the lease, D restart PostgreSQL, L lose an answer",
        footer: None,
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('D')],
        label: "D",
        action: KeyAction::RestartServer,
        help: "",
        footer: None,
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('L')],
        label: "L",
        action: KeyAction::LoseAnswer,
        help: "",
        footer: None,
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char(' '), KeyCode::Char('p')],
        label: "space",
        action: KeyAction::TogglePause,
        help: "pause/resume the night (workers stopped, clock frozen)",
        footer: Some(Footer::new("pause", 1)),
        modes: BOTH,
    },
    Binding {
        keys: &[KeyCode::Char('+'), KeyCode::Char('=')],
        label: "+/-",
        action: KeyAction::SpeedUp,
        help: "faster/slower to watch; the night's sim times stay the same",
        footer: Some(Footer::new("speed", 3)),
        modes: BOTH,
    },
    Binding {
        keys: &[KeyCode::Char('-'), KeyCode::Char('_')],
        label: "-",
        action: KeyAction::SpeedDown,
        help: "",
        footer: None,
        modes: BOTH,
    },
    Binding {
        keys: &[KeyCode::Tab, KeyCode::Right, KeyCode::Char('l')],
        label: "tab/←→",
        action: KeyAction::NextLane,
        help: "select the next/previous lane (or click a lane)",
        footer: Some(Footer::new("lane", 2)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::BackTab, KeyCode::Left],
        label: "",
        action: KeyAction::PrevLane,
        help: "",
        footer: None,
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('s')],
        label: "s",
        action: KeyAction::CycleStrategy,
        help: "next strategy for this lane (the night restarts on fresh databases)",
        footer: Some(Footer::new("strategy", 6)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('w')],
        label: "w",
        action: KeyAction::WipeCheckpoints,
        help: "delete every checkpoint of the selected lane",
        footer: Some(Footer::new("wipe", 7)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('a')],
        label: "a",
        action: KeyAction::AddWorker,
        help: "add a concurrent worker to the selected lane (duplicate delivery)",
        footer: Some(Footer::new("+worker", 6)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('n')],
        label: "n",
        action: KeyAction::Restart,
        help: "start the night again from 02:00 on fresh databases",
        footer: Some(Footer::new("restart", 5)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('R')],
        label: "R",
        action: KeyAction::Reset,
        help: "reset: the scenario's own strategies, speed and kills, from 02:00",
        footer: Some(Footer::new("reset", 8)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Up, KeyCode::PageUp],
        label: "↑↓ end",
        action: KeyAction::ScrollUp,
        help: "scroll the timeline; end follows the night again",
        footer: None,
        modes: ALL,
    },
    Binding {
        keys: &[KeyCode::Down, KeyCode::PageDown],
        label: "",
        action: KeyAction::ScrollDown,
        help: "",
        footer: None,
        modes: ALL,
    },
    Binding {
        keys: &[KeyCode::End],
        label: "",
        action: KeyAction::ScrollEnd,
        help: "",
        footer: None,
        modes: ALL,
    },
    Binding {
        keys: &[KeyCode::Char('o')],
        label: "o",
        action: KeyAction::ToggleRecord,
        help: "record on/off: the night restarts from 02:00 into a session file",
        footer: Some(Footer::new("record", 5)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('i')],
        label: "i",
        action: KeyAction::ShowIds,
        help: "this lane's task ids written more than once, with rows and runs",
        footer: Some(Footer::new("ids", 7)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('c')],
        label: "c",
        action: KeyAction::NextCaption,
        help: "next caption reached, at once (in a replay: jump to its moment)",
        footer: Some(Footer::new("caption", 3)),
        modes: ALL,
    },
    Binding {
        keys: &[KeyCode::Left, KeyCode::Char('h')],
        label: "←→",
        action: KeyAction::ScrubBack,
        help: "scrub the night back/forward by 15 sim-seconds",
        footer: Some(Footer::new("scrub", 1)),
        modes: BROWSE,
    },
    Binding {
        keys: &[KeyCode::Right, KeyCode::Char('l')],
        label: "",
        action: KeyAction::ScrubForward,
        help: "",
        footer: None,
        modes: BROWSE,
    },
    Binding {
        keys: &[KeyCode::Char('['), KeyCode::Char(',')],
        label: "[ ]",
        action: KeyAction::PrevEvent,
        help: "step to the previous/next event (, and . too)",
        footer: Some(Footer::new("event", 2)),
        modes: BROWSE,
    },
    Binding {
        keys: &[KeyCode::Char(']'), KeyCode::Char('.')],
        label: "",
        action: KeyAction::NextEvent,
        help: "",
        footer: None,
        modes: BROWSE,
    },
    Binding {
        keys: &[KeyCode::Home, KeyCode::Char('g')],
        label: "g G",
        action: KeyAction::JumpStart,
        help: "jump to the start/end of the night",
        footer: None,
        modes: REPLAY,
    },
    Binding {
        keys: &[KeyCode::Home, KeyCode::Char('g')],
        label: "g",
        action: KeyAction::JumpStart,
        help: "jump to the start of the night (G: back to now)",
        footer: None,
        modes: REVIEW,
    },
    Binding {
        keys: &[KeyCode::Char('G')],
        label: "",
        action: KeyAction::JumpEnd,
        help: "",
        footer: None,
        modes: REPLAY,
    },
    Binding {
        keys: &[KeyCode::Tab],
        label: "tab",
        action: KeyAction::NextLane,
        help: "select the next lane",
        footer: None,
        modes: BROWSE,
    },
    Binding {
        keys: &[KeyCode::Char('b')],
        label: "b [",
        action: KeyAction::ScrubBack,
        help: "look back (, too): the night waits while you scrub; space: now",
        footer: Some(Footer::new("back", 4)),
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char('['), KeyCode::Char(',')],
        label: "",
        action: KeyAction::PrevEvent,
        help: "",
        footer: None,
        modes: LIVE,
    },
    Binding {
        keys: &[KeyCode::Char(' '), KeyCode::Char('G'), KeyCode::Esc],
        label: "space",
        action: KeyAction::BackToNow,
        help: "back to now: the night goes on where it was (if it was running)",
        footer: Some(Footer::new("now", 1)),
        modes: REVIEW,
    },
    Binding {
        keys: &[KeyCode::Char('z')],
        label: "z",
        action: KeyAction::ToggleZoom,
        help: "zoom: this lane takes the whole width, larger charts; z again: all",
        footer: Some(Footer::new("zoom", 3)),
        modes: ALL,
    },
    // Ctrl-Z reaches the dashboard as a key in raw mode (`action_for` maps it): in the help.
    Binding {
        keys: &[],
        label: "Ctrl-Z",
        action: KeyAction::Suspend,
        help: "suspend: the night pauses and the shell has the terminal; fg goes on",
        footer: None,
        modes: ALL,
    },
    Binding {
        keys: &[KeyCode::Char('?')],
        label: "?",
        action: KeyAction::ToggleHelp,
        help: "this help",
        footer: Some(Footer::new("help", 0)),
        modes: ALL,
    },
    // Esc never ends a night: it closes the help and leaves a look back, and a second press
    // of it must not kill the workers.
    Binding {
        keys: &[KeyCode::Char('q')],
        label: "q",
        action: KeyAction::Quit,
        help: "quit (or Ctrl-C; Esc never quits): workers killed, databases kept",
        footer: Some(Footer::new("quit", 0)),
        modes: ALL,
    },
];

/// The bindings of `table` that work in `mode`, in the table's order.
fn in_mode<A>(
    table: &'static [Binding<A>],
    mode: Mode,
) -> impl Iterator<Item = &'static Binding<A>> {
    table.iter().filter(move |b| b.modes.contains(&mode))
}

#[cfg(test)]
fn bindings(mode: Mode) -> impl Iterator<Item = &'static Binding<KeyAction>> {
    in_mode(KEYMAP, mode)
}

/// The action `table` binds to `code` in `mode`, if any.
#[must_use]
pub fn lookup<A: Copy>(table: &'static [Binding<A>], mode: Mode, code: KeyCode) -> Option<A> {
    in_mode(table, mode)
        .find(|binding| binding.keys.contains(&code))
        .map(|binding| binding.action)
}

/// The footer's entries of `table` in `mode`, in the table's order: (key label, its entry).
#[must_use]
pub fn footer_of<A>(table: &'static [Binding<A>], mode: Mode) -> Vec<(&'static str, Footer)> {
    in_mode(table, mode)
        .filter_map(|b| b.footer.map(|f| (b.label, f)))
        .collect()
}

/// The help's lines of `table` in `mode`: (key label, what it does).
#[must_use]
pub fn help_of<A>(table: &'static [Binding<A>], mode: Mode) -> Vec<(&'static str, &'static str)> {
    in_mode(table, mode)
        .filter(|b| !b.help.is_empty())
        .map(|b| (b.label, b.help))
        .collect()
}

/// Every key `table` binds twice in one of `modes` (a test's guard: the second would never act).
#[must_use]
pub fn bound_twice<A>(table: &'static [Binding<A>], modes: &[Mode]) -> Vec<(Mode, KeyCode)> {
    let mut twice = Vec::new();
    for &mode in modes {
        let mut seen = Vec::new();
        for key in in_mode(table, mode).flat_map(|b| b.keys) {
            if seen.contains(key) {
                twice.push((mode, *key));
            }
            seen.push(*key);
        }
    }
    twice
}

/// The action bound to a key press in `mode`, if any. Ctrl-C always quits; Ctrl-Z always
/// suspends (in raw mode the terminal sends it as a key, not as SIGTSTP).
#[must_use]
pub fn action_for(key: KeyEvent, mode: Mode) -> Option<KeyAction> {
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        match key.code {
            KeyCode::Char('c') => return Some(KeyAction::Quit),
            KeyCode::Char('z') => return Some(KeyAction::Suspend),
            _ => {}
        }
    }
    lookup(KEYMAP, mode, key.code)
}

/// The footer's entries in `mode`, in the keymap's order: (key label, how the footer shows it).
#[must_use]
pub fn footer(mode: Mode) -> Vec<(&'static str, Footer)> {
    footer_of(KEYMAP, mode)
}

/// The help screen's lines in `mode`: (key label, what it does).
#[must_use]
pub fn help_lines(mode: Mode) -> Vec<(&'static str, &'static str)> {
    help_of(KEYMAP, mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_names_every_key_of_its_mode() {
        for mode in [Mode::Live, Mode::Replay, Mode::Review] {
            let help: Vec<String> = (help_lines(mode).iter())
                .map(|(label, text)| format!("{label} {text}"))
                .collect();
            assert!(
                help.iter().any(|l| l.starts_with("Ctrl-Z")),
                "{mode:?}: {help:?}"
            );
            for binding in bindings(mode) {
                // A binding without a line of its own is named by its neighbour's label
                // (`+/-`, `[ ]`, `g G`, `↑↓ end`).
                let named = !binding.help.is_empty()
                    || (!binding.label.is_empty()
                        && help.iter().any(|l| l.contains(binding.label)))
                    || binding.keys.iter().all(|k| {
                        help.iter().any(|l| match k {
                            KeyCode::Char(c) => l.contains(*c),
                            _ => true,
                        })
                    });
                assert!(named, "{mode:?}: {:?} is not in the help", binding.keys);
            }
        }
    }

    #[test]
    fn no_key_is_bound_twice_in_a_mode() {
        let modes = [Mode::Live, Mode::Replay, Mode::Review];
        assert_eq!(bound_twice(KEYMAP, &modes), []);
    }

    #[test]
    fn a_key_bound_twice_is_found() {
        const TWICE: &[Binding<u8>] = &[
            Binding {
                keys: &[KeyCode::Char('x')],
                label: "x",
                action: 1,
                help: "one",
                footer: None,
                modes: ALL,
            },
            Binding {
                keys: &[KeyCode::Char('y'), KeyCode::Char('x')],
                label: "y",
                action: 2,
                help: "two",
                footer: None,
                modes: LIVE,
            },
        ];
        assert_eq!(
            bound_twice(TWICE, &[Mode::Live, Mode::Replay]),
            [(Mode::Live, KeyCode::Char('x'))]
        );
        assert_eq!(lookup(TWICE, Mode::Replay, KeyCode::Char('y')), None);
        assert_eq!(lookup(TWICE, Mode::Live, KeyCode::Char('y')), Some(2));
    }

    #[test]
    fn ctrl_c_and_q_quit_and_k_kills() {
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(action_for(ctrl_c, Mode::Live), Some(KeyAction::Quit));
        let q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(action_for(q, Mode::Replay), Some(KeyAction::Quit));
        let k = KeyEvent::new(KeyCode::Char('k'), KeyModifiers::NONE);
        assert_eq!(action_for(k, Mode::Live), Some(KeyAction::KillLane));
        // A replay has no processes to kill.
        assert_eq!(action_for(k, Mode::Replay), None);
        let ctrl_z = KeyEvent::new(KeyCode::Char('z'), KeyModifiers::CONTROL);
        for mode in [Mode::Live, Mode::Replay] {
            assert_eq!(action_for(ctrl_z, mode), Some(KeyAction::Suspend));
        }
    }

    #[test]
    fn esc_never_quits_and_the_help_says_how_to() {
        let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
        for mode in [Mode::Live, Mode::Replay, Mode::Review] {
            assert_ne!(action_for(esc, mode), Some(KeyAction::Quit), "{mode:?}");
            let quit = (help_lines(mode).into_iter()).find(|(key, _)| *key == "q");
            assert!(
                quit.is_some_and(
                    |(_, text)| text.contains("Ctrl-C") && text.contains("Esc never quits")
                ),
                "{mode:?}: {quit:?}"
            );
        }
        // Leaving a look back is still Esc's.
        assert_eq!(action_for(esc, Mode::Review), Some(KeyAction::BackToNow));
    }

    #[test]
    fn every_action_has_a_help_line_through_its_binding_group() {
        for mode in [Mode::Live, Mode::Replay, Mode::Review] {
            assert!(help_lines(mode).iter().any(|(k, _)| *k == "?"));
            assert!(
                footer(mode)
                    .iter()
                    .any(|(k, f)| *k == "q" && f.name == "quit" && f.pinned())
            );
        }
    }
}
