//! The map screen: one band per strategy and crash point, one column per task (binned when the
//! terminal is narrower than the queue), each cell the verdict of a real night. `MapState` is a
//! pure state machine (cells arrive, keys move the cursor, `enter` asks for a night to be
//! opened); `render_to` draws it with no I/O and no clock; `run` is the loop around both.

use std::fmt::Write as _;
use std::io;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget as _, Wrap};

use crate::error::{Context as _, Error};
use crate::harness::pool::Pool;
use crate::map::{Cell, Kill, Outcome, Plan, expected_duplicates, summarize};
use crate::scenario::{Caption, Scenario, ScenarioLane};
use crate::signals;
use crate::task::task_id;
use crate::worker::Strategy;

use super::theme::Theme;

/// Width of the band labels: the longest strategy, a space, the longest point, a space.
const LABEL: u16 = 11 + 17;

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

/// One binding: the keys, how they are written, what they do, and whether the footer shows it.
pub struct MapBinding {
    pub keys: &'static [KeyCode],
    pub label: &'static str,
    pub action: MapAction,
    pub help: &'static str,
    pub footer: Option<&'static str>,
}

/// The map's keymap, in the order the help lists it: the keys, the footer and the help all
/// come from here.
pub const MAP_KEYS: &[MapBinding] = &[
    MapBinding {
        keys: &[KeyCode::Left, KeyCode::Char('h')],
        label: "←/→",
        action: MapAction::Left,
        help: "the previous/next task",
        footer: Some("task"),
    },
    MapBinding {
        keys: &[KeyCode::Right, KeyCode::Char('l')],
        label: "→",
        action: MapAction::Right,
        help: "",
        footer: None,
    },
    MapBinding {
        keys: &[KeyCode::Up, KeyCode::Char('k')],
        label: "↑/↓",
        action: MapAction::Up,
        help: "the band above/below (strategy and crash point)",
        footer: Some("band"),
    },
    MapBinding {
        keys: &[KeyCode::Down, KeyCode::Char('j')],
        label: "↓",
        action: MapAction::Down,
        help: "",
        footer: None,
    },
    MapBinding {
        keys: &[KeyCode::PageUp, KeyCode::Char('H')],
        label: "PgUp/PgDn",
        action: MapAction::PageLeft,
        help: "a tenth of the queue left/right",
        footer: None,
    },
    MapBinding {
        keys: &[KeyCode::PageDown, KeyCode::Char('L')],
        label: "PgDn",
        action: MapAction::PageRight,
        help: "",
        footer: None,
    },
    MapBinding {
        keys: &[KeyCode::Home, KeyCode::Char('g')],
        label: "Home/End",
        action: MapAction::Home,
        help: "the first/last task",
        footer: None,
    },
    MapBinding {
        keys: &[KeyCode::End, KeyCode::Char('G')],
        label: "End",
        action: MapAction::End,
        help: "",
        footer: None,
    },
    MapBinding {
        keys: &[KeyCode::Enter],
        label: "enter",
        action: MapAction::Open,
        help: "watch this night in the dashboard, beside guarded under the same kill (q comes back)",
        footer: Some("watch"),
    },
    MapBinding {
        keys: &[KeyCode::Char('?')],
        label: "?",
        action: MapAction::ToggleHelp,
        help: "this help",
        footer: Some("help"),
    },
    MapBinding {
        keys: &[KeyCode::Char('q'), KeyCode::Esc],
        label: "q",
        action: MapAction::Quit,
        help: "quit (the nights in flight are finished or killed, none left behind)",
        footer: Some("quit"),
    },
];

/// The action a key stands for on the map. Ctrl-C quits: in raw mode it arrives as a key.
#[must_use]
pub fn action_for(key: KeyEvent) -> Option<MapAction> {
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return (key.code == KeyCode::Char('c')).then_some(MapAction::Quit);
    }
    MAP_KEYS
        .iter()
        .find(|b| b.keys.contains(&key.code))
        .map(|b| b.action)
}

/// What the map asks its loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum MapCommand {
    /// Open this cell's night in the dashboard.
    Open(Cell),
}

