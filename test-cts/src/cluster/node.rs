//! One test node: a network namespace on the cluster's bridge, a mount namespace kept alive by
//! a holder process, private state directories bound over the system paths, and the daemons
//! (libvirtd under tini, corosync, pacemakerd) started inside with `nsenter`.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::procs::{self, run_bounded};
use super::{ClusterError, config};

/// The PATH every command inside a node gets (the test's own environment is not passed on).
pub const NODE_PATH: &str = "/usr/sbin:/usr/bin:/sbin:/bin";

/// Private directories of a node, each bound over the system path of the same meaning.
const BINDS: &[(&str, &str)] = &[
    ("etc-corosync", "/etc/corosync"),
    ("lib-corosync", "/var/lib/corosync"),
    ("log-corosync", "/var/log/corosync"),
    ("lib-pacemaker", "/var/lib/pacemaker"),
    ("log-pacemaker", "/var/log/pacemaker"),
    ("etc-libvirt", "/etc/libvirt"),
    ("lib-libvirt", "/var/lib/libvirt"),
    ("cache-libvirt", "/var/cache/libvirt"),
    ("log-libvirt", "/var/log/libvirt"),
];

/// The scheduler daemon pacemakerd starts.
const SCHEDULERD: &str = "/usr/lib/pacemaker/pacemaker-schedulerd";

/// Where Pacemaker looks for OCF agents and for fence agents (`fence_*`).
const OCF_DIR: &str = "/usr/lib/ocf/resource.d";
const FENCE_DIR: &str = "/usr/sbin";

/// One node of a test cluster.
#[derive(Debug)]
pub struct Node {
    /// 1-based; the node's address is 10.77.0.<index>.
    pub index: usize,
    /// `node<index>`, as corosync and Pacemaker name it.
    pub name: String,
    /// The network namespace's name under /run/netns.
    pub netns: String,
    /// The node's private directory on the host.
    pub dir: PathBuf,
    holder: Option<Child>,
    holder_pid: u32,
    libvirtd: Option<Child>,
    corosync: Option<Child>,
    pacemakerd: Option<Child>,
}

