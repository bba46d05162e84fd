//! `snapshot`, as heartbeat's agent does it: a graceful `stop` of a running domain first saves its
//! memory state to `<snapshot>/<name>.state` (which stops it); the next `start` finds the file and
//! restores the domain from it instead of booting, and removes the file only once the restore
//! succeeded. A save that fails is logged and the stop goes on as usual; a restore that fails fails
//! the start (1), the file kept. `force_stop` and `snapshot` together are refused (6), as heartbeat.
//!
//! Unlike heartbeat: the save goes to `<name>.state.partial` and is renamed to `<name>.state` only
//! once libvirt reports it complete, so a save cut short at the deadline never leaves a file a start
//! would restore from; the save gets the graceful part of the stop's budget, the rest stays for
//! shutdown or destroy. A state file is only valid while the domain has run nowhere since it was
//! saved: a start that finds the domain already running, and a successful `migrate_from`, remove
//! the file (logged) rather than let a later start rewind the guest. A snapshot directory local
//! to each node cannot be cleaned on the other nodes: keep it on storage all nodes share.

use std::path::{Path, PathBuf};

use crate::actions::Ctx;
use crate::clock::Deadline;
use crate::hypervisor::DomainState;

/// `<dir>/<name>.state`.
pub fn state_file(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.state"))
}

fn partial_file(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.state.partial"))
}

/// What the start does after looking for a state file.
#[derive(Debug, PartialEq, Eq)]
pub enum Restore {
    /// No usable file: start as usual.
    NoFile,
    /// The domain runs again from the file, which is gone.
    Restored,
}

/// Restores `name` from its state file when there is one and the domain is not active here.
pub fn restore(ctx: &Ctx, name: &str, dir: &Path, deadline: Deadline) -> Result<Restore, String> {
    let file = state_file(dir, name);
    if !file.is_file() {
        return Ok(Restore::NoFile);
    }
    match ctx.hv.state(name, deadline.remaining_ms(ctx.clock) / 4) {
        Ok(s) if s.is_active() => {
            discard_stale(
                ctx,
                name,
                dir,
                &format!("domain {name} is already {s} here"),
            );
            return Ok(Restore::NoFile);
        }
        Ok(_) => {}
        Err(e) => return Err(format!("cannot restore domain {name}: {e}")),
    }
    let path = file.to_string_lossy().into_owned();
    let budget = deadline.remaining_ms(ctx.clock) / 4 * 3;
    match ctx.hv.restore_state(&path, budget) {
        Ok(()) => {
            ctx.log.info(&format!("domain {name} restored from {path}"));
            if let Err(e) = std::fs::remove_file(&file) {
                ctx.log.warn(&format!("cannot remove {path}: {e}"));
            }
            Ok(Restore::Restored)
        }
        Err(e) => Err(format!(
            "failed to restore domain {name} from {path} (kept): {e}"
        )),
    }
}

/// Saves `name`'s memory state before a graceful stop, within `save_end`; false when not saved
/// (the stop then shuts the domain down as usual).
pub fn save(ctx: &Ctx, name: &str, dir: &Path, save_end: Deadline) -> bool {
    match ctx.hv.state(name, save_end.remaining_ms(ctx.clock) / 4) {
        Ok(DomainState::Running | DomainState::Paused(_)) => {}
        _ => return false,
    }
    let partial = partial_file(dir, name);
    let _ = std::fs::remove_file(&partial);
    let path = partial.to_string_lossy().into_owned();
    match ctx
        .hv
        .save_state(name, &path, save_end.remaining_ms(ctx.clock))
    {
        Ok(()) => {}
        Err(e) => {
            ctx.log.error(&format!(
                "failed to save the state of domain {name} on stop: {e}; shutting it down instead"
            ));
            return false;
        }
    }
    let file = state_file(dir, name);
    let renamed = std::fs::rename(&partial, &file)
        .and_then(|()| std::fs::File::open(dir).and_then(|d| d.sync_all()));
    match renamed {
        Ok(()) => {
            ctx.log.info(&format!(
                "domain {name} stopped, its state saved to {}",
                file.display()
            ));
            true
        }
        Err(e) => {
            ctx.log.error(&format!(
                "domain {name} saved to {path} but it cannot be renamed to {}: {e}",
                file.display()
            ));
            true
        }
    }
}

/// Removes a state file that no longer describes the guest.
pub fn discard_stale(ctx: &Ctx, name: &str, dir: &Path, why: &str) {
    let file = state_file(dir, name);
    match std::fs::remove_file(&file) {
        Ok(()) => ctx.log.warn(&format!(
            "{why}: removed the stale state file {}",
            file.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => ctx.log.warn(&format!(
            "{why}: cannot remove the stale state file {}: {e}",
            file.display()
        )),
    }
}