/// The map's state: the plan, the cells as they arrive, the cursor.
#[derive(Debug, Clone)]
pub struct MapState {
    plan: Plan,
    /// Band-major: `cells[band * tasks + (task - first)]`.
    cells: Vec<Option<Cell>>,
    done: usize,
    band: usize,
    task: u64,
    help: bool,
    quit: bool,
    notice: Option<String>,
    /// Seconds since the map started, or the time it took once finished (set by the loop).
    pub elapsed_s: f64,
}

impl MapState {
    #[must_use]
    pub fn new(plan: Plan) -> Self {
        let size = plan.bands().len() * plan.task_count() as usize;
        let task = plan.tasks.0;
        Self {
            plan,
            cells: vec![None; size],
            done: 0,
            band: 0,
            task,
            help: false,
            quit: false,
            notice: None,
            elapsed_s: 0.0,
        }
    }

    fn index(&self, band: usize, task: u64) -> usize {
        band * self.plan.task_count() as usize + (task - self.plan.tasks.0) as usize
    }

    /// A finished night: its cell takes its place.
    pub fn add(&mut self, cell: Cell) {
        let Some(band) = self
            .plan
            .bands()
            .iter()
            .position(|&(s, p)| s == cell.strategy && p.name() == cell.point)
        else {
            return;
        };
        if !(self.plan.tasks.0..=self.plan.tasks.1).contains(&cell.task) {
            return;
        }
        let i = self.index(band, cell.task);
        if self.cells[i].is_none() {
            self.done += 1;
        }
        self.cells[i] = Some(cell);
    }

    #[must_use]
    pub fn total(&self) -> usize {
        self.cells.len()
    }

    #[must_use]
    pub fn done(&self) -> usize {
        self.done
    }

    #[must_use]
    pub fn finished(&self) -> bool {
        self.done == self.cells.len()
    }

    #[must_use]
    pub fn quit_requested(&self) -> bool {
        self.quit
    }

    /// The cells that have arrived, in map order.
    #[must_use]
    pub fn cells(&self) -> Vec<Cell> {
        self.cells.iter().flatten().cloned().collect()
    }

    /// The cell under the cursor, if its night has finished.
    #[must_use]
    pub fn selected(&self) -> Option<&Cell> {
        self.cells[self.index(self.band, self.task)].as_ref()
    }

    /// Moves the cursor to a band and task (the mouse), when they are on the map.
    pub fn select(&mut self, band: usize, task: u64) {
        if band < self.plan.bands().len() && (self.plan.tasks.0..=self.plan.tasks.1).contains(&task)
        {
            self.band = band;
            self.task = task;
            self.notice = None;
        }
    }

    /// Says something on the status line until the next key.
    pub fn notify(&mut self, text: String) {
        self.notice = Some(text);
    }

    /// Applies one action; returns what the loop must do, if anything.
    pub fn update(&mut self, action: MapAction) -> Option<MapCommand> {
        self.notice = None;
        let (first, last) = self.plan.tasks;
        let page = (self.plan.task_count() / 10).max(1);
        let bands = self.plan.bands().len();
        match action {
            MapAction::Left => self.task = self.task.saturating_sub(1).max(first),
            MapAction::Right => self.task = (self.task + 1).min(last),
            MapAction::PageLeft => self.task = self.task.saturating_sub(page).max(first),
            MapAction::PageRight => self.task = (self.task + page).min(last),
            MapAction::Home => self.task = first,
            MapAction::End => self.task = last,
            MapAction::Up => self.band = self.band.saturating_sub(1),
            MapAction::Down => self.band = (self.band + 1).min(bands.saturating_sub(1)),
            MapAction::ToggleHelp => self.help = !self.help,
            MapAction::Quit => {
                if self.help {
                    self.help = false;
                } else {
                    self.quit = true;
                }
            }
            MapAction::Open => {
                if let Some(cell) = self.selected() {
                    return Some(MapCommand::Open(cell.clone()));
                }
                self.notice =
                    Some("this night has not finished yet; enter opens it once it has".into());
            }
        }
        None
    }
}

/// The worst of a bin's outcomes, so a single bad night in a bin is never hidden by its
/// neighbours: missing, then wrong, then the most duplicated, then right, then not yet run.
fn worse(a: Option<Outcome>, b: Option<Outcome>) -> Option<Outcome> {
    let rank = |o: Option<Outcome>| match o {
        None => (0, 0),
        Some(Outcome::Right) => (1, 0),
        Some(Outcome::Duplicated(n)) => (2, n),
        Some(Outcome::Wrong) => (3, 0),
        Some(Outcome::Missing(n)) => (4, n),
    };
    if rank(b) > rank(a) { b } else { a }
}

