//! The libvirt backend through real `virt` calls, without any daemon: libvirt's in-process test
//! driver (`test:///default`). Its state lives while a connection is open, so each test keeps a
//! "holder" connection and checks the outcome through it; domain names are unique per test
//! because the driver is shared by every test thread of this process.

use highlander_agent::clock::{Clock, SystemClock};
use highlander_agent::hypervisor::Hypervisor;
use highlander_agent::libvirt::Libvirt;
use highlander_agent::log::Log;
use highlander_agent::{Deps, Outcome, run_with};
use ocf_metadata::{OcfEnv, OcfExitCode};
use virt::connect::Connect;

const URI: &str = "test:///default";

struct Case {
    name: String,
    dir: tempfile::TempDir,
    holder: Connect,
    uri: String,
}

impl Case {
    fn new(test: &str) -> Self {
        Self::with_uri(test, URI)
    }
    fn with_uri(test: &str, uri: &str) -> Self {
        virt::error::clear_error_callback();
        let name = format!("hl-{test}-{}", std::process::id());
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("domain.xml"),
            format!(
                "<domain type='test'><name>{name}</name><memory unit='MiB'>64</memory>\
                 <vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>"
            ),
        )
        .unwrap();
        let holder = Connect::open(Some(URI)).expect("libvirt's test driver");
        Self {
            name,
            dir,
            holder,
            uri: uri.to_owned(),
        }
    }
    fn run(&self, action: &str, extra: &[(&str, &str)]) -> Outcome {
        let config = self.dir.path().join("domain.xml").display().to_string();
        let rsctmp = self.dir.path().join("rsc").display().to_string();
        let mut pairs: Vec<(String, String)> = vec![
            ("OCF_RESOURCE_INSTANCE".into(), self.name.clone()),
            ("OCF_RESKEY_config".into(), config),
            ("OCF_RESKEY_hypervisor".into(), self.uri.clone()),
            ("HA_RSCTMP".into(), rsctmp),
            ("OCF_RESKEY_CRM_meta_timeout".into(), "20000".into()),
        ];
        pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let env = OcfEnv::from_pairs(pairs).unwrap();
        let clock = SystemClock::new();
        let log = Log::memory();
        let connect = |uri: Option<&str>| -> Box<dyn Hypervisor> { Box::new(Libvirt::new(uri)) };
        let clock_ref: &dyn Clock = &clock;
        let out = run_with(
            action,
            &env,
            &Deps {
                clock: clock_ref,
                log: &log,
                connect: &connect,
                cib: None,
            },
        );
        if !matches!(out.code, OcfExitCode::Success | OcfExitCode::NotRunning) {
            assert!(
                out.reason.is_some(),
                "{action}: {:?} without reason",
                out.code
            );
        }
        eprintln!(
            "{action}: {:?} {:?}\n  {}",
            out.code,
            out.reason,
            log.lines().join("\n  ")
        );
        out
    }
    fn code(&self, action: &str, extra: &[(&str, &str)]) -> OcfExitCode {
        self.run(action, extra).code
    }
    /// Whether the domain is active, asked through the holder connection (not the agent).
    fn active(&self) -> Option<bool> {
        self.holder
            .lookup_domain_by_name(&self.name)
            .ok()
            .map(|d| d.is_active().unwrap())
    }
}

use OcfExitCode::*;
const RECURRING: (&str, &str) = ("OCF_RESKEY_CRM_meta_interval", "10000");

#[test]
fn start_monitor_stop_twice_through_libvirt() {
    let c = Case::new("cycle");
    assert_eq!(c.code("monitor", &[]), NotRunning, "probe");
    assert_eq!(
        c.code("validate-all", &[("OCF_CHECK_LEVEL", "10")]),
        Success
    );
    assert_eq!(c.code("start", &[]), Success);
    assert_eq!(c.active(), Some(true));
    assert_eq!(c.code("monitor", &[RECURRING]), Success);
    assert_eq!(c.code("status", &[]), Success);
    assert_eq!(c.code("start", &[]), Success, "double start");
    assert_eq!(c.active(), Some(true));
    assert_eq!(c.code("stop", &[]), Success);
    assert_eq!(c.active(), None, "transient domain gone");
    assert_eq!(c.code("monitor", &[RECURRING]), NotRunning);
    assert_eq!(c.code("stop", &[]), Success, "double stop");
}

