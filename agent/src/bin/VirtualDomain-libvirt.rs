//! `VirtualDomain-libvirt`: the agent's libvirt half. The `VirtualDomain` front binary execs it
//! (same arguments, same environment, no fork) for every action that needs a hypervisor; it links
//! libvirt, whose load alone costs tens of milliseconds.

use std::io::Write;
use std::process::ExitCode;

use ocf_metadata::OcfEnv;

fn main() -> ExitCode {
    let action = std::env::args().nth(1).unwrap_or_default();
    // Read leniently: a variable that cannot be read refuses every action but stop, which must
    // still stop the domain when it can (the library decides, per variable).
    let reading = OcfEnv::read_os_pairs(std::env::vars_os());
    let env = &reading.env;
    let outcome = highlander_agent::run_reading(&action, &reading);
    let _ = std::io::stdout().write_all(outcome.stdout.as_bytes());
    if let Some(reason) = &outcome.reason {
        eprintln!("{}{}", env.exit_reason_prefix, reason);
    }
    ExitCode::from(outcome.code.code() as u8)
}
