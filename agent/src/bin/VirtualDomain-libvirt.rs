//! `VirtualDomain-libvirt`: the agent's libvirt half. The `VirtualDomain` front binary execs it
//! (same arguments, same environment, no fork) for every action that needs a hypervisor; it links
//! libvirt, whose load alone costs tens of milliseconds.

use std::io::Write;
use std::process::ExitCode;

use ocf_metadata::{OcfEnv, OcfExitCode};

fn main() -> ExitCode {
    let action = std::env::args().nth(1).unwrap_or_default();
    let env = match OcfEnv::from_os_pairs(std::env::vars_os()) {
        Ok(env) => env,
        Err(e) => {
            eprintln!("ocf-exit-reason:{e}");
            return ExitCode::from(OcfExitCode::ErrConfigured.code() as u8);
        }
    };
    let outcome = highlander_agent::run(&action, &env);
    let _ = std::io::stdout().write_all(outcome.stdout.as_bytes());
    if let Some(reason) = &outcome.reason {
        eprintln!("{}{}", env.exit_reason_prefix, reason);
    }
    ExitCode::from(outcome.code.code() as u8)
}
