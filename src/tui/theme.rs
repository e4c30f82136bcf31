//! Colours, with a monochrome variant when NO_COLOR is set (https://no-color.org).

use ratatui::style::{Color, Modifier, Style};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    color: bool,
}

impl Theme {
    /// Colour unless the NO_COLOR environment variable is set to something non-empty.
    #[must_use]
    pub fn from_env() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self { color: !no_color }
    }

    #[must_use]
    pub fn colored() -> Self {
        Self { color: true }
    }

    #[must_use]
    pub fn monochrome() -> Self {
        Self { color: false }
    }

    fn fg(self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    #[must_use]
    pub fn good(self) -> Style {
        self.fg(Color::Green)
    }

    #[must_use]
    pub fn bad(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    #[must_use]
    pub fn warn(self) -> Style {
        self.fg(Color::Yellow)
    }

    #[must_use]
    pub fn dim(self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new().add_modifier(Modifier::DIM)
        }
    }

    #[must_use]
    pub fn title(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    #[must_use]
    pub fn selected(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    #[must_use]
    pub fn key(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    /// Curves: rows, distinct, duplicated, checkpoints, heartbeat age.
    #[must_use]
    pub fn rows(self) -> Style {
        self.fg(Color::Blue)
    }

    #[must_use]
    pub fn distinct(self) -> Style {
        self.fg(Color::Green)
    }

    #[must_use]
    pub fn duplicated(self) -> Style {
        self.fg(Color::Red)
    }

    #[must_use]
    pub fn checkpoints(self) -> Style {
        self.fg(Color::Magenta)
    }

    #[must_use]
    pub fn heartbeat(self) -> Style {
        self.fg(Color::Yellow)
    }

    #[must_use]
    pub fn plain(self) -> Style {
        Style::new()
    }
}
