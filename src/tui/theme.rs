//! Colours: the default palette, a high-contrast one that carries no meaning in red against
//! green (for a projector and for colour-blind eyes), and a monochrome variant when NO_COLOR is
//! set (https://no-color.org). Every light and curve also has a glyph of its own, so the screen
//! reads in any of them.

use ratatui::style::{Color, Modifier, Style};

/// The palettes a user can choose (`--theme`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ThemeChoice {
    #[default]
    Default,
    /// Okabe and Ito's colour-blind-safe palette on bold text: blue for good, vermilion for bad.
    HighContrast,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Palette {
    Default,
    HighContrast,
    Mono,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    palette: Palette,
}

/// Okabe and Ito's palette (colour universal design).
mod okabe_ito {
    use ratatui::style::Color;
    pub const ORANGE: Color = Color::Rgb(0xe6, 0x9f, 0x00);
    pub const SKY_BLUE: Color = Color::Rgb(0x56, 0xb4, 0xe9);
    pub const BLUISH_GREEN: Color = Color::Rgb(0x00, 0x9e, 0x73);
    pub const YELLOW: Color = Color::Rgb(0xf0, 0xe4, 0x42);
    pub const VERMILION: Color = Color::Rgb(0xd5, 0x5e, 0x00);
    pub const REDDISH_PURPLE: Color = Color::Rgb(0xcc, 0x79, 0xa7);
}

impl Theme {
    /// The default palette unless the NO_COLOR environment variable is set to something
    /// non-empty.
    #[must_use]
    pub fn from_env() -> Self {
        Self::chosen(ThemeChoice::Default)
    }

    /// The palette chosen with `--theme`; NO_COLOR still wins.
    #[must_use]
    pub fn chosen(choice: ThemeChoice) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let palette = match (no_color, choice) {
            (true, _) => Palette::Mono,
            (false, ThemeChoice::Default) => Palette::Default,
            (false, ThemeChoice::HighContrast) => Palette::HighContrast,
        };
        Self { palette }
    }

    #[must_use]
    pub fn colored() -> Self {
        Self {
            palette: Palette::Default,
        }
    }

    #[must_use]
    pub fn high_contrast() -> Self {
        Self {
            palette: Palette::HighContrast,
        }
    }

    #[must_use]
    pub fn monochrome() -> Self {
        Self {
            palette: Palette::Mono,
        }
    }

    /// `default` in the default palette, `contrast` (bold) in the high-contrast one, nothing
    /// without colour.
    fn pick(self, default: Color, contrast: Color) -> Style {
        match self.palette {
            Palette::Default => Style::new().fg(default),
            Palette::HighContrast => Style::new().fg(contrast).add_modifier(Modifier::BOLD),
            Palette::Mono => Style::new(),
        }
    }

    #[must_use]
    pub fn good(self) -> Style {
        self.pick(Color::Green, okabe_ito::SKY_BLUE)
    }

    #[must_use]
    pub fn bad(self) -> Style {
        self.pick(Color::Red, okabe_ito::VERMILION)
            .add_modifier(Modifier::BOLD)
    }

    #[must_use]
    pub fn warn(self) -> Style {
        self.pick(Color::Yellow, okabe_ito::ORANGE)
    }

    #[must_use]
    pub fn dim(self) -> Style {
        match self.palette {
            Palette::Default => Style::new().fg(Color::DarkGray),
            // Grey on a projector washes out: plain text, not dim.
            Palette::HighContrast => Style::new(),
            Palette::Mono => Style::new().add_modifier(Modifier::DIM),
        }
    }

    #[must_use]
    pub fn title(self) -> Style {
        self.pick(Color::Cyan, Color::White)
            .add_modifier(Modifier::BOLD)
    }

    #[must_use]
    pub fn selected(self) -> Style {
        self.pick(Color::Cyan, okabe_ito::YELLOW)
            .add_modifier(Modifier::BOLD)
    }

    #[must_use]
    pub fn key(self) -> Style {
        self.pick(Color::Cyan, okabe_ito::YELLOW)
            .add_modifier(Modifier::BOLD)
    }

    /// Curves: rows, distinct, duplicated, checkpoints, heartbeat age. In the high-contrast
    /// palette none shares a colour with the kill (`bad`) and restart (`good`) markers drawn
    /// over them: rows white, duplicates orange.
    #[must_use]
    pub fn rows(self) -> Style {
        self.pick(Color::Blue, Color::White)
    }

    #[must_use]
    pub fn distinct(self) -> Style {
        self.pick(Color::Green, okabe_ito::BLUISH_GREEN)
    }

    #[must_use]
    pub fn duplicated(self) -> Style {
        self.pick(Color::Red, okabe_ito::ORANGE)
    }

    #[must_use]
    pub fn checkpoints(self) -> Style {
        self.pick(Color::Magenta, okabe_ito::REDDISH_PURPLE)
    }

    #[must_use]
    pub fn heartbeat(self) -> Style {
        self.pick(Color::Yellow, okabe_ito::YELLOW)
    }

    #[must_use]
    pub fn plain(self) -> Style {
        Style::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// High contrast drew rows in the restart marker's blue and duplicates in the kill marker's
    /// vermilion: on a projector a restart read as part of the rows curve.
    #[test]
    fn high_contrast_gives_each_curve_and_marker_a_colour_of_its_own() {
        let t = Theme::high_contrast();
        let colours: Vec<Option<Color>> = [
            t.rows(),
            t.distinct(),
            t.duplicated(),
            t.checkpoints(),
            t.heartbeat(),
            t.bad(),
            t.good(),
        ]
        .iter()
        .map(|s| s.fg)
        .collect();
        for (i, a) in colours.iter().enumerate() {
            for b in &colours[i + 1..] {
                assert_ne!(a, b, "{colours:?}");
            }
        }
    }
}
