//! Running OCF resource agents as Pacemaker and the OCF tools would: the agent binaries (ours and
//! `ocf:heartbeat:VirtualDomain`), one action with an `OCF_*` environment, `ocf-tester`, and
//! `crm_resource --force-*` against a CIB file with the agent visible as `ocf:highlander:*`.
//!
//! Pacemaker 2.1.5 finds OCF agents only along its compiled-in search path
//! (`/usr/lib/ocf/resource.d` on Debian; `OCF_ROOT` and `OCF_RA_PATH` do not change where
//! `crm_resource` looks). [`ProviderView`] therefore runs commands in a private mount namespace in
//! which that directory is a fresh tree: the stock providers bound back in, plus a `highlander`
//! provider holding our binary. Nothing under `/usr` is written.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use crate::process::{self, Finished, ProcessError};

/// Where Pacemaker 2.1.5 (Debian) and resource-agents look for OCF agents.
pub const OCF_RA_DIR: &str = "/usr/lib/ocf/resource.d";
/// The OCF root agents are told about.
pub const OCF_ROOT: &str = "/usr/lib/ocf";
/// resource-agents' shell implementation, the drop-in we replace (the reference in tests).
pub const HEARTBEAT_VIRTUAL_DOMAIN: &str = "/usr/lib/ocf/resource.d/heartbeat/VirtualDomain";

/// Why an agent could not be located, built or run.
#[derive(Debug, thiserror::Error)]
pub enum OcfError {
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("building the agent failed ({command}): {stderr}")]
    Build { command: String, stderr: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot find the target directory from the test executable {0}")]
    TargetDir(PathBuf),
}

/// The `VirtualDomain` binary of this workspace, built when needed.
///
/// `$HIGHLANDER_AGENT_BIN` wins when set. Otherwise this runs, once per process,
/// `cargo build -p highlander-agent --bins` (the `VirtualDomain` front and the companion it
/// execs) with the profile and target directory of
/// the running test executable (`<target>/<profile>/deps/<test>`): a no-op when the binary is
/// fresh (as after `cargo test --workspace --all-targets`), a rebuild when the agent's sources
/// changed (as after `cargo test -p test-cts`). Cargo does not hold the build lock while tests
/// run, so the nested build does not deadlock.
pub fn highlander_agent() -> Result<PathBuf, String> {
    static AGENT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    AGENT
        .get_or_init(|| {
            if let Some(path) = std::env::var_os("HIGHLANDER_AGENT_BIN") {
                return Ok(PathBuf::from(path));
            }
            build_agent().map_err(|e| e.to_string())
        })
        .clone()
}

fn build_agent() -> Result<PathBuf, OcfError> {
    let exe = std::env::current_exe().map_err(|source| OcfError::Io {
        path: PathBuf::from("/proc/self/exe"),
        source,
    })?;
    // <target>/<profile>/deps/<test-exe>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| OcfError::TargetDir(exe.clone()))?;
    let target = profile_dir
        .parent()
        .ok_or_else(|| OcfError::TargetDir(exe.clone()))?;
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| OcfError::TargetDir(exe.clone()))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&workspace)
        .args(["build", "--quiet", "-p", "highlander-agent", "--bins"])
        .arg("--target-dir")
        .arg(target);
    match profile {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    let out = process::run_bounded(&mut cmd, Duration::from_secs(20 * 60))?;
    if !out.status.success() {
        return Err(OcfError::Build {
            command: process::describe(&cmd),
            stderr: out.stderr,
        });
    }
    Ok(profile_dir.join("VirtualDomain"))
}

/// One agent invocation's outcome.
#[derive(Debug, Clone)]
pub struct AgentRun {
    pub action: String,
    pub finished: Finished,
}

impl AgentRun {
    /// The OCF exit code; `None` when a signal ended the agent.
    pub fn code(&self) -> Option<i32> {
        self.finished.code()
    }

    /// The text of the `ocf-exit-reason:` lines on stderr.
    pub fn exit_reasons(&self) -> Vec<&str> {
        self.finished
            .stderr
            .lines()
            .filter_map(|l| l.split_once("ocf-exit-reason:").map(|(_, r)| r.trim()))
            .collect()
    }

