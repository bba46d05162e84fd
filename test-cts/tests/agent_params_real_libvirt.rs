//! heartbeat's parameters that change what start and stop do, on a real private libvirtd with a
//! tiny QEMU guest: `save_config_on_stop` writes the running domain's XML back to `config`
//! (changes made while it ran survive a stop and the next start), `start_resources` starts the
//! storage pool the domain's disk comes from before creating it, `snapshot` saves the guest's
//! memory on stop and restores it on start, `backingfile`/`stateless` run the guest on a qcow2
//! overlay (made with qemu-img, from qemu-utils) that is kept, or made afresh on every start.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use test_cts::libvirt::{
    DomState, LibvirtDaemon, real_infra_or_skip, tiny_guest_xml, unique_name, write_tiny_guest,
};
use test_cts::ocf::{AgentRun, OcfResource, highlander_agent};

const TIMEOUT_MS: &str = "20000";

fn daemon() -> &'static LibvirtDaemon {
    static DAEMON: OnceLock<LibvirtDaemon> = OnceLock::new();
    DAEMON.get_or_init(|| LibvirtDaemon::start("params").expect("private libvirtd starts"))
}

/// A guest's scratch directory, config and resource; destroyed and removed on drop.
struct Guest {
    dir: PathBuf,
    name: String,
    config: PathBuf,
    resource: OcfResource,
}

impl Guest {
    fn new(prefix: &str) -> Self {
        let name = unique_name(prefix);
        let dir = std::env::temp_dir().join(format!("hl-params-{name}"));
        std::fs::create_dir_all(dir.join("rsctmp")).expect("scratch");
        let config = write_tiny_guest(&dir, &name, 32).expect("guest xml");
        let agent = highlander_agent().unwrap_or_else(|e| panic!("the agent binary: {e}"));
        let mut resource = OcfResource::new(&agent, &name, &dir.join("rsctmp"))
            .param("config", config.to_str().expect("utf-8"))
            .param("hypervisor", daemon().uri())
            .env("OCF_RESKEY_CRM_meta_timeout", TIMEOUT_MS);
        resource.timeout = Duration::from_secs(25);
        Self {
            dir,
            name,
            config,
            resource,
        }
    }

    fn expect(&self, action: &str, code: i32) -> AgentRun {
        let run = self
            .resource
            .run(action)
            .unwrap_or_else(|e| panic!("{action}: {e}"));
        eprintln!("timing: {} {}", self.name, run.describe());
        assert_eq!(run.code(), Some(code), "{}", run.describe());
        run
    }

