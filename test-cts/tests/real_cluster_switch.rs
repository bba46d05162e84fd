//! Ring 3, a user's first journey: an `ocf:heartbeat:VirtualDomain` resource on a running
//! corosync + Pacemaker cluster is switched to `ocf:highlander:VirtualDomain` without restarting
//! its guest. This is the procedure the README gives, run as it is written there:
//!
//! 1. `crm_resource --resource vm1 --meta --set-parameter is-managed --parameter-value false`
//! 2. `cibadmin --modify --xml-text '<primitive id="vm1" provider="highlander"/>'`
//! 3. `crm_resource --refresh --resource vm1` (the new agent probes every node)
//! 4. `crm_resource --resource vm1 --meta --delete-parameter is-managed`
//!
//! Checked: the guest's QEMU process is the same before and after, it never runs on two nodes,
//! and Pacemaker ends with the resource Started with the new agent and monitored by it.
//! Run: `cargo test --release -p test-cts --test real_cluster_switch -- --nocapture`.

use std::time::{Duration, Instant};

use test_cts::cluster::{Cluster, ClusterSpec, VmAgent, unsupported_reason, vm_primitive_xml};

const VM: &str = "vm1";

fn cluster() -> Option<Cluster> {
    if let Some(reason) = unsupported_reason() {
        let msg = format!("SKIPPED real_cluster_switch: {reason}");
        assert!(std::env::var_os("CI").is_none(), "{msg}; CI must not skip");
        eprintln!("{msg}");
        return None;
    }
    // Highlander's agent is installed on every node; the resource starts out as heartbeat's.
    let agent = VmAgent::from_env().expect("our agent is built");
    assert!(
        matches!(agent, VmAgent::Highlander(_)),
        "the switch needs our agent installed (HIGHLANDER_CLUSTER_AGENT must not be heartbeat)"
    );
    Some(
        Cluster::start(ClusterSpec::new(2, agent))
            .unwrap_or_else(|e| panic!("the cluster did not come up: {e}")),
    )
}

/// The agent crm_mon names for the resource, once it is Started on `node` alone.
fn agent_when_started_on(c: &Cluster, node: &str) -> Option<String> {
    let status = c.status().ok()?;
    status
        .started_only_on(VM, node)
        .then(|| status.resources.get(VM).map(|r| r.agent.clone()))
        .flatten()
}

#[test]
fn a_heartbeat_vm_switches_to_highlander_without_a_restart() {
    let Some(c) = cluster() else {
        return;
    };
    let config = c.write_domain_xml(VM).expect("domain xml");
    let primitive = vm_primitive_xml(VM, "heartbeat", &config.to_string_lossy());
    let cib = format!(
        "<configuration><resources>{primitive}</resources><constraints>\
         <rsc_location id='loc-{VM}' rsc='{VM}' node='node1' score='50'/>\
         </constraints></configuration>"
    );
    c.cli(&["cibadmin", "-M", "-c", "-X", &cib])
        .expect("add vm1");
    c.wait_started_on(VM, "node1", Duration::from_secs(90))
        .unwrap_or_else(|e| panic!("heartbeat's vm1 did not start: {e}"));
    c.wait_idle(Duration::from_secs(60)).expect("idle");
    let before = c
        .qemu_pid("node1", VM)
        .expect("virsh")
        .expect("a QEMU on node1");
    assert_eq!(
        agent_when_started_on(&c, "node1").as_deref(),
        Some("ocf:heartbeat:VirtualDomain")
    );
    println!("[switch] vm1 runs under ocf:heartbeat:VirtualDomain on node1, QEMU pid {before}");
    let watcher = c.watch(VM);
    let t = Instant::now();
    let steps: [&[&str]; 4] = [
        &[
            "crm_resource",
            "--resource",
            VM,
            "--meta",
            "--set-parameter",
            "is-managed",
            "--parameter-value",
            "false",
        ],
        &[
            "cibadmin",
            "--modify",
            "--xml-text",
            "<primitive id='vm1' provider='highlander'/>",
        ],
        &["crm_resource", "--refresh", "--resource", VM],
        &[
            "crm_resource",
            "--resource",
            VM,
            "--meta",
            "--delete-parameter",
            "is-managed",
        ],
    ];
    for (i, step) in steps.iter().enumerate() {
        c.cli(step)
            .unwrap_or_else(|e| panic!("step {}: {step:?}: {e}", i + 1));
        println!("[switch] step {}: {}", i + 1, step.join(" "));
        if i == 2 {
            // The refresh's probes must have found the guest under the new agent before the
            // resource is managed again; otherwise Pacemaker would start a second copy.
            c.wait_for(
                "the new agent's probe to find vm1 on node1",
                Duration::from_secs(60),
                |c| {
                    Ok(agent_when_started_on(c, "node1").as_deref()
                        == Some("ocf:highlander:VirtualDomain"))
                },
            )
            .unwrap_or_else(|e| panic!("after the refresh: {e}"));
        }
    }
    c.wait_idle(Duration::from_secs(60))
        .expect("idle after the switch");
    // One recurring monitor interval (5 s) and a bit: the new agent's monitor has run.
    std::thread::sleep(Duration::from_secs(7));
    let timeline = watcher.finish();
    assert!(
        timeline.double_runs().is_empty(),
        "vm1 ran twice: {:?}",
        timeline.double_runs()
    );
    assert_eq!(
        agent_when_started_on(&c, "node1").as_deref(),
        Some("ocf:highlander:VirtualDomain"),
        "after the switch:\n{}",
        c.crm_mon().unwrap_or_default()
    );
    let after = c
        .qemu_pid("node1", VM)
        .expect("virsh")
        .expect("a QEMU on node1");
    assert_eq!(
        before,
        after,
        "the guest was restarted:\n{}",
        c.crm_mon().unwrap_or_default()
    );
    let history = c.operation_history(VM, "node1").expect("history");
    assert!(
        history.iter().any(|op| op == "monitor:5000"),
        "no recurring monitor by the new agent: {history:?}"
    );
    assert!(
        !history.iter().any(|op| op == "start" || op == "stop"),
        "the switch started or stopped vm1: {history:?}"
    );
    let managed = c
        .cli(&["crm_mon", "-1", "-r", "--output-as=xml"])
        .expect("crm_mon");
    assert!(
        !managed.contains("managed=\"false\""),
        "a resource is still unmanaged:\n{managed}"
    );
    println!(
        "[switch] vm1 runs under ocf:highlander:VirtualDomain on node1, same QEMU pid {after}, \
         monitored ({history:?}); the switch took {:.2}s",
        t.elapsed().as_secs_f64()
    );
}