    /// "action -> code; stderr" for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "{} -> {:?} in {:.3} s; stderr: {}",
            self.action,
            self.code(),
            self.finished.elapsed.as_secs_f64(),
            self.finished.stderr.trim()
        )
    }
}

/// An agent run cut short by SIGKILL (or one that finished before the signal).
#[derive(Debug, Clone, Copy)]
pub struct KilledRun {
    /// True when SIGKILL ended it; false when it exited by itself first.
    pub killed: bool,
    /// Its exit code when it exited by itself.
    pub code: Option<i32>,
    pub elapsed: Duration,
}

/// An OCF agent and the environment of one resource, as Pacemaker's executor would give it.
#[derive(Debug, Clone)]
pub struct OcfResource {
    pub agent: PathBuf,
    pub instance: String,
    /// `OCF_RESKEY_<name>` instance parameters, in order.
    pub params: Vec<(String, String)>,
    /// Further variables (`OCF_RESKEY_CRM_meta_*`, `HA_RSCTMP`, `OCF_RA_VERSION_*`, ...).
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
}

impl OcfResource {
    /// A resource `instance` of `agent`, with a private `HA_RSCTMP` state directory.
    pub fn new(agent: &Path, instance: &str, state_dir: &Path) -> Self {
        Self {
            agent: agent.to_path_buf(),
            instance: instance.to_string(),
            params: Vec::new(),
            env: vec![
                ("HA_RSCTMP".into(), state_dir.display().to_string()),
                ("OCF_RESKEY_CRM_meta_timeout".into(), "20000".into()),
            ],
            timeout: Duration::from_secs(60),
        }
    }

    /// Sets (or replaces) instance parameter `name`.
    pub fn param(mut self, name: &str, value: &str) -> Self {
        self.params.retain(|(n, _)| n != name);
        self.params.push((name.to_string(), value.to_string()));
        self
    }

    /// Removes instance parameter `name`.
    pub fn without_param(mut self, name: &str) -> Self {
        self.params.retain(|(n, _)| n != name);
        self
    }

    /// Sets (or replaces) environment variable `name`.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.retain(|(n, _)| n != name);
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Runs `action` with a clean environment: `PATH`, `OCF_ROOT`, `OCF_RESOURCE_*`, the
    /// parameters and the extra variables; nothing of the test process leaks in.
    pub fn run(&self, action: &str) -> Result<AgentRun, ProcessError> {
        let mut cmd = self.command(action);
        Ok(AgentRun {
            action: action.to_string(),
            finished: process::run_bounded(&mut cmd, self.timeout)?,
        })
    }

    /// Runs `action` and sends it SIGKILL after `delay`, as a fenced node or an executor that
    /// gave up would. `killed` says whether the signal came before the agent finished.
    pub fn run_killed_after(
        &self,
        action: &str,
        delay: Duration,
    ) -> Result<KilledRun, ProcessError> {
        let mut cmd = self.command(action);
        let command = process::describe(&cmd);
        let started = std::time::Instant::now();
        let mut child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|source| ProcessError::Spawn {
                command: command.clone(),
                source,
            })?;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    return Ok(KilledRun {
                        killed: false,
                        code: status.code(),
                        elapsed: started.elapsed(),
                    });
                }
                Ok(None) if started.elapsed() >= delay => {
                    let _ = child.kill();
                    let status = child
                        .wait()
                        .map_err(|source| ProcessError::Wait { command, source })?;
                    return Ok(KilledRun {
                        // A run that ended between the last poll and the signal exited by itself.
                        killed: status.code().is_none(),
                        code: status.code(),
                        elapsed: started.elapsed(),
                    });
                }
                Ok(None) => std::thread::sleep(Duration::from_micros(200)),
                Err(source) => return Err(ProcessError::Wait { command, source }),
            }
        }
    }

    fn command(&self, action: &str) -> Command {
        let mut cmd = Command::new(&self.agent);
        cmd.arg(action)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("LANG", "C")
            .env("OCF_ROOT", OCF_ROOT)
            .env("OCF_RESOURCE_INSTANCE", &self.instance)
            .env("OCF_RESOURCE_TYPE", "VirtualDomain")
            .env("OCF_EXIT_REASON_PREFIX", "ocf-exit-reason:");
        for (name, value) in &self.params {
            cmd.env(format!("OCF_RESKEY_{name}"), value);
        }
        for (name, value) in &self.env {
            cmd.env(name, value);
        }
        cmd
    }
}