#[test]
fn paused_domain_counts_as_active_and_is_destroyed_on_stop() {
    let c = Case::new("paused");
    assert_eq!(c.code("start", &[]), Success);
    c.holder
        .lookup_domain_by_name(&c.name)
        .unwrap()
        .suspend()
        .unwrap();
    assert_eq!(c.code("monitor", &[RECURRING]), Success);
    assert_eq!(c.code("start", &[]), Success, "already active");
    assert_eq!(c.code("stop", &[]), Success);
    assert_eq!(c.active(), None);
}

#[test]
fn shutdown_mode_refused_by_the_driver_falls_back_to_destroy() {
    let c = Case::new("modes");
    assert_eq!(c.code("start", &[]), Success);
    // The test driver accepts no shutdown flags: the stop must still succeed.
    assert_eq!(
        c.code("stop", &[("OCF_RESKEY_shutdown_mode", "acpi")]),
        Success
    );
    assert_eq!(c.active(), None);
}

#[test]
fn unreachable_daemon_is_judged_by_processes() {
    let c = Case::with_uri(
        "down",
        "qemu+unix:///system?socket=/nonexistent/highlander/libvirt-sock",
    );
    // No daemon, no QEMU process of that name: provably not running.
    assert_eq!(c.code("monitor", &[]), NotRunning);
    assert_eq!(c.code("monitor", &[RECURRING]), NotRunning);
    assert_eq!(c.code("stop", &[]), Success);
    let out = c.run("start", &[("OCF_RESKEY_CRM_meta_timeout", "2000")]);
    assert_eq!(out.code, ErrGeneric);
    assert!(out.reason.unwrap().contains("unreachable"));
    assert_eq!(
        c.code("validate-all", &[("OCF_CHECK_LEVEL", "10")]),
        ErrInstalled
    );
}

#[test]
fn migrate_to_a_driver_that_cannot_migrate_answers_from_both_sides() {
    let c = Case::new("migrate");
    assert_eq!(c.code("start", &[]), Success);
    // The target: a private, empty test-driver node (the test driver has no migration at all).
    let node = c.dir.path().join("node2.xml");
    std::fs::write(&node, "<node/>").unwrap();
    let remote = format!("test://{}", node.display());
    let migrate = [
        ("OCF_RESKEY_CRM_meta_migrate_source", "node1"),
        ("OCF_RESKEY_CRM_meta_migrate_target", "node2"),
        ("OCF_RESKEY_remoteuri", remote.as_str()),
    ];
    let t0 = std::time::Instant::now();
    let out = c.run("migrate_to", &migrate);
    assert_eq!(out.code, ErrGeneric);
    let reason = out.reason.unwrap();
    assert!(reason.contains("still runs on the source"), "{reason}");
    assert!(
        reason.contains("not supported"),
        "libvirt's error is quoted: {reason}"
    );
    assert_eq!(c.active(), Some(true), "the VM keeps running on the source");
    // migrate_from on the "target" fails at once: the source shows where the VM is.
    let out = c.run(
        "migrate_from",
        &[
            ("OCF_RESKEY_hypervisor", remote.as_str()),
            ("OCF_RESKEY_remoteuri", URI),
            migrate[0],
            migrate[1],
        ],
    );
    assert_eq!(out.code, ErrGeneric);
    assert!(out.reason.unwrap().contains("still runs on the source"));
    // Neither waited out its budget (the migration call alone may use 14.4 s of the 20 s): a driver
    // without job information has no job to wait for, and migrate_from asks the source at once.
    assert!(t0.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(c.code("stop", &[]), Success);
}
