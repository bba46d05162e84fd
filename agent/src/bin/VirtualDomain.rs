//! The `VirtualDomain` OCF agent binary: environment in, one action, exit code out.
//!
//! It does not link libvirt: actions that need no hypervisor (`meta-data`, `usage`, unknown and
//! unsupported actions) are answered here in about a millisecond; every other action execs (no
//! fork) the companion `VirtualDomain-libvirt`, found next to this executable (also as the hidden
//! `.VirtualDomain-libvirt`, the name `make install` uses so that it is not listed as an agent).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use ocf_metadata::{OcfEnv, OcfExitCode};

const COMPANIONS: [&str; 2] = [".VirtualDomain-libvirt", "VirtualDomain-libvirt"];

fn companion() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    COMPANIONS
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let action = args
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Read leniently: the static actions need nothing that could be unreadable, and the companion
    // judges the environment itself (a stop must go ahead despite an unreadable variable).
    let env = OcfEnv::read_os_pairs(std::env::vars_os()).env;
    let outcome = match highlander_agent::run_static(&action, &env) {
        Some(outcome) => outcome,
        None => {
            let Some(path) = companion() else {
                eprintln!(
                    "{}VirtualDomain-libvirt is not installed next to this agent",
                    env.exit_reason_prefix
                );
                return ExitCode::from(OcfExitCode::ErrInstalled.code() as u8);
            };
            // Only returns on failure.
            let e = Command::new(&path).args(&args).exec();
            eprintln!(
                "{}cannot run {}: {e}",
                env.exit_reason_prefix,
                path.display()
            );
            return ExitCode::from(OcfExitCode::ErrInstalled.code() as u8);
        }
    };
    let _ = std::io::stdout().write_all(outcome.stdout.as_bytes());
    if let Some(reason) = &outcome.reason {
        eprintln!("{}{}", env.exit_reason_prefix, reason);
    }
    ExitCode::from(outcome.code.code() as u8)
}
