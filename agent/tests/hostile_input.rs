//! Hostile and broken input to the agent (issue 10): each test is one row of docs/bad-input.md.
//! The whole dispatch (`run_with`) over the in-memory hypervisor, plus property tests that no
//! environment makes the agent panic or fail without a reason.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use highlander_agent::clock::{Clock, ManualClock};
use highlander_agent::config::{Config, RawConfig, domain_name_from_xml};
use highlander_agent::hypervisor::Hypervisor;
use highlander_agent::log::Log;
use highlander_agent::mem::{MemDomain, MemWorld};
use highlander_agent::{Deps, Outcome, journal, lock, run_reading_with};
use ocf_metadata::{Action, EnvReading, OcfEnv, OcfExitCode};
use proptest::prelude::*;

const NODE: &str = "node1";

struct Node {
    clock: Arc<ManualClock>,
    world: MemWorld,
    dir: tempfile::TempDir,
    /// Every URI the agent asked to connect to (`None`: libvirt's default).
    connected: Arc<std::sync::Mutex<Vec<Option<String>>>>,
}

impl Node {
    fn new() -> Self {
        let clock = Arc::new(ManualClock::new(1_000));
        let world = MemWorld::new(clock.clone());
        world.node(NODE);
        let dir = tempfile::tempdir().unwrap();
        let n = Node {
            clock,
            world,
            dir,
            connected: Arc::default(),
        };
        std::fs::write(n.config(), "<domain type='qemu'><name>vm1</name></domain>").unwrap();
        n
    }
    fn config(&self) -> PathBuf {
        self.dir.path().join("vm1.xml")
    }
    fn rsctmp(&self) -> PathBuf {
        self.dir.path().join("rsc")
    }
    /// The environment Pacemaker would give, with `extra` replacing or adding variables (an empty
    /// value removes the variable).
    fn env(&self, extra: &[(&str, &str)]) -> OcfEnv {
        let mut pairs: Vec<(String, String)> = vec![
            ("OCF_RESOURCE_INSTANCE".into(), "vm1".into()),
            (
                "OCF_RESKEY_config".into(),
                self.config().display().to_string(),
            ),
            ("HA_RSCTMP".into(), self.rsctmp().display().to_string()),
            ("OCF_RESKEY_CRM_meta_timeout".into(), "20000".into()),
        ];
        for (k, v) in extra {
            pairs.retain(|(pk, _)| pk != k);
            if !v.is_empty() {
                pairs.push((k.to_string(), v.to_string()));
            }
        }
        OcfEnv::from_pairs(pairs).unwrap()
    }
    fn run_env(&self, action: &str, env: &OcfEnv) -> (Outcome, Vec<String>) {
        self.run_reading(action, &EnvReading::clean(env.clone()))
    }
    /// The environment as raw bytes, read as the binary reads it: `extra` replaces or adds.
    fn run_bytes(&self, action: &str, extra: &[(&str, &[u8])]) -> (Outcome, Vec<String>) {
        use std::os::unix::ffi::OsStringExt;
        let base = self.env(&[]);
        let mut pairs: Vec<(String, Vec<u8>)> = vec![
            ("OCF_RESOURCE_INSTANCE".into(), b"vm1".to_vec()),
            (
                "OCF_RESKEY_config".into(),
                self.config().display().to_string().into_bytes(),
            ),
            (
                "HA_RSCTMP".into(),
                base.rsctmp.clone().unwrap_or_default().into_bytes(),
            ),
            ("OCF_RESKEY_CRM_meta_timeout".into(), b"20000".to_vec()),
        ];
        for (k, v) in extra {
            pairs.retain(|(pk, _)| pk != k);
            pairs.push((k.to_string(), v.to_vec()));
        }
        let reading = OcfEnv::read_os_pairs(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), std::ffi::OsString::from_vec(v))),
        );
        self.run_reading(action, &reading)
    }
    fn run_reading(&self, action: &str, reading: &EnvReading) -> (Outcome, Vec<String>) {
        let env = reading;
        let log = Log::memory();
        let world = self.world.clone();
        let connected = self.connected.clone();
        let connect = move |uri: Option<&str>| -> Box<dyn Hypervisor> {
            connected.lock().unwrap().push(uri.map(str::to_owned));
            Box::new(world.node(NODE))
        };
        let clock: &dyn Clock = self.clock.as_ref();
        let out = run_reading_with(
            action,
            env,
            &Deps {
                clock,
                log: &log,
                connect: &connect,
                cib: None,
            },
        );
        assert_has_reason(action, &out);
        (out, log.lines())
    }
    fn run(&self, action: &str, extra: &[(&str, &str)]) -> (Outcome, Vec<String>) {
        self.run_env(action, &self.env(extra))
    }
}