/// A private mount namespace view of [`OCF_RA_DIR`] with `provider/<agent>` added, and a tmpfs
/// over `/run` (agents and Pacemaker keep state there), for `crm_resource` and `ocf-tester`.
#[derive(Debug, Clone)]
pub struct ProviderView {
    provider: String,
    agent_name: String,
    agent: PathBuf,
}

/// Mounts the view, then execs the command given as arguments. $1 provider, $2 agent name,
/// $3 agent binary, $4 a scratch directory; the command follows.
const VIEW_SCRIPT: &str = r#"set -eu
provider=$1; name=$2; binary=$3; scratch=$4; shift 4
mkdir -p "$scratch/stock" "$scratch/tree"
mount --bind /usr/lib/ocf/resource.d "$scratch/stock"
for dir in "$scratch"/stock/*/; do
    dir=${dir%/}
    [ "${dir##*/}" = "$provider" ] && continue
    mkdir -p "$scratch/tree/${dir##*/}"
    mount --bind "$dir" "$scratch/tree/${dir##*/}"
done
mkdir -p "$scratch/tree/$provider"
ln -sf "$binary" "$scratch/tree/$provider/$name"
mount --rbind "$scratch/tree" /usr/lib/ocf/resource.d
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/resource-agents
exec "$@"
"#;

impl ProviderView {
    /// Our agent binary as `ocf:<provider>:<agent_name>`.
    pub fn new(provider: &str, agent_name: &str, agent: &Path) -> Self {
        Self {
            provider: provider.to_string(),
            agent_name: agent_name.to_string(),
            agent: agent.to_path_buf(),
        }
    }

    /// Where the agent appears inside the view.
    pub fn agent_path(&self) -> PathBuf {
        Path::new(OCF_RA_DIR)
            .join(&self.provider)
            .join(&self.agent_name)
    }

    /// Runs `program args...` inside the view with `env` added; `scratch` must be an existing,
    /// private directory (the stock tree is bound there).
    pub fn run(
        &self,
        scratch: &Path,
        env: &[(&str, &str)],
        program: &str,
        args: &[&str],
        timeout: Duration,
    ) -> Result<Finished, ProcessError> {
        let mut cmd = in_private_mounts(VIEW_SCRIPT);
        cmd.arg(&self.provider)
            .arg(&self.agent_name)
            .arg(&self.agent)
            .arg(scratch)
            .arg(program)
            .args(args);
        for (name, value) in env {
            cmd.env(name, value);
        }
        process::run_bounded(&mut cmd, timeout)
    }
}

/// `sh -c script sh ...` in a new mount namespace whose mounts do not propagate back; the
/// caller appends the script's arguments.
fn in_private_mounts(script: &str) -> Command {
    let mut cmd = Command::new("unshare");
    cmd.args([
        "-m",
        "--propagation",
        "private",
        "--",
        "sh",
        "-c",
        script,
        "sh",
    ]);
    cmd
}

/// Mounts a tmpfs over `/run` (agents keep state in `/run/resource-agents`), then execs the
/// command given as arguments.
const PRIVATE_RUN_SCRIPT: &str = r#"set -eu
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/resource-agents
exec "$@"
"#;

/// Runs `program args...` in a private mount namespace with its own empty `/run`.
pub fn run_with_private_run(
    env: &[(&str, &str)],
    program: &str,
    args: &[&str],
    timeout: Duration,
) -> Result<Finished, ProcessError> {
    let mut cmd = in_private_mounts(PRIVATE_RUN_SCRIPT);
    cmd.arg(program).args(args);
    for (name, value) in env {
        cmd.env(name, value);
    }
    process::run_bounded(&mut cmd, timeout)
}