    fn config_text(&self) -> String {
        std::fs::read_to_string(&self.config).expect("config readable")
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        let _ = daemon().virsh(&["destroy", &self.name]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn save_config_on_stop_keeps_changes_made_while_running() {
    if !real_infra_or_skip("save_config_on_stop_keeps_changes_made_while_running", &[]) {
        return;
    }
    let mut g = Guest::new("saveconf");
    g.resource = g.resource.clone().param("save_config_on_stop", "true");
    std::fs::set_permissions(&g.config, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let original = g.config_text();
    g.expect("start", 0);
    assert_eq!(g.config_text(), original, "start writes nothing");
    daemon()
        .virsh_ok(&["desc", &g.name, "--live", "--new-desc", "set-while-running"])
        .expect("virsh desc");
    // heartbeat saves after a monitor that finds the domain running, too.
    g.expect("monitor", 0);
    assert!(
        g.config_text()
            .contains("<description>set-while-running</description>"),
        "{}",
        g.config_text()
    );
    daemon()
        .virsh_ok(&["desc", &g.name, "--live", "--new-desc", "set-before-stop"])
        .expect("virsh desc");
    let stop = g.expect("stop", 0);
    assert!(
        stop.finished.stderr.contains("saved domain"),
        "{}",
        stop.describe()
    );
    let saved = g.config_text();
    assert!(
        saved.contains("<description>set-before-stop</description>"),
        "{saved}"
    );
    assert!(
        saved.contains(&format!("<name>{}</name>", g.name)),
        "{saved}"
    );
    let mode = std::fs::metadata(&g.config)
        .expect("stat")
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o640, "the file keeps its permissions");
    let strays: Vec<_> = std::fs::read_dir(&g.dir)
        .expect("scratch")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".save."))
        .collect();
    assert!(strays.is_empty(), "no temporary file left: {strays:?}");
    // The saved file starts the domain with what was changed.
    g.expect("start", 0);
    assert_eq!(
        daemon().domstate(&g.name).expect("domstate"),
        Some(DomState::Running)
    );
    let desc = daemon().virsh_ok(&["desc", &g.name]).expect("virsh desc");
    assert_eq!(desc.trim(), "set-before-stop");
    g.expect("stop", 0);
    // Off: nothing is written.
    g.resource = g.resource.clone().param("save_config_on_stop", "false");
    std::fs::write(&g.config, &original).expect("restore config");
    g.expect("start", 0);
    daemon()
        .virsh_ok(&["desc", &g.name, "--live", "--new-desc", "not-saved"])
        .expect("virsh desc");
    g.expect("stop", 0);
    assert_eq!(g.config_text(), original);
}

#[test]
fn start_resources_starts_the_domains_storage_pool_first() {
    if !real_infra_or_skip("start_resources_starts_the_domains_storage_pool_first", &[]) {
        return;
    }
    let mut g = Guest::new("startres");
    // The guest has no OS to shut down: destroy at once.
    g.resource = g.resource.clone().param("force_stop", "true");
    let pool = format!("pool-{}", g.name);
    let pool_dir = g.dir.join("pool");
    std::fs::create_dir_all(&pool_dir).expect("pool dir");
    std::fs::write(pool_dir.join("data.img"), vec![0u8; 1 << 20]).expect("volume");
    let target = pool_dir.to_str().expect("utf-8");
    daemon()
        .virsh_ok(&["pool-define-as", &pool, "dir", "--target", target])
        .expect("pool-define-as");
    let xml = tiny_guest_xml(&g.name, 32).replace(
        "<serial type='pty'/>",
        &format!(
            "<disk type='volume' device='disk'><source pool='{pool}' volume='data.img'/>\
             <target dev='hdb' bus='ide'/><driver name='qemu' type='raw'/></disk>\n\
             <serial type='pty'/>"
        ),
    );
    std::fs::write(&g.config, xml).expect("config");
    let pool_state = || {
        daemon()
            .virsh_ok(&["pool-info", &pool])
            .expect("pool-info")
            .lines()
            .find_map(|l| l.strip_prefix("State:").map(|s| s.trim().to_owned()))
            .unwrap_or_default()
    };
    assert_eq!(pool_state(), "inactive");
    // Without start_resources the inactive pool makes the start fail (the control).
    let run = g.resource.run("start").expect("start runs");
    assert_ne!(run.code(), Some(0), "{}", run.describe());
    assert_eq!(pool_state(), "inactive");
    g.resource = g.resource.clone().param("start_resources", "true");
    let run = g.expect("start", 0);
    assert!(
        run.finished.stderr.contains("started storage pool"),
        "{}",
        run.describe()
    );
    assert_eq!(pool_state(), "running");
    assert_eq!(
        daemon().domstate(&g.name).expect("domstate"),
        Some(DomState::Running)
    );
    g.expect("stop", 0);
    // A pool that is not defined: the start fails naming it, and nothing runs.
    daemon()
        .virsh_ok(&["pool-destroy", &pool])
        .expect("pool-destroy");
    daemon()
        .virsh_ok(&["pool-undefine", &pool])
        .expect("pool-undefine");
    let run = g.resource.run("start").expect("start runs");
    assert_eq!(run.code(), Some(1), "{}", run.describe());
    assert!(
        run.finished
            .stderr
            .contains(&format!("storage pool {pool}")),
        "{}",
        run.describe()
    );
    assert_eq!(daemon().domstate(&g.name).expect("domstate"), None);
}

#[test]
fn snapshot_saves_the_guest_on_stop_and_restores_it_on_start() {
    if !real_infra_or_skip(
        "snapshot_saves_the_guest_on_stop_and_restores_it_on_start",
        &[],
    ) {
        return;
    }
    let mut g = Guest::new("snapshot");
    let snap = g.dir.join("snap");
    std::fs::create_dir_all(&snap).expect("snapshot dir");
    g.resource = g
        .resource
        .clone()
        .param("snapshot", snap.to_str().expect("utf-8"));
    let file = snap.join(format!("{}.state", g.name));
    g.expect("start", 0);
    let first_qemu = daemon().qemu_pid(&g.name).expect("QEMU pid");
    // A mark that only the restored memory state (not a fresh boot from config) carries: the
    // live description, which the save image's XML keeps.
    daemon()
        .virsh_ok(&[
            "desc",
            &g.name,
            "--live",
            "--new-desc",
            "from-the-saved-state",
        ])
        .expect("virsh desc");
    let stop = g.expect("stop", 0);
    assert!(
        stop.finished.stderr.contains("state saved to"),
        "{}",
        stop.describe()
    );
    assert!(file.is_file(), "{}", stop.describe());
    assert_eq!(daemon().domstate(&g.name).expect("domstate"), None);
    assert!(!test_cts::process::alive(first_qemu));
    let start = g.expect("start", 0);
    assert!(
        start.finished.stderr.contains("restored from"),
        "{}",
        start.describe()
    );
    assert!(!file.exists(), "the file goes once the restore succeeded");
    assert_eq!(
        daemon().domstate(&g.name).expect("domstate"),
        Some(DomState::Running)
    );
    let desc = daemon().virsh_ok(&["desc", &g.name]).expect("virsh desc");
    assert_eq!(desc.trim(), "from-the-saved-state");
    g.expect("monitor", 0);
    // A file that is not a save image: the start fails and keeps it.
    g.resource = g.resource.clone().param("force_stop", "false");
    g.expect("stop", 0);
    std::fs::write(&file, "not a save image").expect("write");
    let run = g.resource.run("start").expect("start runs");
    assert_eq!(run.code(), Some(1), "{}", run.describe());
    assert!(file.is_file());
    assert_eq!(daemon().domstate(&g.name).expect("domstate"), None);
}

/// The inode of a file: a new one means the file was replaced.
fn inode(path: &std::path::Path) -> u64 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .ino()
}

