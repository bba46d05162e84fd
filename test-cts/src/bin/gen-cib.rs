//! gen-cib: writes a synthetic Pacemaker CIB for the planner benchmark (`bench/pengine.sh`),
//! deterministic from a seed: N nodes, R primitives (VM-like, `allow-migrate`), location,
//! colocation and ordering constraints, and an operation history (starts, monitors, failures),
//! with one node in standby so that the transition has work to do.
//!
//! Usage: `gen-cib --nodes 32 --resources 5000 [--seed 1]` (CIB XML on stdout).

use std::fmt::Write as _;
use std::process::ExitCode;

/// SplitMix64: a small, well-mixed generator; the same seed gives the same CIB everywhere.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (`bound` > 0).
    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    /// True with probability `percent`/100.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// The digests Pacemaker 2.1.5 records for the operations of an agent without instance
/// parameters: a start, and a recurring monitor (other digests make it reschedule them).
const START_DIGEST: &str = "f2317cad3d54cec5d7d7aa7d0bf35cf8";
const MONITOR_DIGEST: &str = "4811cef7f7f94e3a35a70be7916cb2fd";
const MONITOR_INTERVAL_MS: u64 = 10_000;
const EPOCH_S: u64 = 1_700_000_000;

/// What the history says about one resource.
#[derive(Clone, Copy, PartialEq, Eq)]
enum History {
    /// Never ran: the transition starts it.
    None,
    /// Started, monitored.
    Running,
    /// Started, then its recurring monitor failed: the transition recovers it.
    MonitorFailed,
}

struct Resource {
    home: usize,
    history: History,
}

struct Args {
    nodes: usize,
    resources: usize,
    seed: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        nodes: 16,
        resources: 1000,
        seed: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--nodes" => args.nodes = number(&value)? as usize,
            "--resources" => args.resources = number(&value)? as usize,
            "--seed" => args.seed = number(&value)?,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if args.nodes < 2 || args.resources == 0 {
        return Err("need at least 2 nodes and 1 resource".into());
    }
    Ok(args)
}

fn node(n: usize) -> String {
    format!("node{}", n + 1)
}

fn rsc(i: usize) -> String {
    format!("vm{i:05}")
}

/// Places the resources: every tenth resource picks a home node, the next two follow it (they
/// are colocated with it); a few have no history yet and a few have a failed monitor.
fn plan(args: &Args, rng: &mut SplitMix64) -> Vec<Resource> {
    let mut resources: Vec<Resource> = Vec::with_capacity(args.resources);
    for i in 0..args.resources {
        let home = if i % 10 == 1 || i % 10 == 2 {
            resources[i - 1].home
        } else {
            rng.below(args.nodes)
        };
        let history = match rng.below(100) {
            0..=1 => History::None,
            2 => History::MonitorFailed,
            _ => History::Running,
        };
        resources.push(Resource { home, history });
    }
    resources
}

