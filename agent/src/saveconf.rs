//! `save_config_on_stop` and `sync_config_on_stop`, as heartbeat's agent does them: the running
//! domain's persistent XML with its secrets (`dumpxml --inactive --security-info`) is written back
//! to `config` when it differs from the file, so that changes made to a running guest survive its
//! stop; with `sync_config_on_stop` (which implies saving) `csync2 -x <config>` then copies the
//! file to the other nodes. When: before a graceful stop, before `migrate_to`, after a successful
//! `migrate_from`, and after a monitor that found the domain running (heartbeat's points).
//!
//! Unlike heartbeat: the file is replaced atomically (a temporary file beside it with the old
//! file's permissions, fsync, rename, fsync of the directory), never truncated in place; the XML
//! must parse and name the same domain (heartbeat runs `virt-xml-validate`); the dump gets at most
//! a quarter of the time left (5 s at most) and `csync2` is killed at the action's deadline. A
//! failure is a warning, never a failed action.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::actions::Ctx;
use crate::clock::Deadline;
use crate::config::domain_name_from_xml;
use crate::hypervisor::HvError;

/// The longest the domain XML query may take.
pub const DUMP_CAP_MS: u64 = 5_000;
/// The program `sync_config_on_stop` runs, from `PATH`.
pub const CSYNC2: &str = "csync2";

/// What to do with a running domain's configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SaveConfig {
    #[default]
    Off,
    Save,
    SaveAndSync,
}

/// Saves (and syncs) `name`'s configuration to `config` as the module doc says; logs what it did.
pub fn save(ctx: &Ctx, name: &str, config: &Path, mode: SaveConfig, deadline: Deadline) {
    if mode == SaveConfig::Off {
        return;
    }
    let budget = (deadline.remaining_ms(ctx.clock) / 4).min(DUMP_CAP_MS);
    let xml = match ctx.hv.saved_xml(name, budget) {
        Ok(x) => x,
        Err(HvError::NoDomain { .. }) => return,
        Err(e) => {
            ctx.log.warn(&format!(
                "save_config_on_stop: {e}; {} left as it is",
                config.display()
            ));
            return;
        }
    };
    match check(name, &xml, config) {
        Ok(false) => return,
        Ok(true) => {}
        Err(why) => {
            ctx.log.warn(&format!(
                "save_config_on_stop: {why}; {} left as it is",
                config.display()
            ));
            return;
        }
    }
    if let Err(e) = write_atomic(config, &xml) {
        ctx.log.warn(&format!(
            "save_config_on_stop: cannot write {}: {e}",
            config.display()
        ));
        return;
    }
    ctx.log.info(&format!(
        "saved domain {name}'s configuration to {}; make sure it is present on all nodes or \
         sync_config_on_stop is on",
        config.display()
    ));
    if mode == SaveConfig::SaveAndSync {
        sync(ctx, config, deadline);
    }
}

/// Whether `xml` should replace `config`: `Ok(false)` when equal, `Err` when it is unusable.
fn check(name: &str, xml: &str, config: &Path) -> Result<bool, String> {
    if xml.trim().is_empty() {
        return Err(format!("domain {name}'s XML is empty"));
    }
    match domain_name_from_xml(xml) {
        Ok(n) if n == name => {}
        Ok(n) => {
            return Err(format!(
                "the XML libvirt gave names domain {n:?}, not {name}"
            ));
        }
        Err(e) => {
            return Err(format!(
                "the XML libvirt gave for {name} does not parse: {e}"
            ));
        }
    }
    Ok(std::fs::read(config).map_or(true, |old| old != xml.as_bytes()))
}

/// Replaces `path` by `contents`: a temporary file beside it (the old file's permissions, else
/// 0600), fsync, rename, fsync of the directory.
pub fn write_atomic(path: &Path, contents: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let file_name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{file_name}.save.{}", std::process::id()));
    let mode = std::fs::metadata(path).map_or(0o600, |m| m.permissions().mode() & 0o7777);
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.write_all(contents.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    File::open(dir)?.sync_all()
}

/// `csync2 -x <config>`, no shell, killed at the deadline; a failure is a warning.
fn sync(ctx: &Ctx, config: &Path, deadline: Deadline) {
    let args = ["-x".as_ref(), config.as_os_str()];
    match crate::command::run(CSYNC2, &args, deadline, ctx.clock) {
        Ok(_) => ctx
            .log
            .info(&format!("synced {} with {CSYNC2} -x", config.display())),
        Err(why) => ctx.log.warn(&format!(
            "sync_config_on_stop: {why}; {} not synced",
            config.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_parsing_xml_of_the_same_domain_replaces_a_different_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vm1.xml");
        let xml = "<domain type='qemu'><name>vm1</name><memory>2</memory></domain>";
        std::fs::write(&path, "<domain type='qemu'><name>vm1</name></domain>").unwrap();
        assert_eq!(check("vm1", xml, &path), Ok(true));
        std::fs::write(&path, xml).unwrap();
        assert_eq!(check("vm1", xml, &path), Ok(false), "unchanged");
        assert!(check("vm1", "  ", &path).is_err());
        assert!(check("vm1", "<domain><name>vm2</name></domain>", &path).is_err());
        assert!(check("vm1", "<domain><name>vm1", &path).is_err());
        assert_eq!(check("vm1", xml, &dir.path().join("gone.xml")), Ok(true));
    }

    #[test]
    fn writes_replace_the_file_and_keep_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vm1.xml");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left");
        let fresh = dir.path().join("new.xml");
        write_atomic(&fresh, "x").unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o600);
        assert!(write_atomic(&dir.path().join("no/such/dir.xml"), "x").is_err());
    }
}