/// The API's rule: every failure carries an exit reason.
fn assert_has_reason(action: &str, out: &Outcome) {
    if !matches!(out.code, OcfExitCode::Success | OcfExitCode::NotRunning) {
        assert!(
            out.reason.as_deref().is_some_and(|r| !r.trim().is_empty()),
            "{action} gave {:?} without a reason",
            out.code
        );
    }
}

fn reason(out: &Outcome) -> &str {
    out.reason.as_deref().unwrap_or_default()
}

#[test]
fn missing_config_is_not_configured_and_stop_still_succeeds() {
    let n = Node::new();
    let (out, _) = n.run("start", &[("OCF_RESKEY_config", "")]);
    assert_eq!(out.code, OcfExitCode::ErrConfigured);
    assert!(
        reason(&out).contains("required parameter config"),
        "{out:?}"
    );
    // A stop never fails for bad parameters (a failed stop fences the node).
    let (out, log) = n.run("stop", &[("OCF_RESKEY_config", "")]);
    assert_eq!(out.code, OcfExitCode::Success, "{log:?}");
}

#[test]
fn unknown_parameters_are_warned_about_and_ignored() {
    let n = Node::new();
    let (out, log) = n.run(
        "validate-all",
        &[
            ("OCF_RESKEY_no_such_thing", "1"),
            ("OCF_RESKEY_cnofig", "/x"),
        ],
    );
    assert_eq!(out.code, OcfExitCode::Success, "{out:?}");
    assert!(
        log.iter()
            .any(|l| l.contains("unknown parameter(s) ignored: cnofig, no_such_thing")),
        "{log:?}"
    );
}

#[test]
fn wrong_types_are_all_named_in_one_reason() {
    let n = Node::new();
    let (out, _) = n.run(
        "start",
        &[
            ("OCF_RESKEY_force_stop", "maybe"),
            ("OCF_RESKEY_migration_speed", "fast"),
            ("OCF_RESKEY_migrateport", "0x10"),
        ],
    );
    assert_eq!(out.code, OcfExitCode::ErrConfigured);
    let r = reason(&out);
    for needle in [
        "force_stop=\"maybe\"",
        "migration_speed=\"fast\"",
        "migrateport=\"0x10\"",
    ] {
        assert!(r.contains(needle), "{needle} missing from {r}");
    }
    // Environment values that are not numbers are refused by name before any action.
    let e = OcfEnv::from_pairs([("OCF_RESKEY_CRM_meta_timeout", "20s")]).unwrap_err();
    assert!(e.to_string().contains("OCF_RESKEY_CRM_meta_timeout"), "{e}");
}