/// A cell's glyph and style: shape tells the outcome without colour (NO_COLOR), colour helps.
fn glyph(outcome: Option<Outcome>, theme: Theme) -> (char, Style) {
    match outcome {
        None => ('░', theme.dim()),
        Some(Outcome::Right) => ('·', theme.good()),
        Some(Outcome::Duplicated(n)) if n <= 9 => (
            char::from_digit(n as u32, 10).unwrap_or('#'),
            if n == 1 { theme.warn() } else { theme.bad() },
        ),
        Some(Outcome::Duplicated(_)) => ('#', theme.bad()),
        Some(Outcome::Missing(_)) => ('!', theme.checkpoints()),
        Some(Outcome::Wrong) => ('?', theme.checkpoints()),
    }
}

/// The legend under the map.
const LEGEND: &str =
    "· right  1-9 task ids duplicated (# 10+)  ! missing  ? wrong/untested  ░ running";

/// Which column each task falls in, `columns` wide.
fn column_of(task: u64, first: u64, count: u64, columns: u16) -> u16 {
    ((task - first) * u64::from(columns) / count) as u16
}

/// How many task columns fit in `width`.
fn columns_for(width: u16, count: u64) -> u16 {
    let room = width.saturating_sub(LABEL + 1).max(1);
    room.min(u16::try_from(count).unwrap_or(u16::MAX))
}

/// The height the bands need: one line each, and one between strategies when `spaced`.
fn bands_height(plan: &Plan, spaced: bool) -> u16 {
    let bands = plan.bands().len() as u16;
    let gaps = if spaced {
        plan.strategies.len().saturating_sub(1) as u16
    } else {
        0
    };
    bands + gaps
}

/// Draws the map into `buf` over `area`. Pure: everything it shows comes from `state`.
pub fn render_to(area: Rect, buf: &mut Buffer, state: &MapState, theme: Theme) {
    draw(area, buf, state, theme, true);
}

