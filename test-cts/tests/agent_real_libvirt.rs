//! The VirtualDomain agent against a real private libvirtd with a tiny QEMU (TCG) guest: the
//! case list of resource-agents' ocft `VirtualDomain`, `ocf-tester`, and `crm_resource --force-*`
//! with a CIB file naming the agent as `ocf:highlander:VirtualDomain`.
//!
//! Every check also runs against `ocf:heartbeat:VirtualDomain`, the agent ours replaces: the
//! expectations are the documented behaviour, and the reference passing them shows the test
//! itself is right. Where the two differ on purpose, the test says so.
//!
//! The agent binary comes from [`test_cts::ocf::highlander_agent`] (built on demand, or
//! `$HIGHLANDER_AGENT_BIN`). Needs root, libvirtd with the QEMU driver, qemu-system-x86_64, tini,
//! resource-agents, pacemaker-cli-utils and libxml2-utils (tools/deps.sh).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use test_cts::libvirt::{
    DomState, LibvirtDaemon, pair, real_infra_or_skip, unique_name, write_tiny_guest,
};
use test_cts::ocf::{
    HEARTBEAT_VIRTUAL_DOMAIN, OcfResource, ProviderView, cib_with_primitive, highlander_agent,
    ocf_tester,
};
use test_cts::watcher::Watcher;

/// Two daemons ("node1" and "node2", distinct host UUIDs) for every test of this binary; the
/// single-node checks use the first. Their guards remove them when the process exits.
fn nodes() -> &'static (LibvirtDaemon, LibvirtDaemon) {
    static NODES: OnceLock<(LibvirtDaemon, LibvirtDaemon)> = OnceLock::new();
    NODES.get_or_init(|| {
        let started = Instant::now();
        let (a, b) = pair().expect("two private libvirtds start");
        for d in [&a, &b] {
            let t = d.timings();
            eprintln!(
                "timing: daemon {} (socket {:.3} s, first call {:.3} s, caps pre-warmed {})",
                d.label(),
                t.socket.as_secs_f64(),
                t.first_call.as_secs_f64(),
                t.caps_prewarmed
            );
        }
        eprintln!(
            "timing: both daemons ready in {:.3} s",
            started.elapsed().as_secs_f64()
        );
        (a, b)
    })
}

fn daemon() -> &'static LibvirtDaemon {
    &nodes().0
}

fn our_agent() -> PathBuf {
    highlander_agent().unwrap_or_else(|e| panic!("the VirtualDomain binary: {e}"))
}

/// Which agent a check runs against; the reference needs no cluster-side utilization updates.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Which {
    Ours,
    Heartbeat,
}

impl Which {
    fn path(self) -> PathBuf {
        match self {
            Which::Ours => our_agent(),
            Which::Heartbeat => PathBuf::from(HEARTBEAT_VIRTUAL_DOMAIN),
        }
    }

    /// The parameters every case shares: the guest, the private daemon, and `force_stop` (a
    /// guest without an OS ignores ACPI shutdown). As ocft's "prepare" block does, the reference
    /// gets utilization updates turned off: they would need a running cluster.
    fn base_params(self) -> Vec<(&'static str, String)> {
        let mut params = vec![
            ("hypervisor", daemon().uri().to_string()),
            ("force_stop", "true".to_string()),
        ];
        if self == Which::Heartbeat {
            for p in [
                "autoset_utilization_cpu",
                "autoset_utilization_hv_memory",
                "autoset_utilization_host_memory",
            ] {
                params.push((p, "false".to_string()));
            }
        }
        params
    }
}

/// A scratch directory (guest XML, `HA_RSCTMP`, CIB) removed on drop, and a unique guest.
struct Case {
    dir: PathBuf,
    domain: String,
    xml: PathBuf,
}

impl Case {
    fn new(prefix: &str) -> Self {
        let domain = unique_name(prefix);
        let dir = std::env::temp_dir().join(format!("hl-agent-{domain}"));
        for state in ["rsctmp", "rsctmp-node2"] {
            std::fs::create_dir_all(dir.join(state)).expect("scratch dir");
        }
        let xml = write_tiny_guest(&dir, &domain, 32).expect("guest xml");
        Self { dir, domain, xml }
    }