#[test]
fn huge_values_are_refused_or_saturate() {
    let n = Node::new();
    // Larger than i64: not an integer.
    let (out, _) = n.run(
        "start",
        &[("OCF_RESKEY_migration_speed", "99999999999999999999")],
    );
    assert_eq!(out.code, OcfExitCode::ErrConfigured);
    assert!(reason(&out).contains("migration_speed"), "{out:?}");
    let (out, _) = n.run("start", &[("OCF_RESKEY_migrateport", "65536")]);
    assert_eq!(out.code, OcfExitCode::ErrConfigured);
    assert!(reason(&out).contains("TCP port"), "{out:?}");
    // The largest timeout Pacemaker could pass: no overflow in the deadline arithmetic.
    let (out, _) = n.run(
        "monitor",
        &[("OCF_RESKEY_CRM_meta_timeout", "18446744073709551615")],
    );
    assert_eq!(out.code, OcfExitCode::NotRunning, "{out:?}");
    let (out, _) = n.run("monitor", &[("OCF_CHECK_LEVEL", "4294967296000")]);
    assert_eq!(out.code, OcfExitCode::NotRunning, "{out:?}");
    // A 1 MiB path: the file system refuses it, the agent says so (5: not here).
    let long = format!("/{}", "a".repeat(1 << 20));
    let (out, _) = n.run("start", &[("OCF_RESKEY_config", &long)]);
    assert_eq!(out.code, OcfExitCode::ErrInstalled, "{:?}", out.code);
    assert!(reason(&out).contains("cannot be read"));
    // A config file over the 16 MiB limit is not read into memory.
    let big = n.dir.path().join("big.xml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(17 * 1024 * 1024).unwrap();
    let (out, _) = n.run(
        "start",
        &[("OCF_RESKEY_config", &big.display().to_string())],
    );
    assert_eq!(out.code, OcfExitCode::ErrInstalled);
    assert!(reason(&out).contains("larger than"), "{out:?}");
}

#[test]
fn non_utf8_environment_and_config_are_named() {
    use std::os::unix::ffi::OsStringExt;
    let bad = std::ffi::OsString::from_vec(b"/etc/\xff.xml".to_vec());
    let e = OcfEnv::from_os_pairs([("OCF_RESKEY_config".into(), bad)]).unwrap_err();
    assert_eq!(e.to_string(), "OCF_RESKEY_config is not valid UTF-8");
    let n = Node::new();
    std::fs::write(n.config(), b"<domain><name>vm\xff</name></domain>").unwrap();
    let (out, _) = n.run("start", &[]);
    assert_eq!(out.code, OcfExitCode::ErrInstalled);
    assert!(reason(&out).contains("cannot be read"), "{out:?}");
    assert_eq!(n.world.running_on("vm1"), Vec::<String>::new());
}

/// Per variable, what a non-UTF-8 value does to `stop` (docs/bad-input.md): never a failure when
/// the domain provably does not run; the other actions refuse it with 6 naming it.
#[test]
fn non_utf8_variables_never_block_a_stop_that_can_prove_the_domain_stopped() {
    let running = || MemDomain::running("<domain><name>vm1</name></domain>");
    // A parameter stop does not need, the instance, the state directory, the timeout, the check
    // level, the exit-reason prefix, an unknown parameter, a meta attribute: stop destroys.
    for var in [
        "OCF_RESKEY_migrate_options",
        "OCF_RESKEY_shutdown_mode",
        "OCF_RESKEY_force_stop",
        "OCF_RESKEY_no_such_parameter",
        "OCF_RESOURCE_INSTANCE",
        "OCF_RESKEY_CRM_meta_timeout",
        "OCF_RESKEY_CRM_meta_interval",
        "OCF_CHECK_LEVEL",
        "OCF_EXIT_REASON_PREFIX",
        "HA_debug",
        "HA_RSCTMP",
    ] {
        let n = Node::new();
        let bad: &[u8] = if var == "HA_RSCTMP" {
            // A real directory whose name is not UTF-8: the lock goes there.
            &b"/nonexistent-\xff"[..]
        } else {
            &b"x\xffy"[..]
        };
        let bad_dir;
        let bad = if var == "HA_RSCTMP" {
            use std::os::unix::ffi::OsStrExt;
            bad_dir = n.dir.path().join(std::ffi::OsStr::from_bytes(b"rsc-\xff"));
            bad_dir.as_os_str().as_bytes()
        } else {
            bad
        };
        n.world.put_domain(NODE, "vm1", running());
        let (out, log) = n.run_bytes("monitor", &[(var, bad)]);
        assert_eq!(
            out.code,
            OcfExitCode::ErrConfigured,
            "monitor {var}: {log:?}"
        );
        assert!(
            reason(&out).contains("is not valid UTF-8"),
            "{var}: {out:?}"
        );
        let (out, _) = n.run_bytes("start", &[(var, bad)]);
        assert_eq!(out.code, OcfExitCode::ErrConfigured, "start {var}");
        let (out, log) = n.run_bytes("stop", &[(var, bad)]);
        assert_eq!(out.code, OcfExitCode::Success, "stop {var}: {log:?}");
        assert_eq!(n.world.running_on("vm1"), Vec::<String>::new(), "{var}");
        assert!(
            log.iter()
                .any(|l| l.contains(var) && l.contains("stopping by destroy")),
            "{var}: {log:?}"
        );
        // meta-data needs none of them.
        let (out, _) = n.run_bytes("meta-data", &[(var, bad)]);
        assert_eq!(out.code, OcfExitCode::Success, "meta-data {var}");
    }
}

#[test]
fn a_malformed_timeout_refuses_monitor_but_not_stop() {
    let n = Node::new();
    n.world.put_domain(
        NODE,
        "vm1",
        MemDomain::running("<domain><name>vm1</name></domain>"),
    );
    let bad: &[(&str, &[u8])] = &[("OCF_RESKEY_CRM_meta_timeout", b"20s")];
    let (out, _) = n.run_bytes("monitor", bad);
    assert_eq!(out.code, OcfExitCode::ErrConfigured);
    assert!(reason(&out).contains("CRM_meta_timeout"), "{out:?}");
    let (out, log) = n.run_bytes("stop", bad);
    assert_eq!(out.code, OcfExitCode::Success, "{log:?}");
    assert!(
        log.iter().any(|l| l.contains("default timeout of 20 s")),
        "{log:?}"
    );
    assert_eq!(n.world.running_on("vm1"), Vec::<String>::new());
}

#[test]
fn a_non_utf8_config_path_is_still_a_path_for_stop() {
    use std::os::unix::ffi::OsStrExt;
    let n = Node::new();
    let path = n
        .dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"vm\xff.xml"));
    std::fs::write(&path, "<domain><name>vm1</name></domain>").unwrap();
    n.world.put_domain(
        NODE,
        "vm1",
        MemDomain::running("<domain><name>vm1</name></domain>"),
    );
    let bytes = path.as_os_str().as_bytes();
    let (out, _) = n.run_bytes("start", &[("OCF_RESKEY_config", bytes)]);
    assert_eq!(out.code, OcfExitCode::ErrConfigured);
    assert_eq!(reason(&out), "OCF_RESKEY_config is not valid UTF-8");
    let (out, log) = n.run_bytes("stop", &[("OCF_RESKEY_config", bytes)]);
    assert_eq!(out.code, OcfExitCode::Success, "{log:?}");
    assert_eq!(n.world.running_on("vm1"), Vec::<String>::new());
    // With a config that names nothing readable and no start record, nothing of this resource
    // was started here: the stop succeeds, as with a missing config.
    let (out, log) = n.run_bytes("stop", &[("OCF_RESKEY_config", b"/nonexistent/\xff.xml")]);
    assert_eq!(out.code, OcfExitCode::Success, "{log:?}");
}

