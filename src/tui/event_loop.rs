//! The dashboard's loop: terminal input and a tick feed one screen (`Screen`), which updates,
//! and the frame is drawn when something on it changed; speaker notes are written as the screen
//! reaches them; Ctrl-Z, resizes and signals are answered here.

use std::io;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyEventKind, MouseButton, MouseEventKind};
use crossterm::{execute, terminal};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Position, Rect};

use crate::base::signals;
use crate::error::{Context as _, Error};
use crate::tui::keymap::{self, KeyAction, Mode};
use crate::tui::notes::Notes;
use crate::tui::screen::Screen;
use crate::tui::terminal::{draw_frame, redraw_all, restore_terminal, spawn_input, take_terminal};
use crate::tui::theme::Theme;
use crate::tui::ui;
use crate::tui::view::Dashboard;

/// How often a screen is ticked while it moves, unless it says otherwise (`Screen::tick_every`;
/// a still one, `Screen::still_until`, once a `FRAME`).
const TICK: Duration = Duration::from_millis(20);
/// How often the screen is redrawn when nothing else happens.
const FRAME: Duration = Duration::from_millis(100);

/// Ctrl-Z or SIGTSTP, as a good terminal program answers them: pause the night (workers stopped,
/// clock frozen), give the terminal back as it was, stop; once continued (`fg`), take the
/// terminal again, redraw all of it (the shell has drawn over it) and go on.
fn suspend(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
    app: &mut dyn Screen,
) -> Result<(), Error> {
    app.suspend(Instant::now());
    restore_terminal();
    // SIGSTOP rather than the default SIGTSTP, which the kernel discards for an orphaned
    // process group (reclaim started by something other than a job-control shell).
    signals::stop_self().context(|| "cannot suspend".into())?;
    take_terminal()
        .and_then(|()| execute!(io::stdout(), terminal::Clear(terminal::ClearType::All)))
        .context(|| "cannot set up the terminal again".into())?;
    // The next frame is diffed against a blank one, so all of it is drawn. (`Terminal::clear`
    // would do this too, but first asks the terminal where its cursor is: an answer that not
    // every terminal gives, and that the input thread may read first.)
    terminal.swap_buffers();
    app.unsuspend(Instant::now());
    Ok(())
}

/// One key press; whether the screen must be drawn again. Any key over the help, bound or not,
/// Esc too, closes it and does nothing else; Ctrl-C and Ctrl-Z keep their meaning. Behind the
/// "too small" screen (`small`) only quitting and suspending act: nothing else can be seen.
fn key_pressed(app: &mut dyn Screen, key: event::KeyEvent, small: bool) -> Result<bool, Error> {
    let control = key.modifiers.contains(event::KeyModifiers::CONTROL);
    if !control && !small && app.close_help(Instant::now()) {
        return Ok(true);
    }
    let action = keymap::action_for(key, app.mode())
        .filter(|a| !small || matches!(a, KeyAction::Quit | KeyAction::Suspend));
    match action {
        Some(KeyAction::Suspend) => {
            signals::request_suspend();
            Ok(false)
        }
        Some(action) => {
            app.update(action, Instant::now())?;
            Ok(true)
        }
        None => Ok(false),
    }
}

pub(super) fn event_loop(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
    app: &mut dyn Screen,
    theme: Theme,
    notes: Option<&mut Notes>,
) -> Result<(), Error> {
    let input = spawn_input()?;
    drive_screen(terminal, app, theme, &input, notes)
}

/// Writes what the screen reached to the speaker notes; a notes file that cannot be written is
/// given up (the night goes on), the screen says so, and the dashboard ends saying it (exit 2).
fn write_notes(app: &mut dyn Screen, notes: &mut Option<&mut Notes>, now: Instant) {
    let lines = app.take_notes();
    let Some(file) = notes.as_deref_mut().filter(|n| !n.stopped()) else {
        return;
    };
    if let Err(e) = lines.iter().try_for_each(|line| file.write_line(line)) {
        let path = file.path().display().to_string();
        app.notice(format!("notes {path} stopped: {e}"), now);
        file.stop(e);
    }
}

/// Runs a screen until it asks to quit (or a signal arrives), reading keys from `rx`.
pub(super) fn drive_screen(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
    app: &mut dyn Screen,
    theme: Theme,
    rx: &mpsc::Receiver<Event>,
    mut notes: Option<&mut Notes>,
) -> Result<(), Error> {
    let mut next_frame = Instant::now();
    let mut next_tick = Instant::now();
    // The last frame drawn: a paused or finished night shows the same frame over and over, and
    // is not rendered again until something on it changes.
    let mut shown: Option<Dashboard> = None;
    let mut small = false;
    if let Ok(size) = terminal.size() {
        small = size.width < ui::MIN_WIDTH || size.height < ui::MIN_HEIGHT;
        app.too_small(small, Instant::now());
    }
    loop {
        let timeout = next_tick.saturating_duration_since(Instant::now());
        let mut redraw = false;
        let received = rx.recv_timeout(timeout);
        if received.is_ok() {
            // A still night may move on any key: looked at now, not a frame later.
            next_tick = next_tick.min(Instant::now());
        }
        match received {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                redraw = key_pressed(app, key, small)?;
                write_notes(app, &mut notes, Instant::now());
            }
            Ok(Event::Mouse(mouse)) if mouse.kind == MouseEventKind::Down(MouseButton::Left) => {
                let size = terminal
                    .size()
                    .context(|| "cannot read the terminal's size".into())?;
                let view = app.view();
                let a = ui::areas(
                    Rect::new(0, 0, size.width, size.height),
                    app.lane_count(),
                    view.caption.as_deref(),
                    view.lecture.as_ref(),
                    view.mode,
                    view.zoom.then_some(view.selected),
                );
                let at = Position::new(mouse.column, mouse.row);
                if let Some(lane) = a.lanes.iter().position(|r| r.contains(at)) {
                    app.select(lane);
                    redraw = true;
                }
            }
            Ok(Event::Resize(width, height)) => {
                small = width < ui::MIN_WIDTH || height < ui::MIN_HEIGHT;
                app.too_small(small, Instant::now());
                redraw_all(terminal)?;
                redraw = true;
            }
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Error::Refused("the terminal input closed".into()));
            }
        }
        let now = Instant::now();
        if now >= next_tick {
            app.tick(now)?;
            write_notes(app, &mut notes, now);
            next_tick = now + app.tick_every().unwrap_or(TICK);
            if let Some(until) = app.still_until(now) {
                // Nothing moves by itself: looked at once a frame, and when it moves again.
                next_tick = until.clamp(next_tick, now + FRAME);
            }
            crate::base::test_hooks::panic_point(app.mode() == Mode::Live);
        }
        if app.quit_requested() || signals::received().is_some() {
            return Ok(());
        }
        if signals::take_suspend() {
            suspend(terminal, app)?;
            redraw = true;
            // The time spent stopped is not owed: the next tick comes a tick from now.
            next_tick = Instant::now() + TICK;
        }
        if redraw || now >= next_frame {
            let view = app.view();
            if redraw || shown.as_ref() != Some(&view) {
                draw_frame(terminal, |frame| ui::render(frame, &view, theme))
                    .context(|| "cannot draw".into())?;
                shown = Some(view);
                app.drawn();
            }
            next_frame = now + FRAME;
        }
    }
}