impl Node {
    /// Creates the namespaces, the private directories and mounts; starts no daemon.
    pub(super) fn create(
        index: usize,
        prefix: &str,
        work: &Path,
        switch_netns: &str,
        files: &SharedFiles,
    ) -> Result<Node, ClusterError> {
        let name = config::node_name(index);
        let netns = format!("{prefix}-n{index}");
        let dir = work.join(&name);
        for (sub, _) in BINDS {
            mkdir(&dir.join(sub))?;
        }
        for sub in ["cib", "pengine", "blackbox", "cores"] {
            mkdir(&dir.join("lib-pacemaker").join(sub))?;
        }
        write(
            &dir.join("etc-corosync/corosync.conf"),
            &files.corosync_conf,
        )?;
        write(&dir.join("lib-pacemaker/cib/cib.xml"), &files.cib_xml)?;
        fs::set_permissions(
            dir.join("lib-pacemaker/cib/cib.xml"),
            fs::Permissions::from_mode(0o600),
        )
        .map_err(|e| ClusterError::io("chmod cib.xml", &dir, e))?;
        let (uid, gid) = (files.hacluster_uid, files.haclient_gid);
        for sub in ["cib", "pengine", "blackbox", "cores"] {
            chown_mode(&dir.join("lib-pacemaker").join(sub), uid, gid, 0o750)?;
        }
        chown_mode(&dir.join("lib-pacemaker/cib/cib.xml"), uid, gid, 0o600)?;
        chown_mode(&dir.join("log-pacemaker"), uid, gid, 0o770)?;
        write(
            &dir.join("etc-libvirt/libvirtd.conf"),
            &config::libvirtd_conf(index),
        )?;
        write(
            &dir.join("etc-libvirt/qemu.conf"),
            &config::qemu_conf(index),
        )?;
        write(&dir.join("etc-libvirt/libvirt.conf"), "# private, empty\n")?;
        // Overlay upper layers: our OCF provider and our fence agent, on top of the system's.
        mkdir(&dir.join("ocf-upper/highlander"))?;
        mkdir(&dir.join("ocf-work"))?;
        mkdir(&dir.join("sbin-upper"))?;
        mkdir(&dir.join("sbin-work"))?;
        fs::copy(&files.fence_agent, dir.join("sbin-upper/fence_highlander"))
            .map_err(|e| ClusterError::io("copy fence agent", &files.fence_agent, e))?;
        fs::set_permissions(
            dir.join("sbin-upper/fence_highlander"),
            fs::Permissions::from_mode(0o755),
        )
        .map_err(|e| ClusterError::io("chmod fence agent", &dir, e))?;

        // Network: a veth from the node's netns to the cluster's bridge in the switch netns.
        ip(&["netns", "add", &netns])?;
        let wired = (|| {
            let port = format!("p{index}");
            ip(&[
                "link",
                "add",
                "eth0",
                "netns",
                &netns,
                "type",
                "veth",
                "peer",
                "name",
                &port,
                "netns",
                switch_netns,
            ])?;
            ip(&["-n", switch_netns, "link", "set", &port, "master", "br0"])?;
            ip(&["-n", switch_netns, "link", "set", &port, "up"])?;
            let cidr = format!("{}/24", config::node_addr(index));
            ip(&["-n", &netns, "addr", "add", &cidr, "dev", "eth0"])?;
            ip(&["-n", &netns, "link", "set", "lo", "up"])?;
            ip(&["-n", &netns, "link", "set", "eth0", "up"])?;
            Ok::<(), ClusterError>(())
        })()
        .and_then(|()| {
            // The holder: `ip netns exec` and `unshare` exec, so its PID is sleep's own.
            Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &netns,
                    "unshare",
                    "-m",
                    "--propagation",
                    "private",
                ])
                .args(["sleep", "infinity"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|source| ClusterError::Spawn {
                    command: format!("holder of {name}"),
                    source,
                })
        });
        let holder = match wired {
            Ok(holder) => holder,
            Err(e) => {
                let _ = ip(&["netns", "del", &netns]);
                return Err(e);
            }
        };
        let holder_pid = holder.id();
        let node = Node {
            index,
            name,
            netns,
            dir,
            holder: Some(holder),
            holder_pid,
            libvirtd: None,
            corosync: None,
            pacemakerd: None,
        };
        let ready = node
            .wait_holder_ready()
            .and_then(|()| node.mount_private(files))
            .and_then(|()| {
                write(
                    &files.fence_state_dir.join(&node.name).join("holder.pid"),
                    &format!("{holder_pid}\n"),
                )
            });
        match ready {
            Ok(()) => Ok(node),
            Err(e) => {
                let mut node = node;
                node.destroy(&mut BTreeSet::new());
                Err(e)
            }
        }
    }

    /// `ip netns exec` and `unshare` exec in turn; once the holder's command is `sleep`, its
    /// private mount namespace exists and the node's mounts can go into it.
    fn wait_holder_ready(&self) -> Result<(), ClusterError> {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            let comm =
                fs::read_to_string(format!("/proc/{}/comm", self.holder_pid)).unwrap_or_default();
            if comm.trim() == "sleep" {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(5));
        }
        Err(ClusterError::Setup(format!(
            "holder of {} (pid {}) never became `sleep`",
            self.name, self.holder_pid
        )))
    }

    fn mount_private(&self, files: &SharedFiles) -> Result<(), ClusterError> {
        let d = |s: &str| self.dir.join(s).to_string_lossy().into_owned();
        self.mount(&["-t", "tmpfs", "-o", "mode=755", "tmpfs", "/run"])?;
        for (sub, target) in BINDS {
            self.mount(&["--bind", &d(sub), target])?;
        }
        self.mount(&["--bind", &files.hosts.to_string_lossy(), "/etc/hosts"])?;
        let ocf = format!(
            "lowerdir={OCF_DIR},upperdir={},workdir={}",
            d("ocf-upper"),
            d("ocf-work")
        );
        self.mount(&["-t", "overlay", "-o", &ocf, "overlay", OCF_DIR])?;
        let sbin = format!(
            "lowerdir={FENCE_DIR},upperdir={},workdir={}",
            d("sbin-upper"),
            d("sbin-work")
        );
        self.mount(&["-t", "overlay", "-o", &sbin, "overlay", FENCE_DIR])?;
        if let Some(scheduler) = &files.scheduler {
            self.mount(&["--bind", &scheduler.to_string_lossy(), SCHEDULERD])?;
        }
        mkdir(&self.root_path("/run/libvirt"))?;
        Ok(())
    }

    fn mount(&self, args: &[&str]) -> Result<(), ClusterError> {
        let mut all = vec!["mount"];
        all.extend_from_slice(args);
        self.run_ok(&all, Duration::from_secs(10)).map(|_| ())
    }

    /// The holder's PID: `nsenter -t <pid> -m -n` enters the node.
    pub fn holder_pid(&self) -> u32 {
        self.holder_pid
    }

    /// A host path that shows the node's view of `path` (through /proc/<holder>/root).
    pub fn root_path(&self, path: &str) -> PathBuf {
        PathBuf::from(format!(
            "/proc/{}/root{}",
            self.holder_pid,
            if path.starts_with('/') { "" } else { "/" }
        ))
        .join(path.trim_start_matches('/'))
    }

    /// A command that runs `args` inside the node, with a clean environment.
    pub fn command(&self, args: &[&str]) -> Command {
        node_command(self.holder_pid, args)
    }

    /// Runs `args` in the node; any exit status is returned.
    pub fn run(&self, args: &[&str], timeout: Duration) -> Result<Output, ClusterError> {
        run_bounded(self.command(args), timeout)
    }

    /// Runs `args` in the node; a non-zero exit is an error carrying stderr.
    pub fn run_ok(&self, args: &[&str], timeout: Duration) -> Result<Output, ClusterError> {
        let out = self.run(args, timeout)?;
        if out.status.success() {
            Ok(out)
        } else {
            Err(ClusterError::CommandFailed {
                node: self.name.clone(),
                command: args.join(" "),
                status: out.status.code().unwrap_or(-1),
                output: format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            })
        }
    }

    fn spawn_daemon(
        &self,
        args: &[&str],
        log: &str,
        env: &[(&str, &str)],
    ) -> Result<Child, ClusterError> {
        let out = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(log))
            .map_err(|e| ClusterError::io("open daemon log", &self.dir.join(log), e))?;
        let err = out
            .try_clone()
            .map_err(|e| ClusterError::io("dup daemon log", &self.dir.join(log), e))?;
        let mut cmd = self.command(args);
        cmd.envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = cmd.spawn().map_err(|source| ClusterError::Spawn {
            command: format!("{} on {}", args.join(" "), self.name),
            source,
        })?;
        // Recorded so that a later run can clean up after this one if it is killed.
        let pids = self.dir.join(procs::DAEMON_PIDS);
        let _ = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&pids)
            .and_then(|mut f| {
                std::io::Write::write_all(&mut f, format!("{}\n", child.id()).as_bytes())
            });
        Ok(child)
    }

    /// Starts libvirtd (under `tini -s`, which reaps libvirt's double-forked QEMU at once).
    pub fn start_libvirtd(&mut self) -> Result<(), ClusterError> {
        let child = self.spawn_daemon(
            &[
                "tini",
                "-s",
                "--",
                "libvirtd",
                "--listen",
                "-f",
                "/etc/libvirt/libvirtd.conf",
                "-p",
                "/run/libvirt/libvirtd.pid",
            ],
            "libvirtd.out",
            &[],
        )?;
        self.libvirtd = Some(child);
        Ok(())
    }

    /// Starts corosync in the foreground.
    pub fn start_corosync(&mut self) -> Result<(), ClusterError> {
        self.corosync = Some(self.spawn_daemon(&["corosync", "-f"], "corosync.out", &[])?);
        Ok(())
    }

    /// Starts pacemakerd (always in the foreground in 2.1), logging to the private log dir.
    pub fn start_pacemakerd(&mut self) -> Result<(), ClusterError> {
        let child = self.spawn_daemon(
            &["pacemakerd"],
            "pacemakerd.out",
            &[("PCMK_logfile", "/var/log/pacemaker/pacemaker.log")],
        )?;
        self.pacemakerd = Some(child);
        Ok(())
    }

    /// Whether libvirtd answers on its private unix socket.
    pub fn libvirtd_answers(&self) -> bool {
        self.run(
            &["virsh", "-c", "qemu:///system", "version"],
            Duration::from_secs(30),
        )
        .is_ok_and(|o| o.status.success())
    }

    /// Whether corosync's IPC answers.
    pub fn corosync_answers(&self) -> bool {
        self.run(&["corosync-cfgtool", "-s"], Duration::from_secs(5))
            .is_ok_and(|o| o.status.success())
    }

    /// Whether our pacemakerd child is still running.
    pub fn pacemakerd_running(&mut self) -> bool {
        running(&mut self.pacemakerd)
    }

    /// Whether our corosync child is still running.
    pub fn corosync_running(&mut self) -> bool {
        running(&mut self.corosync)
    }

    /// Whether our libvirtd child (tini) is still running.
    pub fn libvirtd_running(&mut self) -> bool {
        running(&mut self.libvirtd)
    }

    /// Stops the cluster stack cleanly: pacemakerd (which first moves or stops its
    /// resources), then corosync. libvirtd keeps running, as on a host whose cluster
    /// services were stopped.
    pub fn stop_cluster_stack(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        stop_child(&mut self.pacemakerd, "pacemakerd", &self.name, timeout)?;
        stop_child(&mut self.corosync, "corosync", &self.name, timeout)
    }

    /// Stops libvirtd with SIGTERM (tini forwards it).
    pub fn stop_libvirtd(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        stop_child(&mut self.libvirtd, "libvirtd", &self.name, timeout)
    }

    /// SIGKILLs every process of the node but the holder, as a power cut would; returns them.
    pub fn kill_all(&mut self) -> Result<BTreeSet<u32>, ClusterError> {
        let Some(netns) = procs::netns_of_pid(self.holder_pid) else {
            return Ok(BTreeSet::new());
        };
        let killed = procs::kill_netns(&netns, &[self.holder_pid], Duration::from_secs(10))?;
        self.reap();
        Ok(killed)
    }

    /// SIGKILLs the named processes of the node (by /proc/PID/comm), e.g. "corosync".
    pub fn kill_by_comm(&mut self, comms: &[&str]) -> BTreeSet<u32> {
        let Some(netns) = procs::netns_of_pid(self.holder_pid) else {
            return BTreeSet::new();
        };
        let pids: BTreeSet<u32> = procs::pids_in_netns(&netns, &[self.holder_pid])
            .into_iter()
            .filter(|pid| {
                let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                comms.contains(&comm.trim())
            })
            .collect();
        procs::signal(&pids, "KILL");
        pids
    }

    /// Collects the exit status of daemons that died (killed, fenced).
    pub fn reap(&mut self) {
        for child in [&mut self.libvirtd, &mut self.corosync, &mut self.pacemakerd] {
            running(child);
        }
    }

    /// Empties the node's /run, as a reboot would, before its daemons start again.
    pub fn clear_run(&self) -> Result<(), ClusterError> {
        let run = self.root_path("/run");
        let entries = fs::read_dir(&run).map_err(|e| ClusterError::io("read /run", &run, e))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let _ = if path.is_dir() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
        }
        mkdir(&self.root_path("/run/libvirt"))
    }

    /// Kills everything including the holder and deletes the netns; used by the teardown.
    /// Adds the PIDs it killed to `killed`.
    pub(super) fn destroy(&mut self, killed: &mut BTreeSet<u32>) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(netns) =
            procs::netns_of_pid(self.holder_pid).or_else(|| procs::netns_of_name(&self.netns))
        {
            match procs::kill_netns(&netns, &[], Duration::from_secs(10)) {
                Ok(pids) => killed.extend(pids),
                Err(e) => problems.push(e.to_string()),
            }
        }
        self.reap();
        if let Some(mut holder) = self.holder.take() {
            let _ = holder.kill();
            let _ = holder.wait();
        }
        if let Err(e) = ip(&["netns", "del", &self.netns]) {
            problems.push(e.to_string());
        }
        problems
    }
}

