//! `VirtualDomain-libvirt`: the agent's libvirt half. The `VirtualDomain` front binary execs it
//! (same arguments, same environment, no fork) for every action that needs a hypervisor; it links
//! libvirt, whose load alone costs tens of milliseconds.

use std::io::Write;

use ocf_metadata::OcfEnv;

fn main() {
    // A panic of the main thread (a bug) leaves by the same door as an answer, with 1 and a
    // reason, never through `exit(3)`'s handlers (see `exit_process`); a worker thread's panic
    // is its caller's to map.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        if std::thread::current().name() == Some("main") {
            eprintln!("ocf-exit-reason:internal error: {info}");
            highlander_agent::libvirt::exit_process(1)
        }
    }));
    let action = std::env::args().nth(1).unwrap_or_default();
    // Read leniently: a variable that cannot be read refuses every action but stop, which must
    // still stop the domain when it can (the library decides, per variable).
    let reading = OcfEnv::read_os_pairs(std::env::vars_os());
    let env = &reading.env;
    let outcome = highlander_agent::run_reading(&action, &reading);
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(outcome.stdout.as_bytes());
    let _ = stdout.flush();
    drop(stdout);
    if let Some(reason) = &outcome.reason {
        // stderr is unbuffered: the line is written when this returns.
        eprintln!("{}{}", env.exit_reason_prefix, reason);
    }
    // Never through `exit(3)`: a libvirt call abandoned at its timeout (or a connection being
    // closed) may still run on another thread, and exit handlers would free memory under it.
    highlander_agent::libvirt::exit_process(outcome.code.code() as u8)
}