fn write_cib(args: &Args, resources: &[Resource], rng: &mut SplitMix64) -> String {
    let mut x = String::with_capacity(args.resources * 1500);
    let _ = writeln!(
        x,
        r#"<cib crm_feature_set="3.16.1" validate-with="pacemaker-3.9" epoch="100" num_updates="0" admin_epoch="0" have-quorum="1" dc-uuid="1">
  <configuration>
    <crm_config>
      <cluster_property_set id="cib-bootstrap-options">
        <nvpair id="opt-stonith-enabled" name="stonith-enabled" value="false"/>
        <nvpair id="opt-startup-probes" name="enable-startup-probes" value="false"/>
        <nvpair id="opt-cluster-infrastructure" name="cluster-infrastructure" value="corosync"/>
      </cluster_property_set>
    </crm_config>
    <nodes>"#
    );
    for n in 0..args.nodes {
        let _ = write!(x, r#"      <node id="{}" uname="{}""#, n + 1, node(n));
        if n == 0 {
            // The drained node: its resources move (migrate) elsewhere.
            let _ = writeln!(
                x,
                r#"><instance_attributes id="nodes-1"><nvpair id="nodes-1-standby" name="standby" value="on"/></instance_attributes></node>"#
            );
        } else {
            x.push_str("/>\n");
        }
    }
    x.push_str("    </nodes>\n    <resources>\n");
    for i in 0..resources.len() {
        let r = rsc(i);
        let _ = writeln!(
            x,
            r#"      <primitive id="{r}" class="ocf" provider="pacemaker" type="Dummy">
        <meta_attributes id="{r}-meta"><nvpair id="{r}-meta-allow-migrate" name="allow-migrate" value="true"/></meta_attributes>
        <operations><op id="{r}-monitor-10s" name="monitor" interval="10s" timeout="20s"/></operations>
      </primitive>"#
        );
    }
    x.push_str(
        r#"    </resources>
    <constraints>
"#,
    );
    for (i, res) in resources.iter().enumerate() {
        let r = rsc(i);
        let _ = writeln!(
            x,
            r#"      <rsc_location id="loc-{r}-home" rsc="{r}" node="{}" score="50"/>"#,
            node(res.home)
        );
        if rng.chance(5) {
            let ban = (res.home + 1 + rng.below(args.nodes - 1)) % args.nodes;
            let _ = writeln!(
                x,
                r#"      <rsc_location id="loc-{r}-ban" rsc="{r}" node="{}" score="-INFINITY"/>"#,
                node(ban)
            );
        }
        match i % 10 {
            1 => {
                let p = rsc(i - 1);
                let _ = writeln!(
                    x,
                    r#"      <rsc_colocation id="col-{r}" rsc="{r}" with-rsc="{p}" score="INFINITY"/>
      <rsc_order id="ord-{r}" first="{p}" then="{r}" kind="Mandatory"/>"#
                );
            }
            2 => {
                let p = rsc(i - 1);
                let _ = writeln!(
                    x,
                    r#"      <rsc_colocation id="col-{r}" rsc="{r}" with-rsc="{p}" score="500"/>
      <rsc_order id="ord-{r}" first="{p}" then="{r}" kind="Optional"/>"#
                );
            }
            _ => {}
        }
    }
    x.push_str(
        r#"    </constraints>
    <rsc_defaults>
      <meta_attributes id="rsc-options"><nvpair id="rsc-options-stickiness" name="resource-stickiness" value="100"/></meta_attributes>
    </rsc_defaults>
  </configuration>
  <status>
"#,
    );
    let mut call_id = 10;
    for n in 0..args.nodes {
        let _ = writeln!(
            x,
            r#"    <node_state id="{id}" uname="{name}" in_ccm="true" crmd="online" crm-debug-origin="do_state_transition" join="member" expected="member">
      <lrm id="{id}">
        <lrm_resources>"#,
            id = n + 1,
            name = node(n)
        );
        for (i, res) in resources.iter().enumerate() {
            if res.home != n || res.history == History::None {
                continue;
            }
            let r = rsc(i);
            call_id += 1;
            let op = |x: &mut String, id: &str, task: &str, interval: u64, call: u64, rc: u8| {
                let key = format!("{r}_{task}_{interval}");
                let digest = if interval == 0 {
                    START_DIGEST
                } else {
                    MONITOR_DIGEST
                };
                let _ = writeln!(
                    x,
                    r#"            <lrm_rsc_op id="{id}" operation_key="{key}" operation="{task}" crm-debug-origin="do_update_resource" crm_feature_set="3.16.1" transition-key="{call}:1:0:6f1a7c7e-0000-4000-8000-000000000001" transition-magic="0:{rc};{call}:1:0:6f1a7c7e-0000-4000-8000-000000000001" exit-reason="" on_node="{node}" call-id="{call}" rc-code="{rc}" op-status="0" interval="{interval}" last-rc-change="{t}" exec-time="10" queue-time="0" op-digest="{digest}"/>"#,
                    node = node(n),
                    t = EPOCH_S + call,
                );
            };
            let _ = writeln!(
                x,
                r#"          <lrm_resource id="{r}" type="Dummy" class="ocf" provider="pacemaker">"#
            );
            op(&mut x, &format!("{r}_last_0"), "start", 0, call_id, 0);
            call_id += 1;
            let monitor_id = format!("{r}_monitor_{MONITOR_INTERVAL_MS}");
            op(
                &mut x,
                &monitor_id,
                "monitor",
                MONITOR_INTERVAL_MS,
                call_id,
                0,
            );
            if res.history == History::MonitorFailed {
                call_id += 1;
                let failure = format!("{r}_last_failure_0");
                op(&mut x, &failure, "monitor", MONITOR_INTERVAL_MS, call_id, 1);
            }
            x.push_str("          </lrm_resource>\n");
        }
        x.push_str("        </lrm_resources>\n      </lrm>\n    </node_state>\n");
    }
    x.push_str("  </status>\n</cib>\n");
    x
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("gen-cib: {e}\nusage: gen-cib --nodes N --resources R [--seed S]");
            return ExitCode::from(2);
        }
    };
    let mut rng = SplitMix64(args.seed);
    let resources = plan(&args, &mut rng);
    print!("{}", write_cib(&args, &resources, &mut rng));
    ExitCode::SUCCESS
}
