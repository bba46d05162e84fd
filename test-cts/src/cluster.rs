//! The real-cluster harness: 2 or 3 corosync + Pacemaker nodes on this machine, each a network
//! and mount namespace with its own corosync, pacemakerd and libvirtd, fenced for real by
//! `fence_highlander`, and torn down by PID on drop, even after a panic.
//!
//! Layout of a cluster named `hlc<pid>-<seq>` (the owner PID lets a later run recognise and
//! remove leftovers of a killed one):
//! - netns `<name>-sw` holds a bridge; each node's netns `<name>-n<i>` has `eth0` = 10.77.0.i
//!   on it. Nothing is created in the host's network namespace.
//! - `/tmp/<name>/node<i>/` holds the node's private /etc/corosync, /var/lib/pacemaker,
//!   /etc/libvirt, ... bound over the system paths inside the node's mount namespace, plus a
//!   tmpfs /run, a private /etc/hosts, and overlays that add `ocf:highlander:*` agents and
//!   `/usr/sbin/fence_highlander` without writing to /usr.
//! - `/tmp/<name>/fence/<node>/holder.pid` tells the fence agent which namespace to empty.

mod config;
mod node;
mod procs;
mod status;
mod watch;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

pub use config::{node_addr, node_name, tiny_domain_xml};
pub use node::Node;
pub use procs::cleanup_stale;
pub use status::{ClusterStatus, NodeStatus, ResourceStatus};
pub use watch::{DomainSeen, POLL_INTERVAL, Sample, Timeline, Watcher};

/// Everything that can go wrong while driving a test cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start {command}: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("{command} did not finish within {timeout_ms} ms")]
    CommandTimeout { command: String, timeout_ms: u128 },
    #[error("`{command}` on {node} exited with {status}: {output}")]
    CommandFailed {
        node: String,
        command: String,
        status: i32,
        output: String,
    },
    #[error("timed out after {waited_ms} ms waiting for {what}\n{diagnostics}")]
    Timeout {
        what: String,
        waited_ms: u128,
        diagnostics: String,
    },
    #[error("processes {pids:?} in {netns} survive SIGKILL")]
    Survivors { netns: String, pids: Vec<u32> },
    #[error("no node named {0}")]
    UnknownNode(String),
    #[error("no node of the cluster runs Pacemaker")]
    NoNodeUp,
    #[error("cluster set-up: {0}")]
    Setup(String),
}

impl ClusterError {
    fn io(what: &'static str, path: &Path, source: std::io::Error) -> ClusterError {
        ClusterError::Io {
            what,
            path: path.to_owned(),
            source,
        }
    }
}

/// Which VirtualDomain agent the VM resources use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VmAgent {
    /// resource-agents' `ocf:heartbeat:VirtualDomain`, as installed.
    Heartbeat,
    /// Highlander's agent: the directory holding its `VirtualDomain` binary (and the
    /// `VirtualDomain-libvirt` companion it execs), installed in every node as
    /// `ocf:highlander:VirtualDomain`.
    Highlander(PathBuf),
}

impl VmAgent {
    /// `HIGHLANDER_CLUSTER_AGENT=highlander` (default: the suite tests our agent) or
    /// `heartbeat` (the stock agent, for comparison). Ours is taken from the directory
    /// `HIGHLANDER_AGENT_DIR`, else built for the running profile (`test_cts::ocf`).
    pub fn from_env() -> Result<VmAgent, ClusterError> {
        match std::env::var("HIGHLANDER_CLUSTER_AGENT").as_deref() {
            Ok("heartbeat") => Ok(VmAgent::Heartbeat),
            Err(_) | Ok("") | Ok("highlander") => {
                let dir = match std::env::var_os("HIGHLANDER_AGENT_DIR") {
                    Some(dir) => PathBuf::from(dir),
                    None => crate::ocf::highlander_agent()
                        .map_err(ClusterError::Setup)?
                        .parent()
                        .map(PathBuf::from)
                        .unwrap_or_default(),
                };
                if dir.join("VirtualDomain").is_file() {
                    Ok(VmAgent::Highlander(dir))
                } else {
                    Err(ClusterError::Setup(format!(
                        "HIGHLANDER_CLUSTER_AGENT=highlander but {}/VirtualDomain is missing: \
                         cargo build --release -p highlander-agent",
                        dir.display()
                    )))
                }
            }
            Ok(other) => Err(ClusterError::Setup(format!(
                "HIGHLANDER_CLUSTER_AGENT={other}: expected heartbeat or highlander"
            ))),
        }
    }

    /// The OCF provider the resource names.
    pub fn provider(&self) -> &'static str {
        match self {
            VmAgent::Heartbeat => "heartbeat",
            VmAgent::Highlander(_) => "highlander",
        }
    }
}

/// Which scheduler daemon pacemakerd runs in every node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Scheduler {
    /// Pacemaker's own `pacemaker-schedulerd`.
    #[default]
    Pacemaker,
    /// `highlander-schedulerd` (this binary), bound over Pacemaker's in each node's mount
    /// namespace: no dpkg-divert, the host is untouched.
    Highlander(PathBuf),
}

impl Scheduler {
    /// A short name for reports.
    pub fn label(&self) -> &'static str {
        match self {
            Scheduler::Pacemaker => "pacemaker",
            Scheduler::Highlander(_) => "highlander",
        }
    }
}

