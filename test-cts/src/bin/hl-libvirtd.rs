//! `hl-libvirtd`: starts private test libvirtds (the harness's [`LibvirtDaemon`]) for scripts and
//! manual debugging, prints how to reach them, and tears them down when stdin closes.
//!
//! Usage: `hl-libvirtd [COUNT]` (default 1; 2 gives a migration pair). Prints one line per
//! daemon, `URI<i>=<uri>`, then `PIDS=<pid> ...` (every process of every daemon) and `READY`,
//! then waits for end of input. Killing it instead (even with SIGKILL) also tears the daemons
//! down, through the harness's guard.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use test_cts::libvirt::{LibvirtDaemon, pair};

fn main() -> ExitCode {
    let count = match std::env::args().nth(1).as_deref() {
        None | Some("1") => 1,
        Some("2") => 2,
        Some(other) => {
            eprintln!("hl-libvirtd: COUNT must be 1 or 2, not {other}");
            return ExitCode::from(2);
        }
    };
    let daemons: Vec<LibvirtDaemon> = if count == 2 {
        match pair() {
            Ok((a, b)) => vec![a, b],
            Err(e) => {
                eprintln!("hl-libvirtd: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        match LibvirtDaemon::start("cli") {
            Ok(d) => vec![d],
            Err(e) => {
                eprintln!("hl-libvirtd: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let mut out = std::io::stdout().lock();
    let mut pids = Vec::new();
    for (i, d) in daemons.iter().enumerate() {
        let t = d.timings();
        let _ = writeln!(out, "URI{i}={}", d.uri());
        let _ = writeln!(out, "WORK{i}={}", d.work_dir().display());
        eprintln!(
            "hl-libvirtd: {} up: socket {:.3} s, first call {:.3} s (caps pre-warmed: {})",
            d.label(),
            t.socket.as_secs_f64(),
            t.first_call.as_secs_f64(),
            t.caps_prewarmed
        );
        pids.push(d.reaper_pid());
        pids.extend(d.pids());
    }
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    let _ = writeln!(out, "PIDS={}", pids.join(" "));
    let _ = writeln!(out, "READY");
    let _ = out.flush();
    drop(out);
    // Block until stdin ends; the daemons drop afterwards.
    let mut line = String::new();
    let stdin = std::io::stdin();
    while stdin.lock().read_line(&mut line).is_ok_and(|n| n > 0) {
        line.clear();
    }
    drop(daemons);
    ExitCode::SUCCESS
}