#[test]
fn backingfile_runs_the_guest_on_an_overlay_kept_or_made_afresh() {
    if !real_infra_or_skip(
        "backingfile_runs_the_guest_on_an_overlay_kept_or_made_afresh",
        &["qemu-img"],
    ) {
        return;
    }
    let mut g = Guest::new("overlay");
    let backing = g.dir.join("base.raw");
    let mut base = vec![0u8; 1 << 20];
    base[..4].copy_from_slice(b"BASE");
    std::fs::write(&backing, &base).expect("backing file");
    let overlay = g.dir.join(format!("{}.qcow2", g.name));
    let xml = tiny_guest_xml(&g.name, 32).replace(
        "<serial type='pty'/>",
        &format!(
            "<disk type='file' device='disk'><driver name='qemu' type='qcow2'/>\
             <source file='{}'/><target dev='hdb' bus='ide'/></disk>\n<serial type='pty'/>",
            overlay.display()
        ),
    );
    std::fs::write(&g.config, xml).expect("config");
    g.resource = g
        .resource
        .clone()
        .param("force_stop", "true")
        .param("backingfile", backing.to_str().expect("utf-8"));
    let run = g.expect("start", 0);
    assert!(
        run.finished.stderr.contains("created the overlay"),
        "{}",
        run.describe()
    );
    let info = std::process::Command::new("qemu-img")
        .args(["info", "--output=json", "-U"])
        .arg(&overlay)
        .output()
        .expect("qemu-img info");
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).expect("json");
    assert_eq!(info["format"], "qcow2", "{info}");
    assert_eq!(
        info["backing-filename"],
        backing.to_str().expect("utf-8"),
        "{info}"
    );
    assert_eq!(info["backing-filename-format"], "raw", "{info}");
    assert_eq!(
        daemon().domstate(&g.name).expect("domstate"),
        Some(DomState::Running)
    );
    g.expect("stop", 0);
    // Not stateless: the next start keeps the overlay.
    let kept = inode(&overlay);
    let run = g.expect("start", 0);
    assert!(
        run.finished.stderr.contains("existing overlay"),
        "{}",
        run.describe()
    );
    assert_eq!(inode(&overlay), kept);
    g.expect("stop", 0);
    // Stateless: a new overlay on every start, never while the domain runs.
    g.resource = g.resource.clone().param("stateless", "true");
    g.expect("start", 0);
    let fresh = inode(&overlay);
    assert_ne!(fresh, kept, "made afresh");
    g.expect("start", 0);
    assert_eq!(
        inode(&overlay),
        fresh,
        "a running guest's disk is left alone"
    );
    g.expect("stop", 0);
    assert_eq!(
        std::fs::read(&backing).expect("backing"),
        base,
        "the backing file never changes"
    );
    let strays: Vec<_> = std::fs::read_dir(&g.dir)
        .expect("scratch")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".new."))
        .collect();
    assert!(strays.is_empty(), "{strays:?}");
    // No backing file: the start fails naming the overlay, nothing runs.
    std::fs::remove_file(&backing).expect("rm");
    let run = g.resource.run("start").expect("start runs");
    assert_eq!(run.code(), Some(1), "{}", run.describe());
    assert!(
        run.finished.stderr.contains("cannot create the overlay"),
        "{}",
        run.describe()
    );
    assert_eq!(daemon().domstate(&g.name).expect("domstate"), None);
}