/// What cluster to build.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    /// 2 or 3.
    pub nodes: usize,
    pub vm_agent: VmAgent,
    pub scheduler: Scheduler,
}

impl ClusterSpec {
    pub fn new(nodes: usize, vm_agent: VmAgent) -> ClusterSpec {
        ClusterSpec {
            nodes,
            vm_agent,
            scheduler: Scheduler::Pacemaker,
        }
    }

    /// The same cluster with another scheduler.
    pub fn with_scheduler(mut self, scheduler: Scheduler) -> ClusterSpec {
        self.scheduler = scheduler;
        self
    }
}

/// What a node is doing, as the harness left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeState {
    Up,
    /// Cluster stack stopped cleanly; libvirtd still runs.
    Stopped,
    /// Every process killed (crash or fence).
    Down,
}

/// The tools a cluster needs on PATH.
const TOOLS: &[&str] = &[
    "corosync",
    "corosync-cfgtool",
    "pacemakerd",
    "crm_mon",
    "cibadmin",
    "crm_resource",
    "stonith_admin",
    "libvirtd",
    "virsh",
    "qemu-system-x86_64",
    "tini",
    "nsenter",
    "unshare",
    "ip",
    "timeout",
];

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// A running test cluster. Dropping it kills everything it started.
#[derive(Debug)]
pub struct Cluster {
    name: String,
    work: PathBuf,
    switch_netns: String,
    nodes: Vec<Node>,
    states: Vec<NodeState>,
    vm_agent: VmAgent,
    /// Every PID the harness SIGKILLed, for removing their libqb files at the end.
    killed: BTreeSet<u32>,
    /// (step, duration) of the bring-up and of later steps the harness timed.
    pub timings: Vec<(String, Duration)>,
}

/// Why this machine cannot run a cluster (not root, a tool missing), or `None` when it can.
pub fn unsupported_reason() -> Option<String> {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"));
    if !root {
        return Some("not root (namespaces, mounts and libvirtd need root)".into());
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let dirs: Vec<&str> = path.split(':').chain(node::NODE_PATH.split(':')).collect();
    let missing: Vec<&str> = TOOLS
        .iter()
        .copied()
        .filter(|t| !dirs.iter().any(|d| Path::new(d).join(t).is_file()))
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "missing {} (tools/deps.sh installs them)",
            missing.join(", ")
        ));
    }
    None
}