    fn resource(&self, which: Which) -> OcfResource {
        let mut r = OcfResource::new(&which.path(), &self.domain, &self.dir.join("rsctmp"))
            .param("config", self.xml.to_str().expect("utf-8 path"));
        for (name, value) in which.base_params() {
            r = r.param(name, &value);
        }
        r
    }

    /// The same resource as seen on node2: its daemon, its own `HA_RSCTMP`.
    fn resource_on_node2(&self, which: Which) -> OcfResource {
        self.resource(which)
            .param("hypervisor", nodes().1.uri())
            .env(
                "HA_RSCTMP",
                &self.dir.join("rsctmp-node2").display().to_string(),
            )
    }

    fn state(&self) -> Option<DomState> {
        daemon().domstate(&self.domain).expect("virsh domstate")
    }

    fn executes(&self) -> bool {
        self.state().is_some_and(DomState::executes)
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        for d in [&nodes().0, &nodes().1] {
            let _ = d.virsh(&["destroy", &self.domain]);
            let _ = d.virsh(&["undefine", &self.domain]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn expect_code(r: &OcfResource, action: &str, code: i32) -> test_cts::ocf::AgentRun {
    let run = r.run(action).unwrap_or_else(|e| panic!("{action}: {e}"));
    assert_eq!(run.code(), Some(code), "{}", run.describe());
    eprintln!("timing: {} {}", r.instance, run.describe());
    run
}

/// The case list of resource-agents' `ocft/configs/VirtualDomain`, each checked against libvirt
/// as well as by exit code.
fn ocft_cases(which: Which) {
    let case = Case::new("ocft");
    let r = case.resource(which);

    // "check base env: invalid 'OCF_RESKEY_config'": 5 (not installed).
    let missing = r.clone().param("config", "/no_such_file");
    let run = expect_code(&missing, "start", 5);
    assert!(
        !run.exit_reasons().is_empty(),
        "a reason: {}",
        run.describe()
    );
    // "check base env: unset 'OCF_RESKEY_config'": 6 (not configured).
    let run = expect_code(&r.clone().without_param("config"), "start", 6);
    assert!(
        !run.exit_reasons().is_empty(),
        "a reason: {}",
        run.describe()
    );
    assert_eq!(case.state(), None, "nothing was defined or started");

    // "monitor when not running": 7; "double stop" on a stopped guest: 0.
    expect_code(&r, "monitor", 7);
    expect_code(&r, "stop", 0);

    // "check base env": start 0, and the guest really runs.
    expect_code(&r, "start", 0);
    assert_eq!(case.state(), Some(DomState::Running));
    let qemu = daemon().qemu_pid(&case.domain).expect("QEMU pid file");
    // "double start": 0, the same QEMU still running (not restarted).
    expect_code(&r, "start", 0);
    assert_eq!(case.state(), Some(DomState::Running));
    assert_eq!(daemon().qemu_pid(&case.domain), Some(qemu), "not restarted");
    // "monitor when running": 0, as a probe and as a recurring monitor.
    expect_code(&r, "monitor", 0);
    expect_code(
        &r.clone().env("OCF_RESKEY_CRM_meta_interval", "10000"),
        "monitor",
        0,
    );

    // "normal stop": 0, and the guest no longer runs; "double stop": 0 again.
    expect_code(&r, "stop", 0);
    assert!(!case.executes(), "stopped: {:?}", case.state());
    expect_code(&r, "stop", 0);
    expect_code(&r, "monitor", 7);

    // "unimplemented command": 3.
    expect_code(&r, "no_cmd", 3);
}

/// `crm_resource --validate/--force-check/--force-start/--force-stop` on a CIB file naming the
/// agent `ocf:<provider>:VirtualDomain`, made visible through a private mount namespace.
fn crm_resource_cases(which: Which) {
    let case = Case::new("crm");
    let provider = match which {
        Which::Ours => "highlander",
        Which::Heartbeat => "reference",
    };
    let view = ProviderView::new(provider, "VirtualDomain", &which.path());
    let mut params: Vec<(&str, String)> = vec![("config", case.xml.display().to_string())];
    params.extend(which.base_params());
    let pairs: Vec<(&str, &str)> = params.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let cib = case.dir.join("cib.xml");
    std::fs::write(
        &cib,
        cib_with_primitive(&case.domain, provider, "VirtualDomain", &pairs),
    )
    .expect("cib.xml");
    let scratch = case.dir.join("view");
    std::fs::create_dir_all(&scratch).expect("view scratch");
    let cib_env = cib.display().to_string();
    let rsctmp = case.dir.join("rsctmp").display().to_string();
    let crm = |args: &[&str], code: i32| {
        let mut all = vec!["-r", case.domain.as_str()];
        all.extend_from_slice(args);
        let out = view
            .run(
                &scratch,
                &[("CIB_file", &cib_env), ("HA_RSCTMP", &rsctmp)],
                "crm_resource",
                &all,
                Duration::from_secs(60),
            )
            .expect("crm_resource runs");
        eprintln!(
            "timing: crm_resource {} -> {:?} in {:.3} s",
            args.join(" "),
            out.code(),
            out.elapsed.as_secs_f64()
        );
        assert_eq!(
            out.code(),
            Some(code),
            "crm_resource {}: stdout {} stderr {}",
            args.join(" "),
            out.stdout,
            out.stderr
        );
    };
    crm(&["--validate"], 0);
    crm(&["--force-check"], 7);
    crm(&["--force-start"], 0);
    assert_eq!(case.state(), Some(DomState::Running));
    crm(&["--force-check"], 0);
    crm(&["--force-stop"], 0);
    assert!(!case.executes(), "stopped: {:?}", case.state());
    crm(&["--force-check"], 7);
}

/// A plain live migration the way Pacemaker drives it: start on node1, `migrate_to` on node1,
/// `migrate_from` on node2, `stop` on node1, then monitors on both; the watcher checks the guest
/// never runs on both daemons meanwhile. `remoteuri` names node2's daemon (both agents take it
/// as given, `%n` aside).
fn plain_migration(which: Which) {
    let (one, two) = nodes();
    let case = Case::new("mig");
    let migrate = |r: OcfResource, remote: &str| {
        r.param("remoteuri", remote)
            .env("OCF_RESKEY_CRM_meta_migrate_source", "node1")
            .env("OCF_RESKEY_CRM_meta_migrate_target", "node2")
            .env("OCF_RESKEY_CRM_meta_timeout", "60000")
    };
    let on1 = migrate(case.resource(which), two.uri());
    let on2 = migrate(case.resource_on_node2(which), one.uri());

    expect_code(&on1, "start", 0);
    assert_eq!(
        one.domstate(&case.domain).expect("node1"),
        Some(DomState::Running)
    );
    let watcher = Watcher::start(&case.domain, &[one, two]).expect("watcher");
    expect_code(&on1, "migrate_to", 0);
    expect_code(&on2, "migrate_from", 0);
    expect_code(&on1, "stop", 0);
    let report = watcher.finish();
    eprintln!(
        "watcher: {} samples{}",
        report.samples,
        report.render_timeline()
    );
    report.assert_never_both();
    assert!(
        report.saw_executing_on(0) && report.saw_executing_on(1),
        "seen on both, in turn"
    );
    assert_eq!(
        two.domstate(&case.domain).expect("node2"),
        Some(DomState::Running)
    );
    assert!(
        !one.domstate(&case.domain)
            .expect("node1")
            .is_some_and(DomState::executes),
        "gone from node1"
    );
    expect_code(
        &on2.clone().env("OCF_RESKEY_CRM_meta_interval", "10000"),
        "monitor",
        0,
    );
    expect_code(&on1, "monitor", 7);
    expect_code(&on2, "stop", 0);
    assert!(
        !two.domstate(&case.domain)
            .expect("node2")
            .is_some_and(DomState::executes)
    );
}

#[test]
fn reference_agent_migrates_live_without_running_twice() {
    if !real_infra_or_skip("reference_agent_migrates_live_without_running_twice", &[]) {
        return;
    }
    plain_migration(Which::Heartbeat);
}

#[test]
fn reference_agent_passes_the_ocft_cases() {
    if !real_infra_or_skip("reference_agent_passes_the_ocft_cases", &[]) {
        return;
    }
    ocft_cases(Which::Heartbeat);
}

#[test]
fn reference_agent_passes_crm_resource_force_actions() {
    if !real_infra_or_skip(
        "reference_agent_passes_crm_resource_force_actions",
        &["crm_resource"],
    ) {
        return;
    }
    crm_resource_cases(Which::Heartbeat);
}

#[test]
fn our_agent_is_visible_to_crm_resource_as_ocf_highlander() {
    if !real_infra_or_skip(
        "our_agent_is_visible_to_crm_resource_as_ocf_highlander",
        &["crm_resource"],
    ) {
        return;
    }
    let agent = our_agent();
    let scratch = std::env::temp_dir().join(format!("hl-view-{}", unique_name("md")));
    std::fs::create_dir_all(&scratch).expect("scratch");
    let view = ProviderView::new("highlander", "VirtualDomain", &agent);
    let listed = view
        .run(
            &scratch,
            &[],
            "crm_resource",
            &["--list-agents", "ocf:highlander"],
            Duration::from_secs(30),
        )
        .expect("crm_resource --list-agents");
    let md = view
        .run(
            &scratch,
            &[],
            "crm_resource",
            &["--show-metadata", "ocf:highlander:VirtualDomain"],
            Duration::from_secs(30),
        )
        .expect("crm_resource --show-metadata");
    let providers = view
        .run(
            &scratch,
            &[],
            "crm_resource",
            &["--list-ocf-providers"],
            Duration::from_secs(30),
        )
        .expect("crm_resource --list-ocf-providers");
    let stock = view
        .run(
            &scratch,
            &[],
            "crm_resource",
            &["--list-agents", "ocf:heartbeat"],
            Duration::from_secs(30),
        )
        .expect("crm_resource --list-agents ocf:heartbeat");
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(
        stock.stdout.lines().any(|l| l.trim() == "VirtualDomain"),
        "the stock heartbeat agents stay visible: {}",
        stock.stdout
    );
    let names: Vec<&str> = providers.stdout.split_whitespace().collect();
    for p in ["heartbeat", "highlander", "pacemaker"] {
        assert!(names.contains(&p), "provider {p} in the view: {names:?}");
    }
    assert_eq!(listed.code(), Some(0), "{}", listed.stderr);
    assert_eq!(listed.stdout.trim(), "VirtualDomain");
    assert_eq!(md.code(), Some(0), "{}", md.stderr);
    assert!(
        md.stdout.contains("<resource-agent name=\"VirtualDomain\""),
        "{}",
        md.stdout
    );
    // crm_resource says it speaks OCF 1.1, so the agent gives the 1.1 profile.
    assert!(md.stdout.contains("reload-agent"), "{}", md.stdout);
}

#[test]
fn our_agent_answers_3_to_an_unknown_action() {
    if !real_infra_or_skip("our_agent_answers_3_to_an_unknown_action", &[]) {
        return;
    }
    let case = Case::new("unk");
    let run = expect_code(&case.resource(Which::Ours), "no_cmd", 3);
    assert!(!run.exit_reasons().is_empty(), "{}", run.describe());
}

#[test]
fn ocf_tester_runner_passes_the_stock_dummy_and_fails_a_broken_agent() {
    if !real_infra_or_skip(
        "ocf_tester_runner_passes_the_stock_dummy_and_fails_a_broken_agent",
        &["ocf-tester", "xmllint"],
    ) {
        return;
    }
    // The runner itself: a known-good agent passes, a broken one fails.
    let dir = std::env::temp_dir().join(format!("hl-ocft-{}", unique_name("dummy")));
    std::fs::create_dir_all(&dir).expect("scratch");
    let state = dir.join("dummy.state").display().to_string();
    let good = ocf_tester(
        std::path::Path::new("/usr/lib/ocf/resource.d/heartbeat/Dummy"),
        "d1",
        &[("state", &state)],
        &[],
        Duration::from_secs(60),
    )
    .expect("ocf-tester runs");
    // An agent whose monitor always says "running": ocf-tester must catch it.
    let broken = dir.join("Broken");
    std::fs::write(
        &broken,
        "#!/bin/sh\n\
         [ \"$1\" = meta-data ] && OCF_ROOT=/usr/lib/ocf exec /usr/lib/ocf/resource.d/heartbeat/Dummy meta-data\n\
         exit 0\n",
    )
    .expect("broken agent");
    let _ = std::process::Command::new("chmod")
        .args(["0755", broken.to_str().expect("utf-8")])
        .status();
    let bad =
        ocf_tester(&broken, "b1", &[], &[], Duration::from_secs(60)).expect("ocf-tester runs");
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "timing: ocf-tester Dummy {:.3} s",
        good.elapsed.as_secs_f64()
    );
    assert_eq!(good.code(), Some(0), "{}{}", good.stdout, good.stderr);
    assert!(good.stdout.contains("passed all tests"), "{}", good.stdout);
    assert_ne!(bad.code(), Some(0), "{}{}", bad.stdout, bad.stderr);
    assert!(!bad.stdout.contains("passed all tests"), "{}", bad.stdout);
    assert!(
        bad.stdout.contains("rc=0") || bad.stderr.contains("rc=0"),
        "fails on the monitor answering 0 when stopped: {}{}",
        bad.stdout,
        bad.stderr
    );
}

#[test]
fn our_agent_passes_the_ocft_cases() {
    if !real_infra_or_skip("our_agent_passes_the_ocft_cases", &[]) {
        return;
    }
    ocft_cases(Which::Ours);
}

#[test]
fn our_agent_passes_crm_resource_force_actions() {
    if !real_infra_or_skip(
        "our_agent_passes_crm_resource_force_actions",
        &["crm_resource"],
    ) {
        return;
    }
    crm_resource_cases(Which::Ours);
}

/// resource-agents' ocf-tester, with the options infra.md gives, plus what its migrate steps
/// need: `CRM_meta_migrate_source/target` and `remoteuri` naming node2's daemon. ocf-tester runs
/// them on a stopped resource and only checks that they answer (the heartbeat agent hangs in
/// `migrate_from` there); ours answers at once.
#[test]
fn our_agent_passes_ocf_tester() {
    if !real_infra_or_skip("our_agent_passes_ocf_tester", &["ocf-tester", "xmllint"]) {
        return;
    }
    let case = Case::new("tester");
    let uri = daemon().uri().to_string();
    let remote = nodes().1.uri().to_string();
    let xml = case.xml.display().to_string();
    let out = ocf_tester(
        &our_agent(),
        &case.domain,
        &[
            ("hypervisor", uri.as_str()),
            ("config", xml.as_str()),
            ("force_stop", "true"),
            ("remoteuri", remote.as_str()),
        ],
        &[
            ("OCF_RESKEY_CRM_meta_migrate_source", "node1"),
            ("OCF_RESKEY_CRM_meta_migrate_target", "node2"),
        ],
        Duration::from_secs(180),
    )
    .expect("ocf-tester runs");
    let steps: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| !l.starts_with('<') && !l.starts_with(' '))
        .collect();
    eprintln!(
        "timing: ocf-tester VirtualDomain {:.3} s\n{}",
        out.elapsed.as_secs_f64(),
        steps.join("\n")
    );
    for step in [
        "Testing: start",
        "Testing: starting a started resource",
        "Testing: stopping a stopped resource",
        "Checking for migrate_to action",
        "Checking for migrate_from action",
    ] {
        assert!(steps.contains(&step), "ocf-tester ran {step:?}: {steps:?}");
    }
    assert_eq!(out.code(), Some(0), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("passed all tests"), "{}", out.stdout);
    assert!(
        !case.executes(),
        "ocf-tester ends with the guest stopped: {:?}",
        case.state()
    );
}

#[test]
fn our_agent_migrates_live_without_running_twice() {
    if !real_infra_or_skip("our_agent_migrates_live_without_running_twice", &[]) {
        return;
    }
    plain_migration(Which::Ours);
}
