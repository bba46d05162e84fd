//! Runs a helper program (`csync2`, `qemu-img`) directly, without a shell: an argument vector,
//! stdin from /dev/null, stderr discarded, killed at the action's deadline.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::clock::{Clock, Deadline};

const POLL_MS: u64 = 10;

/// Runs `program args...` until it exits or `deadline`; `Ok(stdout)` when it exited 0, else a
/// sentence saying why not.
pub fn run(
    program: &str,
    args: &[&std::ffi::OsStr],
    deadline: Deadline,
    clock: &dyn Clock,
) -> Result<String, String> {
    let shown = describe(program, args);
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                if let Some(mut s) = child.stdout.take() {
                    let _ = s.read_to_string(&mut out);
                }
                return if status.success() {
                    Ok(out)
                } else {
                    Err(format!("{shown} failed ({status})"))
                };
            }
            Ok(None) if !deadline.passed(clock) => {}
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{shown} did not finish before the deadline and was killed"
                ));
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{shown}: {e}"));
            }
        }
        // Real time passes for the child whatever the clock is; a manual clock advances too.
        std::thread::sleep(Duration::from_millis(POLL_MS));
        clock.sleep_ms(POLL_MS);
    }
}

fn describe(program: &str, args: &[&std::ffi::OsStr]) -> String {
    let mut s = program.to_owned();
    for a in args {
        s.push(' ');
        s.push_str(&Path::new(a).display().to_string());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn output_failure_missing_and_deadline() {
        let clock = ManualClock::new(0);
        let d = Deadline::after(&clock, 5_000);
        let out = run("/bin/echo", &["a b".as_ref()], d, &clock).unwrap();
        assert_eq!(out, "a b\n", "one argument, no shell");
        assert!(
            run("/bin/false", &[], d, &clock)
                .unwrap_err()
                .contains("failed")
        );
        assert!(
            run("/nonexistent/x", &[], d, &clock)
                .unwrap_err()
                .contains("cannot run")
        );
        let short = Deadline::after(&clock, 100);
        let e = run("/bin/sleep", &["60".as_ref()], short, &clock).unwrap_err();
        assert!(e.contains("killed"), "{e}");
    }
}
