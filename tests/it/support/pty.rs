//! The dashboard in a pseudo-terminal, for the tests that drive it: the real binary in a real
//! pty, read back through a vt100 emulator (ratatui redraws only the cells that changed, so only
//! the emulated screen says what a user sees).

use std::io::{Read as _, Write};
use std::num::NonZeroU16;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use portable_pty::{Child, CommandBuilder, ExitStatus, MasterPty, PtySize, native_pty_system};

use super::{BIN, SLACK};

/// How often the screen is looked at while waiting.
const POLL: Duration = Duration::from_millis(20);
/// How often `wait_past_captions` types `c`.
const PRESS_EVERY: Duration = Duration::from_millis(200);
/// Entering the alternate screen, as crossterm spells it (xterm's private mode 1049).
const ENTER_ALTERNATE: &[u8] = b"\x1b[?1049h";
/// The marks around each frame the dashboard draws (synchronized updates, private mode 2026).
const FRAME_BEGINS: &[u8] = b"\x1b[?2026h";
const FRAME_ENDS: &[u8] = b"\x1b[?2026l";

/// What the reader thread has seen of the pty: the emulated screen and every byte.
pub(crate) struct Term {
    parser: vt100::Parser,
    bytes: Vec<u8>,
    /// The reader hit end of file: every writer to the pty has gone.
    closed: bool,
    /// Inside a frame: its beginning read, its end not yet. The screen then shows part of one
    /// frame over the last, which no terminal that honours the marks ever shows.
    mid_frame: bool,
}

impl Term {
    /// Takes in `new` bytes read from the pty.
    fn read(&mut self, new: &[u8]) {
        // A mark may be split between two reads: look again at the tail of the last one.
        let from = self.bytes.len().saturating_sub(FRAME_BEGINS.len() - 1);
        self.parser.process(new);
        self.bytes.extend_from_slice(new);
        let tail = &self.bytes[from..];
        let last = |mark: &[u8]| tail.windows(mark.len()).rposition(|w| w == mark);
        match (last(FRAME_BEGINS), last(FRAME_ENDS)) {
            (Some(begins), Some(ends)) => self.mid_frame = begins > ends,
            (Some(_), None) => self.mid_frame = true,
            (None, Some(_)) => self.mid_frame = false,
            (None, None) => {}
        }
    }
}

/// A deadline `SLACK` times as far off as the one a test names, as `run_within` and
/// `poll_until` give theirs: every wait on the screen is for something that should come, so the
/// bound is for a hang, and a loaded machine stretches a night several times.
fn stretched(deadline: Instant) -> Instant {
    let now = Instant::now();
    now + deadline
        .saturating_duration_since(now)
        .saturating_mul(SLACK)
}

fn lock(term: &Mutex<Term>) -> MutexGuard<'_, Term> {
    term.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `reclaim ARGS...` running in a pseudo-terminal; killed (with its workers) if dropped while
/// still running, so a failed assertion never leaves a dashboard behind.
pub(crate) struct Dashboard {
    child: Box<dyn Child + Send + Sync>,
    pid: Pid,
    writer: Box<dyn Write + Send>,
    term: Arc<Mutex<Term>>,
    exit: Option<ExitStatus>,
    /// When the exit was first seen.
    exited_at: Option<Instant>,
    // Held so the pty stays open for as long as the dashboard runs.
    master: Box<dyn MasterPty + Send>,
}

impl Dashboard {
    /// Starts `reclaim ARGS...` in a `cols`x`rows` pty with TMPDIR (and the working directory)
    /// set to `tmp`, so its databases land there.
    pub(crate) fn start(args: &[&str], tmp: &Path, cols: u16, rows: u16) -> Result<Self, String> {
        let mut command = CommandBuilder::new(BIN);
        command.args(args);
        Self::spawn(command, tmp, cols, rows)
    }

