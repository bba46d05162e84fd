//! `hl-preflight`: prepares this machine for the demo and the real-infrastructure tests (the
//! `libvirt-qemu` user, the mountpoints private daemons bind over: `test_cts::host`) and says what
//! it made. The demo and the tests run the same preparation themselves; this is it on its own.
//!
//! Exit codes: 0 prepared (or nothing to do), 1 something could not be made, 2 not root.

use std::process::ExitCode;

fn main() -> ExitCode {
    if let Some(reason) = test_cts::cluster::unsupported_reason() {
        eprintln!("hl-preflight: this machine cannot run private daemons: {reason}");
        return ExitCode::from(2);
    }
    match test_cts::host::prepare() {
        Ok(prepared) if prepared.made.is_empty() => {
            println!("hl-preflight: nothing to make, the machine is ready");
            ExitCode::SUCCESS
        }
        Ok(prepared) => {
            for made in &prepared.made {
                println!("hl-preflight: made {made}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hl-preflight: {e}");
            ExitCode::FAILURE
        }
    }
}
