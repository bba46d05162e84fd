//! The `VirtualDomain` binary as Pacemaker and ocf-tester run it: environment in, exit status,
//! stdout, and `ocf-exit-reason:` lines and logs on stderr. The hypervisor is libvirt's in-process
//! test driver, whose built-in domain `test` is always running.

use std::process::{Command, Output};

struct Run {
    dir: tempfile::TempDir,
}

impl Run {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for name in ["test", "absent-domain"] {
            std::fs::write(
                dir.path().join(format!("{name}.xml")),
                format!("<domain type='test'><name>{name}</name></domain>"),
            )
            .unwrap();
        }
        Self { dir }
    }
    fn run(&self, action: &str, vars: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_VirtualDomain"));
        cmd.arg(action)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("OCF_ROOT", "/usr/lib/ocf")
            .env("OCF_RESOURCE_INSTANCE", "vm1")
            .env("HA_RSCTMP", self.dir.path().join("rsc"))
            .env("OCF_RESKEY_hypervisor", "test:///default");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }
    fn config(&self, name: &str) -> String {
        self.dir
            .path()
            .join(format!("{name}.xml"))
            .display()
            .to_string()
    }
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited, not killed")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn meta_data_and_usage_are_static() {
    let r = Run::new();
    let o = r.run("meta-data", &[]);
    assert_eq!(code(&o), 0);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("<?xml"));
    assert_eq!(stderr(&o), "", "meta-data logs nothing");
    let o = r.run("usage", &[]);
    assert_eq!(code(&o), 0);
    assert!(String::from_utf8_lossy(&o.stdout).contains("usage:"));
}

#[test]
fn ocft_codes() {
    let r = Run::new();
    let o = r.run("frobnicate", &[]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).contains("ocf-exit-reason:unknown action"),
        "{}",
        stderr(&o)
    );
    let missing = r.dir.path().join("missing.xml").display().to_string();
    let o = r.run("start", &[("OCF_RESKEY_config", &missing)]);
    assert_eq!(code(&o), 5);
    assert!(
        stderr(&o)
            .lines()
            .any(|l| l.starts_with("ocf-exit-reason:") && l.contains("missing.xml"))
    );
    let o = r.run("start", &[]);
    assert_eq!(code(&o), 6, "no config");
    assert!(stderr(&o).contains("ocf-exit-reason:required parameter config is not set"));
    assert_eq!(code(&r.run("stop", &[])), 0, "stop without config");
    let o = r.run("migrate_to", &[("OCF_RESKEY_config", &r.config("test"))]);
    assert_eq!(code(&o), 1, "no CRM_meta_migrate_target");
    assert!(stderr(&o).contains("CRM_meta_migrate_target"));
    // Source and "target" are the same test driver here: the domain runs on both, nothing done;
    // 7 ("not here alone"), so the planner probes both nodes.
    let o = r.run(
        "migrate_to",
        &[
            ("OCF_RESKEY_config", &r.config("test")),
            ("OCF_RESKEY_CRM_meta_migrate_target", "node2"),
            ("OCF_RESKEY_remoteuri", "test:///default"),
        ],
    );
    assert_eq!(code(&o), 7, "{}", stderr(&o));
    assert!(stderr(&o).contains("runs on both"), "{}", stderr(&o));
}

#[test]
fn monitor_through_the_test_driver() {
    let r = Run::new();
    let running = r.config("test");
    let absent = r.config("absent-domain");
    assert_eq!(
        code(&r.run("monitor", &[("OCF_RESKEY_config", &running)])),
        0
    );
    assert_eq!(
        code(&r.run("monitor", &[("OCF_RESKEY_config", &absent)])),
        7
    );
    assert_eq!(
        code(&r.run(
            "monitor",
            &[
                ("OCF_RESKEY_config", &absent),
                ("OCF_RESKEY_CRM_meta_interval", "10000")
            ]
        )),
        7
    );
    assert_eq!(
        code(&r.run("validate-all", &[("OCF_RESKEY_config", &running)])),
        0
    );
    assert_eq!(code(&r.run("stop", &[("OCF_RESKEY_config", &absent)])), 0);
}