    pub(crate) fn spawn(
        mut command: CommandBuilder,
        tmp: &Path,
        cols: u16,
        rows: u16,
    ) -> Result<Self, String> {
        let what = format!("{:?}", command.get_argv());
        command.env("TMPDIR", tmp);
        command.env("TERM", "xterm-256color");
        if let Some(path) = super::jobs_path() {
            command.env("PATH", path);
        }
        command.cwd(tmp);
        let size = PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        };
        let pair = native_pty_system()
            .openpty(size)
            .map_err(|e| format!("cannot open a pty: {e}"))?;
        let child = pair
            .slave
            .spawn_command(command)
            .map_err(|e| format!("cannot start {what} in a pty: {e}"))?;
        // Only the child may hold the slave end, or the reader never sees end of file.
        drop(pair.slave);
        let pid = child
            .process_id()
            .and_then(|p| i32::try_from(p).ok())
            .map(Pid::from_raw)
            .ok_or_else(|| format!("{what} has no pid"))?;
        let mut reader = pair
            .master
            .try_clone_reader()
            .map_err(|e| format!("cannot read the pty: {e}"))?;
        let writer = pair
            .master
            .take_writer()
            .map_err(|e| format!("cannot write to the pty: {e}"))?;
        let (Some(height), Some(width)) = (NonZeroU16::new(rows), NonZeroU16::new(cols)) else {
            return Err(format!("a {cols}x{rows} terminal has no cells"));
        };
        let term = Arc::new(Mutex::new(Term {
            parser: vt100::Parser::new(height, width, 0),
            bytes: Vec::new(),
            closed: false,
            mid_frame: false,
        }));
        let shared = Arc::clone(&term);
        thread::Builder::new()
            .name("pty-reader".into())
            .spawn(move || {
                let mut buf = [0_u8; 8192];
                loop {
                    match reader.read(&mut buf) {
                        // Linux answers EIO once the last slave descriptor has closed.
                        Ok(0) | Err(_) => break,
                        Ok(n) => lock(&shared).read(&buf[..n]),
                    }
                }
                lock(&shared).closed = true;
            })
            .map_err(|e| format!("cannot start the pty reader: {e}"))?;
        Ok(Self {
            child,
            pid,
            writer,
            term,
            exit: None,
            exited_at: None,
            master: pair.master,
        })
    }

    /// Types `bytes` at the terminal.
    pub(crate) fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.writer
            .write_all(bytes)
            .and_then(|()| self.writer.flush())
            .map_err(|e| format!("cannot type {bytes:?}: {e}"))
    }

    pub(crate) fn signal(&self, signal: Signal) -> Result<(), String> {
        if self.exit.is_some() {
            return Err(format!("reclaim has already exited; cannot send {signal}"));
        }
        // Not reaped yet (exit is None), so the pid still names our child.
        kill(self.pid, signal).map_err(|e| format!("cannot send {signal} to reclaim: {e}"))
    }

    pub(crate) fn poll_exit(&mut self) -> Result<Option<&ExitStatus>, String> {
        if self.exit.is_none() {
            self.exit = self
                .child
                .try_wait()
                .map_err(|e| format!("cannot wait for reclaim: {e}"))?;
            if self.exit.is_some() {
                self.exited_at = Some(Instant::now());
            }
        }
        Ok(self.exit.as_ref())
    }

    /// What the screen shows now.
    pub(crate) fn text(&self) -> String {
        lock(&self.term).parser.screen().contents()
    }

    /// Looks at the emulated screen as it is now.
    pub(crate) fn with_screen<R>(&self, look: impl FnOnce(&vt100::Screen) -> R) -> R {
        look(lock(&self.term).parser.screen())
    }

    /// reclaim's pid (not reaped until `poll_exit` has seen it exit).
    pub(crate) fn pid(&self) -> Pid {
        self.pid
    }

    /// When `poll_exit` (or `wait_exit`) first saw reclaim gone.
    pub(crate) fn exited_at(&self) -> Option<Instant> {
        self.exited_at
    }

    /// Whether the terminal is in raw mode now (no line editing), as reclaim last left it;
    /// `None` when the pty's settings cannot be read.
    pub(crate) fn raw_mode(&self) -> Option<bool> {
        // ICANON in Linux's <termios.h> (portable-pty's termios comes from its own nix).
        const ICANON: u32 = 0o2;
        let termios = self.master.get_termios()?;
        Some(termios.local_flags.bits() & ICANON == 0)
    }

    /// Whether reclaim ever switched the terminal to the alternate screen.
    pub(crate) fn entered_alternate_screen(&self) -> bool {
        lock(&self.term)
            .bytes
            .windows(ENTER_ALTERNATE.len())
            .any(|w| w == ENTER_ALTERNATE)
    }

    /// The frames drawn whole so far, if every frame came between its two marks (a frame's
    /// beginning, then its end, in turn; the last may still be being drawn).
    pub(crate) fn whole_frames(&self) -> Result<usize, String> {
        let term = lock(&self.term);
        let mut frames = 0;
        let mut open = false;
        for (at, window) in term.bytes.windows(FRAME_BEGINS.len()).enumerate() {
            match (window == FRAME_BEGINS, window == FRAME_ENDS, open) {
                (true, _, false) => open = true,
                (_, true, true) => {
                    open = false;
                    frames += 1;
                }
                (true, _, true) => return Err(format!("a frame began inside another at {at}")),
                (_, true, false) => return Err(format!("a frame ended before it began at {at}")),
                _ => {}
            }
        }
        Ok(frames)
    }

    /// Looks at the screen now and then until `ready` holds, up to `deadline` (`stretched`),
    /// only ever at a frame drawn whole (a frame half read is looked at again once its end is
    /// read, however long a loaded machine takes to write it). Fails early when reclaim has
    /// exited and all it wrote has been read, since the screen can no longer change.
    pub(crate) fn wait_for(
        &mut self,
        what: &str,
        deadline: Instant,
        ready: impl FnMut(&vt100::Screen) -> bool,
    ) -> Result<(), String> {
        self.wait_pressing(what, deadline, None, ready)
    }

    /// `wait_for`, typing `c` now and then meanwhile: the night goes on past each caption's
    /// hold at once. For a test whose point is not the captions: the default night holds up to
    /// 5 s of real time at each of its six captions, which is most of its time at 1x and all
    /// of it at 16x.
    pub(crate) fn wait_past_captions(
        &mut self,
        what: &str,
        deadline: Instant,
        ready: impl FnMut(&vt100::Screen) -> bool,
    ) -> Result<(), String> {
        self.wait_pressing(what, deadline, Some(b"c"), ready)
    }

    fn wait_pressing(
        &mut self,
        what: &str,
        deadline: Instant,
        key: Option<&[u8]>,
        mut ready: impl FnMut(&vt100::Screen) -> bool,
    ) -> Result<(), String> {
        let deadline = stretched(deadline);
        let mut pressed = Instant::now();
        if let Some(key) = key {
            let _ = self.send(key);
        }
        loop {
            // Read the exit first: a screen checked after it holds everything written before it.
            let exited = self.poll_exit()?.is_some();
            let closed = {
                let term = lock(&self.term);
                if (!term.mid_frame || term.closed) && ready(term.parser.screen()) {
                    return Ok(());
                }
                term.closed
            };
            if exited && closed {
                return Err(format!(
                    "reclaim exited ({:?}) before the screen showed {what}:\n{}",
                    self.exit,
                    self.text()
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the screen did not show {what} in time:\n{}",
                    self.text()
                ));
            }
            if let Some(key) = key
                && pressed.elapsed() >= PRESS_EVERY
            {
                // A key that cannot be typed (reclaim has gone) fails the wait by the checks
                // above, with the screen, rather than here without it.
                let _ = self.send(key);
                pressed = Instant::now();
            }
            thread::sleep(POLL);
        }
    }

    /// Waits up to `limit` times `SLACK` for reclaim to exit, then for the pty to drain (its end of file; a
    /// bound of 10 s for a descendant that kept it open), so the screen holds everything
    /// reclaim wrote.
    pub(crate) fn wait_exit(&mut self, limit: Duration) -> Result<ExitStatus, String> {
        let limit = limit.saturating_mul(SLACK);
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.poll_exit()? {
                break status.clone();
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "reclaim was still running {limit:?} later:\n{}",
                    self.text()
                ));
            }
            thread::sleep(POLL);
        };
        let drained = Instant::now() + Duration::from_secs(10);
        while !lock(&self.term).closed && Instant::now() < drained {
            thread::sleep(POLL);
        }
        Ok(status)
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        if matches!(self.poll_exit(), Ok(None)) {
            // Its workers die with it (PR_SET_PDEATHSIG), which this module tests elsewhere.
            let _ = kill(self.pid, Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
}
