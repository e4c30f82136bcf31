//! The terminal as the dashboard uses it: raw mode, the alternate screen and mouse capture,
//! taken and given back on every exit path (a guard, and a flag for the panic hook); the one
//! thread that reads its input.

use std::io::{self, IsTerminal as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crossterm::event::{self, Event};
use crossterm::{execute, queue, terminal};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use crate::error::{Context as _, Error};

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
        // A frame cut short (a panic mid-draw) is ended first: a terminal that holds a
        // synchronized update would otherwise hold it until its own timeout.
        let _ = execute!(
            io::stdout(),
            terminal::EndSynchronizedUpdate,
            terminal::LeaveAlternateScreen,
            event::DisableMouseCapture,
            crossterm::cursor::Show
        );
    }
}

/// Raw mode, the alternate screen, mouse capture: the terminal as the dashboard uses it.
pub(super) fn take_terminal() -> io::Result<()> {
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    execute!(
        io::stdout(),
        terminal::EnterAlternateScreen,
        event::EnableMouseCapture
    )
}

/// Restores the terminal when dropped, whatever the exit path.
pub(super) struct TerminalGuard;

impl TerminalGuard {
    pub(super) fn enter() -> io::Result<Self> {
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

/// Draws one frame between the synchronized-update marks (DEC private mode 2026): a terminal
/// that knows them shows each frame whole, never half drawn (ratatui writes a frame in several
/// writes); one that does not ignores them. The mark that ends the frame is written whether or
/// not the drawing failed.
pub(super) fn draw_frame(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
    render: impl FnOnce(&mut ratatui::Frame<'_>),
) -> io::Result<()> {
    queue!(terminal.backend_mut(), terminal::BeginSynchronizedUpdate)?;
    let drawn = terminal.draw(render).map(|_| ());
    let ended = execute!(terminal.backend_mut(), terminal::EndSynchronizedUpdate);
    drawn.and(ended)
}

/// After a resize: the buffers take the new size, the screen is cleared and the next frame is
/// drawn whole. A terminal reflows or keeps what was drawn at another size (a window shrunk below
/// the minimum and grown back), and a frame diffed against the old one would leave those
/// fragments in the cells it does not change.
pub(super) fn redraw_all(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
) -> Result<(), Error> {
    terminal
        .autoresize()
        .and_then(|()| execute!(io::stdout(), terminal::Clear(terminal::ClearType::All)))
        .context(|| "cannot redraw the terminal".into())?;
    // As after `fg` (see `suspend`): not `Terminal::clear`, which asks where the cursor is.
    terminal.swap_buffers();
    Ok(())
}

pub(super) fn require_terminal(headless: &str) -> Result<(), Error> {
    if io::stdout().is_terminal() && io::stdin().is_terminal() {
        Ok(())
    } else {
        Err(Error::Refused(format!(
            "the dashboard needs a terminal (stdin and stdout must be a tty); for scripts use `{headless}`"
        )))
    }
}

/// The terminal's input as a channel. The thread ends when the receiver is dropped (its next
/// send fails). One reader only: two threads reading the terminal would each lose the other's
/// keys, so the map screen hands its channel to the dashboard it opens.
pub(super) fn spawn_input() -> Result<mpsc::Receiver<Event>, Error> {
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