/// The map as plain text lines, `width` wide, for `reclaim map` without a terminal: the same
/// drawing without the cursor, the keys or the help.
#[must_use]
pub fn plain_text(state: &MapState, width: u16) -> String {
    let plan = &state.plan;
    let height = 2 + bands_height(plan, true) + 2;
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    draw(area, &mut buf, state, Theme::monochrome(), false);
    let mut out = String::new();
    for y in 0..area.height {
        let line: String = (0..area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

fn put<'a>(buf: &mut Buffer, area: Rect, y: u16, line: impl Into<Line<'a>>) {
    if y < area.y + area.height {
        buf.set_line(area.x, y, &line.into(), area.width);
    }
}

/// Whether there is room for a blank line between strategies, besides what must show: title,
/// axis, the bands and (on the screen) the cell under the cursor and the keys.
fn spaced_for(area: Rect, plan: &Plan, interactive: bool) -> bool {
    let fixed = 2 + bands_height(plan, false) + if interactive { 3 } else { 0 };
    area.height.saturating_sub(fixed) >= bands_height(plan, true) - bands_height(plan, false)
}

/// The line each band is drawn on, `None` past the bottom: drawing and the mouse share it.
fn band_rows(area: Rect, plan: &Plan, spaced: bool) -> Vec<Option<u16>> {
    let mut y = area.y + 2;
    plan.bands()
        .iter()
        .enumerate()
        .map(|(band, &(_, point))| {
            if band > 0 && spaced && point == plan.points[0] {
                y += 1;
            }
            let row = (y < area.y + area.height).then_some(y);
            y += 1;
            row
        })
        .collect()
}

/// The band and task under a point of the screen: in a binned column, the night its glyph
/// shows (the worst of the bin), so pointing at a bad glyph shows that bad night.
#[must_use]
pub fn cell_at(area: Rect, state: &MapState, x: u16, y: u16) -> Option<(usize, u64)> {
    let plan = &state.plan;
    let rows = band_rows(area, plan, spaced_for(area, plan, true));
    let band = rows.iter().position(|&r| r == Some(y))?;
    let count = plan.task_count();
    let columns = columns_for(area.width, count);
    let column = x.checked_sub(area.x + LABEL).filter(|&c| c < columns)?;
    let mut best: Option<(Option<Outcome>, u64)> = None;
    for task in plan.tasks.0..=plan.tasks.1 {
        if column_of(task, plan.tasks.0, count, columns) != column {
            continue;
        }
        let outcome = state.cells[state.index(band, task)]
            .as_ref()
            .map(Cell::outcome);
        best = match best {
            None => Some((outcome, task)),
            Some((shown, _)) if worse(shown, outcome) != shown => Some((outcome, task)),
            keep => keep,
        };
    }
    best.map(|(_, task)| (band, task))
}

fn draw(area: Rect, buf: &mut Buffer, state: &MapState, theme: Theme, interactive: bool) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let plan = &state.plan;
    let count = plan.task_count();
    let columns = columns_for(area.width, count);
    let bottom = area.y + area.height;
    // What must show: title, axis, bands, the cell under the cursor and the footer; the gaps
    // between strategies, the summaries and the legend only when there is room.
    let spaced = spaced_for(area, plan, interactive);
    let fixed = 2 + bands_height(plan, spaced) + if interactive { 3 } else { 0 };
    let mut spare = area.height.saturating_sub(fixed);
    let show_legend = spare >= 1;
    spare = spare.saturating_sub(u16::from(show_legend));
    // The plain output prints its summaries itself, after the map.
    let show_summary = interactive && spare > plan.strategies.len() as u16;

    draw_title(buf, area, state, theme);
    draw_axis(buf, area, plan, columns, theme);
    let mut y = draw_bands(buf, area, state, (columns, spaced, interactive), theme);
    // Summaries, legend, the cell under the cursor, the keys.
    let footer_lines = if interactive { 3 } else { 0 };
    let reserved = footer_lines + u16::from(show_legend);
    if show_summary && y + plan.strategies.len() as u16 + reserved < bottom {
        y += 1;
        for summary in summarize(plan, &state.cells()) {
            let style = if summary.cells > 0 && summary.right == summary.cells {
                theme.good()
            } else if summary.duplicated + summary.missing + summary.other > 0 {
                theme.bad()
            } else {
                theme.plain()
            };
            let mut text = format!(
                "{:<11}{}/{} right",
                summary.strategy.name(),
                summary.right,
                summary.cells,
            );
            for (n, what) in [
                (summary.duplicated, "duplicated"),
                (summary.missing, "missing"),
                (summary.other, "wrong or untested"),
            ] {
                if n > 0 {
                    let _ = write!(text, " · {n} {what}");
                }
            }
            if summary.worst_duplicated_task_ids > 0 {
                let _ = write!(
                    text,
                    " · worst night: {}",
                    crate::map::task_ids(summary.worst_duplicated_task_ids)
                );
            }
            put(buf, area, y, Line::styled(text, style));
            y += 1;
        }
    }
    if show_legend && y + footer_lines < bottom {
        // Under the map (and its summaries), a line apart.
        let legend_y = y + 1;
        put(buf, area, legend_y, Line::styled(LEGEND, theme.dim()));
    }
    if !interactive {
        return;
    }
    draw_cursor(buf, area, state, theme);
}

/// The title line: what the map covers, and how far it has got.
fn draw_title(buf: &mut Buffer, area: Rect, state: &MapState, theme: Theme) {
    let plan = &state.plan;
    let progress = if state.finished() {
        format!("{} nights in {:.1} s", state.total(), state.elapsed_s)
    } else {
        format!(
            "{}/{} nights · {:.1} s",
            state.done(),
            state.total(),
            state.elapsed_s
        )
    };
    let names: Vec<&str> = plan.strategies.iter().map(|s| s.name()).collect();
    let title = format!(
        "reclaim map  {} · {} items · {}..{}",
        names.join(" "),
        plan.items,
        task_id(plan.tasks.0),
        task_id(plan.tasks.1)
    );
    // The progress always shows; the title gives way on a narrow terminal.
    let room = (area.width as usize).saturating_sub(progress.chars().count() + 1);
    let title = crate::text::shorten(&title, room);
    let gap =
        (area.width as usize).saturating_sub(title.chars().count() + progress.chars().count());
    put(
        buf,
        area,
        area.y,
        Line::from(vec![
            Span::styled(title, theme.title()),
            Span::raw(" ".repeat(gap.max(1))),
            Span::styled(
                progress,
                if state.finished() {
                    theme.plain()
                } else {
                    theme.warn()
                },
            ),
        ]),
    );
}

/// The axis: task numbers where a column starts a new multiple of a round step.
fn draw_axis(buf: &mut Buffer, area: Rect, plan: &Plan, columns: u16, theme: Theme) {
    let count = plan.task_count();
    let step = [
        1u64, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10_000,
    ]
    .into_iter()
    .find(|&s| count / s <= u64::from(columns) / 8)
    .unwrap_or(count.max(1));
    let mut axis = vec![' '; (LABEL + columns) as usize];
    for (i, ch) in "task".chars().enumerate() {
        axis[i] = ch;
    }
    let mut next_free = 0usize;
    for task in plan.tasks.0..=plan.tasks.1 {
        if task % step != 0 && task != plan.tasks.0 {
            continue;
        }
        let x = (LABEL + column_of(task, plan.tasks.0, count, columns)) as usize;
        let text = task.to_string();
        if x >= next_free && x + text.len() <= axis.len() {
            for (i, ch) in text.chars().enumerate() {
                axis[x + i] = ch;
            }
            next_free = x + text.len() + 1;
        }
    }
    put(
        buf,
        area,
        area.y + 1,
        Line::styled(axis.into_iter().collect::<String>(), theme.dim()),
    );
}

/// One line per band, a gap between strategies when `spaced`; returns the line after the last.
fn draw_bands(
    buf: &mut Buffer,
    area: Rect,
    state: &MapState,
    (columns, spaced, interactive): (u16, bool, bool),
    theme: Theme,
) -> u16 {
    let plan = &state.plan;
    let count = plan.task_count();
    let bands = plan.bands();
    let rows = band_rows(area, plan, spaced);
    let cursor_column = column_of(state.task, plan.tasks.0, count, columns);
    let mut y = area.y + 2;
    for (band, &(strategy, point)) in bands.iter().enumerate() {
        let Some(row) = rows[band] else { break };
        y = row;
        let mut outcomes: Vec<Option<Outcome>> = vec![None; columns as usize];
        for task in plan.tasks.0..=plan.tasks.1 {
            let c = column_of(task, plan.tasks.0, count, columns) as usize;
            let outcome = state.cells[state.index(band, task)]
                .as_ref()
                .map(Cell::outcome);
            outcomes[c] = worse(outcomes[c], outcome);
        }
        let here = interactive && band == state.band;
        let strategy_label = if point == plan.points[0] || here {
            strategy.name()
        } else {
            ""
        };
        let label_style = if here {
            theme.selected()
        } else {
            theme.plain()
        };
        let mut spans = vec![
            Span::styled(format!("{strategy_label:<11}"), label_style),
            Span::styled(
                format!("{:<17}", point.name()),
                if here { theme.selected() } else { theme.dim() },
            ),
        ];
        for (c, outcome) in outcomes.into_iter().enumerate() {
            let (ch, mut style) = glyph(outcome, theme);
            if here && c == cursor_column as usize {
                style = style.add_modifier(Modifier::REVERSED);
            }
            spans.push(Span::styled(ch.to_string(), style));
        }
        put(buf, area, y, Line::from(spans));
        y += 1;
    }

    y
}

/// The cell under the cursor (its figures, what the code implies), the notice and the keys.
fn draw_cursor(buf: &mut Buffer, area: Rect, state: &MapState, theme: Theme) {
    let bottom = area.y + area.height;
    let bands = state.plan.bands();
    let detail_y = bottom.saturating_sub(3);
    let (strategy, point) = bands[state.band.min(bands.len() - 1)];
    let at = format!("{strategy} · {point} · {}", task_id(state.task));
    let (line1, line2) = match state.selected() {
        Some(cell) => {
            let implied = expected_duplicates(strategy, cell.kill());
            let agree = if implied == cell.duplicated_task_ids {
                "as the code implies".to_string()
            } else {
                format!("the code implies {implied} duplicated")
            };
            (
                Line::from(vec![
                    Span::styled(at, theme.selected()),
                    Span::raw(": "),
                    Span::styled(
                        cell.verdict(),
                        if cell.is_right() {
                            theme.good()
                        } else {
                            theme.bad()
                        },
                    ),
                ]),
                Line::styled(format!("{}; {agree}", cell.counts()), theme.dim()),
            )
        }
        None => (
            Line::from(vec![
                Span::styled(at, theme.selected()),
                Span::styled(": running…", theme.dim()),
            ]),
            Line::raw(""),
        ),
    };
    if detail_y >= area.y + 2 {
        put(buf, area, detail_y, line1);
        let second = state
            .notice
            .as_ref()
            .map_or(line2, |n| Line::styled(n.clone(), theme.warn()));
        put(buf, area, detail_y + 1, second);
    }
    let mut footer = Vec::new();
    for binding in MAP_KEYS {
        if let Some(name) = binding.footer {
            footer.push(Span::styled(binding.label, theme.key()));
            footer.push(Span::raw(format!(" {name}  ")));
        }
    }
    put(buf, area, bottom - 1, Line::from(footer));
    if state.help {
        draw_help(area, buf, theme);
    }
}

fn draw_help(area: Rect, buf: &mut Buffer, theme: Theme) {
    let mut lines: Vec<Line<'_>> = MAP_KEYS
        .iter()
        .filter(|b| !b.help.is_empty())
        .map(|b| {
            Line::from(vec![
                Span::styled(format!("{:<10}", b.label), theme.key()),
                Span::raw(b.help),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::styled(LEGEND, theme.dim()));
    lines.push(Line::raw(
        "Each cell is a real night: the worker dies at that task and point on its first attempt, is restarted, finishes; the verdict comes from the rows.",
    ));
    let width = area.width.saturating_sub(4).min(90);
    let height = (lines.len() as u16 + 4).min(area.height);
    let popup = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    );
    Clear.render(popup, buf);
    Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .block(Block::default().borders(Borders::ALL).title(" map keys "))
        .render(popup, buf);
}

/// The dashboard's night for a cell: the cell's strategy beside guarded, each killed by the same
/// crash on its first attempt, at the shipped scenarios' pace so it can be watched.
#[must_use]
pub fn scenario_for(cell: &Cell, items: u64) -> Scenario {
    let Kill::Crash(crash) = cell.kill();
    let mut strategies = vec![cell.strategy];
    if cell.strategy != Strategy::Guarded {
        strategies.push(Strategy::Guarded);
    }
    Scenario {
        source: "map".into(),
        title: format!("The map's night: {} at {crash}", cell.strategy),
        about: format!("the map found: {}", cell.figures()),
        scale: 100.0,
        items,
        delay: Duration::from_millis(63),
        restart_delay: 18.0,
        max_restarts: 100,
        dead_man: crate::engine::DEFAULT_DEAD_MAN,
        seed: 0,
        kill_at_task: None,
        random_kills: 0,
        kill_window: crate::supervisor::schedule::DEFAULT_WINDOW,
        hang_at_task: None,
        hang_for: None,
        wipe_at_task: None,
        lanes: strategies
            .into_iter()
            .map(|strategy| ScenarioLane {
                name: strategy.name().to_string(),
                worker: strategy.into(),
                workers: 1,
                batch: 1,
                crash_at: Some(crash),
            })
            .collect(),
        captions: vec![Caption {
            at: None,
            on: Some("kill".into()),
            lane: None,
            text: format!(
                "The crash the map's cell ran: {crash}. The map found {}.",
                cell.figures()
            ),
        }],
    }
}

/// Everything the map's loop needs besides the terminal.
pub struct MapRun {
    pub state: MapState,
    pub pool: Pool<Cell>,
    pub exe: std::path::PathBuf,
    /// Where the dashboard's nights (opened with enter) keep their databases.
    pub dir: std::path::PathBuf,
    pub started: Instant,
}

/// Runs the map screen until the user quits; returns the state (the cells that arrived). The
/// terminal is restored on every path; the pool's nights are finished or stopped by its owner.
pub fn run(map: &mut MapRun) -> Result<(), Error> {
    super::require_terminal("reclaim map --json")?;
    let theme = Theme::from_env();
    let guard = super::TerminalGuard::enter().context(|| "cannot set up the terminal".into())?;
    let mut terminal =
        Terminal::new(CrosstermBackend::new(io::stdout())).context(|| "cannot draw".into())?;
    let input = super::spawn_input()?;
    let outcome = map_loop(&mut terminal, map, theme, &input);
    drop(terminal);
    drop(guard);
    outcome
}

fn map_loop(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
    map: &mut MapRun,
    theme: Theme,
    input: &mpsc::Receiver<Event>,
) -> Result<(), Error> {
    let mut watched = 0u32;
    let mut dirty = true;
    loop {
        // Everything that finished since the last frame.
        while let Some((_, result)) = map.pool.try_next() {
            map.state.add(result?);
            dirty = true;
        }
        if !map.state.finished() {
            map.state.elapsed_s = map.started.elapsed().as_secs_f64();
            dirty = true;
        }
        if dirty {
            terminal
                .draw(|frame| render_to(frame.area(), frame.buffer_mut(), &map.state, theme))
                .context(|| "cannot draw".into())?;
            dirty = false;
        }
        match input.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                if let Some(action) = action_for(key) {
                    dirty = true;
                    if let Some(MapCommand::Open(cell)) = map.state.update(action) {
                        watched += 1;
                        watch(terminal, map, &cell, watched, theme, input)?;
                        map.state
                            .notify(format!("back from {} at {}", cell.strategy, cell.kill()));
                    }
                }
            }
            Ok(Event::Mouse(mouse))
                if matches!(
                    mouse.kind,
                    MouseEventKind::Moved | MouseEventKind::Down(MouseButton::Left)
                ) =>
            {
                let size = terminal
                    .size()
                    .context(|| "cannot read the terminal's size".into())?;
                let area = Rect::new(0, 0, size.width, size.height);
                if let Some((band, task)) = cell_at(area, &map.state, mouse.column, mouse.row) {
                    map.state.select(band, task);
                    dirty = true;
                }
            }
            Ok(Event::Resize(..)) => dirty = true,
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Error::Refused("the terminal input closed".into()));
            }
        }
        if map.state.quit_requested() {
            return Ok(());
        }
        if let Some(signal) = signals::received() {
            return Err(Error::Stopped(signal));
        }
    }
}

