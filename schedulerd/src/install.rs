//! `install` and `uninstall`: Pacemaker's scheduler binary moved aside and back the Debian way
//! (`dpkg-divert --rename`), ours copied in its place, and the running scheduler stopped with
//! SIGTERM so that pacemakerd starts the binary now in place.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where pacemakerd starts the scheduler from.
pub const SCHEDULERD: &str = "/usr/lib/pacemaker/pacemaker-schedulerd";
/// Where Pacemaker's own binary goes while ours is installed.
pub const DIVERTED: &str = "/usr/lib/pacemaker/pacemaker-schedulerd.pacemaker";

/// Why installing or uninstalling failed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("dpkg-divert {args}: {stderr}")]
    Divert { args: String, stderr: String },
}

fn dpkg_divert(args: &[&str]) -> Result<(), InstallError> {
    let out = Command::new("dpkg-divert")
        .args(args)
        .output()
        .map_err(|e| InstallError::Io("dpkg-divert".into(), e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(InstallError::Divert {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Diverts Pacemaker's scheduler, installs `ours` in its place and restarts the scheduler.
pub fn install(ours: &Path) -> Result<Vec<String>, InstallError> {
    let mut done = Vec::new();
    if !Path::new(DIVERTED).exists() {
        dpkg_divert(&[
            "--package",
            "highlander-schedulerd",
            "--divert",
            DIVERTED,
            "--rename",
            "--add",
            SCHEDULERD,
        ])?;
        done.push(format!("diverted {SCHEDULERD} to {DIVERTED}"));
    }
    let tmp = PathBuf::from(format!("{SCHEDULERD}.highlander-new"));
    fs::copy(ours, &tmp).map_err(|e| InstallError::Io(tmp.display().to_string(), e))?;
    fs::rename(&tmp, SCHEDULERD).map_err(|e| InstallError::Io(SCHEDULERD.into(), e))?;
    done.push(format!("installed {} as {SCHEDULERD}", ours.display()));
    done.extend(restart());
    Ok(done)
}

/// Removes ours, puts Pacemaker's scheduler back and restarts it.
pub fn uninstall() -> Result<Vec<String>, InstallError> {
    let mut done = Vec::new();
    if Path::new(DIVERTED).exists() {
        let _ = fs::remove_file(SCHEDULERD);
        dpkg_divert(&[
            "--package",
            "highlander-schedulerd",
            "--rename",
            "--remove",
            SCHEDULERD,
        ])?;
        done.push(format!("restored Pacemaker's {SCHEDULERD}"));
    } else {
        done.push("Pacemaker's scheduler is not diverted: nothing to restore".into());
    }
    done.extend(restart());
    Ok(done)
}

/// Stops every running scheduler (found by its executable path) with SIGTERM; pacemakerd
/// starts the binary in place again.
fn restart() -> Vec<String> {
    let mut done = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else {
        return done;
    };
    for e in entries.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let exe = fs::read_link(e.path().join("exe")).unwrap_or_default();
        let exe = exe.to_string_lossy();
        let exe = exe.trim_end_matches(" (deleted)");
        if exe == SCHEDULERD || exe == DIVERTED {
            let ok = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                done.push(format!(
                    "stopped scheduler pid {pid}; pacemakerd restarts it"
                ));
            }
        }
    }
    done
}