impl Cluster {
    /// Builds the cluster and waits until every node is online under a DC, the fence device
    /// is started and every libvirtd answers.
    pub fn start(spec: ClusterSpec) -> Result<Cluster, ClusterError> {
        if !(2..=3).contains(&spec.nodes) {
            return Err(ClusterError::Setup(format!(
                "{} nodes: a test cluster has 2 or 3",
                spec.nodes
            )));
        }
        if let Some(reason) = unsupported_reason() {
            return Err(ClusterError::Setup(reason));
        }
        crate::host::prepare().map_err(|e| ClusterError::Setup(e.to_string()))?;
        for leftover in cleanup_stale() {
            eprintln!("cluster: removed leftover {leftover}");
        }
        let t0 = Instant::now();
        let name = format!(
            "{}{}-{}",
            procs::NAME_PREFIX,
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let work = std::env::temp_dir().join(&name);
        node::mkdir(&work)?;
        let mut cluster = Cluster {
            switch_netns: format!("{name}-sw"),
            name,
            work: work.clone(),
            nodes: Vec::new(),
            states: Vec::new(),
            vm_agent: spec.vm_agent.clone(),
            killed: BTreeSet::new(),
            timings: Vec::new(),
        };
        // From here on, Drop cleans up whatever was created.
        fs::set_permissions(&work, fs::Permissions::from_mode(0o755))
            .map_err(|e| ClusterError::io("chmod", &work, e))?;
        let fence_state_dir = work.join("fence");
        node::mkdir(&fence_state_dir)?;
        let hosts = work.join("hosts");
        node::write(&hosts, &config::hosts(spec.nodes))?;
        let fence_agent = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fence/fence_highlander");
        let files = node::SharedFiles {
            corosync_conf: config::corosync_conf(spec.nodes),
            cib_xml: config::cib_xml(spec.nodes, &fence_state_dir.to_string_lossy()),
            hosts,
            fence_agent,
            fence_state_dir,
            hacluster_uid: lookup_id("/etc/passwd", "hacluster")
                .ok_or_else(|| ClusterError::Setup("no user hacluster".into()))?,
            haclient_gid: lookup_id("/etc/group", "haclient")
                .ok_or_else(|| ClusterError::Setup("no group haclient".into()))?,
            scheduler: match &spec.scheduler {
                Scheduler::Pacemaker => None,
                Scheduler::Highlander(bin) => Some(bin.clone()),
            },
        };
        node::ip(&["netns", "add", &cluster.switch_netns])?;
        let sw = cluster.switch_netns.clone();
        node::ip(&["-n", &sw, "link", "add", "br0", "type", "bridge"])?;
        node::ip(&["-n", &sw, "link", "set", "br0", "up"])?;
        for i in 1..=spec.nodes {
            let n = Node::create(i, &cluster.name, &cluster.work, &sw, &files)?;
            cluster.nodes.push(n);
            cluster.states.push(NodeState::Down);
        }
        if let VmAgent::Highlander(dir) = &spec.vm_agent {
            cluster.install_ocf_agent("VirtualDomain", &dir.join("VirtualDomain"))?;
            // The front binary execs its libvirt half, found next to it under a hidden name.
            let companion = dir.join("VirtualDomain-libvirt");
            if companion.is_file() {
                cluster.install_ocf_agent(".VirtualDomain-libvirt", &companion)?;
            }
        }
        cluster
            .timings
            .push(("namespaces and mounts".into(), t0.elapsed()));

        let t1 = Instant::now();
        let caps_cache = std::env::temp_dir().join("highlander-cluster-qemu-caps");
        for n in &cluster.nodes {
            copy_files(&caps_cache, &n.dir.join("cache-libvirt/qemu/capabilities"));
        }
        for n in &mut cluster.nodes {
            n.start_libvirtd()?;
            n.start_corosync()?;
        }
        for i in 0..cluster.nodes.len() {
            let what = format!("corosync IPC on {}", cluster.nodes[i].name);
            cluster.wait_for(&what, Duration::from_secs(15), |c| {
                Ok(c.nodes[i].corosync_answers())
            })?;
        }
        for n in &mut cluster.nodes {
            n.start_pacemakerd()?;
        }
        for s in &mut cluster.states {
            *s = NodeState::Up;
        }
        cluster
            .timings
            .push(("corosync answering".into(), t1.elapsed()));
        cluster.wait_libvirtd_all()?;
        cluster
            .timings
            .push(("libvirtd answering".into(), t1.elapsed()));
        // libvirtd re-validates a cached probe against the QEMU binary and itself, and probes
        // again when anything changed; a kept copy saves the next cluster 1.5-3 s of CPU.
        if let Some(first) = cluster.nodes.first() {
            copy_files(
                &first.dir.join("cache-libvirt/qemu/capabilities"),
                &caps_cache,
            );
        }
        let all: Vec<String> = cluster.node_names();
        cluster.wait_for(
            "all nodes online under a DC",
            Duration::from_secs(60),
            |c| {
                let s = c.status()?;
                Ok(s.dc.is_some() && s.online_nodes() == all)
            },
        )?;
        cluster
            .timings
            .push(("Pacemaker DC, all online".into(), t1.elapsed()));
        cluster.wait_for("the fence device started", Duration::from_secs(30), |c| {
            Ok(!c.status()?.locations("fence-highlander").is_empty())
        })?;
        cluster
            .timings
            .push(("cluster up (total)".into(), t0.elapsed()));
        Ok(cluster)
    }

    /// Installs `binary` as `ocf:highlander:<agent>` in every node (the overlay's upper layer,
    /// so a running cluster sees it at once).
    pub fn install_ocf_agent(&self, agent: &str, binary: &Path) -> Result<(), ClusterError> {
        for n in &self.nodes {
            let target = n.dir.join("ocf-upper/highlander").join(agent);
            fs::copy(binary, &target).map_err(|e| ClusterError::io("copy agent", binary, e))?;
            fs::set_permissions(&target, fs::Permissions::from_mode(0o755))
                .map_err(|e| ClusterError::io("chmod agent", &target, e))?;
        }
        Ok(())
    }

    fn wait_libvirtd_all(&self) -> Result<(), ClusterError> {
        // The first call of each daemon probes QEMU's capabilities (1.5-3 s): do them together.
        let holders: Vec<(String, u32)> = self
            .nodes
            .iter()
            .map(|n| (n.name.clone(), n.holder_pid()))
            .collect();
        let handles: Vec<_> = holders
            .into_iter()
            .map(|(name, holder)| {
                thread::spawn(move || {
                    let started = Instant::now();
                    while started.elapsed() < Duration::from_secs(60) {
                        let cmd = node::node_command(
                            holder,
                            &["virsh", "-c", "qemu:///system", "version"],
                        );
                        if procs::run_bounded(cmd, Duration::from_secs(30))
                            .is_ok_and(|o| o.status.success())
                        {
                            return Ok(());
                        }
                        thread::sleep(Duration::from_millis(50));
                    }
                    Err(name)
                })
            })
            .collect();
        for h in handles {
            if let Ok(Err(name)) | Err(name) = h
                .join()
                .map_err(|_| "a libvirtd waiter panicked".to_string())
            {
                return Err(ClusterError::Timeout {
                    what: format!("libvirtd on {name} to answer"),
                    waited_ms: 60_000,
                    diagnostics: self.diagnostics(),
                });
            }
        }
        Ok(())
    }

    /// The cluster's name (`hlc<pid>-<seq>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cluster's work directory on the host.
    pub fn work_dir(&self) -> &Path {
        &self.work
    }

    /// Node names in order: node1, node2, ...
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Result<&Node, ClusterError> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .ok_or_else(|| ClusterError::UnknownNode(name.to_owned()))
    }