/// A command that runs `args` in the namespaces of `holder_pid`, with a clean environment.
pub fn node_command(holder_pid: u32, args: &[&str]) -> Command {
    let mut cmd = Command::new("nsenter");
    cmd.arg("-t")
        .arg(holder_pid.to_string())
        .args(["-m", "-n", "--"])
        .args(args)
        .env_clear()
        .env("PATH", NODE_PATH)
        .env("LANG", "C")
        .env("HOME", "/root");
    cmd
}

/// Files every node shares.
#[derive(Debug)]
pub(super) struct SharedFiles {
    pub corosync_conf: String,
    pub cib_xml: String,
    pub hosts: PathBuf,
    pub fence_agent: PathBuf,
    pub fence_state_dir: PathBuf,
    pub hacluster_uid: u32,
    pub haclient_gid: u32,
    /// A scheduler binary bound over Pacemaker's in each node (None: Pacemaker's own).
    pub scheduler: Option<PathBuf>,
}

fn running(child: &mut Option<Child>) -> bool {
    match child {
        Some(c) => match c.try_wait() {
            Ok(None) => true,
            Ok(Some(_)) | Err(_) => {
                *child = None;
                false
            }
        },
        None => false,
    }
}

fn stop_child(
    child: &mut Option<Child>,
    what: &str,
    node: &str,
    timeout: Duration,
) -> Result<(), ClusterError> {
    let Some(c) = child.as_mut() else {
        return Ok(());
    };
    let pids = BTreeSet::from([c.id()]);
    procs::signal(&pids, "TERM");
    let started = Instant::now();
    loop {
        match c.try_wait() {
            Ok(Some(_)) | Err(_) => {
                *child = None;
                return Ok(());
            }
            Ok(None) if started.elapsed() < timeout => thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                return Err(ClusterError::Timeout {
                    what: format!("{what} on {node} to exit after SIGTERM"),
                    waited_ms: timeout.as_millis(),
                    diagnostics: String::new(),
                });
            }
        }
    }
}