/// The dashboard on one cell's night, in the same terminal, until its `q`.
fn watch(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
    map: &MapRun,
    cell: &Cell,
    n: u32,
    theme: Theme,
    input: &mpsc::Receiver<Event>,
) -> Result<(), Error> {
    let dir = map.dir.join(format!("watch-{n}"));
    std::fs::create_dir_all(&dir).context(|| format!("cannot create {}", dir.display()))?;
    let scenario = scenario_for(cell, map.state.plan.items);
    let mut live = super::app::Live::start(scenario, map.exe.clone(), dir, None, Instant::now())?;
    super::drive_screen(terminal, &mut live, theme, input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Status;
    use crate::worker::CrashPoint;

    fn plan(strategies: Vec<Strategy>, items: u64) -> Plan {
        Plan {
            strategies,
            points: CrashPoint::ALL.to_vec(),
            tasks: (0, items - 1),
            items,
        }
    }

    /// A map whose every cell is what the code implies.
    fn finished(plan: &Plan) -> MapState {
        let mut state = MapState::new(plan.clone());
        for night in plan.nights() {
            let dup = expected_duplicates(night.strategy, night.kill);
            state.add(Cell {
                strategy: night.strategy,
                kill: night.kill,
                task: night.kill.task(),
                point: night.kill.point().to_string(),
                rows: plan.items + dup,
                distinct: plan.items,
                duplicated_task_ids: dup,
                missing: 0,
                derived_status: if dup > 0 {
                    Status::DataWrong
                } else {
                    Status::Ok
                },
                completed: true,
                killed: true,
                db: None,
            });
        }
        state.elapsed_s = 41.3;
        state
    }

    fn screen(state: &MapState, width: u16, height: u16) -> String {
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        render_to(area, &mut buf, state, Theme::monochrome());
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_whole_map_at_120x40() {
        let plan = plan(Strategy::all().to_vec(), 200);
        let mut state = finished(&plan);
        state.update(MapAction::Down);
        for _ in 0..50 {
            state.update(MapAction::Right);
        }
        let text = screen(&state, 120, 40);
        assert!(text.contains("naive      after-row-commit"), "{text}");
        assert!(
            text.contains(
                "task-050: DUPLICATED 51\n251 rows, 200 distinct, 51 duplicated, 0 missing; as the code implies"
            ),
            "{text}"
        );
        assert!(text.contains("guarded    800/800 right"), "{text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn the_whole_map_at_80x24() {
        let plan = plan(Strategy::all().to_vec(), 200);
        let mut state = finished(&plan);
        for _ in 0..5 {
            state.update(MapAction::Down);
        }
        let text = screen(&state, 80, 24);
        assert!(text.contains("two-commit after-row-commit"), "{text}");
        assert!(text.contains("1 duplicated"), "{text}");
        assert!(text.contains("enter watch"), "{text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn a_map_in_progress_shows_what_is_running() {
        let plan = plan(vec![Strategy::TwoCommit], 12);
        let full = finished(&plan);
        let mut state = MapState::new(plan.clone());
        for cell in full.cells().into_iter().filter(|c| c.task < 5) {
            state.add(cell);
        }
        state.elapsed_s = 0.4;
        let text = screen(&state, 80, 24);
        assert!(text.contains("20/48 nights"), "{text}");
        assert!(text.contains('░'), "{text}");
        state.update(MapAction::End);
        assert_eq!(state.update(MapAction::Open), None);
        insta::assert_snapshot!(text);
    }

    #[test]
    fn a_narrow_column_shows_its_worst_night() {
        // 200 tasks in about 50 columns: the single duplicated row of two-commit must show.
        let plan = plan(vec![Strategy::TwoCommit], 200);
        let state = finished(&plan);
        let text = screen(&state, 80, 24);
        let band = text
            .lines()
            .find(|l| l.contains("after-row-commit"))
            .unwrap_or_default();
        assert!(!band.contains('·'), "{band}");
        assert!(band.contains('1'), "{band}");
    }

    #[test]
    fn enter_asks_for_the_night_under_the_cursor() {
        let plan = plan(vec![Strategy::Naive], 10);
        let mut state = finished(&plan);
        state.update(MapAction::Down);
        state.update(MapAction::PageRight);
        let Some(MapCommand::Open(cell)) = state.update(MapAction::Open) else {
            panic!("enter opened nothing");
        };
        assert_eq!((cell.task, cell.point.as_str()), (1, "after-row-commit"));
        let scenario = scenario_for(&cell, 10);
        let lanes: Vec<&str> = scenario.lanes.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(lanes, ["naive", "guarded"]);
        let crash = crate::worker::CrashAt {
            task: 1,
            point: CrashPoint::AfterRowCommit,
        };
        assert!(scenario.lanes.iter().all(|l| l.crash_at == Some(crash)));
    }

    #[test]
    fn pointing_at_a_glyph_selects_the_night_it_shows() {
        // 200 tasks in 51 columns at 80x24: the first column holds tasks 0..=3 and shows the
        // worst, task-003 before-write with 3 duplicated.
        let plan = plan(Strategy::all().to_vec(), 200);
        let mut state = finished(&plan);
        let area = Rect::new(0, 0, 80, 24);
        let text = screen(&state, 80, 24);
        let y = text
            .lines()
            .position(|l| l.starts_with("naive      before-write"))
            .unwrap_or_default() as u16;
        assert_eq!(cell_at(area, &state, LABEL, y), Some((0, 3)));
        let (band, task) = cell_at(area, &state, LABEL, y).unwrap_or_default();
        state.select(band, task);
        assert_eq!(state.selected().map(|c| c.duplicated_task_ids), Some(3));
        // The label, the axis and the gap between strategies are no cell.
        assert_eq!(cell_at(area, &state, 3, y), None);
        assert_eq!(cell_at(area, &state, LABEL, 1), None);
        assert_eq!(cell_at(area, &state, LABEL, y + 4), None);
        // Two-commit's after-row-commit band, one band below the gap.
        assert_eq!(
            cell_at(area, &state, LABEL + 10, y + 6).map(|(b, _)| b),
            Some(5)
        );
    }

    #[test]
    fn tiny_terminals_do_not_panic() {
        let plan = plan(Strategy::all().to_vec(), 30);
        let mut state = finished(&plan);
        state.update(MapAction::ToggleHelp);
        for (w, h) in [(0, 0), (1, 1), (10, 3), (29, 5), (40, 10), (300, 80)] {
            let _ = screen(&state, w, h);
        }
    }

    #[test]
    fn no_key_is_bound_twice() {
        let mut seen = Vec::new();
        for binding in MAP_KEYS {
            for key in binding.keys {
                assert!(!seen.contains(key), "{key:?} is bound twice");
                seen.push(*key);
            }
        }
    }
}