    fn index_of(&self, name: &str) -> Result<usize, ClusterError> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| ClusterError::UnknownNode(name.to_owned()))
    }

    /// What the harness last did to `name`.
    pub fn state(&self, name: &str) -> Result<NodeState, ClusterError> {
        Ok(self.states[self.index_of(name)?])
    }

    /// A node whose cluster stack the harness keeps up, for CLI calls.
    fn any_up(&self) -> Result<&Node, ClusterError> {
        self.nodes
            .iter()
            .zip(&self.states)
            .find(|(_, s)| **s == NodeState::Up)
            .map(|(n, _)| n)
            .ok_or(ClusterError::NoNodeUp)
    }

    /// Runs `args` in node `name` (within 60 s); a non-zero exit is an error.
    pub fn run(&self, name: &str, args: &[&str]) -> Result<Output, ClusterError> {
        self.node(name)?.run_ok(args, Duration::from_secs(60))
    }

    /// Runs `args` on some node that is up; a non-zero exit is an error. Returns stdout.
    pub fn cli(&self, args: &[&str]) -> Result<String, ClusterError> {
        let out = self.any_up()?.run_ok(args, Duration::from_secs(60))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `crm_mon -1` with operations and fail counts, as text for people.
    pub fn crm_mon(&self) -> Result<String, ClusterError> {
        self.cli(&["crm_mon", "-1", "-o", "-f", "-r"])
    }

    /// The cluster's state, parsed from `crm_mon --output-as=xml`.
    pub fn status(&self) -> Result<ClusterStatus, ClusterError> {
        let xml = self.cli(&["crm_mon", "-1", "-r", "--output-as=xml"])?;
        ClusterStatus::parse(&xml).ok_or_else(|| ClusterError::CommandFailed {
            node: "-".into(),
            command: "crm_mon --output-as=xml".into(),
            status: 0,
            output: xml,
        })
    }

    /// `cibadmin -C -o <section> -X <xml>`.
    pub fn cib_create(&self, section: &str, xml: &str) -> Result<(), ClusterError> {
        self.cli(&["cibadmin", "-C", "-o", section, "-X", xml])
            .map(|_| ())
    }

    /// Polls `check` every 200 ms until it says yes; errors of `check` count as "not yet".
    /// On timeout the error carries crm_mon and the logs. Returns how long it took.
    pub fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        mut check: impl FnMut(&Cluster) -> Result<bool, ClusterError>,
    ) -> Result<Duration, ClusterError> {
        let started = Instant::now();
        let mut last_err = None;
        loop {
            match check(self) {
                Ok(true) => return Ok(started.elapsed()),
                Ok(false) => {}
                Err(e) => last_err = Some(e.to_string()),
            }
            if started.elapsed() > timeout {
                let mut diagnostics = String::new();
                if let Some(e) = last_err {
                    let _ = writeln!(diagnostics, "last error: {e}");
                }
                diagnostics.push_str(&self.diagnostics());
                return Err(ClusterError::Timeout {
                    what: what.to_owned(),
                    waited_ms: timeout.as_millis(),
                    diagnostics,
                });
            }
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until `resource` is started on `node` alone.
    pub fn wait_started_on(
        &self,
        resource: &str,
        node: &str,
        timeout: Duration,
    ) -> Result<Duration, ClusterError> {
        self.wait_for(&format!("{resource} started on {node}"), timeout, |c| {
            Ok(c.status()?.started_only_on(resource, node))
        })
    }

    /// Waits until the DC's controller is idle (no transition running or pending).
    pub fn wait_idle(&self, timeout: Duration) -> Result<Duration, ClusterError> {
        self.wait_for("the DC to be idle", timeout, |c| {
            let Some(dc) = c.status()?.dc else {
                return Ok(false);
            };
            let out = c
                .any_up()?
                .run(&["crmadmin", "-S", &dc], Duration::from_secs(10))?;
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            Ok(text.contains("S_IDLE"))
        })
    }

    /// The fence agent's log: one line per action it took.
    pub fn fence_log(&self) -> String {
        fs::read_to_string(self.work.join("fence/fence.log")).unwrap_or_default()
    }

    /// How many times `node` was fenced (the fence agent emptied its namespace).
    pub fn fence_count(&self, node: &str) -> usize {
        self.fence_log()
            .lines()
            .filter(|l| {
                l.contains(&format!("reboot {node}: done"))
                    || l.contains(&format!("off {node}: done"))
            })
            .count()
    }

    /// Waits until `node` has been fenced more than `before` times; after a fence the node's
    /// processes are gone, which the harness records.
    pub fn wait_fenced(
        &mut self,
        node: &str,
        before: usize,
        timeout: Duration,
    ) -> Result<Duration, ClusterError> {
        let took = self.wait_for(&format!("{node} to be fenced"), timeout, |c| {
            Ok(c.fence_count(node) > before)
        })?;
        let i = self.index_of(node)?;
        self.nodes[i].reap();
        self.states[i] = NodeState::Down;
        Ok(took)
    }

    /// What `virsh domstate` says on `node`: `running`, `paused`, ...; `None` when the domain
    /// is not there or libvirtd does not answer.
    pub fn virsh_state(&self, node: &str, domain: &str) -> Result<Option<String>, ClusterError> {
        let out = self.node(node)?.run(
            &["virsh", "-c", "qemu:///system", "domstate", domain],
            Duration::from_secs(10),
        )?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
    }

    /// The PID of `domain`'s QEMU on `node`, from libvirt's pid file in the node's /run.
    pub fn qemu_pid(&self, node: &str, domain: &str) -> Result<Option<u32>, ClusterError> {
        let file = self
            .node(node)?
            .root_path(&format!("/run/libvirt/qemu/{domain}.pid"));
        Ok(fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .filter(|pid| procs::alive(*pid)))
    }

    /// A QEMU process's command line, arguments separated by spaces.
    pub fn process_cmdline(pid: u32) -> String {
        fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| {
                b.split(|c| *c == 0)
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    }

    /// One field of libvirt's record of the last completed job of `domain` on `node`
    /// (`virsh domjobinfo --completed`, e.g. "Total downtime"), its value with units; `None`
    /// when libvirt reports no such job or field.
    pub fn completed_job_field(&self, node: &str, domain: &str, field: &str) -> Option<String> {
        let out = self
            .run(
                node,
                &[
                    "virsh",
                    "-c",
                    "qemu:///system",
                    "domjobinfo",
                    "--completed",
                    domain,
                ],
            )
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>().join(" "))
    }

    /// Starts a watcher of `domain` on every node (see [`Watcher`]).
    pub fn watch(&self, domain: &str) -> Watcher {
        Watcher::start(
            domain,
            self.nodes
                .iter()
                .map(|n| (n.name.clone(), n.holder_pid()))
                .collect(),
        )
    }

    /// Writes a tiny guest's domain XML into the work dir (visible to every node); its path.
    pub fn write_domain_xml(&self, domain: &str) -> Result<PathBuf, ClusterError> {
        let path = self.work.join(format!("{domain}.xml"));
        node::write(&path, &tiny_domain_xml(domain))?;
        Ok(path)
    }

    /// Adds a VirtualDomain resource for a tiny guest named `id`, with the agent this cluster
    /// was built for, preferring `node` (score 50; stickiness 100 keeps it where it is later).
    pub fn add_vm(&self, id: &str, node: &str) -> Result<(), ClusterError> {
        let config = self.write_domain_xml(id)?;
        let primitive = vm_primitive_xml(id, self.vm_agent.provider(), &config.to_string_lossy());
        self.add_preferring(&primitive, id, node)
    }

    /// Adds `primitive` (with id `id`) and its location preference for `node` in one CIB
    /// update: a constraint may only name an existing resource, and one transition (not a
    /// start elsewhere first, nor a stopped resource started later) saves seconds.
    fn add_preferring(&self, primitive: &str, id: &str, node: &str) -> Result<(), ClusterError> {
        self.cli(&[
            "cibadmin",
            "-M",
            "-c",
            "-X",
            &format!(
                "<configuration><resources>{primitive}</resources><constraints>\
                 <rsc_location id='loc-{id}' rsc='{id}' node='{node}' score='50'/>\
                 </constraints></configuration>"
            ),
        ])
        .map(|_| ())
    }

    /// Adds an `ocf:pacemaker:Dummy` preferring `node`.
    pub fn add_dummy(&self, id: &str, node: &str) -> Result<(), ClusterError> {
        let primitive = format!(
            "<primitive id='{id}' class='ocf' provider='pacemaker' type='Dummy'>\
             <operations><op id='{id}-monitor' name='monitor' interval='5s'/></operations>\
             </primitive>"
        );
        self.add_preferring(&primitive, id, node)
    }

    /// `crm_resource --move -r <id> -N <node>`.
    pub fn move_resource(&self, id: &str, node: &str) -> Result<(), ClusterError> {
        self.cli(&["crm_resource", "--move", "-r", id, "-N", node])
            .map(|_| ())
    }

    /// `crm_resource --ban -r <id> -N <node>`.
    pub fn ban_resource(&self, id: &str, node: &str) -> Result<(), ClusterError> {
        self.cli(&["crm_resource", "--ban", "-r", id, "-N", node])
            .map(|_| ())
    }

    /// The VM agent this cluster's VM resources use.
    pub fn vm_agent(&self) -> &VmAgent {
        &self.vm_agent
    }

    /// `crm_resource --clear -r <id>`.
    pub fn clear_resource(&self, id: &str) -> Result<(), ClusterError> {
        self.cli(&["crm_resource", "--clear", "-r", id]).map(|_| ())
    }

    /// The operations Pacemaker recorded for `resource` on `node`, oldest first, as
    /// `name` or `name:interval_ms` (e.g. `migrate_from`, `monitor:5000`).
    pub fn operation_history(
        &self,
        resource: &str,
        node: &str,
    ) -> Result<Vec<String>, ClusterError> {
        let xml = self.cli(&["crm_mon", "-1", "-o", "--output-as=xml"])?;
        Ok(operation_history(&xml, resource, node))
    }

    /// Stops `node`'s cluster stack cleanly (pacemakerd moves or stops its resources first).
    pub fn stop_node(&mut self, name: &str) -> Result<Duration, ClusterError> {
        let i = self.index_of(name)?;
        let started = Instant::now();
        self.nodes[i].stop_cluster_stack(Duration::from_secs(120))?;
        self.states[i] = NodeState::Stopped;
        Ok(started.elapsed())
    }

    /// Crashes `node`: SIGKILL to corosync, Pacemaker, libvirtd and QEMU at once.
    pub fn crash_node(&mut self, name: &str) -> Result<Vec<u32>, ClusterError> {
        let i = self.index_of(name)?;
        self.states[i] = NodeState::Down;
        let pids = self.nodes[i].kill_all()?;
        self.killed.extend(&pids);
        Ok(pids.into_iter().collect())
    }

    /// Kills only corosync on `node`: the node leaves the membership while its Pacemaker
    /// daemons (briefly) and its QEMU guests go on running; only fencing makes that safe.
    pub fn kill_corosync(&mut self, name: &str) -> Result<Vec<u32>, ClusterError> {
        let i = self.index_of(name)?;
        self.states[i] = NodeState::Down;
        let pids = self.nodes[i].kill_by_comm(&["corosync"]);
        self.killed.extend(&pids);
        Ok(pids.into_iter().collect())
    }

    /// Throttles the live-migration streams `node` sends (QEMU's ports 49152-49167) to `kbit`
    /// kbit/s with tc, leaving corosync and libvirt's RPC alone: a migrate_to from this node
    /// then lasts long enough (a tiny guest sends about 0.5 MiB) to act while it runs.
    pub fn throttle_migrations_from(&self, name: &str, kbit: u32) -> Result<(), ClusterError> {
        let node = self.node(name)?;
        let rate = format!("{kbit}kbit");
        // HTB (prio and netem may be missing from the kernel): everything in an unshaped
        // default class, QEMU's migration ports in a class of `kbit`.
        for args in [
            vec![
                "tc", "qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb", "default",
                "10",
            ],
            vec![
                "tc", "class", "replace", "dev", "eth0", "parent", "1:", "classid", "1:10", "htb",
                "rate", "10gbit",
            ],
            vec![
                "tc", "class", "replace", "dev", "eth0", "parent", "1:", "classid", "1:30", "htb",
                "rate", &rate, "ceil", &rate,
            ],
            vec![
                "tc", "filter", "replace", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio",
                "1", "u32", "match", "ip", "dport", "49152", "0xfff0", "flowid", "1:30",
            ],
        ] {
            node.run_ok(&args, Duration::from_secs(10))?;
        }
        Ok(())
    }

    /// SIGKILLs the scheduler daemon of a node (Pacemaker's or Highlander's, whichever
    /// pacemakerd started as `pacemaker-schedulerd`); pacemakerd starts it again.
    pub fn kill_scheduler(&mut self, name: &str) -> Result<Vec<u32>, ClusterError> {
        let i = self.index_of(name)?;
        let node = &self.nodes[i];
        let Some(netns) = procs::netns_of_pid(node.holder_pid()) else {
            return Ok(Vec::new());
        };
        let pids: BTreeSet<u32> = procs::pids_in_netns(&netns, &[node.holder_pid()])
            .into_iter()
            .filter(|pid| {
                let cmdline = Cluster::process_cmdline(*pid);
                cmdline
                    .split(' ')
                    .next()
                    .is_some_and(|a| a.ends_with("pacemaker-schedulerd"))
            })
            .collect();
        procs::signal(&pids, "KILL");
        self.killed.extend(&pids);
        Ok(pids.into_iter().collect())
    }

    /// The PIDs of a node's scheduler daemon.
    pub fn scheduler_pids(&self, name: &str) -> Result<Vec<u32>, ClusterError> {
        let node = self.node(name)?;
        let Some(netns) = procs::netns_of_pid(node.holder_pid()) else {
            return Ok(Vec::new());
        };
        Ok(procs::pids_in_netns(&netns, &[node.holder_pid()])
            .into_iter()
            .filter(|pid| {
                Cluster::process_cmdline(*pid)
                    .split(' ')
                    .next()
                    .is_some_and(|a| a.ends_with("pacemaker-schedulerd"))
            })
            .collect())
    }

    /// SIGKILLs the agent processes on `node` running `action` for a VirtualDomain resource
    /// (by command line: the agent's path and the action), leaving their children, such as a
    /// `virsh migrate`, alone. Returns the PIDs killed.
    pub fn kill_agent(&mut self, name: &str, action: &str) -> Result<Vec<u32>, ClusterError> {
        let i = self.index_of(name)?;
        let node = &self.nodes[i];
        let Some(netns) = procs::netns_of_pid(node.holder_pid()) else {
            return Ok(Vec::new());
        };
        let pids: BTreeSet<u32> = procs::pids_in_netns(&netns, &[node.holder_pid()])
            .into_iter()
            .filter(|pid| {
                let cmdline = Cluster::process_cmdline(*pid);
                cmdline.contains("resource.d/")
                    && cmdline.contains("VirtualDomain")
                    && cmdline.split(' ').any(|a| a == action)
            })
            .collect();
        procs::signal(&pids, "KILL");
        self.killed.extend(&pids);
        Ok(pids.into_iter().collect())
    }

    /// Kills libvirtd (SIGKILL) on `node`; its QEMU guests go on running, the cluster stack too.
    pub fn kill_libvirtd(&mut self, name: &str) -> Result<Vec<u32>, ClusterError> {
        let i = self.index_of(name)?;
        let pids = self.nodes[i].kill_by_comm(&["libvirtd"]);
        self.killed.extend(&pids);
        Ok(pids.into_iter().collect())
    }

    /// Starts libvirtd again on `node` (after `kill_libvirtd`) and waits until it answers.
    pub fn restart_libvirtd(&mut self, name: &str) -> Result<Duration, ClusterError> {
        let i = self.index_of(name)?;
        let started = Instant::now();
        if !self.nodes[i].libvirtd_running() {
            self.nodes[i].start_libvirtd()?;
        }
        self.wait_for(
            &format!("libvirtd on {name}"),
            Duration::from_secs(60),
            |c| Ok(c.nodes[i].libvirtd_answers()),
        )
        .map(|_| started.elapsed())
    }

    /// Starts `node` again (after a clean stop, a crash or a fence) and waits until it is
    /// online in the cluster. A node that was down gets a fresh /run, as after a reboot.
    pub fn start_node(&mut self, name: &str) -> Result<Duration, ClusterError> {
        let i = self.index_of(name)?;
        let started = Instant::now();
        if self.states[i] == NodeState::Down {
            let pids = self.nodes[i].kill_all()?;
            self.killed.extend(pids);
            self.nodes[i].clear_run()?;
        }
        if !self.nodes[i].libvirtd_running() {
            self.nodes[i].start_libvirtd()?;
        }
        if !self.nodes[i].corosync_running() {
            self.nodes[i].start_corosync()?;
        }
        self.wait_for(
            &format!("corosync IPC on {name}"),
            Duration::from_secs(15),
            |c| Ok(c.nodes[i].corosync_answers()),
        )?;
        self.nodes[i].start_pacemakerd()?;
        self.states[i] = NodeState::Up;
        let what = format!("{name} online");
        self.wait_for(&what, Duration::from_secs(60), |c| {
            let s = c.status()?;
            Ok(s.nodes.get(name).is_some_and(|n| n.online))
        })?;
        self.wait_for(
            &format!("libvirtd on {name}"),
            Duration::from_secs(60),
            |c| Ok(c.nodes[i].libvirtd_answers()),
        )?;
        Ok(started.elapsed())
    }

    /// Waits until crm_mon (on a node that is up) reports `node` offline and not unclean.
    pub fn wait_node_gone(&self, name: &str, timeout: Duration) -> Result<Duration, ClusterError> {
        self.wait_for(&format!("{name} offline and clean"), timeout, |c| {
            let s = c.status()?;
            Ok(s.nodes.get(name).is_some_and(|n| !n.online && !n.unclean))
        })
    }

    /// crm_mon, the fence log and the recent interesting lines of every node's logs.
    pub fn diagnostics(&self) -> String {
        let mut out = String::new();
        match self.crm_mon() {
            Ok(text) => {
                let _ = writeln!(out, "--- crm_mon -1 -o -f -r\n{text}");
            }
            Err(e) => {
                let _ = writeln!(out, "--- crm_mon failed: {e}");
            }
        }
        let _ = writeln!(out, "--- fence.log\n{}", self.fence_log());
        for (n, state) in self.nodes.iter().zip(&self.states) {
            let _ = writeln!(
                out,
                "--- {} ({state:?}) pacemaker.log (last lines of note)",
                n.name
            );
            let log =
                fs::read_to_string(n.dir.join("log-pacemaker/pacemaker.log")).unwrap_or_default();
            for line in tail_matching(&log, 30, |l| {
                !l.contains("(cib_perform_op)")
                    && (l.contains("\tnotice:")
                        || l.contains("\twarning:")
                        || l.contains("\terror:")
                        || l.contains("\tcrit:"))
            }) {
                let _ = writeln!(out, "  {line}");
            }
            let libvirt =
                fs::read_to_string(n.dir.join("log-libvirt/libvirtd.log")).unwrap_or_default();
            let _ = writeln!(out, "--- {} libvirtd.log (last lines)", n.name);
            for line in tail_matching(&libvirt, 8, |l| {
                // What every private libvirtd here logs at start (no dnsmasq, dbus or DMI).
                ![
                    "dnsmasq",
                    "DBus",
                    "GDBus",
                    "dmi",
                    "dmidecode",
                    "hostname:",
                    "libvirt version",
                    "security driver",
                ]
                .iter()
                .any(|noise| l.contains(noise))
                    && !l.trim().is_empty()
            }) {
                let _ = writeln!(out, "  {line}");
            }
        }
        out
    }

    /// Every node's pacemaker.log lines that contain `needle`, prefixed by the node name.
    pub fn grep_pacemaker_logs(&self, needle: &str) -> Vec<String> {
        let mut out = Vec::new();
        for n in &self.nodes {
            let log =
                fs::read_to_string(n.dir.join("log-pacemaker/pacemaker.log")).unwrap_or_default();
            out.extend(
                log.lines()
                    .filter(|l| l.contains(needle))
                    .map(|l| format!("{}: {l}", n.name)),
            );
        }
        out
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if thread::panicking() {
            eprintln!(
                "cluster {}: the test panicked; state before teardown:\n{}",
                self.name,
                self.diagnostics()
            );
        }
        let mut problems = Vec::new();
        for n in &mut self.nodes {
            problems.extend(n.destroy(&mut self.killed));
        }
        // Daemons started and processes the fence agent killed, as the work dir records them.
        self.killed.extend(procs::recorded_pids(&self.work));
        procs::wait_dead(&self.killed, Duration::from_secs(2));
        procs::remove_qb_leftovers(&self.killed);
        if let Err(e) = node::ip(&["netns", "del", &self.switch_netns]) {
            problems.push(e.to_string());
        }
        if std::env::var_os("HIGHLANDER_KEEP_CLUSTER_DIR").is_none() {
            if let Err(e) = fs::remove_dir_all(&self.work) {
                problems.push(format!("remove {}: {e}", self.work.display()));
            }
        }
        for p in problems {
            eprintln!("cluster {} teardown: {p}", self.name);
        }
    }
}

/// The primitive for a VirtualDomain resource with a tiny guest, live migration allowed.
pub fn vm_primitive_xml(id: &str, provider: &str, config: &str) -> String {
    format!(
        "<primitive id='{id}' class='ocf' provider='{provider}' type='VirtualDomain'>\
         <instance_attributes id='{id}-params'>\
         <nvpair id='{id}-config' name='config' value='{config}'/>\
         <nvpair id='{id}-hypervisor' name='hypervisor' value='qemu:///system'/>\
         <nvpair id='{id}-transport' name='migration_transport' value='tcp'/>\
         <nvpair id='{id}-force-stop' name='force_stop' value='true'/>\
         </instance_attributes>\
         <meta_attributes id='{id}-meta'>\
         <nvpair id='{id}-allow-migrate' name='allow-migrate' value='true'/>\
         </meta_attributes>\
         <operations>\
         <op id='{id}-monitor' name='monitor' interval='5s' timeout='30s'/>\
         <op id='{id}-start' name='start' interval='0' timeout='60s'/>\
         <op id='{id}-stop' name='stop' interval='0' timeout='60s'/>\
         <op id='{id}-migrate-to' name='migrate_to' interval='0' timeout='60s'/>\
         <op id='{id}-migrate-from' name='migrate_from' interval='0' timeout='60s'/>\
         </operations></primitive>"
    )
}

/// Reads `crm_mon -o --output-as=xml`'s node_history for `resource` on `node`, ordered by
/// call id: `task` or `task:interval_ms` for recurring ones.
pub fn operation_history(xml: &str, resource: &str, node: &str) -> Vec<String> {
    use quick_xml::Reader;
    use quick_xml::events::Event;
    let mut reader = Reader::from_str(xml);
    let mut in_node = false;
    let mut in_resource = false;
    let mut ops: Vec<(i64, String)> = Vec::new();
    loop {
        let (e, empty) = match reader.read_event() {
            Ok(Event::Start(e)) => (e, false),
            Ok(Event::Empty(e)) => (e, true),
            Ok(Event::End(e)) => {
                match e.name().as_ref() {
                    b"node" => in_node = false,
                    b"resource_history" => in_resource = false,
                    _ => {}
                }
                continue;
            }
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => continue,
        };
        let attr = |k: &[u8]| {
            e.attributes()
                .filter_map(|a| a.ok())
                .find(|a| a.key.as_ref() == k)
                .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
                .unwrap_or_default()
        };
        match e.name().as_ref() {
            b"node" if !empty => in_node = attr(b"name") == node,
            b"resource_history" if !empty => in_resource = in_node && attr(b"id") == resource,
            b"operation_history" if in_resource => {
                let call: i64 = attr(b"call").parse().unwrap_or(-1);
                let task = attr(b"task");
                let interval = attr(b"interval").trim_end_matches("ms").to_owned();
                let op = if interval.is_empty() || interval == "0" {
                    task
                } else {
                    format!("{task}:{interval}")
                };
                ops.push((call, op));
            }
            _ => {}
        }
    }
    ops.sort();
    ops.into_iter().map(|(_, op)| op).collect()
}

fn tail_matching(text: &str, n: usize, keep: impl Fn(&str) -> bool) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().filter(|l| keep(l)).collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

/// Copies the regular files of `from` into `to` (created), best effort: a cache.
fn copy_files(from: &Path, to: &Path) {
    let Ok(dir) = fs::read_dir(from) else {
        return;
    };
    if fs::create_dir_all(to).is_err() {
        return;
    }
    for e in dir.flatten() {
        if e.path().is_file() {
            let _ = fs::copy(e.path(), to.join(e.file_name()));
        }
    }
}

/// The numeric id of `name` in a passwd- or group-format file.
fn lookup_id(file: &str, name: &str) -> Option<u32> {
    fs::read_to_string(file)
        .ok()?
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.first() == Some(&name))
        .and_then(|f| f.get(2)?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_history_is_per_node_and_in_call_order() {
        let xml = r#"<pacemaker-result><node_history>
          <node name="node1"><resource_history id="vm1" orphan="false">
            <operation_history call="12" task="stop" rc="0"/>
            <operation_history call="9" task="migrate_to" rc="0"/>
          </resource_history></node>
          <node name="node2"><resource_history id="vm1" orphan="false">
            <operation_history call="7" task="monitor" interval="5000ms" rc="0"/>
            <operation_history call="6" task="migrate_from" rc="0"/>
          </resource_history>
          <resource_history id="other"><operation_history call="1" task="start"/></resource_history>
          </node></node_history></pacemaker-result>"#;
        assert_eq!(
            operation_history(xml, "vm1", "node1"),
            ["migrate_to", "stop"]
        );
        assert_eq!(
            operation_history(xml, "vm1", "node2"),
            ["migrate_from", "monitor:5000"]
        );
        assert!(operation_history(xml, "vm1", "node3").is_empty());
    }

    #[test]
    fn ids_are_read_from_passwd_format() {
        assert_eq!(lookup_id("/etc/passwd", "root"), Some(0));
        assert_eq!(lookup_id("/etc/passwd", "no-such-user-here"), None);
    }
}
