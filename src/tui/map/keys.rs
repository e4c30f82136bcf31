//! The map's keymap: its actions and their keys, in the dashboard's one `Binding` type, so the
//! keys, the footer and the help come from one table here as they do there.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::tui::keymap::{self, Binding, Footer, Mode};

/// What the user asked the map for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapAction {
    Left,
    Right,
    Up,
    Down,
    PageLeft,
    PageRight,
    Home,
    End,
    Open,
    ToggleHelp,
    Quit,
}

/// The map's one mode, for the keymap's generic lookup.
const MAP: &[Mode] = &[Mode::Map];

/// The map's keymap, in the order the help lists it: the keys, the footer and the help all
/// come from here.
pub const MAP_KEYS: &[Binding<MapAction>] = &[
    Binding {
        keys: &[KeyCode::Left, KeyCode::Char('h')],
        label: "←/→",
        action: MapAction::Left,
        help: "the previous/next task",
        footer: Some(Footer::new("task", 1)),
        modes: MAP,
    },
    Binding {
        keys: &[KeyCode::Right, KeyCode::Char('l')],
        label: "→",
        action: MapAction::Right,
        help: "",
        footer: None,
        modes: MAP,
    },
    Binding {
        keys: &[KeyCode::Up, KeyCode::Char('k')],
        label: "↑/↓",
        action: MapAction::Up,
        help: "the band above/below (strategy and crash point)",
        footer: Some(Footer::new("band", 1)),
        modes: MAP,
    },
    Binding {
        keys: &[KeyCode::Down, KeyCode::Char('j')],
        label: "↓",
        action: MapAction::Down,
        help: "",
        footer: None,
        modes: MAP,
    },
    Binding {
        keys: &[KeyCode::PageUp, KeyCode::Char('H')],
        label: "PgUp/PgDn",
        action: MapAction::PageLeft,
        help: "a tenth of the queue left/right",
        footer: None,
        modes: MAP,
    },
    Binding {
        keys: &[KeyCode::PageDown, KeyCode::Char('L')],
        label: "PgDn",
        action: MapAction::PageRight,
        help: "",
        footer: None,
        modes: MAP,
    },
    Binding {
        keys: &[KeyCode::Home, KeyCode::Char('g')],
        label: "Home/End",
        action: MapAction::Home,
        help: "the first/last task",
        footer: None,
        modes: MAP,
    },
    Binding {
        keys: &[KeyCode::End, KeyCode::Char('G')],
        label: "End",
        action: MapAction::End,
        help: "",
        footer: None,
        modes: MAP,
    },
    Binding {
        keys: &[KeyCode::Enter],
        label: "enter",
        action: MapAction::Open,
        help: "watch this night in the dashboard, killed the same way (q comes back)",
        footer: Some(Footer::new("watch", 1)),
        modes: MAP,
    },
    Binding {
        keys: &[KeyCode::Char('?')],
        label: "?",
        action: MapAction::ToggleHelp,
        help: "this help",
        footer: Some(Footer::new("help", 0)),
        modes: MAP,
    },
    Binding {
        keys: &[KeyCode::Char('q'), KeyCode::Esc],
        label: "q",
        action: MapAction::Quit,
        help: "quit (the nights in flight are finished or killed, none left behind)",
        footer: Some(Footer::new("quit", 0)),
        modes: MAP,
    },
];

/// The action a key stands for on the map. Ctrl-C quits: in raw mode it arrives as a key.
#[must_use]
pub fn action_for(key: KeyEvent) -> Option<MapAction> {
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return (key.code == KeyCode::Char('c')).then_some(MapAction::Quit);
    }
    keymap::lookup(MAP_KEYS, Mode::Map, key.code)
}
