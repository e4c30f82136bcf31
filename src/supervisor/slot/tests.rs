//! Exit classification and the restart policy on hand-made wait statuses: no process.

use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;

use super::*;

const POLICY: RestartPolicy = RestartPolicy {
    delay: 18.0,
    max: 3,
};

/// A wait status for a process that called `exit(code)`.
fn exited(code: i32) -> ExitStatus {
    ExitStatus::from_raw(code << 8)
}

/// A wait status for a process killed by `signal`.
fn signalled(signal: i32) -> ExitStatus {
    ExitStatus::from_raw(signal)
}

/// A slot whose first attempt is running (its process is not needed to classify its exit).
fn running() -> Slot {
    let mut slot = Slot::new();
    slot.attempt = 1;
    slot.state = SlotState::Running;
    slot
}

#[test]
fn exit_zero_is_done_and_never_restarted() {
    let mut slot = running();
    assert_eq!(slot.classify(exited(0), 100.0, POLICY), Exit::Done);
    assert_eq!(slot.state(), SlotState::Done);
    assert_eq!(slot.restart_due(), None);
    assert!(!slot.restart_is_due(f64::MAX));
}

#[test]
fn an_error_exit_fails_with_its_last_stderr_line_or_its_code() {
    let mut slot = running();
    assert_eq!(
        slot.classify(exited(3), 100.0, POLICY),
        Exit::Failed {
            reason: "worker exited with code 3".into(),
            code: 3,
        }
    );
    assert_eq!(slot.state(), SlotState::Failed);
    assert_eq!(slot.restart_due(), None);

    let mut slot = running();
    slot.heard(1, true, Some("reclaim: error: database is locked"));
    // A stdout line is no reason.
    slot.heard(1, false, Some("done rows_written=3"));
    assert_eq!(
        slot.classify(exited(1), 100.0, POLICY),
        Exit::Failed {
            reason: "database is locked".into(),
            code: 1,
        }
    );
}

#[test]
fn a_signal_from_outside_is_a_kill_restarted_after_the_delay() {
    let mut slot = running();
    assert_eq!(
        slot.classify(signalled(Signal::SIGKILL as i32), 100.0, POLICY),
        Exit::Killed {
            signal: Signal::SIGKILL as i32,
            by_host: false,
        }
    );
    assert_eq!(slot.state(), SlotState::Restarting);
    assert_eq!(slot.restart_due(), Some(118.0));
    assert!(!slot.restart_is_due(117.9));
    assert!(slot.restart_is_due(118.0));

    let mut slot = running();
    assert_eq!(
        slot.classify(signalled(Signal::SIGTERM as i32), 5.0, POLICY),
        Exit::Killed {
            signal: Signal::SIGTERM as i32,
            by_host: false,
        }
    );
}

#[test]
fn the_hosts_own_sigkill_is_told_from_anyone_elses_once() {
    let mut slot = running();
    slot.killed_by_host = true;
    assert_eq!(
        slot.classify(signalled(Signal::SIGKILL as i32), 100.0, POLICY),
        Exit::Killed {
            signal: Signal::SIGKILL as i32,
            by_host: true,
        }
    );
    assert_eq!(slot.restart_due(), Some(118.0));
    // The mark is the host's for that one exit: the next death is someone else's.
    slot.state = SlotState::Running;
    assert_eq!(
        slot.classify(signalled(Signal::SIGKILL as i32), 200.0, POLICY),
        Exit::Killed {
            signal: Signal::SIGKILL as i32,
            by_host: false,
        }
    );
}

#[test]
fn a_resource_limit_is_the_workers_own_failure_never_a_kill() {
    for (signal, limit) in [
        ((Signal::SIGXFSZ as i32), "ulimit -f"),
        ((Signal::SIGXCPU as i32), "ulimit -t"),
    ] {
        let mut slot = running();
        let exit = slot.classify(signalled(signal), 100.0, POLICY);
        let Exit::Failed { reason, code } = exit else {
            panic!("signal {signal}: {exit:?}");
        };
        assert_eq!(code, 128 + signal);
        assert!(reason.starts_with("killed by SIG"), "{reason}");
        assert!(reason.contains(limit), "{reason}");
        assert_eq!(slot.state(), SlotState::Failed);
        assert_eq!(slot.restart_due(), None);
    }
}

#[test]
fn a_failure_restarted_as_after_a_kill_waits_for_the_delay_and_giving_up_ends_it() {
    let mut slot = running();
    let _ = slot.classify(exited(1), 50.0, POLICY);
    slot.restart_after_failure(50.0, POLICY);
    assert_eq!(slot.state(), SlotState::Restarting);
    assert_eq!(slot.restart_due(), Some(68.0));
    assert!(slot.restart_is_due(68.0));
    slot.give_up();
    assert_eq!(slot.state(), SlotState::GaveUp);
    assert_eq!(slot.restart_due(), None);
    assert!(!slot.restart_is_due(f64::MAX));
}

#[test]
fn a_pipe_closing_late_from_an_old_attempt_is_not_the_current_ones() {
    let mut slot = running();
    slot.attempt = 2;
    slot.open_pipes = 2;
    slot.heard(1, false, None);
    assert_eq!(slot.open_pipes, 2);
    slot.heard(2, false, None);
    slot.heard(2, true, None);
    assert_eq!(slot.open_pipes, 0);
    // Never below none.
    slot.heard(2, true, None);
    assert_eq!(slot.open_pipes, 0);
}
