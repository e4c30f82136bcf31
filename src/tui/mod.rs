//! The dashboard: a terminal driver around the same engine the headless commands use.
//!
//! Threads feed one channel (terminal input); the loop receives, updates the app, ticks the
//! engine and draws. Every exit path (q, Ctrl-C, SIGTERM, SIGHUP, a panic) restores the terminal
//! and kills every worker.

mod captions;
mod chrome;
pub mod keymap;
pub mod lecture;
pub mod live;
pub mod map;
mod moment;
mod night;
pub mod notes;
pub mod replay;
pub mod settings;
mod tape;
pub mod theme;
pub mod ui;
pub mod view;

use std::io::{self, IsTerminal as _};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyEventKind, MouseButton, MouseEventKind};
use crossterm::{execute, terminal};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Position, Rect};

use crate::error::{Context as _, Error};
use crate::record::Recording;
use crate::scenario::Scenario;
use crate::signals;

use self::keymap::{KeyAction, Mode};
use self::live::Live;
use self::notes::{NoteLine, Notes};
use self::replay::ReplayApp;
use self::settings::{DashboardSettings, LectureMode};
use self::theme::Theme;
use self::view::Dashboard;

/// What the event loop drives: the live night or a replay.
pub trait Screen {
    fn mode(&self) -> Mode;
    fn quit_requested(&self) -> bool;
    fn lane_count(&self) -> usize;
    fn select(&mut self, lane: usize);
    /// Advances time to `now`.
    fn tick(&mut self, now: Instant) -> Result<(), Error>;
    /// Applies one user action.
    fn update(&mut self, action: KeyAction, now: Instant) -> Result<(), Error>;
    /// The frame's view model.
    fn view(&self) -> Dashboard;
    /// Closes the help overlay; whether it was open.
    fn close_help(&mut self, now: Instant) -> bool;
    /// The window is below the dashboard's minimum size (`true`) or large enough again: a
    /// live night pauses while nobody can see it.
    fn too_small(&mut self, _small: bool, _now: Instant) {}
    /// The dashboard is about to stop (Ctrl-Z, SIGTSTP): nothing may go on while nobody watches.
    fn suspend(&mut self, _now: Instant) {}
    /// The dashboard was continued (`fg`) after `suspend`.
    fn unsuspend(&mut self, _now: Instant) {}
    /// What the speaker notes should get since the last call: nights begun, captions reached.
    fn take_notes(&mut self) -> Vec<NoteLine> {
        Vec::new()
    }
    /// Shows `text` in the header, as a notice of the screen's own.
    fn notice(&mut self, _text: String, _now: Instant) {}
}

/// How often the engine looks at workers and rows. A kill "at task N" lands on N whatever this
/// is (writes are granted by the sim clock); it only bounds how smoothly the night is shown.
const TICK: Duration = Duration::from_millis(20);
/// How often the screen is redrawn when nothing else happens.
const FRAME: Duration = Duration::from_millis(100);

/// Set while the terminal is in raw mode on the alternate screen, for the panic hook.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Whether the dashboard has the terminal (raw mode, alternate screen).
#[must_use]
pub fn terminal_active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// Puts the terminal back as it was. Idempotent; safe from a panic hook.
pub fn restore_terminal() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = terminal::disable_raw_mode();
        let _ = execute!(
            io::stdout(),
            terminal::LeaveAlternateScreen,
            event::DisableMouseCapture,
            crossterm::cursor::Show
        );
    }
}

/// Raw mode, the alternate screen, mouse capture: the terminal as the dashboard uses it.
fn take_terminal() -> io::Result<()> {
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    execute!(
        io::stdout(),
        terminal::EnterAlternateScreen,
        event::EnableMouseCapture
    )
}