#[test]
fn debug_logs_and_exit_reason_prefix() {
    let r = Run::new();
    let running = r.config("test");
    let quiet = r.run("monitor", &[("OCF_RESKEY_config", &running)]);
    assert!(!stderr(&quiet).contains("DEBUG"), "{}", stderr(&quiet));
    let loud = r.run(
        "monitor",
        &[("OCF_RESKEY_config", &running), ("HA_debug", "1")],
    );
    assert!(stderr(&loud).contains("VirtualDomain(vm1)"));
    assert!(
        stderr(&loud).contains("DEBUG: state test: Ok(Running)"),
        "{}",
        stderr(&loud)
    );
    let o = r.run("start", &[("OCF_EXIT_REASON_PREFIX", "why:")]);
    assert!(
        stderr(&o)
            .lines()
            .any(|l| l.starts_with("why:required parameter config"))
    );
}

#[test]
fn a_hung_libvirtd_never_makes_the_agent_overrun_its_timeout() {
    // A socket that accepts connections and never answers, as a hung libvirtd does.
    let r = Run::new();
    let sock = r.dir.path().join("libvirt-sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let uri = format!("qemu+unix:///system?socket={}", sock.display());
    let config = r.config("absent-domain");
    for (action, expected) in [("monitor", 7), ("stop", 0), ("start", 1)] {
        let t0 = std::time::Instant::now();
        let o = r.run(
            action,
            &[
                ("OCF_RESKEY_config", &config),
                ("OCF_RESKEY_hypervisor", &uri),
                ("OCF_RESKEY_CRM_meta_timeout", "3000"),
            ],
        );
        let elapsed = t0.elapsed();
        // The executor would kill the agent at 3000 ms: the answer must come before.
        assert!(
            elapsed < std::time::Duration::from_millis(3_000),
            "{action} took {elapsed:?}"
        );
        assert_eq!(code(&o), expected, "{action}: {}", stderr(&o));
    }
}

#[test]
fn the_front_binary_needs_its_companion_only_for_hypervisor_actions() {
    let r = Run::new();
    let lone = r.dir.path().join("lone");
    std::fs::create_dir(&lone).unwrap();
    let front = lone.join("VirtualDomain");
    std::fs::copy(env!("CARGO_BIN_EXE_VirtualDomain"), &front).unwrap();
    let run = |action: &str| {
        Command::new(&front)
            .arg(action)
            .env_clear()
            .env("OCF_RESKEY_config", r.config("test"))
            .env("OCF_RESKEY_hypervisor", "test:///default")
            .output()
            .unwrap()
    };
    assert_eq!(code(&run("meta-data")), 0);
    assert_eq!(code(&run("bogus")), 3);
    let o = run("monitor");
    assert_eq!(code(&o), 5);
    assert!(stderr(&o).contains("ocf-exit-reason:VirtualDomain-libvirt is not installed"));
    // With the companion beside it, under the hidden name make install uses.
    std::fs::copy(
        env!("CARGO_BIN_EXE_VirtualDomain-libvirt"),
        lone.join(".VirtualDomain-libvirt"),
    )
    .unwrap();
    assert_eq!(code(&run("monitor")), 0, "{}", stderr(&run("monitor")));
}

#[test]
fn a_non_utf8_variable_blocks_every_action_but_stop_and_meta_data() {
    use std::os::unix::ffi::OsStrExt;
    let r = Run::new();
    let bad = std::ffi::OsStr::from_bytes(b"--p2p\xff");
    let run = |action: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_VirtualDomain"));
        cmd.arg(action)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("OCF_RESOURCE_INSTANCE", "vm1")
            .env("HA_RSCTMP", r.dir.path().join("rsc"))
            .env("OCF_RESKEY_hypervisor", "test:///default")
            .env("OCF_RESKEY_config", r.config("test"))
            .env("OCF_RESKEY_migrate_options", bad);
        cmd.output().unwrap()
    };
    for action in ["monitor", "start", "validate-all"] {
        let o = run(action);
        assert_eq!(code(&o), 6, "{action}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("ocf-exit-reason:OCF_RESKEY_migrate_options is not valid UTF-8"),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(code(&run("meta-data")), 0);
    // The test driver's domain `test` runs in the process: stop destroys it and answers 0.
    let o = run("stop");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("domain test destroyed"),
        "{}",
        stderr(&o)
    );
}

/// `crm_resource` and `cibadmin` on PATH, else a loud skip (a panic under CI).
fn cib_tools_or_skip(test: &str) -> bool {
    let found = ["crm_resource", "cibadmin"].iter().all(|p| {
        ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
            .iter()
            .any(|d| std::path::Path::new(d).join(p).is_file())
    });
    if !found {
        let msg = format!("SKIPPED {test}: crm_resource/cibadmin not installed (tools/deps.sh)");
        assert!(std::env::var_os("CI").is_none(), "{msg}; CI must not skip");
        eprintln!("{msg}");
    }
    found
}

fn utilization(cib: &std::path::Path, attr: &str) -> String {
    let o = Command::new("crm_resource")
        .args(["--resource=vm1", "--utilization", "--quiet"])
        .arg(format!("--get-parameter={attr}"))
        .env("CIB_file", cib)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_owned()
}

#[test]
fn utilization_is_written_to_the_cib_only_when_it_changes() {
    if !cib_tools_or_skip("utilization_is_written_to_the_cib_only_when_it_changes") {
        return;
    }
    let r = Run::new();
    let cib = r.dir.path().join("cib.xml");
    let empty = Command::new("cibadmin").arg("--empty").output().unwrap();
    assert!(empty.status.success());
    std::fs::write(&cib, &empty.stdout).unwrap();
    let created = Command::new("cibadmin")
        .args(["-C", "-o", "resources", "-X"])
        .arg(r#"<primitive id="vm1" class="ocf" provider="highlander" type="VirtualDomain"/>"#)
        .env("CIB_file", &cib)
        .status()
        .unwrap();
    assert!(created.success());
    // The test driver's running domain `test`, described with 2 vCPUs and 48 MiB.
    let xml = r.dir.path().join("sized.xml");
    let write_xml = |vcpus: u32| {
        std::fs::write(
            &xml,
            format!(
                "<domain type='test'><name>test</name><memory unit='MiB'>48</memory>\
                 <vcpu>{vcpus}</vcpu></domain>"
            ),
        )
        .unwrap()
    };
    write_xml(2);
    let cib_text = cib.display().to_string();
    let xml_text = xml.display().to_string();
    let monitor = |extra: &[(&str, &str)]| {
        let mut vars = vec![
            ("OCF_RESKEY_config", xml_text.as_str()),
            ("OCF_RESKEY_CRM_meta_interval", "10000"),
            ("CIB_file", cib_text.as_str()),
        ];
        vars.extend_from_slice(extra);
        let o = r.run("monitor", &vars);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        o
    };
    monitor(&[]);
    assert_eq!(utilization(&cib, "cpu"), "2");
    assert_eq!(utilization(&cib, "hv_memory"), "48");
    assert_eq!(utilization(&cib, "host_memory"), "48");
    // Someone changes the CIB by hand: the agent does not ask again while its own value holds
    // (no fork on the monitor's path), so the hand-made value stays.
    let set = Command::new("crm_resource")
        .args([
            "--resource=vm1",
            "--utilization",
            "--set-parameter=cpu",
            "--parameter-value=7",
        ])
        .env("CIB_file", &cib)
        .output()
        .unwrap();
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    monitor(&[]);
    assert_eq!(utilization(&cib, "cpu"), "7");
    // The domain's size changes: written.
    write_xml(3);
    monitor(&[]);
    assert_eq!(utilization(&cib, "cpu"), "3");
    // unset_utilization_cpu with autoset off: removed.
    monitor(&[
        ("OCF_RESKEY_autoset_utilization_cpu", "false"),
        ("OCF_RESKEY_unset_utilization_cpu", "true"),
    ]);
    assert_eq!(utilization(&cib, "cpu"), "");
    assert_eq!(utilization(&cib, "hv_memory"), "48");
    // A CIB that cannot be written never fails the monitor; it is logged.
    write_xml(4);
    let o = monitor(&[("CIB_file", "/nonexistent/cib.xml")]);
    assert!(
        stderr(&o).contains("utilization cpu not written"),
        "{}",
        stderr(&o)
    );
}