pub(super) fn ip(args: &[&str]) -> Result<(), ClusterError> {
    let mut cmd = Command::new("ip");
    cmd.args(args);
    let out = run_bounded(cmd, Duration::from_secs(10))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(ClusterError::CommandFailed {
            node: "host".into(),
            command: format!("ip {}", args.join(" ")),
            status: out.status.code().unwrap_or(-1),
            output: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

pub(super) fn mkdir(path: &Path) -> Result<(), ClusterError> {
    fs::create_dir_all(path).map_err(|e| ClusterError::io("mkdir", path, e))
}

pub(super) fn write(path: &Path, text: &str) -> Result<(), ClusterError> {
    if let Some(parent) = path.parent() {
        mkdir(parent)?;
    }
    fs::write(path, text).map_err(|e| ClusterError::io("write", path, e))
}

fn chown_mode(path: &Path, uid: u32, gid: u32, mode: u32) -> Result<(), ClusterError> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .map_err(|e| ClusterError::io("chown", path, e))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| ClusterError::io("chmod", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_preparation_makes_every_mountpoint_a_node_binds_over() {
        for (_, target) in BINDS {
            assert!(
                crate::host::MOUNTPOINTS.contains(target),
                "{target} is bound over but host::prepare does not make it"
            );
        }
    }
}