#[test]
fn a_non_utf8_hypervisor_is_never_opened_and_stop_relies_on_proc() {
    let n = Node::new();
    let local: &[u8] = b"qemu:///system?socket=/run/\xff/sock";
    // No QEMU process of the domain here: provably stopped.
    let (out, log) = n.run_bytes("stop", &[("OCF_RESKEY_hypervisor", local)]);
    assert_eq!(out.code, OcfExitCode::Success, "{log:?}");
    assert_eq!(
        *n.connected.lock().unwrap(),
        vec![None],
        "never the given URI"
    );
    // It runs (the process table shows it) and cannot be reached: fail, do not lie.
    n.world.put_domain(
        NODE,
        "vm1",
        MemDomain::running("<domain><name>vm1</name></domain>"),
    );
    let (out, _) = n.run_bytes("stop", &[("OCF_RESKEY_hypervisor", local)]);
    assert_eq!(out.code, OcfExitCode::ErrGeneric);
    assert!(reason(&out).contains("QEMU process"), "{out:?}");
    // A URI that does not name local QEMU: /proc proves nothing, fail.
    let (out, _) = n.run_bytes(
        "stop",
        &[("OCF_RESKEY_hypervisor", b"qemu+ssh://h\xff/system")],
    );
    assert_eq!(out.code, OcfExitCode::ErrGeneric);
    assert_eq!(n.world.running_on("vm1"), vec![NODE.to_owned()]);
}

#[test]
fn entities_in_domain_xml_are_refused_not_expanded() {
    // Billion laughs: a DTD that would expand to 3 GB. The reader does not expand DTD entities.
    let mut dtd = String::from("<!DOCTYPE domain [<!ENTITY a0 \"lol\">");
    for i in 1..10 {
        let prev = format!("&a{};", i - 1);
        dtd.push_str(&format!("<!ENTITY a{i} \"{}\">", prev.repeat(10)));
    }
    dtd.push_str("]>");
    let xml = format!("{dtd}<domain><name>&a9;</name></domain>");
    assert_eq!(
        domain_name_from_xml(&xml).unwrap_err().to_string(),
        "not well-formed XML: unknown entity &a9;"
    );
    // External entities are never fetched either.
    let xxe = "<!DOCTYPE domain [<!ENTITY x SYSTEM \"file:///etc/shadow\">]>\
               <domain><name>&x;</name></domain>";
    assert!(domain_name_from_xml(xxe).is_err());
    // Character references and the five predefined entities are fine.
    assert_eq!(
        domain_name_from_xml("<domain><name>a&#x41;&lt;</name></domain>").unwrap(),
        "aA<"
    );
}