/// Runs resource-agents' `ocf-tester -v -n <instance> -o name=value ... <agent>` with a private
/// `/run`; `env` reaches the agent too (ocf-tester passes its environment on, which is how
/// `OCF_RESKEY_CRM_meta_migrate_source/target` get to the migrate steps). It passes when it exits
/// 0 and prints "passed all tests".
pub fn ocf_tester(
    agent: &Path,
    instance: &str,
    options: &[(&str, &str)],
    env: &[(&str, &str)],
    timeout: Duration,
) -> Result<Finished, ProcessError> {
    let mut args: Vec<String> = vec!["-v".into(), "-n".into(), instance.into()];
    for (name, value) in options {
        args.push("-o".into());
        args.push(format!("{name}={value}"));
    }
    args.push(agent.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_with_private_run(env, "ocf-tester", &args, timeout)
}

/// A minimal CIB (one node, stonith off, empty status) holding one `ocf` primitive.
pub fn cib_with_primitive(
    id: &str,
    provider: &str,
    agent: &str,
    params: &[(&str, &str)],
) -> String {
    let mut nvpairs = String::new();
    for (name, value) in params {
        nvpairs.push_str(&format!(
            "          <nvpair id=\"{id}-ia-{name}\" name=\"{name}\" value=\"{}\"/>\n",
            xml_escape(value)
        ));
    }
    format!(
        "<cib crm_feature_set=\"3.16.1\" validate-with=\"pacemaker-3.9\" epoch=\"1\" \
         num_updates=\"0\" admin_epoch=\"0\">\n\
         \x20 <configuration>\n\
         \x20   <crm_config>\n\
         \x20     <cluster_property_set id=\"cib-bootstrap-options\">\n\
         \x20       <nvpair id=\"opt-stonith-enabled\" name=\"stonith-enabled\" value=\"false\"/>\n\
         \x20     </cluster_property_set>\n\
         \x20   </crm_config>\n\
         \x20   <nodes>\n\
         \x20     <node id=\"1\" uname=\"node1\"/>\n\
         \x20   </nodes>\n\
         \x20   <resources>\n\
         \x20     <primitive id=\"{id}\" class=\"ocf\" provider=\"{provider}\" type=\"{agent}\">\n\
         \x20       <instance_attributes id=\"{id}-ia\">\n\
         {nvpairs}\
         \x20       </instance_attributes>\n\
         \x20     </primitive>\n\
         \x20   </resources>\n\
         \x20   <constraints/>\n\
         \x20 </configuration>\n\
         \x20 <status/>\n\
         </cib>\n"
    )
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The clock's sub-second nanoseconds, to make scratch names unique.
pub fn now_nanos() -> u32 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cib_names_the_primitive_and_escapes_values() {
        let cib = cib_with_primitive(
            "vm1",
            "highlander",
            "VirtualDomain",
            &[("hypervisor", "qemu+unix:///system?socket=/tmp/a&b")],
        );
        assert!(cib.contains(
            "<primitive id=\"vm1\" class=\"ocf\" provider=\"highlander\" type=\"VirtualDomain\">"
        ));
        assert!(cib.contains("value=\"qemu+unix:///system?socket=/tmp/a&amp;b\""));
    }

    #[test]
    fn a_run_is_killed_after_the_delay_or_finishes_first() {
        let dir = std::env::temp_dir();
        let slow = OcfResource::new(Path::new("/bin/sleep"), "x", &dir);
        let cut = slow
            .run_killed_after("5", Duration::from_millis(50))
            .expect("sleep runs");
        assert!(cut.killed, "{cut:?}");
        assert!(cut.elapsed < Duration::from_secs(4), "{cut:?}");
        let quick = OcfResource::new(Path::new("/bin/true"), "x", &dir);
        let done = quick
            .run_killed_after("ignored", Duration::from_secs(5))
            .expect("true runs");
        assert!(!done.killed, "{done:?}");
        assert_eq!(done.code, Some(0));
    }

    #[test]
    fn exit_reasons_are_collected_from_stderr() {
        let run = AgentRun {
            action: "start".into(),
            finished: process::run_bounded(
                Command::new("sh").args([
                    "-c",
                    "echo 'ocf-exit-reason:config missing' >&2; echo noise >&2; exit 5",
                ]),
                Duration::from_secs(5),
            )
            .expect("sh"),
        };
        assert_eq!(run.code(), Some(5));
        assert_eq!(run.exit_reasons(), vec!["config missing"]);
    }
}