/// Restores the terminal when dropped, whatever the exit path.
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> io::Result<Self> {
        // The guard exists before the first change, so a failure half-way is undone too.
        let guard = Self;
        take_terminal()?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

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

/// After a resize: the buffers take the new size, the screen is cleared and the next frame is
/// drawn whole. A terminal reflows or keeps what was drawn at another size (a window shrunk below
/// the minimum and grown back), and a frame diffed against the old one would leave those
/// fragments in the cells it does not change.
fn redraw_all(terminal: &mut Terminal<CrosstermBackend<io::Stdout>>) -> Result<(), Error> {
    terminal
        .autoresize()
        .and_then(|()| execute!(io::stdout(), terminal::Clear(terminal::ClearType::All)))
        .context(|| "cannot redraw the terminal".into())?;
    // As after `fg` (see `suspend`): not `Terminal::clear`, which asks where the cursor is.
    terminal.swap_buffers();
    Ok(())
}

fn require_terminal(headless: &str) -> Result<(), Error> {
    if io::stdout().is_terminal() && io::stdin().is_terminal() {
        Ok(())
    } else {
        Err(Error::Refused(format!(
            "the dashboard needs a terminal (stdin and stdout must be a tty); for scripts use `{headless}`"
        )))
    }
}

/// Runs `reclaim replay FILE`: the recorded night in the dashboard, no processes.
pub fn replay(file: &Path, settings: &DashboardSettings) -> Result<u8, Error> {
    let recording = Recording::load(file)?;
    if recording.truncated {
        eprintln!(
            "reclaim: warning: {}: the last line was cut short; replaying the rest",
            file.display()
        );
    }
    // The recorded night's warehouses (and their companions) are not the notes' to write.
    let warehouses: Vec<&Path> = (recording.header.lanes.iter())
        .map(|l| l.db.as_path())
        .collect();
    if let Some(path) = &settings.notes {
        Notes::check(path, &[file], &warehouses)?;
    }
    require_terminal("reclaim replay --check")?;
    let mut notes = match &settings.notes {
        Some(path) => Some(Notes::open(
            path,
            &recording.header.title,
            &[file],
            &warehouses,
        )?),
        None => None,
    };
    if let Some(notes) = notes.as_mut() {
        notes
            .night(&format!("a replay of {}", file.display()))
            .context(|| "cannot write the notes".into())?;
    }
    signals::install().context(|| "cannot install signal handlers".into())?;
    signals::catch_suspend().context(|| "cannot install signal handlers".into())?;
    let guard = TerminalGuard::enter().context(|| "cannot set up the terminal".into())?;
    let mut terminal =
        Terminal::new(CrosstermBackend::new(io::stdout())).context(|| "cannot draw".into())?;
    let mut app = ReplayApp::new(recording);
    if let Some(mode) = settings.lecture {
        app = app.lecture(mode == LectureMode::CaptionsOnly);
    }
    let outcome = event_loop(&mut terminal, &mut app, settings.theme, notes.as_mut());
    drop(terminal);
    drop(guard);
    outcome.map(|()| crate::exit::OK)
}

/// Runs the live dashboard on `scenario` (loaded and validated before the terminal is
/// touched), recording it to `record` when given; in lecture mode and with speaker notes as
/// `settings` ask.
pub fn run(
    scenario: Scenario,
    record: Option<&Path>,
    settings: &DashboardSettings,
) -> Result<u8, Error> {
    if let Some(path) = record {
        crate::paths::new_recording(path, None)?;
    }
    let others: Vec<&Path> = record.into_iter().collect();
    if let Some(path) = &settings.notes {
        Notes::check(path, &others, &[])?;
    }
    require_terminal("reclaim run")?;
    let mut notes = match &settings.notes {
        Some(path) => Some(Notes::open(path, &scenario.title, &others, &[])?),
        None => None,
    };
    let exe = std::env::current_exe().context(|| "cannot find reclaim's own executable".into())?;
    let dir = crate::paths::fresh_db_path("tui")
        .context(|| "cannot create a folder for the databases".into())?
        .with_file_name("");
    signals::install().context(|| "cannot install signal handlers".into())?;
    signals::catch_suspend().context(|| "cannot install signal handlers".into())?;
    let guard = TerminalGuard::enter().context(|| "cannot set up the terminal".into())?;
    let mut terminal =
        Terminal::new(CrosstermBackend::new(io::stdout())).context(|| "cannot draw".into())?;
    let mut app = Live::start(
        scenario,
        exe,
        dir,
        record.map(Path::to_path_buf),
        Instant::now(),
    )?
    .presenting(settings.lecture);
    let outcome = event_loop(&mut terminal, &mut app, settings.theme, notes.as_mut());
    // Workers first, then the terminal: nothing may outlive the dashboard.
    let db_dir = app.db_dir().display().to_string();
    let recording = app.saved_recording().map(|p| p.display().to_string());
    drop(app);
    drop(terminal);
    drop(guard);
    outcome?;
    println!("reclaim: the night's databases are kept in {db_dir} (open them with sqlite3)");
    if let Some(path) = recording {
        println!("reclaim: the session is recorded in {path} (reclaim replay {path})");
    }
    Ok(crate::exit::OK)
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

fn event_loop(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
    app: &mut dyn Screen,
    theme: Theme,
    notes: Option<&mut Notes>,
) -> Result<(), Error> {
    let input = spawn_input()?;
    drive_screen(terminal, app, theme, &input, notes)
}

/// Writes what the screen reached to the speaker notes; a notes file that cannot be written is
/// given up (the night goes on) and the screen says so.
fn write_notes(app: &mut dyn Screen, notes: &mut Option<&mut Notes>, now: Instant) {
    let lines = app.take_notes();
    let Some(file) = notes.as_deref_mut() else {
        return;
    };
    if let Err(e) = lines.iter().try_for_each(|line| file.write_line(line)) {
        let path = file.path().display().to_string();
        *notes = None;
        app.notice(format!("notes {path} stopped: {e}"), now);
    }
}

/// The terminal's input as a channel. The thread ends when the receiver is dropped (its next
/// send fails). One reader only: two threads reading the terminal would each lose the other's
/// keys, so the map screen hands its channel to the dashboard it opens.
fn spawn_input() -> Result<mpsc::Receiver<Event>, Error> {
    let (tx, rx) = mpsc::channel::<Event>();
    thread::Builder::new()
        .name("reclaim-input".into())
        .spawn(move || {
            loop {
                match event::poll(Duration::from_millis(200)) {
                    Ok(true) => match event::read() {
                        Ok(ev) => {
                            if tx.send(ev).is_err() {
                                break;
                            }
                        }
                        Err(_) => break,
                    },
                    Ok(false) => {
                        // Probe the channel so the thread notices the loop has gone.
                        if tx.send(Event::FocusGained).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        })
        .context(|| "cannot start the input thread".into())?;
    Ok(rx)
}

/// Runs a screen until it asks to quit (or a signal arrives), reading keys from `rx`.
fn drive_screen(
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
        match rx.recv_timeout(timeout) {
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
            next_tick = now + TICK;
            crate::test_hooks::panic_point(app.mode() == Mode::Live);
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
                terminal
                    .draw(|frame| ui::render(frame, &view, theme))
                    .context(|| "cannot draw".into())?;
                shown = Some(view);
            }
            next_frame = now + FRAME;
        }
    }
}