#[test]
fn deeply_nested_domain_xml_is_read_without_recursion() {
    let depth = 200_000;
    let xml = format!(
        "<domain><name>deep</name>{}{}</domain>",
        "<a>".repeat(depth),
        "</a>".repeat(depth)
    );
    assert_eq!(domain_name_from_xml(&xml).unwrap(), "deep");
    let unclosed = format!("<domain><name>deep</name>{}", "<a>".repeat(depth));
    assert!(domain_name_from_xml(&unclosed).is_err());
}

#[test]
fn shell_words_in_migrate_options_and_monitor_scripts_are_not_evaluated() {
    let n = Node::new();
    let marker = n.dir.path().join("pwned");
    let injected = format!("--p2p $(touch {0}) ; touch {0}", marker.display());
    let (out, _) = n.run("validate-all", &[("OCF_RESKEY_migrate_options", &injected)]);
    assert_eq!(out.code, OcfExitCode::ErrConfigured);
    assert!(reason(&out).contains("$(touch"), "{out:?}");
    // monitor_scripts: each word is a program path; `;` is part of a (missing) file name.
    n.world.put_domain(
        NODE,
        "vm1",
        MemDomain::running("<domain><name>vm1</name></domain>"),
    );
    let scripts = format!("/bin/true;touch\t{}", marker.display());
    let (out, _) = n.run(
        "monitor",
        &[
            ("OCF_RESKEY_monitor_scripts", &scripts),
            ("OCF_RESKEY_CRM_meta_interval", "10000"),
        ],
    );
    assert_ne!(out.code, OcfExitCode::Success);
    assert!(reason(&out).contains("/bin/true;touch"), "{out:?}");
    assert!(!marker.exists(), "a shell ran");
}

/// Values that would change the meaning of the URI they are pasted into, per parameter.
const HOSTILE_URI_PARTS: [(&str, &str); 14] = [
    ("OCF_RESKEY_migration_transport", "ext"),
    (
        "OCF_RESKEY_migration_transport",
        "ssh/system?command=/bin/x",
    ),
    ("OCF_RESKEY_migration_transport", "ssh tcp"),
    (
        "OCF_RESKEY_migration_network_suffix",
        "/system?command=/bin/x",
    ),
    ("OCF_RESKEY_migration_network_suffix", "-mig@evil"),
    ("OCF_RESKEY_migration_network_suffix", "-mig#x"),
    ("OCF_RESKEY_migration_user", "root@evil"),
    ("OCF_RESKEY_migration_user", "a\u{7}b"),
    ("OCF_RESKEY_hypervisor", "qemu+ext:///system?command=/bin/x"),
    ("OCF_RESKEY_hypervisor", "qemu:///system#x"),
    ("OCF_RESKEY_hypervisor", "qemu:///system?socket=/a b"),
    (
        "OCF_RESKEY_remoteuri",
        "qemu+ssh://%n/system?command=/bin/x",
    ),
    ("OCF_RESKEY_migrateuri", "exec:/bin/x"),
    (
        "OCF_RESKEY_migrate_options",
        "--p2p --migrateuri=tcp:a@%n:1",
    ),
];

