//! `monitor_scripts`: each whitespace-separated word is one command, run directly (no shell, no
//! arguments, as heartbeat's word splitting gives), stdin/stdout/stderr to /dev/null, killed at the
//! deadline. (The agent's other helper programs run through `command.rs`.)

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::clock::{Clock, Deadline};

const POLL_MS: u64 = 10;

/// Why a script did not pass.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    #[error("monitor script {script} could not be started: {message}")]
    Spawn { script: String, message: String },
    #[error("monitor script {script} failed ({status})")]
    Failed { script: String, status: String },
    #[error("monitor script {script} did not finish before the deadline and was killed")]
    Timeout { script: String },
}

/// Runs the scripts in order; the first failure is returned.
pub fn run_all(
    scripts: &[String],
    deadline: Deadline,
    clock: &dyn Clock,
) -> Result<(), ScriptError> {
    for script in scripts {
        run_one(script, deadline, clock)?;
    }
    Ok(())
}

fn run_one(script: &str, deadline: Deadline, clock: &dyn Clock) -> Result<(), ScriptError> {
    let mut child = Command::new(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| ScriptError::Spawn {
            script: script.to_owned(),
            message: e.to_string(),
        })?;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                return Err(ScriptError::Failed {
                    script: script.to_owned(),
                    status: status.to_string(),
                });
            }
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ScriptError::Spawn {
                    script: script.to_owned(),
                    message: e.to_string(),
                });
            }
        }
        if deadline.passed(clock) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ScriptError::Timeout {
                script: script.to_owned(),
            });
        }
        // Real time passes for the child whatever the clock is; a manual clock advances too.
        std::thread::sleep(Duration::from_millis(POLL_MS));
        clock.sleep_ms(POLL_MS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn pass_fail_missing_and_hanging_scripts() {
        let clock = ManualClock::new(0);
        let d = Deadline::after(&clock, 5_000);
        assert_eq!(run_all(&["/bin/true".into()], d, &clock), Ok(()));
        assert_eq!(run_all(&[], d, &clock), Ok(()));
        let e = run_all(&["/bin/true".into(), "/bin/false".into()], d, &clock).unwrap_err();
        assert!(
            matches!(e, ScriptError::Failed { ref script, .. } if script == "/bin/false"),
            "{e}"
        );
        let e = run_all(&["/nonexistent/check".into()], d, &clock).unwrap_err();
        assert!(matches!(e, ScriptError::Spawn { .. }), "{e}");
        // A script that never ends is killed at the deadline.
        let dir = tempfile::tempdir().unwrap();
        let hang = dir.path().join("hang.sh");
        std::fs::write(&hang, "#!/bin/sh\nexec sleep 60\n").unwrap();
        std::fs::set_permissions(&hang, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let short = Deadline::after(&clock, 200);
        let e = run_all(&[hang.display().to_string()], short, &clock).unwrap_err();
        assert!(matches!(e, ScriptError::Timeout { .. }), "{e}");
    }
}
