//! `backingfile` and `stateless`, as heartbeat's agent documents them: the domain runs on a qcow2
//! overlay of `backingfile`, which itself never changes. The overlay is the `config` path with the
//! file name cut at its first `.` and `.qcow2` appended (`/etc/vm/web.xml` -> `/etc/vm/web.qcow2`,
//! heartbeat's `${config%%.*}.qcow2` within the file name); the domain XML must use it as its disk.
//! A start creates it when it is missing or empty, and with `stateless` afresh on every start.
//!
//! Unlike heartbeat: `qemu-img create` gets the backing file's format (`-F`, read with `qemu-img
//! info`; qemu-img 7.2 refuses a backing file without one, which breaks heartbeat's command), the
//! new overlay is written beside the old one and renamed over it (an interrupted start never leaves
//! a truncated disk), each `qemu-img` run is killed at the deadline, and no overlay is touched
//! while the domain is active here. Only a start creates one: `migrate_from` never does (the
//! migrating guest uses the overlay it runs on, which must be on storage both nodes share), and the
//! domain is created transient from `config` as without `backingfile` (heartbeat defines it).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::actions::Ctx;
use crate::clock::Deadline;
use crate::command;

/// The program that makes overlays.
pub const QEMU_IMG: &str = "qemu-img";

/// The overlay for a `config` path.
pub fn overlay_path(config: &Path) -> PathBuf {
    let file = config.file_name().unwrap_or_default().to_string_lossy();
    let stem = file
        .split('.')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(&file);
    config.with_file_name(format!("{stem}.qcow2"))
}

/// Whether a start must (re)create the overlay.
fn needs_new(overlay: &Path, stateless: bool) -> bool {
    stateless || std::fs::metadata(overlay).map_or(true, |m| m.len() == 0)
}

/// The format `qemu-img info` reads in `file`.
fn image_format(ctx: &Ctx, file: &Path, deadline: Deadline) -> Result<String, String> {
    let args: [&OsStr; 3] = ["info".as_ref(), "--output=json".as_ref(), file.as_os_str()];
    let out = command::run(QEMU_IMG, &args, deadline, ctx.clock)?;
    let json: serde_json::Value =
        serde_json::from_str(&out).map_err(|e| format!("{QEMU_IMG} info: {e}"))?;
    json.get("format")
        .and_then(|f| f.as_str())
        .map(str::to_owned)
        .ok_or_else(|| format!("{QEMU_IMG} info names no format for {}", file.display()))
}

/// Prepares the overlay before a start of domain `name` that is not active here.
pub fn prepare(
    ctx: &Ctx,
    backing: &Path,
    stateless: bool,
    config: &Path,
    deadline: Deadline,
) -> Result<(), String> {
    let overlay = overlay_path(config);
    if !needs_new(&overlay, stateless) {
        ctx.log
            .info(&format!("using the existing overlay {}", overlay.display()));
        return Ok(());
    }
    let format = image_format(ctx, backing, deadline).map_err(|e| {
        format!(
            "cannot create the overlay {} on {}: {e}",
            overlay.display(),
            backing.display()
        )
    })?;
    let file = overlay.file_name().unwrap_or_default().to_string_lossy();
    let tmp = overlay.with_file_name(format!(".{file}.new.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let args: [&OsStr; 8] = [
        "create".as_ref(),
        "-f".as_ref(),
        "qcow2".as_ref(),
        "-b".as_ref(),
        backing.as_os_str(),
        "-F".as_ref(),
        format.as_ref(),
        tmp.as_os_str(),
    ];
    let made = command::run(QEMU_IMG, &args, deadline, ctx.clock).and_then(|_| {
        std::fs::rename(&tmp, &overlay).map_err(|e| {
            format!(
                "cannot rename {} to {}: {e}",
                tmp.display(),
                overlay.display()
            )
        })
    });
    if let Err(e) = made {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "cannot create the overlay {} on {}: {e}",
            overlay.display(),
            backing.display()
        ));
    }
    if let Some(dir) = overlay.parent() {
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    ctx.log.info(&format!(
        "created the overlay {} on {} ({format})",
        overlay.display(),
        backing.display()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_names_follow_heartbeat_within_the_file_name() {
        let p = |s: &str| overlay_path(Path::new(s));
        assert_eq!(p("/etc/vm/web.xml"), PathBuf::from("/etc/vm/web.qcow2"));
        assert_eq!(p("/etc/vm/web.v2.xml"), PathBuf::from("/etc/vm/web.qcow2"));
        assert_eq!(p("/srv/vm.d/web.xml"), PathBuf::from("/srv/vm.d/web.qcow2"));
        assert_eq!(p("/srv/web"), PathBuf::from("/srv/web.qcow2"));
        assert_eq!(p("/srv/.web.xml"), PathBuf::from("/srv/.web.xml.qcow2"));
    }

    #[test]
    fn a_new_overlay_only_when_stateless_missing_or_empty() {
        let dir = tempfile::tempdir().unwrap();
        let o = dir.path().join("web.qcow2");
        assert!(needs_new(&o, false));
        std::fs::write(&o, "").unwrap();
        assert!(needs_new(&o, false));
        std::fs::write(&o, "QFI").unwrap();
        assert!(!needs_new(&o, false));
        assert!(needs_new(&o, true));
    }
}