#[test]
fn uri_parts_that_change_the_uri_are_refused_by_every_action() {
    for (var, value) in HOSTILE_URI_PARTS {
        let n = Node::new();
        n.world.put_domain(
            NODE,
            "vm1",
            MemDomain::running("<domain><name>vm1</name></domain>"),
        );
        let name = var.trim_start_matches("OCF_RESKEY_");
        for action in [
            "validate-all",
            "reload-agent",
            "start",
            "monitor",
            "migrate_to",
            "migrate_from",
        ] {
            let (out, _) = n.run(
                action,
                &[
                    (var, value),
                    ("OCF_RESKEY_CRM_meta_migrate_target", "node2"),
                    ("OCF_RESKEY_CRM_meta_migrate_source", "node2"),
                ],
            );
            assert_eq!(
                out.code,
                OcfExitCode::ErrConfigured,
                "{action} {var}={value:?}"
            );
            assert!(
                reason(&out).starts_with(&format!("parameter {name}=")),
                "{action} {var}={value:?}: {out:?}"
            );
            assert!(!reason(&out).contains('\n'), "one line: {out:?}");
        }
        assert!(
            n.connected.lock().unwrap().is_empty(),
            "{var}={value:?}: nothing is connected to before validation passes"
        );
        assert_eq!(n.world.running_on("vm1"), vec![NODE.to_owned()]);
        // stop still stops (a failed stop fences), and never opens a refused hypervisor URI.
        let (out, log) = n.run("stop", &[(var, value)]);
        let connected = n.connected.lock().unwrap().clone();
        if var == "OCF_RESKEY_hypervisor" {
            assert!(
                !connected.iter().any(|u| u.as_deref() == Some(value)),
                "{value:?} was opened: {connected:?}"
            );
            // Not connected, so the running domain cannot be stopped, and /proc (the in-memory
            // process table here) shows it: the stop fails rather than lie, unless the URI does
            // not even name local QEMU, in which case the state is unknown: also a failure.
            assert_eq!(out.code, OcfExitCode::ErrGeneric, "{value:?}: {log:?}");
            assert_eq!(n.world.running_on("vm1"), vec![NODE.to_owned()]);
        } else {
            assert_eq!(out.code, OcfExitCode::Success, "{var}={value:?}: {log:?}");
            assert_eq!(n.world.running_on("vm1"), Vec::<String>::new());
        }
    }
}

#[test]
fn a_stop_with_a_refused_hypervisor_succeeds_when_proc_shows_no_qemu() {
    let n = Node::new();
    let (out, log) = n.run("stop", &[("OCF_RESKEY_hypervisor", "qemu:///system#x")]);
    assert_eq!(out.code, OcfExitCode::Success, "{log:?}");
    assert_eq!(
        *n.connected.lock().unwrap(),
        vec![None],
        "only the default, for /proc"
    );
    assert!(log.iter().any(|l| l.contains("not connecting")), "{log:?}");
    // An ext URI is not local QEMU for sure: no proof, so the stop fails and says why.
    let (out, _) = n.run(
        "stop",
        &[("OCF_RESKEY_hypervisor", "qemu+ext:///system?command=/bin/x")],
    );
    assert_eq!(out.code, OcfExitCode::ErrGeneric);
    assert!(reason(&out).contains("hypervisor="), "{out:?}");
}

#[test]
fn migration_peers_that_change_the_uri_are_refused() {
    for node in [
        "evil@node2",
        "node2/system?command=/bin/x",
        "node2#x",
        "-oProxyCommand=x",
        "node 2",
    ] {
        let n = Node::new();
        n.world.put_domain(
            NODE,
            "vm1",
            MemDomain::running("<domain><name>vm1</name></domain>"),
        );
        for (action, var) in [
            ("migrate_to", "OCF_RESKEY_CRM_meta_migrate_target"),
            ("migrate_from", "OCF_RESKEY_CRM_meta_migrate_source"),
        ] {
            let (out, _) = n.run(
                action,
                &[
                    (var, node),
                    ("OCF_RESKEY_remoteuri", "qemu+ssh://%n/system"),
                ],
            );
            assert_eq!(out.code, OcfExitCode::ErrConfigured, "{action} {node:?}");
            assert!(
                reason(&out).contains(var.trim_start_matches("OCF_RESKEY_")),
                "{out:?}"
            );
        }
        assert!(n.connected.lock().unwrap().is_empty(), "{node:?}");
        assert_eq!(n.world.running_on("vm1"), vec![NODE.to_owned()]);
    }
}

#[test]
fn state_files_do_not_follow_symlinks() {
    let n = Node::new();
    std::fs::create_dir_all(n.rsctmp()).unwrap();
    let victim = n.dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let lock_path = n.rsctmp().join("VirtualDomain-vm1.lock");
    std::os::unix::fs::symlink(&victim, &lock_path).unwrap();
    let (out, _) = n.run("start", &[]);
    assert_eq!(out.code, OcfExitCode::ErrGeneric);
    assert!(reason(&out).contains("VirtualDomain-vm1.lock"), "{out:?}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    std::fs::remove_file(&lock_path).unwrap();
    // A planted start record symlink is replaced by the atomic rename, never written through.
    let record = lock::record_path(&n.rsctmp(), "vm1");
    std::os::unix::fs::symlink(&victim, &record).unwrap();
    let (out, _) = n.run("start", &[]);
    assert_eq!(out.code, OcfExitCode::Success, "{out:?}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(!std::fs::symlink_metadata(&record).unwrap().is_symlink());
    // A hard link to another file is refused on read.
    std::fs::remove_file(&record).unwrap();
    std::fs::hard_link(&victim, &record).unwrap();
    assert!(lock::read_record(&n.rsctmp(), "vm1").is_err());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
}

#[test]
fn state_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let n = Node::new();
    let (out, _) = n.run("start", &[]);
    assert_eq!(out.code, OcfExitCode::Success);
    for p in [
        n.rsctmp().join("VirtualDomain-vm1.lock"),
        lock::record_path(&n.rsctmp(), "vm1"),
    ] {
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", p.display());
    }
}

fn write_journal(dir: &Path, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(journal::path(dir, "vm1"), text).unwrap();
}

#[test]
fn the_journal_cannot_make_the_agent_lie() {
    let n = Node::new();
    // A journal (and a start record) claiming the domain migrated here and answered success,
    // while it runs nowhere: monitor answers from the hypervisor.
    write_journal(
        &n.rsctmp(),
        r#"[{"action":"migrate_from","domain":"vm1","source":"node2","target":"node1","phase":"answer","detail":"0 "}]"#,
    );
    let (out, _) = n.run("monitor", &[("OCF_RESKEY_CRM_meta_interval", "10000")]);
    assert_eq!(out.code, OcfExitCode::NotRunning);
    // The opposite lie: it says the domain left, but it runs here.
    n.world.put_domain(
        NODE,
        "vm1",
        MemDomain::running("<domain><name>vm1</name></domain>"),
    );
    write_journal(
        &n.rsctmp(),
        r#"[{"action":"migrate_to","domain":"vm1","source":"node1","target":"node2","phase":"answer","detail":"0 "}]"#,
    );
    let (out, _) = n.run("monitor", &[("OCF_RESKEY_CRM_meta_interval", "10000")]);
    assert_eq!(out.code, OcfExitCode::Success);
    // Garbage, a huge file, a symlink: still the hypervisor's answer.
    write_journal(&n.rsctmp(), &"[".repeat(100_000));
    let (out, _) = n.run("monitor", &[("OCF_RESKEY_CRM_meta_interval", "10000")]);
    assert_eq!(out.code, OcfExitCode::Success);
    assert!(journal::read(&n.rsctmp(), "vm1").is_empty());
    // A start record naming another domain does not hide this one from a stop.
    lock::write_record(&n.rsctmp(), "vm1", "other-vm").unwrap();
    let (out, _) = n.run("stop", &[]);
    assert_eq!(out.code, OcfExitCode::Success);
    assert_eq!(n.world.running_on("vm1"), Vec::<String>::new());
}

fn any_action() -> impl Strategy<Value = Action> {
    prop::sample::select(vec![
        Action::Start,
        Action::Stop,
        Action::Monitor,
        Action::Status,
        Action::ValidateAll,
        Action::MigrateTo,
        Action::MigrateFrom,
        Action::ReloadAgent,
    ])
}

/// Parameter names the agent knows, a few it does not, and hostile values.
fn any_param() -> impl Strategy<Value = (String, String)> {
    let names: Vec<String> = highlander_agent::params::PARAMETERS
        .iter()
        .map(|p| p.name.to_string())
        .chain(["bogus".to_string(), "CRM_meta_timeout".to_string()])
        .collect();
    let value = prop_oneof![
        Just(String::new()),
        Just("true".to_string()),
        Just("-1".to_string()),
        Just("99999999999999999999".to_string()),
        Just("/etc/vm1.xml".to_string()),
        Just("--p2p --migrateuri".to_string()),
        Just("qemu+ssh://%n/system".to_string()),
        "[ -~]{0,40}",
        any::<String>(),
    ];
    (prop::sample::select(names), value)
}

/// Values for one URI part: plausible ones, the characters that change a URI, and any text.
fn uri_part_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("ssh".to_string()),
        Just("-mig".to_string()),
        Just("hauser".to_string()),
        "[a-z0-9@/?#%:. _$;&=+\\-]{0,12}",
        "[ -~]{0,24}",
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// No environment makes validation panic; every refusal has a non-empty reason and is 5 or 6.
    #[test]
    fn validation_never_panics(params in prop::collection::vec(any_param(), 0..12), action in any_action()) {
        let env = OcfEnv::from_pairs(params.iter().map(|(k, v)| (format!("OCF_RESKEY_{k}"), v.clone())));
        let Ok(env) = env else { return Ok(()); };
        let raw = RawConfig::from_env(&env, action);
        prop_assert!(raw.budget_ms <= raw.timeout_ms);
        if let Err(e) = Config::validate(raw) {
            prop_assert!(!e.to_string().is_empty());
            prop_assert!(matches!(e.code(), OcfExitCode::ErrConfigured | OcfExitCode::ErrInstalled));
        }
    }

    /// The whole dispatch over the in-memory hypervisor: any parameters, any action, never a
    /// panic, every failure with a reason (checked in `run_env`).
    #[test]
    fn dispatch_never_panics(params in prop::collection::vec(any_param(), 0..8), action in any_action()) {
        let n = Node::new();
        let mut pairs = vec![
            ("OCF_RESOURCE_INSTANCE".to_string(), "vm1".to_string()),
            ("HA_RSCTMP".to_string(), n.rsctmp().display().to_string()),
            ("OCF_RESKEY_CRM_meta_timeout".to_string(), "2000".to_string()),
            ("OCF_RESKEY_CRM_meta_migrate_target".to_string(), "node2".to_string()),
            ("OCF_RESKEY_CRM_meta_migrate_source".to_string(), "node2".to_string()),
        ];
        pairs.extend(params.iter().map(|(k, v)| (format!("OCF_RESKEY_{k}"), v.clone())));
        if let Ok(env) = OcfEnv::from_pairs(pairs) {
            n.run_env(action.as_str(), &env);
        }
    }

    /// Whatever the URI parameters and the peer's name, a migration request the agent accepts
    /// is made only of safe parts: its remote URI passes the `hypervisor` check and its data URI
    /// the `migrateuri` check, with no `%n` left; so no value can smuggle a part into a URI.
    #[test]
    fn accepted_migrations_build_only_safe_uris(
        transport in uri_part_value(),
        user in uri_part_value(),
        suffix in uri_part_value(),
        hypervisor in prop_oneof![Just(String::new()), Just("qemu:///system".to_string()),
            Just("qemu+tcp://node1:16509/system".to_string()), uri_part_value()],
        remoteuri in prop_oneof![Just(String::new()), Just("qemu+ssh://%n/system".to_string()),
            uri_part_value()],
        migrateuri in prop_oneof![Just(String::new()), Just("tcp:%n:49152".to_string()),
            uri_part_value()],
        port in prop_oneof![Just(String::new()), Just("49200".to_string())],
        target in prop_oneof![Just("node2".to_string()), Just("node2.example.com".to_string()),
            uri_part_value()],
    ) {
        use highlander_agent::{migration, urisafe};
        let env = OcfEnv::from_pairs([
            ("OCF_RESKEY_config", "/etc/vm1.xml"),
            ("OCF_RESKEY_migration_transport", transport.as_str()),
            ("OCF_RESKEY_migration_user", user.as_str()),
            ("OCF_RESKEY_migration_network_suffix", suffix.as_str()),
            ("OCF_RESKEY_hypervisor", hypervisor.as_str()),
            ("OCF_RESKEY_remoteuri", remoteuri.as_str()),
            ("OCF_RESKEY_migrateuri", migrateuri.as_str()),
            ("OCF_RESKEY_migrateport", port.as_str()),
        ]).unwrap();
        let Ok(cfg) = Config::validate(RawConfig::from_env(&env, Action::MigrateTo)) else {
            return Ok(());
        };
        let Ok(req) = migration::request(&cfg.migration, cfg.hypervisor_uri.as_deref(), "vm1", &target) else {
            return Ok(());
        };
        prop_assert!(urisafe::check_node_name(&target).is_ok(), "{target:?} accepted");
        prop_assert!(!req.target_uri.contains("%n"));
        prop_assert_eq!(urisafe::check_local_uri(&req.target_uri), Ok(()), "{}", req.target_uri);
        if let Some(m) = &req.migrate_uri {
            prop_assert!(!m.contains("%n"));
            prop_assert_eq!(urisafe::check_migrate_uri_template(m), Ok(()), "{}", m);
        }
    }

    /// Any text as a domain XML: a name or an error with a message, never a panic.
    #[test]
    fn domain_xml_never_panics(text in any::<String>(), wrap in any::<bool>()) {
        let xml = if wrap { format!("<domain><name>{text}</name></domain>") } else { text };
        match domain_name_from_xml(&xml) {
            Ok(name) => prop_assert!(!name.is_empty()),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
